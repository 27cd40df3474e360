"""The Wave-1 scenario and the scripted Wave-1 host (§1.10, §1.11, §2.19-§2.24),
on the simulated transport (deterministic and cheap).

Legal controls: correct extensions doing what a stricter reading would fail
(a deferred caller with an explicit owner, an extension that uses nothing)
come out with no fail, warn or error. The faulty counterparts live in
``fixtures/extensions`` (``wave1-without-parent``, ``trigger-exits`` ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.evidence import Recorder
from conformance.manifest import Manifest, load_manifest
from conformance.peers import wave1_backend
from conformance.peers.ext_host import ChildPolicy, ExtensionHostPeer, Patience
from conformance.peers.simulated import REFERENCE_MODULE, simulated_reference
from conformance.protocol import jsonrpc
from conformance.protocol.ext_hosting import WAVE1_OFFERED
from conformance.protocol.ext_types import ManifestInfo, Offer
from conformance.protocol.limits import MAX_FRAME_BYTES
from conformance.reference.extension import ReferenceExtension
from conformance.reference.extension.jsonrpc import JsonObject
from conformance.reference.extension.server import Server
from conformance.reference.extension.writer import FrameWriter
from conformance.runner.extension import certify_extension, full_offer
from conformance.runner.profiles import Profile
from conformance.runner.wave1 import wave1_scenario
from conformance.transport.simulated import Scheduler, SimStdin, SimulatedTarget, Sink
from conformance.transport.target import Target

MANIFESTS = Path(__file__).resolve().parents[2] / "conformance" / "reference" / "extension" / "manifests"
SMALL = Profile("wave1", examples=2, steps=6)
BAD = ("fail", "warn", "error")
NEW = (
    "EXT-1.10-keeps-serving",
    "EXT-1.11-keeps-serving",
    "EXT-2-wave1-parent",
    "EXT-2.19-composer-request",
    "EXT-2.20-shortcut-register",
    "EXT-2.20-shortcut-bounds",
    "EXT-2.21-session-entries-request",
    "EXT-2.22-message-injection-request",
    "EXT-2.23-set-active-request",
    "EXT-2.24-terminal-request",
)


def wave1_offer() -> Offer:
    base = full_offer("0.2")
    return Offer("0.2", base.protocol_version, base.required_features, base.optional_features + WAVE1_OFFERED, 8)


def test_the_reference_exercises_every_wave1_check_and_passes() -> None:
    for api in ("0.2", "0.4"):
        manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
        run = certify_extension(manifest, SMALL, 1, launcher=simulated_reference)
        verdicts = {v.requirement.id: v for v in run.verdicts}
        assert not run.harness_errors, run.harness_errors
        assert not [(i, v.evidence) for i, v in verdicts.items() if v.verdict in BAD]
        assert {i: verdicts[i].verdict for i in NEW} == dict.fromkeys(NEW, "pass")


def test_api_01_never_gets_the_scenario() -> None:
    manifest = load_manifest(MANIFESTS / "api-0.1" / "extension.toml")
    run = certify_extension(manifest, SMALL, 1, launcher=simulated_reference)
    verdicts = {v.requirement.id: v.verdict for v in run.verdicts}
    assert {verdicts[i] for i in NEW if i != "EXT-2.20-shortcut-register"} <= {"skip", "untested"}


# -- §1.4b: the model-turn hooks -------------------------------------------------------


def turn_scenario(api: str) -> Recorder:
    manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
    recorder = Recorder()
    wave1_scenario(manifest, recorder, Patience.of(10.0), full_offer(api), launcher=simulated_reference)
    return recorder


def test_the_04_reference_is_run_through_both_model_turn_hooks_and_passes() -> None:
    recorder = turn_scenario("0.4")
    assert not recorder.violations, recorder.violations
    assert recorder.exercised.get("EXT-1.4b-declaration") == 1  # one initialize
    assert recorder.exercised.get("EXT-1.4b-result-envelope") == 2  # start, then end


def test_no_model_turn_hook_without_a_declaration() -> None:
    recorder = turn_scenario("0.2")  # declares none (and the hooks are an API 0.4 matter)
    assert not recorder.violations, recorder.violations
    assert "EXT-1.4b-result-envelope" not in recorder.exercised


# -- a deferred caller: a Wave-1 request after its parent settled, with an owner --------------

OWNER = {"session_id": "conformance-session", "extension_instance_id": "instance-1", "process_generation": 1}


class DeferredComposer(Server):
    """On a shortcut trigger, puts text in the composer on behalf of the
    last greeting, which has long been answered: a deferred caller naming
    its settled parent and an explicit resource_owner (§2 intro)."""

    last_command: Any = None

    def _start(self, request: Any, handler: Any, params: JsonObject, session: Any, gate: Any) -> None:
        if request.method == "command/execute":
            DeferredComposer.last_command = request.id
        super()._start(request, handler, params, session, gate)

    def _on_shortcut_trigger(self, params: Any) -> None:
        super()._on_shortcut_trigger(params)
        child = self._children.open("deferred")
        composer = {"parent_request_id": DeferredComposer.last_command, "resource_owner": OWNER, "text": "later"}
        self._children.send(child, "composer/insert", composer)


def launcher(manifest: Manifest) -> Target:
    def program(stdin: SimStdin, stdout: Sink, scheduler: Scheduler) -> int:
        return DeferredComposer(ReferenceExtension("0.2"), FrameWriter(stdout), scheduler).serve(stdin)

    return SimulatedTarget(program, MAX_FRAME_BYTES, log_names=(REFERENCE_MODULE,))


def test_a_deferred_caller_with_an_owner_passes() -> None:
    manifest = load_manifest(MANIFESTS / "api-0.2" / "extension.toml")
    peer = ExtensionHostPeer(manifest, Recorder(), launcher=launcher)
    offer = wave1_offer()
    peer.start(offer)
    assert peer.initialize(offer)
    assert peer.children.wave1.shortcuts == ["reference:greet"]  # registered inside initialize, admitted
    greet = {"name": "greet", "arguments": ["you"], "context": {}}
    peer.settle([peer.request("command/execute", greet)])
    peer.notify("shortcut/trigger", {"id": "reference:greet"})
    peer.settle([peer.request("octet-conformance/no-such-method", {}, intent="after-trigger")])
    peer.drain(0.2)
    assert peer.children.wave1.mutations == 2  # greet's insert, then the deferred one (refused: a remote editor)
    peer.shutdown()
    peer.close()
    assert not peer.recorder.violations, peer.recorder.violations
    assert peer.recorder.exercised.get("EXT-2-wave1-parent", 0) > 0


def test_a_trigger_for_an_unknown_shortcut_fails_closed_in_the_reference() -> None:
    """§1.11: the reference runs no handler (writes nothing) for an id it
    never had admitted, and one notification for its admitted shortcut."""
    manifest = load_manifest(MANIFESTS / "api-0.2" / "extension.toml")
    peer = ExtensionHostPeer(manifest, Recorder(), launcher=simulated_reference)
    offer = wave1_offer()
    peer.start(offer)
    assert peer.initialize(offer)
    peer.drain(0.2)
    seen = peer.frames_observed
    peer.notify("shortcut/trigger", {"id": "never-registered"})
    peer.settle([peer.request("octet-conformance/no-such-method", {}, intent="after-trigger")])
    assert peer.frames_observed == seen + 1  # only the probe's answer
    peer.notify("shortcut/trigger", {"id": "reference:greet"})
    peer.settle([peer.request("octet-conformance/no-such-method", {}, intent="after-trigger")])
    assert peer.frames_observed == seen + 3  # the handler's notification, then the answer
    peer.shutdown()
    peer.close()
    assert not peer.recorder.violations, peer.recorder.violations


# -- the scripted host ----------------------------------------------------------------------

MANIFEST = ManifestInfo("t", "1", "0.2")


def answer(policy: ChildPolicy, method: str, params: dict[str, Any], cid: str = "c") -> dict[str, Any]:
    backend = {
        "composer": wave1_backend.composer,
        "session": wave1_backend.session_entries,
        "tools": wave1_backend.set_active,
        "terminal": wave1_backend.terminal,
        "shortcut": wave1_backend.shortcut_register,
    }[method.split("/")[0]]
    return backend(policy, jsonrpc.Request(cid, method, {"parent_request_id": 2, **params}), MANIFEST)


def test_composer_mutations_alternate_between_admitted_and_refused() -> None:
    policy = ChildPolicy()
    assert answer(policy, "composer/set", {"text": "a"}) == jsonrpc.result("c", {})
    refused = answer(policy, "composer/insert", {"text": "b"})
    assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert refused["error"]["message"].split(":")[0] == "invalid_request"  # §3: the contract name first
    assert answer(policy, "composer/insert", {"text": "c"}) == jsonrpc.result("c", {})
    assert answer(policy, "composer/get", {}) == jsonrpc.result("c", {"text": "ac"})


def test_invalid_params_are_refused_before_anything_happens() -> None:
    policy = ChildPolicy()
    refused = answer(policy, "composer/set", {"text": "x" * (256 * 1024 + 1)})
    assert refused["error"]["message"].startswith("bounds_exceeded:")
    assert policy.wave1.mutations == 0


def test_one_exclusive_terminal_grant() -> None:
    policy = ChildPolicy()
    granted = answer(policy, "terminal/acquire", {})
    assert granted["result"] == {"grant_id": "grant-1", "columns": 80, "rows": 24}
    assert "error" in answer(policy, "terminal/acquire", {})  # another grant is live
    assert answer(policy, "terminal/release", {}) == jsonrpc.result("c", {})
    assert "error" in answer(policy, "terminal/release", {})  # holds none now


def test_shortcuts_admitted_once_and_within_bounds() -> None:
    policy = ChildPolicy()
    assert "result" in answer(policy, "shortcut/register", {"id": "a", "key": "k"})
    assert "error" in answer(policy, "shortcut/register", {"id": "a", "key": "k"})  # duplicate
    assert "error" in answer(policy, "shortcut/register", {"id": "b", "key": "k" * 129})
    assert policy.wave1.shortcuts == ["a"]


def test_entries_are_numbered_and_set_active_alternates() -> None:
    policy = ChildPolicy()
    assert answer(policy, "session/append_entry", {"entry_type": "t", "data": 1})["result"] == {"entry_id": "entry-1"}
    assert "result" in answer(policy, "tools/set_active", {"names": []})
    assert "error" in answer(policy, "tools/set_active", {"names": []})
