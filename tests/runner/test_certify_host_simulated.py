"""``host --simulate``: the reference host, its probes and the harness on the virtual clock."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.reference.host.connection import Connection
from conformance.reference.host.driver import FAULTS
from conformance.runner.extension import RunResult
from conformance.runner.host import certify_host
from conformance.runner.profiles import PROFILES


@cache
def simulated(api_version: str) -> RunResult:
    return certify_host((), api_version, PROFILES["quick"], 7, simulate=True)


def _verdicts(run: RunResult) -> list[tuple[str, str, str]]:
    return [(v.requirement.id, v.verdict, v.evidence) for v in run.verdicts]


@pytest.mark.parametrize("api_version", ["0.1", "0.2", "0.4"])
def test_reference_host_certifies_clean_on_the_virtual_clock(api_version: str) -> None:
    run = simulated(api_version)
    assert not run.harness_errors
    bad = [v for v in _verdicts(run) if v[1] in ("fail", "warn", "error")]
    assert not bad
    passed = {v.requirement.id for v in run.verdicts if v.verdict == "pass"}
    assert "EXT-1.1-host-initialize-first" in passed and "EXT-0-host-graceful-shutdown-request" in passed
    assert run.role == "host" and run.manifest.name == "octet-reference-host"


def test_same_seed_same_verdicts() -> None:
    again = certify_host((), "0.4", PROFILES["quick"], 7, simulate=True)
    assert _verdicts(again) == _verdicts(simulated("0.4"))


def test_a_faulty_host_fails_on_the_virtual_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulated path judges, it does not just pass: the double-cancel fault,
    switched on in-process (and undone by monkeypatch), is flagged at its rule."""
    monkeypatch.setattr(Connection, "_tombstone", Connection._tombstone)
    FAULTS["double-cancel"]()
    run = certify_host((), "0.2", PROFILES["quick"], 1, simulate=True, machine=False, only=("cancel-then",))
    flagged = [v.requirement.id for v in run.verdicts if v.verdict == "fail"]
    assert flagged == ["EXT-1.9-host-one-cancel-notification"]


def test_cli_simulate_writes_a_host_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["host", "--simulate", "--profile", "quick", "--api-version", "0.1", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    assert matrix["target"]["role"] == "host" and matrix["summary"]["fail"] == 0
    assert "simulated" in out


def test_cli_simulate_refuses_a_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["host", "--simulate", "--driver", "python3 my_driver.py", "--report-dir", str(tmp_path)])
    assert code == 2
    assert "--simulate runs only the bundled reference host" in capsys.readouterr().err
    assert not (tmp_path / "matrix.json").exists()
