"""Legal-behaviour controls: correct extensions doing what a stricter reading
of the document would fail, run through the harness on the simulated
transport (deterministic and cheap). Each must come out with no fail, warn
or error -- the false positives issue 13 names, kept fixed.

The faulty counterparts, where there is one, live in ``fixtures/extensions``
(``wrong-cancel-code``, ``inexact-requires-octet``, ...).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.evidence import Recorder
from conformance.manifest import Manifest, load_manifest
from conformance.peers.ext_host import ExtensionHostPeer, Patience
from conformance.peers.simulated import REFERENCE_MODULE, simulated_reference
from conformance.protocol import jsonrpc
from conformance.protocol.limits import MAX_FRAME_BYTES
from conformance.reference.extension import CallContext, ReferenceExtension
from conformance.reference.extension.catalog import ToolSpec
from conformance.reference.extension.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, JsonObject, Request, RpcError
from conformance.reference.extension.schema import first_violation
from conformance.reference.extension.server import Server
from conformance.reference.extension.writer import FrameWriter
from conformance.runner.extension import certify_extension, full_offer
from conformance.runner.profiles import PROFILES, Profile
from conformance.transport.simulated import Scheduler, SimStdin, SimulatedTarget, Sink
from conformance.transport.target import Target

MANIFESTS = Path(__file__).resolve().parents[2] / "conformance" / "reference" / "extension" / "manifests"
SMALL = Profile("control", examples=4, steps=12)
BAD = ("fail", "warn", "error")


def simulated(make: Callable[[FrameWriter, Scheduler], Server]) -> Callable[[Manifest], Target]:
    """A launcher running ``make``'s server in-process on the virtual clock."""

    def launch(manifest: Manifest) -> Target:
        def program(stdin: SimStdin, stdout: Sink, scheduler: Scheduler) -> int:
            return make(FrameWriter(stdout), scheduler).serve(stdin)

        return SimulatedTarget(program, MAX_FRAME_BYTES, log_names=(REFERENCE_MODULE,))

    return launch


def flagged(manifest: Manifest, launcher: Callable[[Manifest], Target]) -> dict[str, str]:
    run = certify_extension(manifest, SMALL, PROFILES["quick"].default_seed, Patience.of(10.0), launcher=launcher)
    assert not run.harness_errors, run.harness_errors
    return {v.requirement.id: v.evidence for v in run.verdicts if v.verdict in BAD}


# -- §1.9: an error written before the cancellation could be read -------------------------


class FailsAtOnce(Server):
    """Answers every valid tool call at once, from the reader, with -32603
    (say its backend is down): a legitimate error, written before the frames
    behind the call were read."""

    def _route(self, request: Request) -> None:
        params = request.params if isinstance(request.params, dict) else {}
        tool = self._ext.tools.get(params.get("name", "")) if request.method == "tool/call" else None
        # A call under a catalog epoch never published is invalid, not a valid call that fails (§2.12).
        epoch_known = params.get("catalog_revision", 0) in self._ext.epochs
        if self._session is not None and tool is not None and epoch_known:
            if first_violation(params.get("arguments", {}), tool.parameters) is None:
                raise RpcError(INTERNAL_ERROR, "the tool's backend is unavailable")
        super()._route(request)


def test_an_error_written_before_the_cancel_was_read_wins_the_race() -> None:
    manifest = load_manifest(MANIFESTS / "api-0.2" / "extension.toml")
    launcher = simulated(lambda writer, scheduler: FailsAtOnce(ReferenceExtension("0.2"), writer, scheduler))
    peer = ExtensionHostPeer(manifest, Recorder(), launcher=launcher)
    offer = full_offer("0.2")
    peer.start(offer)
    assert peer.initialize(offer)
    call = {"name": "echo", "arguments": {"text": "hi"}, "context": {}}
    rid, frame = peer.request_frame("tool/call", call)
    cancel = peer.cancel_frame(rid)
    probe, probe_frame = peer.request_frame("octet-conformance/no-such-method", {}, intent="unknown-method")
    peer.write_raw(frame + cancel + probe_frame)  # all three in one read
    peer.settle([rid, probe])
    assert peer.session is not None
    answer = peer.session.request(rid).response  # type: ignore[union-attr]
    # The contested thing happened: a non-32800 error to a cancelled call ...
    assert isinstance(answer, jsonrpc.ErrorResponse) and answer.code == INTERNAL_ERROR
    # ... written before the probe behind the cancel was answered: no verdict.
    assert not peer.recorder.violations, peer.recorder.violations
    peer.shutdown()
    peer.close()
    assert not peer.recorder.violations, peer.recorder.violations


