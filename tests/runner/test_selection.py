"""Selection (``--only``, ``--section``, ``--side``, ``--feature``), ``--strict``
and ``--list``/``--dry-run`` (conformance/selection.py, cli.py): unselected
requirements are neither recorded nor reported, a selection that selects
nothing is refused, and should violations fail a strict run."""

from __future__ import annotations

import json
import re
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from conformance.cli import RunOptions, main, run_and_report
from conformance.evidence import Recorder
from conformance.manifest import Manifest
from conformance.protocol.violations import Violation
from conformance.requirements import by_id, load_catalog
from conformance.results import RunResult
from conformance.runner.profiles import PROFILES
from conformance.selection import Selection, in_section
from conformance.verdicts import ROLE_DOCUMENTS, Verdict, concerns, decide

MANIFEST = Manifest(Path("/tmp/extension.toml"), "x", "1", "0.2", "0.8.0", ("python3", "main.py"), {}, {})
EXT = [r for r in load_catalog() if concerns(r, "extension")]


@pytest.mark.parametrize(
    ("section", "wanted", "hit"),
    [("1.9", "1.9", True), ("1.9.2", "1.9", True), ("1.4b", "1.4", True), ("1.10", "1.1", False),
     ("1.1", "1", True), ("10", "1", False), ("2.24b", "2.24b", True), ("1.4", "1.4b", False)],
)  # fmt: skip
def test_sections_take_their_subsections_and_lettered_companions(section: str, wanted: str, hit: bool) -> None:
    assert in_section(section, wanted) is hit


def test_options_combine_within_as_or_across_as_and() -> None:
    sel = Selection(only=("EXT-1.9-*", "JSONRPC-5-*"), features=("request_cancellation",))
    chosen = sel.select(EXT)
    assert chosen and all(r.id.startswith("EXT-1.9-") and "request_cancellation" in r.features for r in chosen)
    assert Selection().everything and Selection().judged(EXT) is None
    assert sel.judged(EXT) == frozenset(r.id for r in chosen)
    assert sel.describe() == "--only EXT-1.9-* --only JSONRPC-5-* --feature request_cancellation"


def test_values_that_select_nothing_are_each_named() -> None:
    problems = Selection(only=("EXT-1.9-*", "EXT-99-*"), sections=("42",)).problems(EXT, "extension")
    assert "--only 'EXT-99-*' matches none" in problems[0] and "--section '42' matches none" in problems[1]
    assert "requirements --side extension" in problems[-1]
    both = Selection(only=("RPC-*",), sections=("1.9",)).problems(load_catalog(), "extension")
    assert "together select none" in both[0]


def test_unselected_violations_are_not_recorded_nor_reported() -> None:
    chosen, other = "JSONRPC-5-one-response", "JSONRPC-5-id-echo"
    recorder = Recorder(judged=frozenset({chosen}))
    recorder.violate(Violation(other, "unselected"))
    recorder.violate(Violation(chosen, "selected"))
    assert list(recorder.violations) == [chosen]  # so no trace is saved and nothing shrunk for the other
    verdicts = decide(load_catalog(), recorder, role="extension", api_version="0.2")
    assert [(v.requirement.id, v.verdict) for v in verdicts] == [(chosen, "fail")]


def run_with(verdict: str, tmp_path: Path, *, strict: bool) -> int:
    req = by_id()["JSONRPC-4-id-not-null"]  # a should
    assert req.level == "should"

    def produce(trace_dir: Path, watch: object) -> RunResult:
        return RunResult(MANIFEST, PROFILES["quick"], 1, (Verdict(req, verdict, "e"),), (), {})

    options = RunOptions("extension", strict=strict, verbosity=0)
    return run_and_report(tmp_path / f"r-{strict}-{verdict}", produce, options=options, budget=1)


def test_strict_makes_a_should_violation_fail_the_run(tmp_path: Path) -> None:
    assert run_with("warn", tmp_path, strict=False) == 0
    assert run_with("warn", tmp_path, strict=True) == 1
    junit = (tmp_path / "r-True-warn" / "junit.xml").read_text()
    assert "<failure" in junit and 'failures="1"' in junit  # the dashboard agrees with the exit status
    assert "<failure" not in (tmp_path / "r-False-warn" / "junit.xml").read_text()
    assert run_with("xfail", tmp_path, strict=True) == 0  # expected by a baseline: not a new failure
    assert run_with("pass", tmp_path, strict=True) == 0


@pytest.mark.parametrize(
    ("command", "glob"),
    [(["extension"], "EXT-1.9-*"), (["host", "--dry-run"], "EXT-1.9-host-*"),
     (["hostcore", "--", "no-such-program-xyz", "{data_dir}"], "RPC-3-*")],
)  # fmt: skip
def test_dry_run_lists_and_starts_nothing(command: list[str], glob: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    report = tmp_path / "never"
    argv = [command[0], "--only", glob, "--list", "--report-dir", str(report), *command[1:]]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("dry run: ") and out[-1].endswith("nothing was started")
    ids = [line.split("\t")[0] for line in out[:-1]]
    assert ids and all(fnmatchcase(i, glob) for i in ids)
    assert not report.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["extension", "--only", "EXT-1.9-nope"], "--only 'EXT-1.9-nope' matches none"),
        (["host", "--feature", "no_such_feature"], "--feature 'no_such_feature' matches none"),
        (["hostcore", "--section", "1.9"], "--section '1.9' matches none"),
        # The README offers --side both for every role; the extension protocol's catalog has no
        # both-side entry, so there it selects nothing and gets that answer, not "invalid choice".
        (["extension", "--side", "both"], "--side 'both' matches none of the requirements the extension"),
        (["host", "--side", "both"], "--side 'both' matches none of the requirements the host"),
    ],
)
def test_a_selection_of_nothing_is_refused_before_anything_runs(argv: list[str], message: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("role", ["hostcore", "client"])
def test_side_both_selects_the_requirements_on_both_peers(role: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main([role, "--side", "both", "--list"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[:-1]]
    wanted = [r.id for r in load_catalog() if r.side == "both" and r.document in ROLE_DOCUMENTS[role]]
    assert [row[0] for row in rows] == wanted and {row[3] for row in rows} == {"both"}


def test_a_selected_run_reports_only_the_selection(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The reference extension in-process: the matrix holds the selected
    requirements only, and says which options selected them."""
    report = tmp_path / "r"
    argv = ["extension", "--simulate", "--profile", "quick", "--report-dir", str(report), "--section", "1.9",
            "--only", "JSONRPC-5-*"]  # fmt: skip
    assert main(argv) == 2  # nothing of 1.9 is named JSONRPC-5-*
    assert "together select none" in capsys.readouterr().err
    argv[-2:] = ["--only", "EXT-1.9-*", "--verbose"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    matrix = json.loads((report / "matrix.json").read_text())
    ids = [r["id"] for r in matrix["results"]]
    assert ids == [r.id for r in EXT if r.section == "1.9"]
    assert {r["verdict"] for r in matrix["results"]} == {"pass"}
    assert matrix["suite"]["selection"] == "--only EXT-1.9-* --section 1.9"
    assert "selection: --only EXT-1.9-* --section 1.9" in out
    assert "\r" not in err and "\x1b" not in err  # not a terminal: plain progress lines (with --verbose)
    # Which phases a 0.5 s tick happens to see depends on the machine's speed;
    # what a line says is proven deterministically in test_progress.py.
    assert all(re.fullmatch(r"\[\s*\d+\.\ds\] .+", line) for line in err.splitlines()), err
