"""What a certification prints (conformance/report/console.py)."""

from __future__ import annotations

from pathlib import Path

from conformance.manifest import Manifest
from conformance.report.console import MAX_ERROR_LINES, run_lines
from conformance.requirements import load_catalog
from conformance.results import RunResult
from conformance.runner.profiles import PROFILES
from conformance.verdicts import Observation, Verdict

MANIFEST = Manifest(Path("/tmp/extension.toml"), "x", "1", "0.2", "0.8.0", ("python3", "main.py"), {}, {})


def run_of(verdicts: list[Verdict]) -> RunResult:
    return RunResult(MANIFEST, PROFILES["quick"], 1, tuple(verdicts), (), {})


def test_one_harness_failure_is_one_line_not_one_per_requirement() -> None:
    catalog = load_catalog()
    errors = [Verdict(r, "error", "harness error in state machine (details in run.harness_errors)") for r in catalog]
    lines = list(run_lines(run_of(errors), Path("m.json")))
    assert [line for line in lines if "ERROR" in line] == [
        f"  ERROR {len(catalog)} requirements: harness error in state machine (details in run.harness_errors)"
    ]


def test_a_few_errors_are_listed_by_requirement() -> None:
    catalog = load_catalog()[:MAX_ERROR_LINES]
    lines = list(run_lines(run_of([Verdict(r, "error", "harness error in x") for r in catalog]), Path("m.json")))
    assert [line.split(":")[0] for line in lines if "ERROR" in line] == [f"  ERROR {r.id}" for r in catalog]


def test_exit_status_and_stderr_tail_under_the_failure() -> None:
    req = load_catalog()[0]
    tail = "\n".join(f"line {i}" for i in range(20)) + "\n\x1b[31mfatal\x1b[0m\n"
    observed = Observation("scenario=stdin-eof", None, 1, 0.1, (("exit_status", -9.0),), tail)
    lines = list(run_lines(run_of([Verdict(req, "fail", "never answered", observed=observed)]), Path("m.json")))
    at = next(i for i, line in enumerate(lines) if line.startswith("  FAIL"))
    assert lines[at + 1].strip() == "the extension was killed by signal 9"
    shown = lines[at + 3 : -1]
    assert shown[-1] == "        | \\x1b[31mfatal\\x1b[0m" and len(shown) == 8  # the last lines only


def test_no_exit_status_no_stderr_lines() -> None:
    req = load_catalog()[0]
    observed = Observation("step 1", 3, 1, 0.1, (), "chatter on stderr\n")
    lines = list(run_lines(run_of([Verdict(req, "fail", "bad frame", observed=observed)]), Path("m.json")))
    assert not any("chatter" in line for line in lines)
