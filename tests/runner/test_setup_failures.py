"""Role set-up failures are explained before any verdict (issue 25 item 8).

Each case of ``fixtures/setup/`` (its ``case.toml``: the role, the command
run in its folder, the text the message must hold) is certified through the
command line, in-process, into a report directory that holds a previous
run: the exit status is 2, stderr gives the exit status and the stderr tail
of the process that could not be set up, stdout shows no verdict, and the
previous report is left exactly as it was.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.transport.process import SPAWNED_GROUPS, group_exists
from conformance.transport.startup import SetupFailure, exit_text, stderr_tail

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "fixtures" / "setup"
CASES = sorted(p.parent.name for p in SETUP.glob("*/case.toml"))
OLD_MATRIX = '{"previous": "run", "results": []}\n'


def case(name: str) -> dict[str, Any]:
    with (SETUP / name / "case.toml").open("rb") as f:
        return tomllib.load(f)


def argv_of(spec: dict[str, Any], report: Path) -> list[str]:
    command = list(spec["command"])
    common = ["--profile", "quick", "--patience", "2", "--report-dir", str(report)]
    if spec["role"] == "host":
        return ["host", *common, "--driver", " ".join(command)]
    return [spec["role"], *common, "--", *command]


def previous_run(report: Path) -> dict[str, bytes]:
    report.mkdir()
    (report / "matrix.json").write_text(OLD_MATRIX, encoding="utf-8")
    (report / "junit.xml").write_text("<testsuites/>\n", encoding="utf-8")
    return snapshot(report)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_every_case_is_here() -> None:
    roles = {case(name)["role"] for name in CASES}
    assert roles == {"host", "hostcore", "client"}, roles
    assert len(CASES) >= 8


@pytest.mark.parametrize("name", CASES)
def test_a_role_that_cannot_be_set_up_is_exit_2_with_its_last_words(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = case(name)
    report = tmp_path / "report"
    before = previous_run(report)
    monkeypatch.chdir(SETUP / name)  # every role's command runs in the current folder
    started = len(SPAWNED_GROUPS)
    code = main(argv_of(spec, report))
    assert not [g for g in SPAWNED_GROUPS[started:] if group_exists(g)]  # killed before main() returned
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    for needle in spec["expect"]:
        assert needle in err, (needle, err)
    assert "Traceback" not in err.split("stderr", 1)[0]  # the harness's own: none (a target's may be quoted)
    assert "harness error" not in err and "ERROR" not in out and "FAIL" not in out
    assert "PASS" not in out and "matrix:" not in out  # no verdict at all, a pass least of all
    assert snapshot(report) == before  # the previous report is untouched
    assert not list(report.glob(".octet-conformance-staging-*"))


def test_the_message_shape() -> None:
    failure = SetupFailure(
        "client", ["my-client", "--x"], Path("/w"), "exited at once", status=-9, stderr="a\n\nb\n" + "c" * 300
    )
    text = str(failure)
    assert text.splitlines()[0] == "client could not be set up: my-client --x in /w: exited at once"
    assert "  killed by signal 9" in text and "    | a" in text and "    | b" in text
    assert "..." in text.splitlines()[-1] and len(text.splitlines()[-1]) < 220  # a long line is cut
    assert exit_text(None).startswith("still running") and exit_text(3) == "exit status 3"
    assert stderr_tail("\n".join(str(i) for i in range(20))) == [str(i) for i in range(12, 20)]
