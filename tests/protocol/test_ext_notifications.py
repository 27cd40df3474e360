"""Notification validators for §2.1 and §2.6 (ext_notifications)."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import conformance.strategies as strategies
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import ext_notifications as en
from conformance.protocol.ext_types import Negotiated
from conformance.protocol.violations import Exercise, Finding, Violation

BASE = frozenset({"request_cancellation", "content_parts"})
NO_PROGRESS = Negotiated("0.2", BASE)
LEGACY = Negotiated("0.1")
PROGRESS = Negotiated("0.2", BASE | {"request_progress"})
DECORATION = Negotiated("0.2", BASE | {"request_progress", "progress_decoration"})
PROGRESS_04 = Negotiated("0.4", BASE | {"request_progress"})

STATUS_EVENT = {"type": "status", "message": "Fetched 3 of 10 results", "current": 3, "total": 10, "unit": "results"}


def progress(event: Any, **changes: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"request_id": 2, "sequence": 7, "event": event}
    params.update(changes)
    return params


def violations(findings: Iterable[Finding]) -> list[Violation]:
    return [f for f in findings if isinstance(f, Violation)]


def exercised(findings: Iterable[Finding]) -> set[str]:
    return {f.requirement for f in findings if isinstance(f, Exercise)}


# -- §2.6 progress-needs-feature ---------------------------------------------------


def test_progress_with_feature_is_exercised_and_clean() -> None:
    findings = list(en.check_progress_event(progress(STATUS_EVENT), negotiated=PROGRESS))
    assert findings == [Exercise("EXT-2.6-progress-needs-feature"), Exercise("EXT-2.6-event-shape")]


@pytest.mark.parametrize(
    ("negotiated", "words"),
    [(NO_PROGRESS, "request_progress was not negotiated"), (LEGACY, "API 0.1")],
)
def test_progress_without_feature(negotiated: Negotiated, words: str) -> None:
    findings = list(en.check_progress_event(progress(STATUS_EVENT), negotiated=negotiated))
    [violation] = violations(findings)
    assert violation.requirement == "EXT-2.6-progress-needs-feature"
    assert words in violation.message
    # The shape rule is conditional on the feature, so it is not evaluated.
    assert exercised(findings) == {"EXT-2.6-progress-needs-feature"}


def test_malformed_progress_without_feature_reports_only_the_feature() -> None:
    findings = list(en.check_progress_event("junk", negotiated=NO_PROGRESS))
    assert {v.requirement for v in violations(findings)} == {"EXT-2.6-progress-needs-feature"}


# -- §2.6 event-shape -------------------------------------------------------------------

VALID_PROGRESS: list[tuple[Any, Negotiated]] = [
    (progress(STATUS_EVENT), PROGRESS),
    (progress({"type": "status", "message": ""}), PROGRESS),
    (progress({"type": "status", "message": "m", "current": 0.5, "total": None, "unit": None}), PROGRESS),
    (progress(STATUS_EVENT, request_id="req-7", sequence=0), PROGRESS),
    (progress(STATUS_EVENT, sequence=2**64), PROGRESS),
    (progress(STATUS_EVENT, sequence=3.0), PROGRESS),  # integral numbers are integers in JSON
    (progress(STATUS_EVENT, extra={"future": True}), PROGRESS),
    (progress({"type": "output", "stream": "stdout", "encoding": "utf8", "data": "line\n"}), PROGRESS),
    (progress({"type": "output", "stream": "stderr", "encoding": "utf8", "data": ""}), PROGRESS),
    (
        progress(
            {"type": "output", "stream": "stdout", "encoding": "base64", "data": base64.b64encode(b"\0\xff").decode()}
        ),
        PROGRESS,
    ),
    (progress({"type": "output", "stream": "stdout", "encoding": "base64", "data": ""}), PROGRESS),
    (progress({"type": "decoration", "label": "cache hit"}), DECORATION),
    (progress({"type": "decoration", "label": "cache", "detail": "warm"}), DECORATION),
    (progress({"type": "partial_result", "result": {"content": [{"type": "text", "text": "so far"}]}}), PROGRESS_04),
    (progress({"type": "status", "message": "m", "annotation": 1}), PROGRESS_04),
]


@pytest.mark.parametrize(("params", "negotiated"), VALID_PROGRESS)
def test_valid_progress_events(params: Any, negotiated: Negotiated) -> None:
    findings = list(en.check_progress_event(params, negotiated=negotiated))
    assert violations(findings) == []
    assert "EXT-2.6-event-shape" in exercised(findings)


OUTPUT = {"type": "output", "stream": "stdout", "encoding": "utf8", "data": "x"}

INVALID_PROGRESS: list[tuple[Any, Negotiated, str, tuple[str | int, ...]]] = [
    (None, PROGRESS, "params is null; expected an object", ()),
    ([2, 7, STATUS_EVENT], PROGRESS, "params is an array; expected an object", ()),
    (
        {"sequence": 1, "event": STATUS_EVENT},
        PROGRESS,
        "params has no request_id; expected an integer or a string",
        (),
    ),
    (
        progress(STATUS_EVENT, request_id=True),
        PROGRESS,
        "params.request_id is a boolean; expected an integer or a string",
        ("request_id",),
    ),
    (
        progress(STATUS_EVENT, request_id=None),
        PROGRESS,
        "params.request_id is null; expected an integer or a string",
        ("request_id",),
    ),
    (
        progress(STATUS_EVENT, request_id=2.5),
        PROGRESS,
        "params.request_id is a number; expected an integer or a string",
        ("request_id",),
    ),
    ({"request_id": 2, "event": STATUS_EVENT}, PROGRESS, "params has no sequence; expected an integer", ()),
    (progress(STATUS_EVENT, sequence=-1), PROGRESS, "params.sequence is -1; expected an integer >= 0", ("sequence",)),
    (
        progress(STATUS_EVENT, sequence=True),
        PROGRESS,
        "params.sequence is a boolean; expected an integer",
        ("sequence",),
    ),
    (progress(STATUS_EVENT, sequence=1.5), PROGRESS, "params.sequence is 1.5; expected an integer", ("sequence",)),
    (progress(STATUS_EVENT, sequence="7"), PROGRESS, "params.sequence is a string; expected an integer", ("sequence",)),
    (progress(STATUS_EVENT, sequence=None), PROGRESS, "params.sequence is null; expected an integer", ("sequence",)),
    ({"request_id": 2, "sequence": 1}, PROGRESS, "params has no event; expected an object", ()),
    (progress("status"), PROGRESS, "params.event is a string; expected an object", ("event",)),
    (
        progress({"message": "m"}),
        PROGRESS,
        "params.event.type is missing; expected one of status, output, decoration",
        ("event", "type"),
    ),
    (
        progress({"type": "log", "message": "m"}),
        PROGRESS,
        "params.event.type is 'log'; expected one of status, output, decoration",
        ("event", "type"),
    ),
    (
        progress({"type": ["status"]}),
        PROGRESS,
        "params.event.type is an array; expected one of status, output, decoration",
        ("event", "type"),
    ),
    # status
    (progress({"type": "status"}), PROGRESS, "params.event has no message; expected a string", ("event",)),
    (
        progress({"type": "status", "message": 3}),
        PROGRESS,
        "params.event.message is an integer; expected a string",
        ("event", "message"),
    ),
    (
        progress({"type": "status", "message": "m", "current": "3"}),
        PROGRESS,
        "params.event.current is a string; expected a number",
        ("event", "current"),
    ),
    (
        progress({"type": "status", "message": "m", "total": False}),
        PROGRESS,
        "params.event.total is a boolean; expected a number",
        ("event", "total"),
    ),
    (
        progress({"type": "status", "message": "m", "unit": 1}),
        PROGRESS,
        "params.event.unit is an integer; expected a string",
        ("event", "unit"),
    ),
    # output
    (
        progress({**OUTPUT, "stream": "stdin"}),
        PROGRESS,
        "params.event.stream is 'stdin'; expected one of stdout, stderr",
        ("event", "stream"),
    ),
    (
        progress({k: v for k, v in OUTPUT.items() if k != "stream"}),
        PROGRESS,
        "params.event has no stream; expected one of stdout, stderr",
        ("event",),
    ),
    (
        progress({**OUTPUT, "encoding": "hex"}),
        PROGRESS,
        "params.event.encoding is 'hex'; expected one of utf8, base64",
        ("event", "encoding"),
    ),
    (
        progress({k: v for k, v in OUTPUT.items() if k != "encoding"}),
        PROGRESS,
        "params.event has no encoding; expected one of utf8, base64",
        ("event",),
    ),
    (
        progress({k: v for k, v in OUTPUT.items() if k != "data"}),
        PROGRESS,
        "params.event has no data; expected a string",
        ("event",),
    ),
    (
        progress({**OUTPUT, "data": [104, 105]}),
        PROGRESS,
        "params.event.data is an array; expected a string",
        ("event", "data"),
    ),
    # decoration
    (
        progress({"type": "decoration", "label": "l"}),
        PROGRESS,
        "params.event is a decoration event but progress_decoration was not negotiated",
        ("event", "type"),
    ),
    (progress({"type": "decoration"}), DECORATION, "params.event has no label; expected a string", ("event",)),
    (
        progress({"type": "decoration", "label": "l", "detail": {}}),
        DECORATION,
        "params.event.detail is an object; expected a string",
        ("event", "detail"),
    ),
    # partial_result (API 0.4 only, §2.25)
    (
        progress({"type": "partial_result", "result": {"content": []}}),
        PROGRESS,
        "params.event.type is 'partial_result', an API 0.4 event (§2.25), on API 0.2; "
        "expected one of status, output, decoration",
        ("event", "type"),
    ),
    (
        progress({"type": "partial_result"}),
        PROGRESS_04,
        "params.event.result is missing; expected an object",
        ("event", "result"),
    ),
    (
        progress({"type": "partial_result", "result": {"is_error": False}}),
        PROGRESS_04,
        "params.event.result has no content",
        ("event", "result"),
    ),
]


@pytest.mark.parametrize(("params", "negotiated", "message", "path"), INVALID_PROGRESS)
def test_invalid_progress_events(
    params: Any, negotiated: Negotiated, message: str, path: tuple[str | int, ...]
) -> None:
    findings = list(en.check_progress_event(params, negotiated=negotiated))
    assert [(v.requirement, v.message, v.path) for v in violations(findings)] == [
        ("EXT-2.6-event-shape", message, path)
    ]


@pytest.mark.parametrize("data", ["aGk", "a", "!!!!", "aGk=\n", "aGk=aGk=x", "żółw", "aGk_"])
def test_base64_data_must_decode(data: str) -> None:
    params = progress({"type": "output", "stream": "stdout", "encoding": "base64", "data": data})
    [violation] = violations(en.check_progress_event(params, negotiated=PROGRESS))
    assert violation.requirement == "EXT-2.6-event-shape"
    assert violation.path == ("event", "data")
    assert "not valid base64" in violation.message


def test_utf8_data_is_not_decoded_as_base64() -> None:
    params = progress({"type": "output", "stream": "stdout", "encoding": "utf8", "data": "!!!!"})
    assert violations(en.check_progress_event(params, negotiated=PROGRESS)) == []


def test_several_problems_are_all_reported() -> None:
    params = {"request_id": [], "sequence": -5, "event": {"type": "output", "stream": 1, "encoding": "b64"}}
    assert [v.path for v in violations(en.check_progress_event(params, negotiated=PROGRESS))] == [
        ("request_id",),
        ("sequence",),
        ("event", "stream"),
        ("event", "encoding"),
        ("event",),
    ]


def test_long_values_are_quoted_short() -> None:
    params = progress({"type": "x" * 100_000})
    [violation] = violations(en.check_progress_event(params, negotiated=PROGRESS))
    assert len(violation.message) < 200


# -- §2.1 notification -------------------------------------------------------------------

VALID_NOTIFICATIONS: list[Any] = [
    {"level": "success", "title": "Hello", "message": "hello_world greeted tinkerer"},
    {"message": "level defaults to info"},
    {"message": "m", "level": None, "title": None},
    {"message": "", "level": "warning"},
    {"message": "m", "level": "error", "extra": [1, 2]},
    *({"message": "m", "level": level} for level in ("info", "success", "warning", "error")),
]


@pytest.mark.parametrize("params", VALID_NOTIFICATIONS)
def test_valid_notifications(params: Any) -> None:
    assert list(en.check_notification(params)) == [Exercise("EXT-2.1-notification-shape")]


INVALID_NOTIFICATIONS: list[tuple[Any, str, tuple[str | int, ...]]] = [
    (None, "params is null; expected an object", ()),
    (["m"], "params is an array; expected an object", ()),
    ({}, "params has no message; expected a string", ()),
    ({"level": "info", "message": None}, "params.message is null; expected a string", ("message",)),
    ({"message": 5}, "params.message is an integer; expected a string", ("message",)),
    (
        {"message": "m", "level": "debug"},
        "params.level is 'debug'; expected one of info, success, warning, error",
        ("level",),
    ),
    (
        {"message": "m", "level": "INFO"},
        "params.level is 'INFO'; expected one of info, success, warning, error",
        ("level",),
    ),
    (
        {"message": "m", "level": 1},
        "params.level is an integer; expected one of info, success, warning, error",
        ("level",),
    ),
    ({"message": "m", "title": ["t"]}, "params.title is an array; expected a string", ("title",)),
]


@pytest.mark.parametrize(("params", "message", "path"), INVALID_NOTIFICATIONS)
def test_invalid_notifications(params: Any, message: str, path: tuple[str | int, ...]) -> None:
    findings = list(en.check_notification(params))
    assert findings[0] == Exercise("EXT-2.1-notification-shape")
    assert [(v.requirement, v.message, v.path) for v in violations(findings)] == [
        ("EXT-2.1-notification-shape", message, path)
    ]


# -- never raises, whatever JSON arrives -----------------------------------------------

json_values = strategies.json_values(
    max_leaves=40,
    keys=[
        "type",
        "status",
        "output",
        "decoration",
        "partial_result",
        "stream",
        "stdout",
        "encoding",
        "base64",
        "utf8",
        "data",
        "label",
        "message",
        "level",
        "title",
        "result",
        "content",
        "request_id",
        "sequence",
        "event",
    ],
)
negotiations = st.sampled_from([LEGACY, NO_PROGRESS, PROGRESS, DECORATION, PROGRESS_04])
KNOWN_IDS = {"EXT-2.1-notification-shape", "EXT-2.6-progress-needs-feature", "EXT-2.6-event-shape"}


def assert_well_formed(findings: list[Finding]) -> None:
    assert findings and isinstance(findings[0], Exercise)
    for finding in findings:
        assert isinstance(finding, Exercise | Violation)
        assert finding.requirement in KNOWN_IDS
        if isinstance(finding, Violation):
            assert finding.message and isinstance(finding.path, tuple)
            assert finding.requirement in exercised(findings)


@given(params=json_values, negotiated=negotiations)
def test_progress_never_raises(params: Any, negotiated: Negotiated) -> None:
    assert_well_formed(list(en.check_progress_event(params, negotiated=negotiated)))


@given(
    params=st.fixed_dictionaries(
        {
            "request_id": json_values,
            "sequence": json_values,
            "event": st.dictionaries(
                st.sampled_from(["type", "message", "stream", "encoding", "data", "label"]), json_values
            ),
        },
    ),
    negotiated=negotiations,
)
def test_progress_like_values_never_raise(params: Any, negotiated: Negotiated) -> None:
    assert_well_formed(list(en.check_progress_event(params, negotiated=negotiated)))


@given(params=json_values)
def test_notification_never_raises(params: Any) -> None:
    assert_well_formed(list(en.check_notification(params)))
