"""Splitting a judge's message into expected and observed (conformance/report/failure.py)."""

from __future__ import annotations

import pytest

from conformance.report.failure import failure, split_evidence


@pytest.mark.parametrize(
    ("evidence", "expected", "observed", "path"),
    [
        (
            "cancelled tool/call 8 answered with error code -32603; "
            "expected -32800 (or a normal result) at .error.code",
            "-32800 (or a normal result)",
            "cancelled tool/call 8 answered with error code -32603",
            ".error.code",
        ),
        ("params is array; expected an object", "an object", "params is array", ""),
        (
            "content has 257 parts; limit 256 at .result.content",
            "at most 256",
            "content has 257 parts",
            ".result.content",
        ),
        ("method must be a string; got number", "method: a string", "method: number", ""),
        (
            "reply to an unreadable frame carries id 3; it must be null at .id",
            "null",
            "reply to an unreadable frame carries id 3",
            ".id",
        ),
        ("x at .a[0].b", "", "x at .a[0].b", ""),  # no known shape: whole, path and all
        ("request 4 answered a second time", "", "request 4 answered a second time", ""),
        ("two lines; expected\nno path at .x", "", "two lines; expected\nno path at .x", ""),
    ],
)
def test_split(evidence: str, expected: str, observed: str, path: str) -> None:
    assert split_evidence(evidence) == (expected, observed, path)


def test_failure_carries_its_place_in_the_spec() -> None:
    f = failure("EXT-1.9-x", "extension-wire-protocol", "1.9", "must", "statement", "a; expected b at .c")
    assert (f.where, f.expected, f.observed_at) == ("§1.9", "b", "a (at .c)")
