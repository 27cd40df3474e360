"""``octet-conformance replay`` of host RPC traces: a client's and a host-core's
failure is re-run from its trace and reproduces; against a correct target it
does not; an extension --target is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import client_command, main
from conformance.evidence import Recorder
from conformance.peers.rpc_client import DATA_DIR, HostcoreCommand
from conformance.runner.client import certify_client
from conformance.runner.profiles import Profile
from conformance.runner.rpc_replay import rpc_role
from conformance.scenarios.hostcore_handshake import handshake_scenario

ROOT = Path(__file__).resolve().parents[2]
TINY = Profile("tiny", examples=1, steps=5)


def test_a_client_failure_replays(
    tmp_path: Path, no_leftover_processes: None, capsys: pytest.CaptureFixture[str]
) -> None:
    command = client_command(["--", "python3", str(ROOT / "fixtures" / "clients" / "early-call" / "main.py")])
    certify_client(command, TINY, 7, response_s=10, trace_dir=tmp_path, oversized=False)
    trace = tmp_path / "RPC-3-client-no-calls-before-handshake.jsonl"
    assert rpc_role(trace) == "client"
    assert main(["replay", str(trace)]) == 1
    assert "reproduced 1/1" in capsys.readouterr().out


def test_a_client_trace_against_a_correct_client_does_not_reproduce(
    tmp_path: Path, no_leftover_processes: None, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "RPC-3-client-no-calls-before-handshake.jsonl"
    header = {
        "format": "octet-conformance/trace@1",
        "role": "client",
        "target": {"role": "client", "argv": ["octet-hostcore-client"], "cwd": str(tmp_path)},
        "profile": "quick",
        "seed": 7,
        "context": "scenario=session",
        "requirement": "RPC-3-client-no-calls-before-handshake",
    }
    trace.write_text(json.dumps(header) + "\n", encoding="utf-8")
    assert main(["replay", str(trace)]) == 0
    assert "reproduced 0/1" in capsys.readouterr().out


def test_a_hostcore_scenario_failure_replays(tmp_path: Path, no_leftover_processes: None) -> None:
    fixture = ROOT / "fixtures" / "hostcores" / "no-handshake-gate" / "main.py"
    command = HostcoreCommand(("python3", str(fixture), "--data-dir", DATA_DIR), ROOT)
    recorder = Recorder(trace_dir=tmp_path / "traces", run_info={"profile": "quick", "seed": 1})
    handshake_scenario(command, recorder, 10, tmp_path)
    trace = tmp_path / "traces" / "RPC-3-calls-require-handshake.jsonl"
    assert json.loads(trace.read_text(encoding="utf-8").splitlines()[0])["context"] == "scenario=handshake"
    assert main(["replay", str(trace), "--runs", "2"]) == 1


def test_an_rpc_trace_takes_no_extension_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    header = {
        "format": "octet-conformance/trace@1",
        "role": "client",
        "target": {"role": "client", "argv": ["x"], "cwd": str(tmp_path)},
        "requirement": "RPC-3-client-handshake-first",
    }
    trace.write_text(json.dumps(header) + "\n", encoding="utf-8")
    manifest = tmp_path / "extension.toml"
    manifest.write_text("", encoding="utf-8")
    assert main(["replay", str(trace), "--target", str(manifest)]) == 2
    assert "replays its own command" in capsys.readouterr().err
