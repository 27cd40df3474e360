"""The simulated transport: a deterministic scheduler on a virtual clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.manifest import load_manifest
from conformance.peers.simulated import simulated_reference
from conformance.protocol.framing import Frame, encode_frame
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES
from conformance.transport.simulated import Scheduler, SimStdin, SimulatedTarget, Sink, VirtualClock
from conformance.transport.target import Received, StdoutClosed

MANIFESTS = Path(__file__).resolve().parents[2] / "conformance" / "reference" / "extension" / "manifests"


def frames(target: SimulatedTarget, timeout: float = 1.0) -> list[bytes]:
    out = []
    while isinstance(item := target.next_event(timeout), Received):
        assert isinstance(item.event, Frame)
        out.append(item.event.payload)
    return out


def echo(stdin: SimStdin, stdout: Sink, scheduler: Scheduler) -> int:
    """Echo every chunk as a frame after a virtual delay, from a worker each."""

    def later(chunk: bytes) -> Callable[[], None]:
        def job() -> None:
            scheduler.event().wait(0.5 if chunk.startswith(b"slow") else 0.1)
            stdout.write(encode_frame(chunk.strip()))

        return job

    while chunk := stdin.read1(1024):
        scheduler.submit(later(chunk))
    return 0


def test_virtual_time_orders_workers_and_costs_no_wall_time() -> None:
    target = SimulatedTarget(echo, 1024)
    target.write(b"slow one\n", timeout=1)
    target.write(b"fast two\n", timeout=1)
    started = time.monotonic()
    assert frames(target) == [b"fast two", b"slow one"]  # the shorter virtual wait finishes first
    assert time.monotonic() - started < 0.5 <= target.now()


def test_timeout_advances_the_clock_exactly() -> None:
    target = SimulatedTarget(echo, 1024)
    assert target.next_event(2.5) is None
    assert target.now() == pytest.approx(2.5)


def test_stdin_eof_ends_the_program_and_stdout_closes() -> None:
    target = SimulatedTarget(echo, 1024)
    target.write(b"x\n", timeout=1)
    target.close_stdin()
    assert target.wait_exit(1.0) == 0
    assert not target.running()
    # the worker never got to run: the process ended first, as a real one would
    assert isinstance(target.next_event(1.0), StdoutClosed)
    with pytest.raises(BrokenPipeError):
        target.write(b"y\n", timeout=1)


def test_a_crashing_program_exits_1_with_its_traceback_on_stderr() -> None:
    def crash(stdin: SimStdin, stdout: Sink, scheduler: Scheduler) -> int:
        raise RuntimeError("boom")

    target = SimulatedTarget(crash, 1024)
    assert target.wait_exit(1.0) == 1
    assert "RuntimeError: boom" in target.stderr_excerpt()


def test_kill_ends_waiting_workers() -> None:
    ended: list[str] = []

    def sleeper(stdin: SimStdin, stdout: Sink, scheduler: Scheduler) -> int:
        def job() -> None:
            try:
                scheduler.event().wait()
            finally:
                ended.append("worker")

        scheduler.submit(job)
        stdin.read1()
        return 0

    target = SimulatedTarget(sleeper, 1024)
    assert target.next_event(0.1) is None
    target.kill_group()
    assert ended == ["worker"] and not target.running() and not target.group_alive()


def test_conditions_wait_with_virtual_timeouts() -> None:
    clock = VirtualClock()
    scheduler = Scheduler(clock, on_crash=lambda exc: None)
    condition = scheduler.condition()
    results: list[tuple[bool, float]] = []
    flag = [False]

    scheduler.submit(lambda: results.append((bool(condition.wait_for(lambda: flag[0], 3.0)), clock.now)))
    scheduler.run_until_idle()
    clock.now = scheduler.next_timer() or 0.0
    scheduler.run_until_idle()
    assert results == [(False, 3.0)]


def test_oversized_output_is_reported_as_by_a_process() -> None:
    def big(stdin: SimStdin, stdout: Sink, scheduler: Scheduler) -> int:
        stdout.write(b"x" * 100 + b"\n")
        return 0

    target = SimulatedTarget(big, 64)
    item = target.next_event(1.0)
    assert isinstance(item, Received) and not isinstance(item.event, Frame)


def test_the_simulated_reference_certifies_like_the_process() -> None:
    """Same verdicts as the subprocess run of the reference, and the same
    verdicts and evidence on every run (the scheduler is deterministic)."""
    manifest = load_manifest(MANIFESTS / "api-0.2" / "extension.toml")
    profile = PROFILES["quick"]
    runs = [certify_extension(manifest, profile, profile.default_seed, launcher=simulated_reference) for _ in "ab"]
    assert runs[0].verdicts == runs[1].verdicts
    bad = [(v.requirement.id, v.verdict) for v in runs[0].verdicts if v.verdict in ("fail", "warn", "error")]
    assert not bad
    assert sum(v.verdict == "pass" for v in runs[0].verdicts) >= 60


def test_only_the_reference_can_be_simulated(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "extensions" / "double-reply" / "extension.toml"
    with pytest.raises(ValueError, match="only it can be simulated"):
        simulated_reference(load_manifest(fixture))
