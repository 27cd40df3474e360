"""Runs that always end (issue 19): the wall-time budget and short waits.

The budget (conformance/profiles.py) is a backstop: when it runs out, what
the run had not judged is ``untested: run budget spent``, never ``pass``, and
the failures found are kept. Short waits: once a target has shown itself
unresponsive, later waits judged against what already failed are short,
across the parts of a run too, with the same results for any ``--jobs``.
No assertion here is about time: the budgets used are far below the waits
they cut, so what is asserted is which verdicts came out.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.evidence import BUDGET_SPENT, Carried, Recorder, StepContext
from conformance.manifest import load_manifest
from conformance.peers.ext_host import Patience
from conformance.protocol.violations import Violation
from conformance.report.console import run_lines
from conformance.report.matrix import matrix, results
from conformance.requirements import by_id, load_catalog
from conformance.runner.extension import certify_extension
from conformance.runner.host import certify_host
from conformance.runner.profiles import PROFILES, Profile
from conformance.verdicts import applies_to_api, decide

ROOT = Path(__file__).resolve().parents[2]
STOPS_ANSWERING = ROOT / "fixtures" / "extensions" / "standalone-stops-answering" / "extension.toml"
MINIHOST = ROOT / "fixtures" / "hosts" / "_standalone" / "minihost.py"
SMALL = Profile("budget", examples=4, steps=8, shards=2)
ANSWERED = "JSONRPC-5-every-request-answered"


def test_a_spent_budget_keeps_failures_and_passes_nothing() -> None:
    recorder = Recorder()
    recorder.context = StepContext("example 1")
    recorder.violate(Violation(ANSWERED, "tool/call request 2 was never answered"))
    recorder.exercise("JSONRPC-5-id-echo")
    recorder.spend_budget()
    verdicts = {v.requirement.id: v for v in decide(load_catalog(), recorder, role="extension", api_version="0.2")}
    assert verdicts[ANSWERED].verdict == "fail"
    assert (verdicts["JSONRPC-5-id-echo"].verdict, verdicts["JSONRPC-5-id-echo"].evidence) == ("untested", BUDGET_SPENT)
    assert not [v for v in verdicts.values() if v.verdict == "pass"]
    # Certain skips stay skips; a feature not negotiated by the cut is no reason to skip any more.
    assert verdicts["EXT-1.1-protocol-absent-0.1"].verdict == "skip"
    checked = [v for v in verdicts.values() if v.requirement.has_check and applies_to_api(v.requirement, "0.2")]
    assert any(v.requirement.features for v in checked)
    assert all(v.evidence == BUDGET_SPENT for v in checked if v.requirement.id != ANSWERED)


def test_a_wait_the_budget_cuts_is_no_finding(tmp_path: Path) -> None:
    """The first request after initialize waits 30 s for an answer that never
    comes; a 3 s budget ends that wait without judging it."""
    manifest = load_manifest(STOPS_ANSWERING)
    run = certify_extension(manifest, SMALL, 1, Patience.of(30.0), trace_dir=tmp_path / "traces", budget_s=3.0)
    verdicts = {v.requirement.id: v for v in run.verdicts}
    assert run.budget_spent is not None and run.budget_s == 3.0
    assert (verdicts[ANSWERED].verdict, verdicts[ANSWERED].evidence) == ("untested", BUDGET_SPENT)
    assert not [v for v in run.verdicts if v.verdict in ("pass", "fail", "warn", "error")]
    lines = list(run_lines(run, tmp_path / "matrix.json"))
    assert len([line for line in lines if "run budget spent" in line]) == 1, lines
    assert matrix(run, tmp_path)["run"]["budget"] == {"seconds": 3.0, "spent": run.budget_spent}


def test_a_target_that_stops_answering_is_waited_for_once_whatever_the_jobs(tmp_path: Path) -> None:
    """The first part runs alone and learns that the target leaves requests
    unanswered; every later part starts from that, for one job or two, and
    both give the same results."""
    manifest = load_manifest(STOPS_ANSWERING)
    runs = [
        certify_extension(manifest, SMALL, 1, Patience.of(3.0), trace_dir=tmp_path / f"j{jobs}", jobs=jobs)
        for jobs in (1, 2)
    ]
    one, two = (results(matrix(run, tmp_path / f"j{jobs}")) for jobs, run in zip((1, 2), runs, strict=True))
    differ = [(a, b) for a, b in zip(one["results"], two["results"], strict=True) if a != b]
    assert one == two, differ
    for run in runs:
        assert run.budget_spent is None
        assert dict(run.short_deadlines)[ANSWERED] == "scenario=stdin-eof"  # learned in the first part
        failed = {v.requirement.id for v in run.verdicts if v.verdict == "fail"}
        assert failed == {ANSWERED, "EXT-1.8-shutdown-ack", "EXT-1.8-exit-after-shutdown"}


def test_carried_short_waits_apply_only_to_requirements_that_failed() -> None:
    first = Recorder()
    first.missed_deadline(ANSWERED)
    later = Recorder()
    later.carry(first.carried())
    assert later.carried() == Carried(((ANSWERED, ""),), 0)
    assert later.deadline_s(ANSWERED, 15.0) == 0.5
    assert later.deadline_s({ANSWERED, "EXT-1.10-keeps-serving"}, 15.0) == 15.0  # one of them never failed
    assert later.deadline_s("EXT-1.8-shutdown-ack", 2.0) == 2.0


def test_a_host_that_skips_initialize_is_waited_for_in_full_once(tmp_path: Path) -> None:
    """A host that never sends initialize: the first load waits the full
    patience for a first request, later loads a short while (same verdicts)."""
    driver = ["python3", str(MINIHOST), "--fault", "skips-initialize"]
    run = certify_host(driver, "0.2", PROFILES["quick"], 1, patience_s=3.0, machine=False,
                       only=("call-and-shutdown", "cancel-then-late-response"))  # fmt: skip
    assert not run.harness_errors
    assert {v.requirement.id: v.verdict for v in run.verdicts}["EXT-1.1-host-initialize-first"] == "fail"
    assert dict(run.short_deadlines)["EXT-1.1-host-initialize-first"].startswith("scenario=call-and-shutdown")


def test_budgets_in_the_readme_are_the_profiles() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, profile in PROFILES.items():
        row = re.search(rf"^\| `{name}` \| (\d+) s \| (\d+) s \| (\d+) s \| (\d+) s \|$", readme, re.MULTILINE)
        assert row is not None, name
        roles = ("extension", "host", "hostcore", "client")
        assert [float(n) for n in row.groups()] == [profile.budget_s(role) for role in roles], name


@pytest.mark.parametrize("role", ["extension", "host", "hostcore", "client"])
def test_a_longer_patience_stretches_the_budget(role: str) -> None:
    quick = PROFILES["quick"]
    assert quick.budget_s(role, 1.0) == quick.budget_s(role)  # shorter: never less
    assert quick.budget_s(role, 60.0) > quick.budget_s(role)
    assert quick.budget_s(role) >= 8 * quick.sized_for_s(role)


def test_requirement_ids_named_here_exist() -> None:
    known = by_id()
    assert {ANSWERED, "EXT-1.1-host-initialize-first", "EXT-1.1-protocol-absent-0.1"} <= set(known)
