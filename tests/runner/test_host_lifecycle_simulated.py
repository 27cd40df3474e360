"""§5 lifecycle checks on the virtual clock: the reference host passes them,
each lifecycle fault of the reference host fails exactly its requirement,
and HostMachine's reload follows both generations."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from fault_catalogs import fault_catalog  # tests/fault_catalogs.py (tests/ is on sys.path)

from conformance.evidence import Recorder
from conformance.machines.host import machine_for
from conformance.peers.host_simulated import SimulatedHost
from conformance.reference.host.driver import Driver
from conformance.runner.host import certify_host
from conformance.runner.profiles import PROFILES

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"
LIFECYCLE = sorted(p for p in HOSTS.glob("lifecycle-*") if (p / "expect.toml").is_file())


LIFECYCLE_FAULTS = fault_catalog("hosts", "host_lifecycle_faults").LIFECYCLE_FAULTS
# Faults without a subprocess fixture (their scenario runs on the virtual clock only).
SIMULATED_ONLY = {
    "lifecycle-no-ready-reset": ("0.2", "lifecycle-ready-reset", "EXT-5-host-parks-after-failures", ()),
}


def _cases() -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    cases = []
    for folder in LIFECYCLE:
        expect = tomllib.loads((folder / "expect.toml").read_text(encoding="utf-8"))
        fault = expect["driver"][-1]  # lifecycle_driver.py NAME
        also = tuple(expect.get("also", ()))
        cases.append((fault, expect["api_version"], expect["scenarios"][0], expect["requirement"], also))
    cases += [(fault, *rest) for fault, rest in SIMULATED_ONLY.items()]
    return cases


def _flagged(api_version: str, only: tuple[str, ...]) -> dict[str, str]:
    run = certify_host((), api_version, PROFILES["quick"], 1, simulate=True, machine=False, only=only)
    assert not run.harness_errors
    return {v.requirement.id: v.verdict for v in run.verdicts if v.verdict in ("fail", "warn", "error")}


@pytest.mark.parametrize("api_version", ["0.1", "0.2", "0.4"])
def test_reference_host_passes_every_lifecycle_scenario(api_version: str) -> None:
    run = certify_host((), api_version, PROFILES["quick"], 1, simulate=True, machine=False, only=("lifecycle-",))
    assert not run.harness_errors
    verdicts = {v.requirement.id: v.verdict for v in run.verdicts}
    assert not [r for r, v in verdicts.items() if v in ("fail", "warn", "error")]
    # every §5 rule of this API version is exercised, never left untested:
    section5 = {r: v for r, v in verdicts.items() if r.startswith("EXT-5-host-")}
    untested = {r for r, v in section5.items() if v == "untested"}
    # inspection/boundary/backoff belong to other scenarios; resident-policy has no check
    assert untested <= {
        "EXT-5-host-inspection",
        "EXT-5-host-generation-boundary",
        "EXT-5-host-backoff",
        "EXT-5-host-0.1-resident-policy",
        "EXT-5-host-every-turn-settled",  # no check: a reason true of the protocol (§1.10 best effort)
    }


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_lifecycle_fault_fails_its_requirement_on_the_virtual_clock(
    monkeypatch: pytest.MonkeyPatch, case: tuple[str, str, str, str, tuple[str, ...]]
) -> None:
    fault, api_version, scenario, requirement, also = case
    # The simulated driver makes its hosts as the fixture's driver does: of the
    # faulty class, through the driver's seam (undone after the test).
    monkeypatch.setattr(Driver, "host_class", LIFECYCLE_FAULTS[fault])
    flagged = _flagged(api_version, (scenario,))
    assert flagged == {rid: "fail" for rid in (requirement, *also)}


def test_the_machine_reloads_with_calls_in_flight() -> None:
    sim, recorder = SimulatedHost(), Recorder()
    bound = machine_for(sim.driver, sim.listener, recorder, "0.2", **sim.rig_options(10.0))
    box: list[Any] = []

    def body() -> None:
        sim.driver.hello()
        try:
            machine = bound()
            box.append(machine)
            machine.load()
            machine.call()
            machine.call()
            machine.reload()
            assert machine.live and not machine.model.open
            machine.call()
            machine._answer(sorted(machine.model.open), "line")
            machine.teardown()
        finally:
            sim.driver.exit()

    try:
        sim.run(body)
    finally:
        sim.listener.close()
    for rid in (
        "EXT-5-host-reload-candidate-first",
        "EXT-5-host-reload-drain-sequence",
        "EXT-5-host-no-replay-on-reload",
    ):
        assert recorder.exercised.get(rid), rid
    assert not recorder.violations and not recorder.harness_errors
