"""The pytest plugin (conformance/pytest_plugin.py), tested with
``pytester``: registered through ``pytest11``, one item per requirement,
each verdict mapped to a pytest outcome, one certification shared by the
xdist workers, and a run that cannot happen reported as errors."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conformance.manifest import Manifest
from conformance.report.matrix import write_matrix
from conformance.requirements import by_id
from conformance.results import RunResult
from conformance.runner.profiles import PROFILES
from conformance.verdicts import Verdict

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "conformance" / "reference" / "extension" / "manifests" / "api-0.2" / "extension.toml"
MANIFEST = Manifest(Path("/tmp/extension.toml"), "x", "1", "0.2", "0.8.0", ("python3", "main.py"), {}, {})
VERDICTS = {
    "JSONRPC-5-one-response": "pass",
    "JSONRPC-5-id-echo": "fail",
    "JSONRPC-4-id-not-null": "warn",
    "EXT-1.9-cancel-reply-code": "skip",
    "EXT-0-jsonrpc-envelope": "untested",
    "EXT-0-json-text": "xfail",
    "EXT-0-frame-bound": "error",
}


def test_registered_through_the_pytest11_entry_point(pytester: pytest.Pytester) -> None:
    found = {e.name: e.value for e in entry_points(group="pytest11")}
    assert found.get("octet_conformance") == "conformance.pytest_plugin"
    help_text = pytester.runpytest("--help").stdout.str()
    assert "--octet-extension=MANIFEST" in help_text and "--octet-hostcore" in help_text


def finished_run(directory: Path) -> Path:
    trace = directory / "traces" / "JSONRPC-5-id-echo.jsonl"
    verdicts = tuple(
        Verdict(by_id()[rid], v, f"{v} evidence of {rid}", trace=str(trace) if v == "fail" else None,
                replay=f"octet-conformance replay {trace}" if v == "fail" else None)
        for rid, v in VERDICTS.items()
    )  # fmt: skip
    write_matrix(RunResult(MANIFEST, PROFILES["quick"], 1, verdicts, (), {}), directory)
    return directory


def test_each_verdict_becomes_its_pytest_outcome(pytester: pytest.Pytester, tmp_path: Path) -> None:
    run = finished_run(tmp_path / "run")
    only = pytester.runpytest("--octet-run", str(run), "--octet-only", "JSONRPC-5-*", "-p", "no:cacheprovider")
    only.assert_outcomes(passed=1, failed=1)  # a selection narrows a finished run's items too
    result = pytester.runpytest("--octet-run", str(run), "-rA", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1, skipped=2, xfailed=1, errors=1, warnings=1)
    out = result.stdout.str()
    assert "octet-run::JSONRPC-5-id-echo" in out
    assert "evidence:    fail evidence of JSONRPC-5-id-echo" in out
    assert "replay (in " in out and "octet-conformance replay traces/JSONRPC-5-id-echo.jsonl" in out
    assert "OctetShouldWarning" in out and "warn evidence of JSONRPC-4-id-not-null" in out
    baseline = tmp_path / "baseline.toml"
    baseline.write_text(
        'format = "octet-conformance/baseline@1"\n[[expected]]\nrequirement = "JSONRPC-5-one-response"\nreason = "r"\n'
    )
    strict = pytester.runpytest(
        "--octet-run", str(run), "--octet-strict", "--octet-baseline", str(baseline), "-p", "no:cacheprovider"
    )
    strict.assert_outcomes(failed=3, skipped=2, xfailed=1, errors=1)  # the warn, and the stale baseline entry
    assert "STALE JSONRPC-5-one-response: listed in the baseline but passes now" in strict.stdout.str()


def test_a_run_that_cannot_happen_makes_every_item_an_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "extension.toml"
    result = pytester.runpytest(
        "--octet-extension", str(missing), "--octet-only", "JSONRPC-5-*", "-p", "no:cacheprovider"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) >= 3 and not outcomes.get("passed")
    assert "could not run (exit 2)" in result.stdout.str() and "Traceback" not in result.stdout.str()


def test_an_unreadable_run_directory_or_an_empty_selection_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    result = pytester.runpytest("--octet-run", str(tmp_path / "none"), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no such run directory" in result.stderr.str()
    result = pytester.runpytest(
        "--octet-extension", str(REFERENCE), "--octet-only", "EXT-9-*", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--octet-only 'EXT-9-*' matches none of the requirements" in result.stderr.str()


@pytest.mark.slow
def test_certified_once_and_sharded_over_xdist_workers(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The reference extension, simulated, over two workers: both items pass
    and name the same certifying process; the run is left in the report directory."""
    junit, report = tmp_path / "junit.xml", tmp_path / "report"
    result = pytester.runpytest_subprocess(
        "--octet-extension", str(REFERENCE), "--octet-simulate", "--octet-profile", "quick",
        "--octet-only", "EXT-1.9-*", "--octet-report-dir", str(report), "-n", "2", "-p", "no:cacheprovider",
        f"--junitxml={junit}", timeout=180,
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    cases = ET.parse(junit).getroot().iter("testcase")
    by = {p.get("value") for case in cases for p in case.iter("property") if p.get("name") == "octet_certified_by"}
    assert len(by) == 1 and by <= {"gw0", "gw1"}, by
    assert (report / "matrix.json").is_file()
