"""The command line, exit statuses, and the matrix.json / JUnit contracts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.report.matrix import FORMAT
from conformance.requirements import by_id
from conformance.verdicts import VERDICTS

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "conformance" / "reference" / "extension" / "manifests"
MANIFEST = """name = "x"
version = "1"
api_version = "0.2"
requires_octet = "{requires}"
command = ["python3", "main.py"]
"""


@pytest.mark.parametrize("requires", [">=0.8.0", "^0.8", ""])
def test_inexact_requires_octet_is_a_verdict_not_a_refusal(tmp_path: Path, requires: str) -> None:
    # §0: a present requirement that is not exact fails its catalog entry;
    # the manifest still loads, so the run goes on (exit 1, not 2).
    from conformance.manifest import load_manifest
    from conformance.protocol.ext_manifest import check_manifest
    from conformance.protocol.violations import Violation

    (tmp_path / "extension.toml").write_text(MANIFEST.format(requires=requires))
    found = check_manifest(load_manifest(tmp_path / "extension.toml").info)
    assert [f.requirement for f in found if isinstance(f, Violation)] == ["EXT-0-bundle-requires-octet"]


def test_manifest_without_requires_octet_loads(tmp_path: Path) -> None:
    # §0 asks requires_octet only of installable bundles.
    from conformance.manifest import load_manifest

    (tmp_path / "extension.toml").write_text(MANIFEST.replace('requires_octet = "{requires}"\n', ""))
    assert load_manifest(tmp_path / "extension.toml").requires_octet is None


def test_missing_manifest_is_a_harness_error(tmp_path: Path) -> None:
    assert main(["extension", str(tmp_path / "nope.toml")]) == 2


@pytest.mark.parametrize("requires", ["0.8.0", "=0.8.0"])
def test_exact_requirement_forms_accepted(tmp_path: Path, requires: str) -> None:
    from conformance.manifest import load_manifest

    (tmp_path / "extension.toml").write_text(MANIFEST.format(requires=requires))
    assert load_manifest(tmp_path / "extension.toml").requires_octet == requires


def test_reference_certifies_with_exit_0_and_writes_contracts(tmp_path: Path) -> None:
    report = tmp_path / "report"
    code = main(
        ["extension", str(REFERENCE / "api-0.2" / "extension.toml"), "--profile", "quick", "--report-dir", str(report)]
    )
    assert code == 0
    matrix = json.loads((report / "matrix.json").read_text())
    assert matrix["format"] == FORMAT
    assert matrix["suite"]["profile"] == "quick" and isinstance(matrix["suite"]["seed"], int)
    assert matrix["target"]["role"] == "extension" and matrix["target"]["api_version"] == "0.2"
    assert set(matrix["summary"]) == set(VERDICTS)
    assert sum(matrix["summary"].values()) == len(matrix["results"])
    keys = {"id", "document", "section", "level", "verdict", "summary", "evidence", "trace", "replay"}
    for r in matrix["results"]:
        assert set(r) == keys
        assert r["document"] in ("extension-wire-protocol", "jsonrpc-2.0")
        assert r["verdict"] in VERDICTS and r["level"] in ("must", "should")
    suite = ET.parse(report / "junit.xml").getroot()
    assert suite.tag == "testsuite" and int(suite.get("tests", "0")) == len(matrix["results"])
    assert int(suite.get("failures", "-1")) == 0


def test_requirements_listing(capsys: pytest.CaptureFixture[str]) -> None:
    """By default each entry's statement; the judging code only with -v."""
    summary = by_id()["EXT-1.9-cancel-reply-code"].summary
    assert main(["requirements", "--side", "extension"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"EXT-1.9-cancel-reply-code\t1.9\tmust\textension\t{summary}" in lines
    assert all(line.split("\t")[3] == "extension" for line in lines)
    assert not any("conformance.protocol." in line for line in lines)
    assert main(["requirements", "--side", "extension", "-v"]) == 0
    verbose = capsys.readouterr().out.splitlines()
    assert len(verbose) == len(lines)
    assert any(
        line.startswith(f"EXT-1.9-cancel-reply-code\t1.9\tmust\textension\t{summary}\tconformance.protocol.")
        for line in verbose
    )
    assert all(line.split("\t")[5].startswith(("conformance.", "none: ")) for line in verbose)


def test_environment_allowlist_is_brokered_only_when_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.manifest import parse_manifest
    from conformance.peers.ext_host import brokered_environment

    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    monkeypatch.setenv("SECRET_TOKEN", "nope")
    base = {"name": "x", "version": "1", "requires_octet": "0.8.0", "command": ["true"]}

    def env_for(api: str, declared: list[str]) -> dict[str, str]:
        data = {**base, "api_version": api, "capabilities": {"environment": declared}}
        return brokered_environment(parse_manifest(data, Path("/tmp/extension.toml")))

    assert env_for("0.2", ["SSH_AUTH_SOCK", "SECRET_TOKEN"]) == {"SSH_AUTH_SOCK": "/tmp/agent.sock"}
    assert env_for("0.2", []) == {}
    assert env_for("0.1", ["SSH_AUTH_SOCK"]) == {}


def test_sanitized_environment_withholds_the_harness_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.transport.process import sanitized_env

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    env = sanitized_env()
    assert "AWS_SECRET_ACCESS_KEY" not in env and "PATH" in env


def test_simulate_certifies_the_reference_in_process(tmp_path: Path) -> None:
    assert main(["extension", "--simulate", "--profile", "quick", "--report-dir", str(tmp_path)]) == 0
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    assert matrix["summary"]["fail"] == 0 and matrix["summary"]["pass"] > 40


def test_simulate_refuses_other_targets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "extensions" / "double-reply" / "extension.toml"
    assert main(["extension", str(fixture), "--simulate", "--report-dir", str(tmp_path)]) == 2
    assert "only the reference extension" in capsys.readouterr().err
