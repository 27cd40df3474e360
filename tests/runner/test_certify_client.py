"""``octet-conformance client``: the reference client certifies clean; exit
statuses, matrix.json (role "client"), JUnit and traces; a client that never
starts its host-core ends in bounded time with no process left."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.cli import client_command, main
from conformance.report.matrix import matrix, results
from conformance.requirements import load_catalog
from conformance.runner.client import certify_client, reference_command
from conformance.runner.profiles import Profile
from conformance.verdicts import TARGET_SIDES

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "fixtures" / "clients"
SETUP = ROOT / "fixtures" / "setup"
TINY = Profile("tiny", examples=1, steps=5)


# Both-side entries judged for host-cores only: a read split inside a UTF-8
# sequence cannot be forced through the probe relay's pipe (docs/catalog.md).
HOSTCORE_ONLY = {"RPC-2-utf8-split-reads"}


def test_reference_certifies_clean(
    tmp_path: Path, no_leftover_processes: None, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report"
    assert main(["client", "--profile", "quick", "--report-dir", str(report)]) == 0, capsys.readouterr()
    matrix = json.loads((report / "matrix.json").read_text(encoding="utf-8"))
    assert matrix["target"]["role"] == "client"
    assert matrix["summary"]["fail"] == matrix["summary"]["warn"] == matrix["summary"]["error"] == 0
    # Every client check of the catalog was exercised, not merely never violated.
    checked = {
        r.id
        for r in load_catalog()
        if r.has_check and r.side in TARGET_SIDES["client"] and r.document == "host-rpc-protocol"
    } - HOSTCORE_ONLY
    passed = {r["id"] for r in matrix["results"] if r["verdict"] == "pass"}
    assert checked <= passed, sorted(checked - passed)
    assert all(r["document"] == "host-rpc-protocol" for r in matrix["results"])
    suite = ET.parse(report / "junit.xml").getroot()
    assert suite.get("failures") == "0" and suite.get("errors") == "0"


def test_a_failure_leaves_its_trace(tmp_path: Path, no_leftover_processes: None) -> None:
    command = client_command(["--", "python3", str(CLIENTS / "early-call" / "main.py")])
    run = certify_client(command, TINY, 7, response_s=10, trace_dir=tmp_path / "traces", oversized=False)
    rows = matrix(run, tmp_path)["results"]
    found = next(r for r in rows if r["id"] == "RPC-3-client-no-calls-before-handshake")
    assert found["verdict"] == "fail" and found["trace"] == "traces/RPC-3-client-no-calls-before-handshake.jsonl"
    lines = (tmp_path / found["trace"]).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["role"] == "client" and header["scenario"] == "session"
    assert any("app.getVersion" in line for line in lines[1:])  # the early call, as the host-core read it


def test_a_client_that_never_starts_its_hostcore_fails_in_bounded_time(
    tmp_path: Path, no_leftover_processes: None
) -> None:
    argv = [
        "client",
        "--patience",
        "2",
        "--report-dir",
        str(tmp_path),
        "--",
        "python3",
        str(CLIENTS / "never-starts-hostcore" / "main.py"),
    ]
    assert main(argv) == 1
    matrix = json.loads((tmp_path / "matrix.json").read_text(encoding="utf-8"))
    assert {r["id"]: r["verdict"] for r in matrix["results"]}["RPC-10-01-handshake"] == "fail"
    assert matrix["run"]["duration_s"] < 60  # a guard against hanging, not a performance goal


@pytest.mark.parametrize("argv", [["sh", "-c", "exit 0"], ["python3", str(SETUP / "client-exits-at-once" / "main.py")]])
def test_a_client_that_exits_at_once_is_a_setup_failure_never_a_pass(
    argv: list[str], tmp_path: Path, no_leftover_processes: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """No host-core started, no operation read: nothing can be judged, so the
    run stops with exit 2 and the client's exit status, and writes no matrix
    (fixtures/setup/, tests/runner/test_setup_failures.py)."""
    assert main(["client", "--patience", "2", "--report-dir", str(tmp_path), "--", *argv]) == 2
    err = capsys.readouterr().err
    assert "exited without starting the host-core" in err and "exit status 0" in err
    assert not (tmp_path / "matrix.json").exists()


def test_a_command_that_cannot_start_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["client", "--report-dir", str(tmp_path), "--", str(tmp_path / "no-such-client")]) == 2
    assert "no-such-client" in capsys.readouterr().err
    assert not (tmp_path / "matrix.json").exists()


def test_no_command_means_the_reference() -> None:
    assert client_command([]) == reference_command()
    assert client_command(["--", "x", "y"]).argv == ("x", "y")


def test_a_client_breaking_the_driver_contract_is_a_harness_error(
    tmp_path: Path, no_leftover_processes: None, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "garbage.py"
    script.write_text("import sys\nprint('hello, I am not JSON', flush=True)\nsys.stdin.read()\n", encoding="utf-8")
    argv = ["client", "--patience", "2", "--report-dir", str(tmp_path / "r"), "--", "python3", str(script)]
    assert main(argv) == 2
    assert "driver contract" in capsys.readouterr().err


def test_equal_seeds_give_equal_results(no_leftover_processes: None) -> None:
    # A faulty client, so the evidence of a timing rule is compared too.
    command = client_command(["--", "python3", str(CLIENTS / "retries-too-soon" / "main.py")])
    runs = [certify_client(command, TINY, 7, response_s=10, oversized=False) for _ in range(2)]
    assert results(matrix(runs[0])) == results(matrix(runs[1]))
    assert any(r["verdict"] == "fail" for r in results(matrix(runs[0]))["results"])
