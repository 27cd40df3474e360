"""What a certification prints (conformance/report/console.py)."""

from __future__ import annotations

from pathlib import Path

from conformance.manifest import Manifest
from conformance.report.console import MAX_ERROR_LINES, QUIET, VERBOSE, replayed_lines, run_lines
from conformance.requirements import by_id, load_catalog
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
    assert lines[at + 1].strip() == "observed: never answered"
    assert lines[at + 2].strip() == "the extension was killed by signal 9"
    shown = lines[at + 4 : -1]
    assert shown[-1] == "        | \\x1b[31mfatal\\x1b[0m" and len(shown) == 8  # the last lines only


def test_no_exit_status_no_stderr_lines() -> None:
    req = load_catalog()[0]
    observed = Observation("step 1", 3, 1, 0.1, (), "chatter on stderr\n")
    lines = list(run_lines(run_of([Verdict(req, "fail", "bad frame", observed=observed)]), Path("m.json")))
    assert not any("chatter" in line for line in lines)


def _failing(tmp: Path, verdict: str = "fail", replay: bool = True) -> tuple[RunResult, Path]:
    """A failure whose trace was written in a staging directory ``tmp/stage``."""
    req = load_catalog()[0]
    stage = tmp / "stage"
    trace = stage / "traces" / f"{req.id}.jsonl"
    v = Verdict(
        req, verdict, "bad frame", trace=str(trace), replay=f"octet-conformance replay {trace}" if replay else None
    )
    return run_of([v, Verdict(load_catalog()[1], "pass", "exercised, never violated")]), stage


def test_each_failure_is_followed_by_its_replay_command_in_the_report_directory(tmp_path: Path) -> None:
    run, stage = _failing(tmp_path)
    report = tmp_path / "my reports"
    lines = list(run_lines(run, report / "matrix.json", written_in=stage))
    at = next(i for i, line in enumerate(lines) if line.startswith("  FAIL"))
    rid = load_catalog()[0].id
    assert lines[at + 1] == "        observed: bad frame"
    assert lines[at + 2] == f"        replay: octet-conformance replay '{report}/traces/{rid}.jsonl'"
    assert not any("stage" in line for line in lines)  # the staging directory is gone once the run is in place


def test_a_trace_without_a_replay_command_is_named(tmp_path: Path) -> None:
    run, stage = _failing(tmp_path, "warn", replay=False)  # host-core traces: replay does not take them yet
    lines = list(run_lines(run, tmp_path / "r" / "matrix.json", written_in=stage))
    assert lines[3] == f"        trace: {tmp_path}/r/traces/{load_catalog()[0].id}.jsonl"


def test_quiet_and_verbose(tmp_path: Path) -> None:
    run, stage = _failing(tmp_path)
    quiet = list(run_lines(run, tmp_path / "r" / "matrix.json", verbosity=QUIET, written_in=stage))
    # the summary and the failure (what it broke, what was seen): no replay, no matrix line
    assert len(quiet) == 3 and quiet[1].startswith("  FAIL") and quiet[2] == "        observed: bad frame"
    verbose = list(run_lines(run, tmp_path / "r" / "matrix.json", verbosity=VERBOSE, written_in=stage))
    assert any(line.startswith("  PASS     " + load_catalog()[1].id) for line in verbose)
    assert any("replay:" in line for line in verbose)


def test_replay_shows_the_evidence_or_what_it_could_not_re_create() -> None:
    frame = {"dir": "target->host", "index": 4, "step": 56, "why": "the frame judged", "text": '{"id":2}\x1b[2J'}
    lines = list(replayed_lines("JSONRPC-5-one-response", 5, 5, "request 2 answered twice", [frame], []))
    # The frame's text is escaped like any target text.
    assert lines == [
        "JSONRPC-5-one-response: reproduced 5/5: request 2 answered twice",
        '  evidence: target->host #4 (step 56, the frame judged): {"id":2}\\x1b[2J',
    ]
    unmet = ["the write of step 3 (host->target #2) followed 4 target frames; replay saw 3 frames"] * 2
    lines = list(replayed_lines("EXT-1.9-x", 5, 3, "m", [frame], unmet))
    assert lines[2:] == [f"  not re-created: {unmet[0]}"]  # said once
    lines = list(replayed_lines("EXT-1.9-x", 5, 0, "not violated during replay", [], []))
    assert lines[1].startswith("  every ordering the trace records was re-created")
    # A replay that re-runs a scenario tracks no relation: nothing is claimed about them.
    assert list(replayed_lines("RPC-3-x", 2, 1, "m", [], None)) == ["RPC-3-x: reproduced 1/2: m"]


def _h2spec_lines(evidence: str, verdict: str = "fail") -> list[str]:
    req = by_id()["EXT-1.9-cancel-reply-code"]
    run = run_of([Verdict(req, verdict, evidence)])
    return [line for line in run_lines(run, Path("m.json"), verbosity=QUIET)][1:]


def test_a_failure_names_its_section_statement_expected_and_observed() -> None:
    req = by_id()["EXT-1.9-cancel-reply-code"]
    evidence = (
        "cancelled tool/call 8 answered with error code -32603; expected -32800 (or a normal result) at .error.code"
    )
    assert _h2spec_lines(evidence) == [
        f"  FAIL §1.9 EXT-1.9-cancel-reply-code \u2014 {req.summary}",
        "        expected: -32800 (or a normal result)",
        "        observed: cancelled tool/call 8 answered with error code -32603 (at .error.code)",
    ]


def test_a_message_that_cannot_be_split_is_all_observed_and_no_expected_is_invented() -> None:
    lines = _h2spec_lines("request 4 (tool/call) answered a second time", "warn")
    assert lines[0].startswith("  WARN §1.9 EXT-1.9-cancel-reply-code \u2014 ")
    assert lines[1:] == ["        observed: request 4 (tool/call) answered a second time"]


def test_target_text_in_a_failure_line_is_escaped() -> None:
    lines = _h2spec_lines("id \x1b[2J; expected 1")
    assert lines[1:] == ["        expected: 1", "        observed: id \\x1b[2J"]
