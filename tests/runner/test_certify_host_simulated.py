"""``host --simulate``: the reference host, its probes and the harness on the virtual clock."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from fault_catalogs import fault_catalog  # tests/fault_catalogs.py (tests/ is on sys.path)

from conformance.cli import main
from conformance.evidence import Recorder
from conformance.machines.host import HostMachine, machine_for
from conformance.peers import host_simulated
from conformance.peers.host_rig import HostRig, RigPace
from conformance.peers.host_simulated import SimulatedHost
from conformance.protocol.framing import Frame
from conformance.protocol.limits import FAILED_RESTARTS_BEFORE_PARK, MAX_FRAME_BYTES
from conformance.reference.host.config import HostConfig
from conformance.reference.host.connection import Connection
from conformance.reference.host.supervisor import RestartBudget
from conformance.runner.extension import RunResult
from conformance.runner.host import _play, certify_host
from conformance.runner.profiles import PROFILES
from conformance.scenarios.host_packaging import stderr_flood
from conformance.scenarios.storm_steps import SHAPES


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
    fault_catalog("hosts", "host_driver_faults").FAULTS["double-cancel"]()
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


# -- HostMachine rules on the virtual clock: frame shapes, crashes, restart storms ----------


def _machine(api_version: str = "0.2") -> tuple[SimulatedHost, Recorder, type[HostMachine]]:
    sim, recorder = SimulatedHost(), Recorder()
    bound = machine_for(sim.driver, sim.listener, recorder, api_version, **sim.rig_options(10.0))
    return sim, recorder, bound


def _in_world(sim: SimulatedHost, job: Callable[[], Any]) -> Any:
    def body() -> Any:
        sim.driver.hello()
        try:
            return job()
        finally:
            sim.driver.exit()

    try:
        return sim.run(body)
    finally:
        sim.listener.close()


def _answered_in_every_shape(api_version: str = "0.2") -> Recorder:
    sim, recorder, bound = _machine(api_version)

    def job() -> None:
        machine = bound()
        machine.load()
        for shape in SHAPES:
            machine.call()
            machine._answer(sorted(machine.model.open), shape)
        machine.call()
        machine.call()
        machine._answer(sorted(machine.model.open), "coalesced")
        machine.teardown()

    _in_world(sim, job)
    return recorder


def test_answers_split_joined_or_crlf_are_read_by_the_reference_host() -> None:
    recorder = _answered_in_every_shape()
    assert recorder.exercised["EXT-0-host-reads-frames"] == len(SHAPES) + 2
    assert not recorder.violations and not recorder.harness_errors


def test_a_host_whose_frame_bound_is_too_small_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    def config(**overrides: Any) -> HostConfig:
        return HostConfig(**{"max_frame_bytes": MAX_FRAME_BYTES - 2, **overrides})  # the fault: under 1 MiB - 1

    monkeypatch.setattr(host_simulated, "HostConfig", config)
    recorder = _answered_in_every_shape()
    assert list(recorder.violations) == ["EXT-0-host-reads-frames"]
    assert "1 MiB - 1 bytes" in recorder.violations["EXT-0-host-reads-frames"][0].violation.message


def test_a_host_refusing_crlf_lines_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Connection._on_frame

    def on_frame(self: Connection, event: Any) -> None:
        if isinstance(event, Frame) and event.terminator == "crlf":
            self.diagnose("bad-frame", "CR is not allowed")  # the fault
            return
        original(self, event)

    monkeypatch.setattr(Connection, "_on_frame", on_frame)
    recorder = _answered_in_every_shape()
    assert list(recorder.violations) == ["EXT-0-host-reads-frames"]
    assert "with CR LF" in recorder.violations["EXT-0-host-reads-frames"][0].violation.message


def _storm(failures: int) -> tuple[Recorder, HostMachine]:
    sim, recorder, bound = _machine()
    box: list[HostMachine] = []

    def job() -> None:
        machine = bound()
        box.append(machine)
        machine.load()
        machine.call()
        machine.crash(failures)  # with a call in flight
        if machine.live:
            machine.call()
            machine._answer(sorted(machine.model.open), "line")
        machine.teardown()

    _in_world(sim, job)
    return recorder, box[0]


def test_reference_host_restarts_within_the_backoff_ceiling() -> None:
    recorder, machine = _storm(2)
    assert machine.live and machine.storm is not None and machine.storm.attempts == 3
    assert recorder.exercised["EXT-5-host-backoff"] == 3 and recorder.exercised["EXT-0-host-reads-frames"] == 1
    assert not recorder.violations and not recorder.harness_errors


def test_reference_host_parks_after_eight_failed_restarts() -> None:
    recorder, machine = _storm(FAILED_RESTARTS_BEFORE_PARK + 1)
    assert not machine.live and machine.storm is not None
    assert machine.storm.attempts == FAILED_RESTARTS_BEFORE_PARK
    assert recorder.exercised["EXT-5-host-parks-after-failures"] == 1
    assert not recorder.violations and not recorder.harness_errors


def test_a_host_waiting_past_the_ceiling_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        RestartBudget, "next_delay", lambda self: self.config.restarts.backoff_cap_s
    )  # the fault: no jitter
    recorder, _ = _storm(0)
    assert list(recorder.violations) == ["EXT-5-host-backoff"]
    assert "not parked" in recorder.violations["EXT-5-host-backoff"][0].violation.message


def test_a_host_that_never_parks_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RestartBudget, "on_attempt", lambda self: None)  # the fault: failures never counted
    monkeypatch.setattr(RestartBudget, "next_delay", lambda self: 0.01)
    recorder, _ = _storm(FAILED_RESTARTS_BEFORE_PARK + 1)
    assert list(recorder.violations) == ["EXT-5-host-parks-after-failures"]


def test_a_scenario_needing_processes_stops_quietly_when_simulated() -> None:
    """A stderr flood cannot back-pressure a simulated pipe: the scenario stops
    there (left to subprocess runs) instead of passing or erroring."""
    sim, recorder = SimulatedHost(), Recorder()

    def job() -> None:
        rig = HostRig(sim.driver, sim.listener, recorder, pace=RigPace(**sim.rig_options(10.0)))  # type: ignore[arg-type]
        try:
            _play(stderr_flood(newlines=True)("0.2"), rig)
        finally:
            rig.close()

    _in_world(sim, job)
    assert not recorder.harness_errors and not recorder.violations
    assert "EXT-0-host-drains-stderr" not in recorder.exercised
