"""Every extension-side size bound, through the validator entry points.

For each bound of ``conformance.strategies.oversized`` that the extension must
respect, every value shape and filler is embedded in an otherwise valid
message and judged by the same entry point the harness uses (framing and
``decode_event``, ``check_initialize_result``, ``check_manifest``,
``check_tool_result``, ``HostSession.received``): at N-1 and N nothing at all is
violated (and the rule ran); at N+1 only the bound's requirement is, once.
The per-module test files hold the exact messages; this file proves the
generators and the validators count the same units.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from conformance.strategies.oversized import BOUNDS, OFFSETS, Bound, Oversized

from conformance.protocol import limits
from conformance.protocol.ext_initialize import check_initialize_result
from conformance.protocol.ext_manifest import check_manifest
from conformance.protocol.ext_results import check_tool_result
from conformance.protocol.ext_session import HostSession, _key
from conformance.protocol.ext_types import ManifestInfo, Negotiated, Offer
from conformance.protocol.framing import Frame, FrameDecoder
from conformance.protocol.jsonrpc import decode_event, decode_frame
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Exercise, Finding, Violation

OFFER_04 = Offer("0.4", "0.2", limits.REQUIRED_FEATURES, ("tool_prompt_metadata_v1",), 8)
NEG_04 = Negotiated("0.4", frozenset(limits.REQUIRED_FEATURES))
TOOL = {"name": "t", "description": "A tool", "parameters": {"type": "object"}}
TEXT = {"type": "text", "text": "done"}


def _initialize(tool: dict[str, Any] | None = None, commands: list[Any] | None = None) -> list[Finding]:
    commands = [] if commands is None else commands
    result = {
        "api_version": "0.4",
        "tools": [{**TOOL, **(tool or {})}],
        "commands": commands,
        "protocol": {
            "version": "0.2",
            "features": [*limits.REQUIRED_FEATURES, "tool_prompt_metadata_v1"],
            "limits": {"max_concurrent_requests": 4},
        },
    }
    manifest = ManifestInfo("t", "1", "0.4", {"tools": ["t"], "commands": [c["name"] for c in commands]}, {})
    return list(check_initialize_result(result, offer=OFFER_04, manifest=manifest))


def _frame(data: bytes) -> list[Finding]:
    found: list[Finding] = []
    for event in FrameDecoder(max_frame_bytes=limits.MAX_FRAME_BYTES).feed(data):
        decoded = decode_event(event)
        found += [Exercise(r) for r in decoded.rules] + list(decoded.violations)
    return found


def _result(member: str) -> Callable[[Any], list[Finding]]:
    def judge(value: Any) -> list[Finding]:
        result = {"content": [TEXT], member: value} if member != "content" else {"content": value}
        return list(check_tool_result(result, negotiated=NEG_04, tool=None))

    return judge


def _session() -> HostSession:
    s = HostSession(ManifestInfo("t", "1", "0.4", {"tools": ["t"]}, {}), OFFER_04)
    s.sent_request(1, "initialize", {})
    init = {
        "api_version": "0.4",
        "tools": [TOOL],
        "commands": [],
        "protocol": {
            "version": "0.2",
            "features": list(limits.REQUIRED_FEATURES),
            "limits": {"max_concurrent_requests": 4},
        },
    }
    assert not _violations(_receive(s, {"jsonrpc": "2.0", "id": 1, "result": init}))
    s.sent_request(2, "tool/call", {"name": "t", "arguments": {}})
    return s


def _receive(s: HostSession, message: dict[str, Any]) -> list[Finding]:
    return s.received(decode_frame(Frame(0, dumps(message), "lf")))


def _confirm(cid: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": cid,
        "method": "confirmation/request",
        "params": {"parent_request_id": 2, "prompt": "Go?"},
    }


def _children(messages: Iterable[dict[str, Any]]) -> list[Finding]:
    s = _session()
    return [f for m in messages for f in _receive(s, m)]


def _child_ids(ids: range) -> list[Finding]:
    # The ids before the last are booked directly (the session keys them as
    # _key does); the last arrives as a real request and is judged.
    s = _session()
    s.child_ids_used.update(_key(i) for i in ids[:-1])
    return _receive(s, _confirm(ids[-1]))


JUDGES: dict[str, Callable[[Any], list[Finding]]] = {
    "frame": _frame,
    "commands": lambda commands: _initialize(commands=commands),
    "output-schema-depth": lambda schema: _initialize({"output_schema": schema}),
    "schema-property-name": lambda schema: _initialize({"output_schema": schema}),
    "prompt-guidelines": lambda guidelines: _initialize({"prompt_guidelines": guidelines}),
    "prompt-string": lambda text: _initialize({"prompt_snippet": text, "prompt_guidelines": [text]}),
    "secret-name": lambda name: list(check_manifest(ManifestInfo("t", "1", "0.2", {}, {"secrets": [name]}))),
    "content-parts": _result("content"),
    "structured-content-bytes": _result("structured_content"),
    "structured-content-depth": _result("structured_content"),
    "structured-content-nodes": _result("structured_content"),
    "metadata-bytes": _result("metadata"),
    "metadata-depth": _result("metadata"),
    "metadata-nodes": _result("metadata"),
    "metadata-key": _result("metadata"),
    "child-id-bytes": lambda cid: _children([_confirm(cid)]),
    "child-id-value": lambda cid: _children([_confirm(cid)]),
    "outstanding-children": _children,
    "child-ids-per-generation": _child_ids,
}
# Bounds the extension must respect whose value the suite can build.
EXTENSION_SIDE = [b for b in BOUNDS if b.side in ("extension", "both") and b.build is not None]


def _violations(found: list[Finding]) -> list[Violation]:
    return [f for f in found if isinstance(f, Violation)]


def test_every_extension_side_bound_has_a_judge() -> None:
    assert set(JUDGES) == {b.name for b in EXTENSION_SIDE}


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("b", EXTENSION_SIDE, ids=lambda b: b.name)
def test_the_validator_accepts_the_bound_and_flags_one_more(b: Bound, offset: int) -> None:
    for shape, filler in itertools.product(b.shapes, b.fillers):
        recipe = Oversized(b, offset, shape, filler)
        found = JUDGES[b.name](recipe.build())
        assert b.requirement in {f.requirement for f in found if isinstance(f, Exercise)}, recipe
        broken = [(v.requirement, v.message) for v in _violations(found)]
        if recipe.over:
            # prompt-string puts the string in two places: two findings, one requirement
            assert {r for r, _ in broken} == {b.requirement}, (recipe, broken)
            assert len(broken) == (2 if b.name == "prompt-string" else 1), (recipe, broken)
        else:
            assert broken == [], (recipe, broken)
