"""SIGTERM, SIGINT and SIGHUP end a certification promptly and honestly.

The real CLI certifies the reference extension in a process of its own; once
its first target runs, the test sends the signal and checks: exit status
128 + N, one line on stderr and no traceback, no target process left, and
the report directory exactly as it was (an earlier run's files and a user's
file untouched, no staging directory left behind).

The manifest is copied to a folder of the test's own, so "a target process"
means exactly "a process whose cwd is that folder" even while other tests
run the reference extension in parallel. The time to exit is printed (about
0.5-0.8 s measured here); the bound asserted only catches a hang.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "conformance" / "reference" / "extension" / "manifests" / "api-0.2" / "extension.toml"
HANG_GUARD_S = 10.0  # generous: the requirement is 2 s, measured well below it
START_GUARD_S = 60.0


def target_pids(folder: Path) -> list[int]:
    """Live processes whose cwd is ``folder`` (the copied manifest's folder)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            state = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if cwd == str(folder) and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def interrupt(argv: list[str], folder: Path, cwd: Path, signum: signal.Signals) -> tuple[int, str, str, float]:
    """Run the CLI; once a target runs in ``folder``, send ``signum``. The exit
    status, stdout, stderr and the seconds from the signal to the exit."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )
    try:
        deadline = time.monotonic() + START_GUARD_S
        while not target_pids(folder):
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before a target started"
            time.sleep(0.02)
        time.sleep(0.5)  # mid-run: initialize answered, the machine under way
        sent = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    print(f"{argv[0]} {signum.name}: exit {proc.returncode} {took:.2f} s after the signal")
    return proc.returncode, out, err, took


def reference_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "target"
    folder.mkdir()
    shutil.copy(REFERENCE, folder / "extension.toml")
    return folder


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_signal_ends_the_run_cleanly(signum: signal.Signals, tmp_path: Path) -> None:
    folder = reference_copy(tmp_path)
    report = tmp_path / "report"
    (report / "traces").mkdir(parents=True)
    (report / "matrix.json").write_text('{"an": "earlier run"}\n')
    (report / "traces" / "EXT-0-frame-bound.jsonl").write_text("earlier\n")
    (report / "notes.txt").write_text("the user's own file\n")
    before = snapshot(report)
    argv = ["extension", str(folder / "extension.toml"), "--profile", "quick", "--patience", "5"]
    code, out, err, took = interrupt([*argv, "--report-dir", str(report)], folder, tmp_path, signum)
    assert code == 128 + signum, err
    assert "Traceback" not in err
    assert err.strip().splitlines() == [err.strip()] and signum.name in err, err
    assert "left as it was" in err
    assert "matrix:" not in out  # no verdicts were printed either
    time.sleep(0.2)  # SIGKILLed processes may take a moment to disappear
    assert not target_pids(folder)
    assert snapshot(report) == before
    assert sorted(p.name for p in report.iterdir()) == ["matrix.json", "notes.txt", "traces"]


def test_fuzz_stopped_by_sigterm_keeps_no_regression_case(tmp_path: Path) -> None:
    """The correct reference can never yield a regression case; one saved from
    the interrupted round would mask real failures of its requirement later."""
    folder = reference_copy(tmp_path)
    argv = ["fuzz", str(folder / "extension.toml"), "--seconds", "120", "--seed", "7", "--patience", "5"]
    argv += ["--work-dir", str(tmp_path / "work"), "--regressions", str(tmp_path / "cases")]
    code, out, err, took = interrupt(argv, folder, tmp_path, signal.SIGTERM)
    assert code == 143, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "new failing requirement" not in out
    time.sleep(0.2)
    assert not target_pids(folder)
    assert not (tmp_path / "cases").exists() or not list((tmp_path / "cases").iterdir())


def scratch_folders(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob("octet-conformance-scratch-*"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_interrupted_parallel_run_leaves_nothing_behind(signum: signal.Signals, tmp_path: Path) -> None:
    """--jobs 2, stopped while its worker processes run targets: their scratch
    folders (§2.8, one per harness process) are removed although the workers
    are killed, and no multiprocessing resource_tracker warning is printed."""
    folder = reference_copy(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    argv = [sys.executable, "-m", "conformance.cli", "extension", str(folder / "extension.toml"), "--jobs", "2"]
    argv += ["--profile", "quick", "--patience", "5", "--report-dir", str(tmp_path / "report")]
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=dict(os.environ, TMPDIR=str(tmp)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )
    mine = f"octet-conformance-scratch-{proc.pid}"
    try:
        deadline = time.monotonic() + START_GUARD_S
        while not [name for name in scratch_folders(tmp) if name != mine]:  # a worker's targets run
            assert proc.poll() is None and time.monotonic() < deadline, "no worker started a target"
            time.sleep(0.02)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + signum, err
    assert "resource_tracker" not in err and "Traceback" not in err, err
    assert scratch_folders(tmp) == []
    time.sleep(0.2)  # SIGKILLed processes may take a moment to disappear
    assert not target_pids(folder)
