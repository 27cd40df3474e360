"""Params of extension-originated requests (ext_requests): §2.7 input/request."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from typing import Any

import pytest

from conformance.protocol import ext_requests as er
from conformance.protocol import limits
from conformance.protocol.ext_session import HostSession
from conformance.protocol.ext_types import IssuedArtifact, ManifestInfo, Negotiated, Offer
from conformance.protocol.framing import Frame
from conformance.protocol.jsonrpc import decode_frame
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Exercise, Finding, Violation

NEGOTIATED = Negotiated("0.2", frozenset({"request_cancellation", "content_parts"}))


def judge(params: Any, negotiated: Negotiated = NEGOTIATED) -> list[Finding]:
    return list(er.check_child_params("input/request", params, context=er.ChildContext(negotiated)))


def broken(findings: Iterable[Finding]) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


@pytest.mark.parametrize(
    "params",
    [
        {"parent_request_id": 2, "prompt": "Password:", "secret": True},  # the document's example
        {"parent_request_id": 2, "prompt": "  name? "},
        {"parent_request_id": 2, "prompt": "x", "secret": None},
        {"parent_request_id": 2, "prompt": "é" * (limits.INPUT_PROMPT_MAX_BYTES // 2)},  # exactly 16 KiB
    ],
)
def test_valid_input_requests(params: Any) -> None:
    found = judge(params)
    assert Exercise("EXT-2.7-input-request") in found
    assert broken(found) == []


@pytest.mark.parametrize(
    "params",
    [
        {"parent_request_id": 2},
        {"parent_request_id": 2, "prompt": ""},
        {"parent_request_id": 2, "prompt": " \t\n\u3000"},
        {"parent_request_id": 2, "prompt": 5},
        {"parent_request_id": 2, "prompt": "x", "secret": "yes"},
        {"parent_request_id": 2, "prompt": "x" * (limits.INPUT_PROMPT_MAX_BYTES + 1)},
        {"parent_request_id": 2, "prompt": "é" * (limits.INPUT_PROMPT_MAX_BYTES // 2) + "x"},
        [],
    ],
)
def test_invalid_input_requests(params: Any) -> None:
    assert broken(judge(params)) == ["EXT-2.7-input-request"]


def test_prompt_one_below_the_bound_passes() -> None:
    assert broken(judge({"prompt": "x" * (limits.INPUT_PROMPT_MAX_BYTES - 1)})) == []


def test_not_judged_on_api_0_1_nor_for_other_methods() -> None:
    assert judge({"prompt": ""}, Negotiated("0.1")) == []
    assert list(er.check_child_params("octet/not-a-request", {}, context=er.ChildContext(NEGOTIATED))) == []


def test_session_judges_input_request_params_with_their_path() -> None:
    manifest = ManifestInfo("t", "1", "0.2", {"commands": ["greet"]}, {})
    session = HostSession(manifest, Offer("0.2", "0.2", limits.REQUIRED_FEATURES, (), 8))
    session.sent_request(1, "initialize", {})
    result = {
        "api_version": "0.2",
        "tools": [],
        "commands": [{"name": "greet", "description": "d"}],
        "protocol": {
            "version": "0.2",
            "features": list(limits.REQUIRED_FEATURES),
            "limits": {"max_concurrent_requests": 4},
        },
    }
    assert broken(receive(session, {"id": 1, "result": result})) == []
    session.sent_request(2, "command/execute", {"name": "greet"})
    good = {"id": "input-1", "method": "input/request", "params": {"parent_request_id": 2, "prompt": "Who?"}}
    assert broken(receive(session, good)) == []
    bad = {"id": "input-2", "method": "input/request", "params": {"parent_request_id": 2, "prompt": " "}}
    found = [f for f in receive(session, bad) if isinstance(f, Violation)]
    assert [(f.requirement, f.path) for f in found] == [("EXT-2.7-input-request", ("params", "prompt"))]


def receive(session: HostSession, msg: dict[str, Any]) -> list[Finding]:
    return session.received(decode_frame(Frame(0, dumps({"jsonrpc": "2.0", **msg}), "lf")))


SECRETS = Negotiated("0.2", NEGOTIATED.features | {"secrets"})
ALLOWED = frozenset({"browser.api_token"})


def secret(params: Any, negotiated: Negotiated = SECRETS) -> list[str]:
    context = er.ChildContext(negotiated, ALLOWED)
    return broken(er.check_child_params("secret/get", params, context=context))


def test_secret_get_for_an_allowlisted_name_passes() -> None:
    assert secret({"parent_request_id": 2, "name": "browser.api_token"}) == []


@pytest.mark.parametrize(
    ("params", "negotiated"),
    [
        ({"parent_request_id": 2, "name": "browser.api_token"}, NEGOTIATED),  # feature not negotiated
        ({"parent_request_id": 2, "name": "browser.API_TOKEN"}, SECRETS),  # exact names only
        ({"parent_request_id": 2, "name": "browser.api_token "}, SECRETS),
        ({"parent_request_id": 2}, SECRETS),
        ({"parent_request_id": 2, "name": 7}, SECRETS),
        ("browser.api_token", SECRETS),
    ],
)
def test_secret_get_violations(params: Any, negotiated: Negotiated) -> None:
    assert secret(params, negotiated) == ["EXT-2.10-secret-get"]


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        (
            {"parent_request_id": 2, "prompt": "Push?", "detail": "5 commits", "destructive": False, "default": False},
            True,
        ),
        ({"prompt": ""}, True),  # API 0.1 shape; no floor on the prompt
        ({"prompt": "p", "detail": None, "default": None}, True),
        ({"prompt": "p", "destructive": "no"}, False),
        ({"prompt": "p", "default": 0}, False),
        ({"prompt": "p", "detail": 5}, False),
        ({"detail": "d"}, False),
        ("Push?", False),
    ],
)
def test_confirmation_request_shape(params: Any, ok: bool) -> None:
    context = er.ChildContext(Negotiated("0.1"))
    found = broken(er.check_child_params("confirmation/request", params, context=context))
    assert found == ([] if ok else ["EXT-2.2-request-shape"])


# -- §2.8-§2.12 host services -----------------------------------------------------

SERVICES = Negotiated("0.2", NEGOTIATED.features | {"artifacts", "policy_intents", "dynamic_tools"})
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


def publication(content: bytes = PNG, **changes: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "parent_request_id": 2,
        "mime_type": "image/png",
        "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
        "data": {"encoding": "base64", "data": base64.b64encode(content).decode("ascii")},
    }
    params.update(changes)
    return {k: v for k, v in params.items() if v is not None}


def service(method: str, params: Any, negotiated: Negotiated = SERVICES, **context: Any) -> list[str]:
    return broken(er.check_child_params(method, params, context=er.ChildContext(negotiated, **context)))


def test_a_correct_inline_publication_passes() -> None:
    assert service("artifact/publish", publication()) == []


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (publication(path="shots/a.png"), ["EXT-2.8-artifact-publish"]),  # two sources
        (publication(data=None), ["EXT-2.8-artifact-publish"]),  # none
        (publication(sha256="ABC"), ["EXT-2.8-artifact-publish"]),
        (publication(size=-1), ["EXT-2.8-artifact-publish", "EXT-2.8-artifact-bytes"]),
        (publication(data=None, path="/etc/passwd"), ["EXT-2.8-artifact-publish"]),
        (publication(data=None, path="../outside.png"), ["EXT-2.8-artifact-publish"]),
        (publication(data={"encoding": "hex", "data": "0g"}), ["EXT-2.8-artifact-publish"] * 2),  # encoding, data
        (publication(size=len(PNG) + 1), ["EXT-2.8-artifact-bytes"]),
        (publication(sha256="0" * 64), ["EXT-2.8-artifact-bytes"]),
        (publication(mime_type="image/jpeg"), ["EXT-2.8-artifact-bytes"]),  # PNG bytes, JPEG claim
        (publication(mime_type="Image/PNG"), ["EXT-2.8-artifact-bytes"]),  # not canonical
        (publication(mime_type="text/plain"), ["EXT-2.8-artifact-bytes"]),  # not supported media
    ],
)
def test_artifact_publish_violations(params: dict[str, Any], expected: list[str]) -> None:
    assert service("artifact/publish", params) == expected


def test_artifact_publish_needs_the_feature() -> None:
    assert service("artifact/publish", publication(), NEGOTIATED) == ["EXT-2.8-artifact-publish"]


@pytest.mark.parametrize(
    ("size", "warned"),
    [
        (limits.ARTIFACT_INLINE_MAX_BYTES - 1, False),
        (limits.ARTIFACT_INLINE_MAX_BYTES, False),
        (limits.ARTIFACT_INLINE_MAX_BYTES + 1, True),
    ],
)
def test_inline_default_bound(size: int, warned: bool) -> None:
    data = PNG + bytes(size - len(PNG))
    assert service("artifact/publish", publication(data)) == (["EXT-2.8-artifact-limits"] if warned else [])


@pytest.mark.parametrize(("count", "refused"), [(63, False), (64, True)])
def test_generation_count_is_the_hosts_refusal(count: int, refused: bool) -> None:
    # A 65th publication is refused by the host, never held against the extension.
    issued = {f"a{i}": IssuedArtifact(f"a{i}", "image/png", 1) for i in range(count)}
    assert service("artifact/publish", publication()) == []
    assert (er.over_generation_budget(publication(), issued) is not None) == refused


def test_generation_bytes_is_the_hosts_refusal() -> None:
    issued = {"a": IssuedArtifact("a", "image/png", limits.ARTIFACT_GENERATION_MAX_BYTES - 10)}
    assert er.over_generation_budget(publication(), issued) is not None
    assert er.over_generation_budget(publication(), {}) is None


@pytest.mark.parametrize(
    ("path", "warned"),
    [("a/" * 63 + "b", False), ("a/" * 64 + "b", True), ("x" * limits.ARTIFACT_PATH_MAX_BYTES, False)],
)
def test_path_default_bounds(path: str, warned: bool) -> None:
    found = service("artifact/publish", publication(data=None, path=path))
    assert found == (["EXT-2.8-artifact-limits"] if warned else [])


@pytest.mark.parametrize(
    ("mime", "head"),
    [
        ("image/jpeg", b"\xff\xd8\xff\xe0"),
        ("image/gif", b"GIF89a"),
        ("image/webp", b"RIFF\x00\x00\x00\x00WEBPVP8 "),
        ("audio/wav", b"RIFF\x00\x00\x00\x00WAVEfmt "),
        ("audio/x-wav", b"RIFF\x00\x00\x00\x00WAVEfmt "),
        ("audio/mpeg", b"ID3\x04"),
        ("audio/mpeg", b"\xff\xfb\x90"),
        ("audio/flac", b"fLaC"),
        ("audio/ogg", b"OggS"),
        ("audio/aac", b"\xff\xf1"),
        ("audio/mp4", b"\x00\x00\x00\x20ftypM4A "),
    ],
)
def test_every_supported_media_signature(mime: str, head: bytes) -> None:
    assert service("artifact/publish", publication(head + bytes(16), mime_type=mime)) == []


def test_artifact_file_problem_is_a_publish_violation() -> None:
    assert broken(er.artifact_file("'a.png' is not a regular file")) == ["EXT-2.8-artifact-publish"]


INTENT = {
    "kind": "external_side_effect",
    "operation": "browser.submit_form",
    "target": {"origin": "https://example.com", "label": "Publish comment"},
    "data_classes": ["user_text"],
    "adapter_hints": {"read_only": False, "destructive": False},
}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"parent_request_id": 2, "intent": INTENT}, []),  # the document's example
        ({"parent_request_id": 2, "intent": {"kind": "k", "operation": "o"}}, []),
        ({"parent_request_id": 2}, ["EXT-2.9-policy-evaluate"]),
        ({"parent_request_id": 2, "intent": {"kind": "k"}}, ["EXT-2.9-policy-evaluate"]),
        ({"parent_request_id": 2, "intent": {**INTENT, "data_classes": "user_text"}}, ["EXT-2.9-policy-evaluate"]),
        (
            {"parent_request_id": 2, "intent": {**INTENT, "adapter_hints": {"read_only": "no"}}},
            ["EXT-2.9-policy-evaluate"],
        ),
        ({"parent_request_id": 2, "intent": INTENT, "approval_token": "ab" * 32}, ["EXT-2.9-approval-token"]),
    ],
)
def test_policy_evaluate(params: dict[str, Any], expected: list[str]) -> None:
    assert service("policy/evaluate", params) == expected


def test_policy_needs_the_feature() -> None:
    assert service("policy/evaluate", {"intent": INTENT}, NEGOTIATED) == ["EXT-2.9-policy-evaluate"]


def test_approval_token_with_approvals() -> None:
    approvals = Negotiated("0.2", SERVICES.features | {"approvals"})
    token = "ab" * 32
    issued = {token: er.canonical(INTENT)}
    retry = {"parent_request_id": 2, "intent": INTENT, "approval_token": token}
    assert service("policy/evaluate", retry, approvals, approvals=issued) == []
    changed = {**retry, "intent": {**INTENT, "operation": "other"}}
    assert service("policy/evaluate", changed, approvals, approvals=issued) == ["EXT-2.9-approval-token"]
    upper = {**retry, "approval_token": token.upper()}
    assert service("policy/evaluate", upper, approvals, approvals=issued) == ["EXT-2.9-approval-token"]
    assert service("policy/evaluate", retry, approvals) == ["EXT-2.9-approval-token"]  # never issued


TOOL = {"name": "ableton_tracks", "description": "List tracks", "parameters": {"type": "object", "properties": {}}}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"tools": [{**TOOL, "output_schema": None}]}, []),  # the document's example
        ({"tools": [TOOL, TOOL]}, ["EXT-2.11-tools-register"]),
        ({"tools": [{**TOOL, "description": ""}]}, ["EXT-2.11-tools-register"]),
        ({"tools": [{**TOOL, "parameters": "object"}]}, ["EXT-2.11-tools-register"]),
        ({"tools": [{**TOOL, "output_schema": {"pattern": "x"}}]}, ["EXT-2.11-tools-register"]),
        ({"tools": [{"description": "d", "parameters": {}}]}, ["EXT-2.11-tools-register"]),
        ({"tools": {"name": "x"}}, ["EXT-2.11-tools-register"]),
        ({"tools": []}, ["EXT-2.12-no-empty-mutation"]),
    ],
)
def test_tools_register(params: dict[str, Any], expected: list[str]) -> None:
    assert service("tools/register", params) == expected


@pytest.mark.parametrize(("count", "ok"), [(255, True), (256, True), (257, False)])
def test_register_and_catalog_bound(count: int, ok: bool) -> None:
    tools = [{**TOOL, "name": f"t{i}"} for i in range(count)]
    assert set(service("tools/register", {"tools": tools})) == (set() if ok else {"EXT-2.11-tools-register"})
    catalog = frozenset(f"old{i}" for i in range(count - 1))
    one = {"tools": [TOOL]}
    assert service("tools/register", one, catalog=catalog) == ([] if ok else ["EXT-2.11-tools-register"])


def test_register_needs_the_feature() -> None:
    assert service("tools/register", {"tools": [TOOL]}, NEGOTIATED) == ["EXT-2.11-tools-register"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"names": ["ableton_tracks"]}, []),
        ({"names": ["missing_is_fine"]}, []),
        ({"names": "ableton_tracks"}, ["EXT-2.12-tools-unregister"]),
        ({"names": ["a", "a"]}, ["EXT-2.12-tools-unregister"]),
        ({"names": [""]}, ["EXT-2.12-tools-unregister"]),
        ({"names": [f"t{i}" for i in range(257)]}, ["EXT-2.12-tools-unregister"]),
        ({"names": []}, ["EXT-2.12-no-empty-mutation"]),
    ],
)
def test_tools_unregister(params: dict[str, Any], expected: list[str]) -> None:
    assert service("tools/unregister", params) == expected


def test_registration_prompt_metadata_rules_on_0_4() -> None:
    in_force = Negotiated("0.4", SERVICES.features | {"tool_prompt_metadata_v1"})
    good = {"tools": [{**TOOL, "prompt_snippet": "tracks", "prompt_guidelines": ["line\tone"]}]}
    assert service("tools/register", good, in_force) == []
    bad = {"tools": [{**TOOL, "prompt_snippet": "bell \x07"}]}
    assert service("tools/register", bad, in_force) == ["EXT-1.1-prompt-metadata-registration"]
    assert service("tools/register", good, SERVICES) == ["EXT-1.1-prompt-metadata-registration"]


def test_message_rules() -> None:
    assert broken(er.owner_field_scope("tools/register", {"resource_owner": {}})) == ["EXT-2-owner-field-scope"]
    assert broken(er.owner_field_scope("composer/set", {"resource_owner": {}})) == []
    assert broken(er.owner_field_scope("presentation/update", {"resource_owner": {}})) == []  # §2.5 allows it
    assert broken(er.reserved_method_prefix("rpc.discover")) == ["JSONRPC-4-reserved-method-prefix"]
    assert broken(er.reserved_method_prefix("$/progress")) == []
    assert broken(er.request_id_not_null(None)) == ["JSONRPC-4-id-not-null"]
    assert broken(er.request_id_not_null(0)) == []
    assert broken(er.no_batch([{"jsonrpc": "2.0"}])) == ["JSONRPC-6-no-batch"]
    assert broken(er.no_batch({"jsonrpc": "2.0"})) == []
    torn = b'{"jsonrpc":"2.0","method":"no{"jsonrpc":"2.0","method":"x"}'
    assert broken(er.single_writer(torn, readable=False)) == ["EXT-0-extension-single-writer"]
    assert broken(er.single_writer(b"{not json", readable=False)) == []
