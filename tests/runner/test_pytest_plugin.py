"""The pytest plugin (conformance/pytest_plugin.py), tested with
``pytester``: registered through ``pytest11``, one item per requirement,
each verdict mapped to a pytest outcome, one certification shared by the
xdist workers, and a run that cannot happen reported as errors."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conformance import pytest_plugin as plugin
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
    """Arguments and manifest pass, but the report directory is a file: the
    run cannot happen, and each item's error is the command line's message,
    not a traceback of this plugin."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    result = pytester.runpytest(
        "--octet-extension", str(REFERENCE), "--octet-simulate", "--octet-only", "JSONRPC-5-*",
        "--octet-report-dir", str(a_file), "-p", "no:cacheprovider",
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) >= 3 and not outcomes.get("passed")
    out = result.stdout.str()
    assert "could not run (exit 2)" in out and "exists and is not a directory" in out
    assert "Traceback" not in out and "pytest_plugin.py" not in out
    assert "octet-conformance: octet-extension could not run (exit 2): " in out  # in the terminal summary
    errors = out.split("== ERRORS ==")[1].split("octet-conformance: octet-extension could not run")[0]
    blocks = errors.split("ERROR at setup of ")[1:]
    assert len(blocks) == outcomes["errors"]
    assert all(len([line for line in b.splitlines() if line.strip()]) <= 4 for b in blocks)  # header + message


