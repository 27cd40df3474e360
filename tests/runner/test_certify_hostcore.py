"""``octet-conformance hostcore``: the reference host-core certifies clean;
exit statuses, matrix.json, JUnit and traces; bad host-cores end in bounded
time with no process left."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.cli import hostcore_command, main
from conformance.peers.rpc_client import DATA_DIR
from conformance.report.matrix import matrix, results
from conformance.runner.hostcore import certify_hostcore, reference_command
from conformance.runner.profiles import Profile

ROOT = Path(__file__).resolve().parents[2]
HOSTCORES = ROOT / "fixtures" / "hostcores"
TINY = Profile("tiny", examples=2, steps=10)


def fixture_argv(name: str) -> list[str]:
    return ["--", "python3", str(HOSTCORES / name / "main.py"), "--data-dir", DATA_DIR]


def test_reference_certifies_clean(
    tmp_path: Path, no_leftover_processes: None, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report"
    assert main(["hostcore", "--profile", "quick", "--report-dir", str(report)]) == 0, capsys.readouterr()
    matrix = json.loads((report / "matrix.json").read_text(encoding="utf-8"))
    assert matrix["target"]["role"] == "hostcore"
    assert matrix["summary"]["fail"] == matrix["summary"]["warn"] == matrix["summary"]["error"] == 0
    # Every check the catalog claims for a host-core was exercised, not merely never violated.
    passed = {r["id"] for r in matrix["results"] if r["verdict"] == "pass"}
    assert {"RPC-10-01-handshake", "RPC-3-calls-require-handshake", "RPC-4-session.list"} <= passed
    assert {"RPC-7-shutting-down", "RPC-2-pipe-error-ends-host"} <= passed
    # The 30 s admission wait is held only in the thorough profile: untested here, never passed.
    assert {r["verdict"] for r in matrix["results"] if r["id"] == "RPC-2.1-wait-timeout"} == {"untested"}
    # Every §10 acceptance item has its named check, and the reference passes it.
    acceptance = {r["id"] for r in matrix["results"] if r["id"].startswith("RPC-10-") and r["id"][7:9].isdigit()}
    assert len(acceptance) == 13 and acceptance <= passed, sorted(acceptance - passed)
    assert all(r["document"] in ("host-rpc-protocol", "jsonrpc-2.0") for r in matrix["results"])
    suite = ET.parse(report / "junit.xml").getroot()
    assert suite.get("failures") == "0" and suite.get("errors") == "0"


def test_a_failure_leaves_its_trace(tmp_path: Path, no_leftover_processes: None) -> None:
    command = hostcore_command(fixture_argv("no-handshake-gate"))
    run = certify_hostcore(command, TINY, 7, response_s=10, trace_dir=tmp_path / "traces")
    row = matrix(run, tmp_path)["results"]
    found = next(r for r in row if r["id"] == "RPC-3-calls-require-handshake")
    assert found["verdict"] == "fail" and found["trace"] == "traces/RPC-3-calls-require-handshake.jsonl"
    assert found["replay"] == "octet-conformance replay traces/RPC-3-calls-require-handshake.jsonl"
    lines = (tmp_path / found["trace"]).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["requirement"] == "RPC-3-calls-require-handshake" and header["role"] == "hostcore"
    assert any('"app.health"' in line for line in lines[1:])  # the call that should have been refused


@pytest.mark.parametrize("name", ["never-answers", "floods-stdout"])
def test_a_silent_or_flooding_hostcore_gets_a_verdict_in_bounded_time(
    tmp_path: Path, name: str, no_leftover_processes: None
) -> None:
    argv = ["hostcore", "--patience", "2", "--report-dir", str(tmp_path), *fixture_argv(name)]
    assert main(argv) == 1
    matrix = json.loads((tmp_path / "matrix.json").read_text(encoding="utf-8"))
    verdicts = {r["id"]: r["verdict"] for r in matrix["results"]}
    assert verdicts["RPC-10-01-handshake"] == "fail"
    assert matrix["run"]["duration_s"] < 60  # a guard against hanging, not a performance goal


def test_a_command_that_cannot_start_is_a_harness_error(tmp_path: Path) -> None:
    argv = ["hostcore", "--report-dir", str(tmp_path), "--", str(tmp_path / "no-such-hostcore"), DATA_DIR]
    assert main(argv) == 2
    assert not (tmp_path / "matrix.json").exists()  # refused before anything ran, no verdict written


def test_no_command_means_the_reference() -> None:
    assert hostcore_command([]) == reference_command()
    assert hostcore_command(["--", "x", DATA_DIR]).argv == ("x", DATA_DIR)


def test_equal_seeds_give_equal_results(no_leftover_processes: None) -> None:
    runs = [certify_hostcore(reference_command(), TINY, 7, response_s=10) for _ in range(2)]
    assert results(matrix(runs[0])) == results(matrix(runs[1]))


def test_one_part_of_the_walk_runs_alone(no_leftover_processes: None) -> None:
    """A profile of no examples with one walk part (what fixture tests use):
    the reference passes what that part exercises and nothing else runs."""
    walk_only = Profile("walk", examples=0, steps=0)
    run = certify_hostcore(reference_command(), walk_only, 7, oversized=False, walks=["forks"])
    verdicts = {v.requirement.id: v.verdict for v in run.verdicts}
    assert not run.harness_errors and "fail" not in verdicts.values()
    assert verdicts["RPC-10-08-fork-idle"] == verdicts["RPC-4-todowrite-rules"] == "pass"
    assert verdicts["RPC-10-13-bash-shell"] == verdicts["RPC-4-notification.markRead"] == "untested"