def test_an_extension_failing_every_call_at_once_certifies_without_a_cancel_finding() -> None:
    manifest = load_manifest(MANIFESTS / "api-0.2" / "extension.toml")
    launcher = simulated(lambda writer, scheduler: FailsAtOnce(ReferenceExtension("0.2"), writer, scheduler))
    assert flagged(manifest, launcher) == {}


# -- §0: requires_octet is asked of installable bundles only ----------------------------------


def test_a_manifest_without_requires_octet_runs_and_passes(tmp_path: Path) -> None:
    text = (MANIFESTS / "api-0.2" / "extension.toml").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("requires_octet")]
    (tmp_path / "extension.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = load_manifest(tmp_path / "extension.toml")
    assert manifest.requires_octet is None
    run = certify_extension(manifest, SMALL, PROFILES["quick"].default_seed, launcher=simulated_reference)
    verdicts = {v.requirement.id: v.verdict for v in run.verdicts}
    assert not [i for i, v in verdicts.items() if v in BAD]
    assert verdicts["EXT-0-bundle-requires-octet"] == "untested"  # not judged, not failed


# -- §1.1: a schema without $schema read in a draft that accepts it ---------------------------

PAIR = {"type": "array", "items": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}


class DraftSevenSchemas(ReferenceExtension):
    """The structured tool adds a draft-7 tuple ``pair`` to its output
    schema (no $schema: §1.1 names no draft) and fills it correctly."""

    def initialize(self, params: JsonObject) -> JsonObject:
        result = super().initialize(params)
        for tool in result["tools"]:
            if tool["name"] == "structured":
                schema: dict[str, Any] = copy.deepcopy(tool["output_schema"])
                schema["properties"]["pair"] = PAIR
                schema["required"] = [*schema.get("required", []), "pair"]
                tool["output_schema"] = schema
        return result

    def tool_structured(self, arguments: JsonObject, ctx: Any) -> JsonObject:
        result = super().tool_structured(arguments, ctx)
        structured = result["structured_content"]
        structured["pair"] = [structured["length"], "pair"]
        return result


def test_a_draft_seven_tuple_schema_without_dollar_schema_passes() -> None:
    manifest = load_manifest(MANIFESTS / "api-0.2" / "extension.toml")
    launcher = simulated(lambda writer, scheduler: Server(DraftSevenSchemas("0.2"), writer, scheduler))
    assert flagged(manifest, launcher) == {}


# -- §2.8-§2.12: services used in other legal ways -------------------------------------


class NewestEpochOnly(ReferenceExtension):
    """Keeps no history: any epoch but the newest is refused as retired
    (§2.12 leaves how many an extension retains open)."""

    def catalog_for(self, params: JsonObject, ctx: CallContext) -> dict[str, ToolSpec]:
        tools = super().catalog_for(params, ctx)
        if "dynamic_tools" in ctx.session.features and params.get("catalog_revision") != max(self.epochs):
            raise RpcError(INVALID_PARAMS, "retired catalog revision")
        return tools


class NoServices(ReferenceExtension):
    """Negotiates every service but never calls one (all optional)."""

    def policy_allows(self, operation: str, ctx: CallContext) -> bool:
        return True

    def publish_png(self, data: bytes, ctx: CallContext) -> str | None:
        return None

    def toggle_picture_tool(self, ctx: CallContext) -> None:
        return None


@pytest.mark.parametrize("extension", [NewestEpochOnly, NoServices])
def test_legal_service_use_is_not_flagged(extension: type[ReferenceExtension]) -> None:
    manifest = load_manifest(MANIFESTS / "api-0.2" / "extension.toml")
    launcher = simulated(lambda writer, scheduler: Server(extension("0.2"), writer, scheduler))
    assert flagged(manifest, launcher) == {}