def test_a_mistyped_manifest_path_is_one_error_line(pytester: pytest.Pytester, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "extension.toml"
    result = pytester.runpytest("--octet-extension", str(missing), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line] == [
        f"ERROR: --octet-extension: manifest rejected before spawn: {missing}: no such manifest"
    ]
    assert "error" not in result.stdout.str().lower()  # no item was collected, let alone 142 errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--octet-seed", "3"], "--octet-seed means nothing with no target option: it applies to --octet-extension"),
        (["--octet-run", "{run}", "--octet-profile", "quick"], "--octet-profile means nothing with --octet-run"),
        (["--octet-run", "{run}", "--octet-simulate"], "--octet-simulate means nothing with --octet-run"),
        (["--octet-run", "{run}", "--octet-report-dir", "x"], "--octet-report-dir means nothing with --octet-run"),
        (["--octet-hostcore", "--octet-simulate"], "--octet-simulate means nothing with --octet-hostcore"),
        (["--octet-extension", "{ext}", "--octet-host-api", "0.4"], "--octet-host-api means nothing with --octet-ext"),
        (["--octet-host", "node d.js", "--octet-simulate"], "--octet-host: --octet-simulate runs only the bundled"),
        (["--octet-extension", "{ext}", "--octet-hostcore", "--octet-report-dir", "r"], "each would overwrite"),
        (
            ["--octet-extension", "{ext}", "--octet-seed", "-5"],
            "--octet-extension: argument --octet-seed: --octet-seed takes",
        ),
        (["--octet-extension", "{ext}", "--octet-patience", "0"], "--octet-patience takes a number of seconds > 0"),
        (["--octet-hostcore", "x --data-dir {datadir}"], "--octet-hostcore: '{datadir}' in argument 2"),
        (["--octet-extension", "{ext}", "--octet-baseline", "{other}"], "no such target in this run, which certifies"),
        (["--octet-run", "{run}", "--octet-baseline", "{other}"], "--octet-run: --octet-baseline rejected: "),
        (["--octet-hostcore", "--octet-baseline", "{unknown}"], "'NOPE-1' is not a requirement"),
    ],
)
def test_every_option_combination_is_honoured_or_refused(
    pytester: pytest.Pytester, tmp_path: Path, args: list[str], message: str
) -> None:
    """Refused once, as a usage error, before any item runs; nothing is
    silently dropped (an option no target uses, a baseline that fits no target)."""
    files = {"run": str(finished_run(tmp_path / "run")), "ext": str(REFERENCE)}
    for name, entry in (("other", "someone-else:EXT-0-json-text"), ("unknown", "NOPE-1")):
        path = tmp_path / f"{name}.toml"
        path.write_text(f'[[expected]]\nrequirement = "{entry}"\nreason = "r"\n')
        files[name] = str(path)
    result = pytester.runpytest(*(a.format(**files) if "{d" not in a else a for a in args), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert message in err and "Traceback" not in err and "usage:" not in err, err


def test_a_baseline_is_honoured_with_a_finished_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """--octet-run applies --octet-baseline as a certification would: a listed
    failure is xfail (with the reason), a listed pass is stale and fails."""
    run = finished_run(tmp_path / "run")
    baseline = tmp_path / "baseline.toml"
    baseline.write_text(
        '[[expected]]\nrequirement = "x:JSONRPC-5-id-echo"\nreason = "known, issue 7"\n'
        '[[expected]]\nrequirement = "JSONRPC-5-one-response"\nreason = "was broken"\n'
    )
    result = pytester.runpytest(
        "--octet-run", str(run), "--octet-only", "JSONRPC-5-*", "--octet-baseline", str(baseline), "-rA",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(xfailed=1, failed=1)
    out = result.stdout.str()
    assert "fail evidence of JSONRPC-5-id-echo (expected by baseline: known, issue 7)" in out
    assert "STALE JSONRPC-5-one-response: listed in the baseline but passes now" in out


def test_items_are_named_by_their_target_wherever_pytest_runs(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A path among the arguments (or --rootdir) can move pytest's rootdir
    above where it runs; items stay ``octet-run::ID``, never ``../x/octet-run::ID``."""
    run = finished_run(tmp_path / "run")
    junit = tmp_path / "junit.xml"
    classes = []
    # pytest's rootdir: where it runs, above it, beside it (the start directory outside the rootdir)
    progress, verbose = r"^octet-run \.", r"^octet-run::JSONRPC-5-one-response PASSED"
    for rootdir, verbosity, line in (
        (pytester.path, [], progress), (pytester.path.parent, [], progress), (tmp_path, [], progress),
        (tmp_path, ["-v"], verbose),
    ):  # fmt: skip
        result = pytester.runpytest(
            "--octet-run", str(run), "--octet-only", "JSONRPC-5-one-response", *verbosity, "-rA",
            f"--rootdir={rootdir}", f"--junitxml={junit}", "-p", "no:cacheprovider",
        )  # fmt: skip
        result.assert_outcomes(passed=1)
        result.stdout.re_match_lines([line, r"^PASSED octet-run::JSONRPC-5-one-response$"])
        assert "../" not in result.stdout.str()
        (case,) = ET.parse(junit).getroot().iter("testcase")
        assert case.get("name") == "JSONRPC-5-one-response"
        classes.append(case.get("classname"))
    assert classes[:2] == ["octet-run", f"{pytester.path.name}.octet-run"]  # as pytest names a file there


def test_junit_times_exclude_the_shared_certification(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The certification is no item's time: the item whose setup ran it would
    otherwise carry all of it (a skip, often). A fake clock makes it exact:
    the fake certification takes 100 s of it, which pytest and the plugin both read."""
    now = [0.0]
    monkeypatch.setattr("_pytest.timing.perf_counter", lambda: now[0])
    monkeypatch.setattr(plugin, "monotonic", lambda: now[0])

    def certify(target: plugin.Target, run_dir: Path) -> tuple[int, str]:
        now[0] += 100.0
        finished_run(run_dir)
        return 0, ""

    monkeypatch.setattr(plugin, "_certify", certify)
    junit = tmp_path / "junit.xml"
    result = pytester.runpytest(
        "--octet-extension", str(REFERENCE), "--octet-only", "EXT-1.9-cancel-reply-code", "--octet-only",
        "JSONRPC-5-one-response", f"--junitxml={junit}", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1, skipped=1)
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert {name: float(c.get("time", "")) for name, c in cases.items()} == {
        "EXT-1.9-cancel-reply-code": 0.0,  # it ran the certification; without the fix, 100.0
        "JSONRPC-5-one-response": 0.0,
    }
    properties = {p.get("name"): p.get("value") for p in cases["EXT-1.9-cancel-reply-code"].iter("property")}
    assert properties["octet_certification_s"] == "100.000"
    assert "octet-extension certified in 100.0 s by main (not counted in any item's time)" in result.stdout.str()


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
    properties = [(p.get("name"), p.get("value")) for case in cases for p in case.iter("property")]
    by = {value for name, value in properties if name == "octet_certified_by"}
    assert len(by) == 1 and by <= {"gw0", "gw1"}, by
    assert (report / "matrix.json").is_file()
    # the certification is charged to no item; the worker that ran it says so once
    (worker,) = by
    out = result.stdout.str()
    assert "octet-extension certified in " in out and f"s by {worker} (not counted in any item's time)" in out
    assert [name for name, _ in properties].count("octet_certification_s") >= 1  # the first item of each worker
