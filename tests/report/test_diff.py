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


def edited(run, change) -> None:  # type: ignore[no-untyped-def]
    document = json.loads((run / "matrix.json").read_text())
    change(document)
    (run / "matrix.json").write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (lambda m: m["target"].update(role="hostcore"), "role differs: A extension, B hostcore"),
        (lambda m: m["target"].update(name="other"), "target differs: A t, B other"),
    ],
    ids=["role", "target"],
)
def test_runs_of_different_roles_or_targets_are_refused_unless_forced(  # type: ignore[no-untyped-def]
    make_run, capsys, change, line
) -> None:
    a, b = make_run("a", BEFORE), make_run("b", AFTER)
    edited(b, change)
    assert main(["diff", str(a), str(b)]) == 2
    out, err = capsys.readouterr()
    assert not out and f"{a} and {b}: {line}" in err and "--force compares them anyway" in err
    assert main(["diff", str(a), str(b), "--force"]) == 1  # compared: the new failure is found
    out = capsys.readouterr().out
    assert out.startswith(f"note: {line}\n") and "new failures: 1" in out


def test_profile_seed_api_and_catalog_differences_are_shown(make_run, capsys) -> None:  # type: ignore[no-untyped-def]
    a, b = make_run("a", BEFORE), make_run("b", BEFORE)
    edited(a, lambda m: m.update(catalog={"revisions": {"extension-wire-protocol": "rev 1", "jsonrpc-2.0": "j"}}))

    def later(m) -> None:  # type: ignore[no-untyped-def]
        m["suite"].update(profile="default", seed=2)
        m["target"].update(api_version="0.4")
        m["catalog"] = {"revisions": {"extension-wire-protocol": "rev 2", "jsonrpc-2.0": "j"}}

    edited(b, later)
    assert main(["diff", str(a), str(b)]) == 0  # one target, one role: compared, with what differs said first
    out = capsys.readouterr().out
    assert out.splitlines()[:4] == [
        "note: profile differs: A quick, B default",
        "note: seed differs: A 1, B 2",
        "note: API version differs: A 0.2, B 0.4",
        "note: catalog revision of extension-wire-protocol differs: A rev 1, B rev 2",
    ]
    edited(a, lambda m: m.pop("catalog"))  # a matrix@3 recorded no revision
    assert main(["diff", str(a), str(b), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"what": "catalog revision of jsonrpc-2.0", "a": "not recorded", "b": "j"} in document["differences"]
    assert main(["diff", str(a), str(a), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["differences"] == []
