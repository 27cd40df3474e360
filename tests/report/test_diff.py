"""`diff RUN_A RUN_B` on hand-made recorded runs: each category, the exit
status (1 only on new failures), text and JSON output."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main
from conformance.report.diff import category, diff_runs
from conformance.report.rundir import load_run

BEFORE = {
    "JSONRPC-5-one-response": "pass",  # -> fail: new failure
    "EXT-1.1-tool-description": "fail",  # -> pass: fix
    "EXT-0-json-text": "untested",  # -> pass: newly tested
    "EXT-0-frame-bound": "pass",  # -> untested: newly untested
    "EXT-0-stdin-eof-exit": "pass",  # -> warn: other change
    "EXT-0-one-object-per-line": "xfail",  # -> fail: the baseline lost it, not a new failure
    "EXT-0-diagnostics-stderr": "pass",  # unchanged
    "EXT-0-no-blank-lines": "pass",  # absent in B: newly untested
}
AFTER = {
    "JSONRPC-5-one-response": "fail",
    "EXT-1.1-tool-description": "pass",
    "EXT-0-json-text": "pass",
    "EXT-0-frame-bound": "untested",
    "EXT-0-stdin-eof-exit": "warn",
    "EXT-0-one-object-per-line": "fail",
    "EXT-0-diagnostics-stderr": "pass",
    "EXT-0-messages-after-initialize": "pass",  # absent in A: newly tested
}


def test_every_category(make_run) -> None:  # type: ignore[no-untyped-def]
    d = diff_runs(load_run(make_run("a", BEFORE)), load_run(make_run("b", AFTER)))
    assert [c.id for c in d.new_failures] == ["JSONRPC-5-one-response"]
    assert [c.id for c in d.fixes] == ["EXT-1.1-tool-description"]
    assert [c.id for c in d.newly_tested] == ["EXT-0-json-text", "EXT-0-messages-after-initialize"]
    assert [c.id for c in d.newly_untested] == ["EXT-0-frame-bound", "EXT-0-no-blank-lines"]
    assert [(c.id, c.before, c.after) for c in d.other_changes] == [
        ("EXT-0-stdin-eof-exit", "pass", "warn"),
        ("EXT-0-one-object-per-line", "xfail", "fail"),
    ]


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        ("pass", "pass", None),
        ("skip", "fail", "new_failures"),
        (None, "fail", "new_failures"),
        ("xfail", "pass", "fixes"),
        ("fail", "untested", "newly_untested"),
        ("skip", "pass", "other_changes"),  # not applicable before (another API version): not "newly tested"
        ("pass", "error", "other_changes"),
    ],
)
def test_category_edges(before: str | None, after: str | None, kind: str | None) -> None:
    assert category(before, after) == kind


def test_exit_status_text_and_json(make_run, capsys) -> None:  # type: ignore[no-untyped-def]
    a, b = make_run("a", BEFORE), make_run("b", AFTER)
    assert main(["diff", str(a), str(b)]) == 1
    text = capsys.readouterr().out
    assert "new failures: 1\n  JSONRPC-5-one-response: pass -> fail: fail evidence" in text
    assert "  EXT-0-no-blank-lines: pass -> absent: pass evidence" in text
    # Reversed, the fix becomes a new failure and the new failure a fix.
    assert main(["diff", str(b), str(a), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in document["new_failures"]] == ["EXT-1.1-tool-description"]
    assert document["fixes"] == [
        {"id": "JSONRPC-5-one-response", "before": "fail", "after": "pass", "evidence": "pass evidence"}
    ]
    assert document["a"] == str(b) and document["b"] == str(a)


def test_no_new_failures_exits_0(make_run, capsys) -> None:  # type: ignore[no-untyped-def]
    a = make_run("a", {"JSONRPC-5-one-response": "fail", "EXT-0-json-text": "pass"})
    b = make_run("b", {"JSONRPC-5-one-response": "fail", "EXT-0-json-text": "pass"})
    assert main(["diff", str(a), str(b), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert all(document[k] == [] for k in ("new_failures", "fixes", "newly_tested", "newly_untested", "other_changes"))


def test_requirements_outside_a_runs_selection_are_not_compared(make_run) -> None:  # type: ignore[no-untyped-def]
    a = make_run("a", BEFORE)
    b = make_run("b", {"JSONRPC-5-one-response": "fail"})
    document = json.loads((b / "matrix.json").read_text())
    document["suite"]["selection"] = "--only JSONRPC-5-*"
    (b / "matrix.json").write_text(json.dumps(document))
    d = diff_runs(load_run(a), load_run(b))
    assert [c.id for c in d.new_failures] == ["JSONRPC-5-one-response"]
    assert not d.newly_untested and not d.fixes and not d.other_changes  # the rest was not selected, not lost
    d = diff_runs(load_run(b), load_run(a))
    assert not d.newly_tested and [c.id for c in d.fixes] == ["JSONRPC-5-one-response"]
