"""Baselines: listed failures become xfail, unlisted failures still fail,
stale entries (now passing) fail the run; files are checked before a run;
`baseline RUN_DIR -o FILE` writes a file that loads back and covers the run."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.report.baseline import BaselineError, apply_baseline, baseline_toml, load_baseline
from conformance.report.rundir import load_run
from conformance.requirements import by_id
from conformance.verdicts import Verdict

KNOWN = set(by_id())
HEADER = 'format = "octet-conformance/baseline@1"\n'


def write(tmp_path: Path, *entries: tuple[str, str]) -> Path:
    path = tmp_path / "baseline.toml"
    body = "".join(f'\n[[expected]]\nrequirement = "{r}"\nreason = "{why}"\n' for r, why in entries)
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def verdict(rid: str, v: str) -> Verdict:
    return Verdict(by_id()[rid], v, f"{v} evidence")


def test_listed_failure_is_xfail_unlisted_stays_fail_passing_entry_is_stale(tmp_path: Path) -> None:
    baseline = load_baseline(
        write(
            tmp_path,
            ("JSONRPC-5-one-response", "known double reply"),
            ("EXT-0-json-text", "was broken once"),
            ("EXT-0-stdin-eof-exit", "known"),
            ("EXT-0-frame-bound", "not judged in this run"),
        ),
        KNOWN,
    )
    verdicts = [
        verdict("JSONRPC-5-one-response", "fail"),
        verdict("EXT-1.1-tool-description", "fail"),
        verdict("EXT-0-json-text", "pass"),
        verdict("EXT-0-stdin-eof-exit", "warn"),
        verdict("EXT-0-frame-bound", "untested"),
    ]
    applied = apply_baseline(verdicts, baseline, "t")
    assert [v.verdict for v in applied.verdicts] == ["xfail", "fail", "pass", "xfail", "untested"]
    assert applied.verdicts[0].evidence == "fail evidence (expected by baseline: known double reply)"
    assert [e.requirement for e in applied.stale] == ["EXT-0-json-text"]
    assert [e.requirement for e in applied.expected] == ["JSONRPC-5-one-response", "EXT-0-stdin-eof-exit"]


def test_target_entries_apply_to_that_target_only(tmp_path: Path) -> None:
    baseline = load_baseline(write(tmp_path, ("mine:JSONRPC-5-one-response", "only mine")), KNOWN)
    failing = [verdict("JSONRPC-5-one-response", "fail")]
    assert apply_baseline(failing, baseline, "mine").verdicts[0].verdict == "xfail"
    assert apply_baseline(failing, baseline, "other").verdicts[0].verdict == "fail"
    passing = [verdict("JSONRPC-5-one-response", "pass")]
    assert apply_baseline(passing, baseline, "other").stale == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEADER + '[[expected]]\nrequirement = "JSONRPC-5-one-response"\n', "needs a non-empty 'reason'"),
        (HEADER + '[[expected]]\nrequirement = "NOPE-1"\nreason = "x"\n', "'NOPE-1' is not a requirement"),
        (HEADER + '[[expected]]\nrequirement = ""\nreason = "x"\n', "'requirement' must be"),
        (HEADER + '[[expected]]\nrequirement = "EXT-0-json-text"\nreason = "x"\nwhy = 1\n', "unknown key(s) why"),
        ('format = "octet-conformance/baseline@9"\n', "baseline@9"),
        ("[[expected]\n", "not valid TOML"),
        (HEADER + 'expected = "x"\n', "array of tables"),
        (HEADER + '[[expected]]\nrequirement = "EXT-0-json-text"\nreason = "a"\n' * 2, "more than once"),
    ],
)
def test_bad_baseline_is_refused_with_the_file_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "b.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as info:
        load_baseline(path, KNOWN)
    assert str(path) in str(info.value) and message in str(info.value)


def test_written_baseline_loads_back_and_expects_every_failure(make_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hostile = 'quote " back\\slash\nnew line \x7f del \x00 nul ]] [[expected]] \ud800 lone'
    run = make_run(
        "a",
        {
            "JSONRPC-5-one-response": "fail",
            "EXT-0-stdin-eof-exit": "warn",
            "EXT-1.1-tool-description": "xfail",
            "EXT-0-json-text": "pass",
        },
        target='evil"\n[[expected]]',
        evidence={"JSONRPC-5-one-response": hostile},
    )
    text = baseline_toml(load_run(run))
    assert tomllib.loads(text)  # valid TOML whatever the target wrote
    path = tmp_path / "out.toml"
    assert main(["baseline", str(run), "-o", str(path)]) == 0
    baseline = load_baseline(path, KNOWN)
    listed = [e.requirement for e in baseline.entries]
    assert listed == ["JSONRPC-5-one-response", "EXT-0-stdin-eof-exit", "EXT-1.1-tool-description"]
    assert all(e.reason for e in baseline.entries)
    assert "back\\slash" in next(e.reason for e in baseline.entries if e.requirement == "JSONRPC-5-one-response")


def test_bad_baseline_stops_the_run_before_any_target_starts(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "b.toml"
    path.write_text(HEADER + '[[expected]]\nrequirement = "NOPE"\nreason = "x"\n', encoding="utf-8")
    assert main(["extension", "--simulate", "--baseline", str(path), "--report-dir", str(tmp_path / "r")]) == 2
    assert "baseline rejected before spawn" in capsys.readouterr().err
    assert not (tmp_path / "r" / "matrix.json").exists()


def test_stale_entry_fails_a_run_that_otherwise_passes(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # The reference extension passes EXT-0-json-text: listing it is stale.
    path = write(tmp_path, ("EXT-0-json-text", "fixed since"), ("octet-reference-extension:EXT-0-frame-bound", "x"))
    report = tmp_path / "r"
    argv = ["extension", "--simulate", "--profile", "quick", "--baseline", str(path), "--report-dir", str(report)]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "STALE EXT-0-json-text" in out and "STALE octet-reference-extension:EXT-0-frame-bound" in out
    matrix = json.loads((report / "matrix.json").read_text())
    assert matrix["summary"]["fail"] == 0 and matrix["summary"]["xfail"] == 0


def test_an_entry_for_a_target_the_run_does_not_certify_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, ("mine:JSONRPC-5-one-response", "x"), ("EXT-0-json-text", "any target"))
    assert len(load_baseline(path, KNOWN, target="mine").entries) == 2
    with pytest.raises(BaselineError) as info:
        load_baseline(path, KNOWN, target="minе")  # a look-alike name: a Cyrillic "е"
    assert str(info.value) == (
        f"{path}: mine:JSONRPC-5-one-response: no such target in this run, which certifies 'minе'; "
        "fix the target name before the ':' or drop the entry"
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("NOPE-1", "'NOPE-1' is not a requirement of this suite's catalog"),
        ("someone-else:EXT-0-json-text", "no such target in this run, which certifies 'octet-reference-extension'"),
    ],
    ids=["unknown-id", "other-target"],
)
def test_list_refuses_the_baseline_the_run_would_refuse(  # type: ignore[no-untyped-def]
    tmp_path: Path, capsys, entry: str, message: str
) -> None:
    path = write(tmp_path, (entry, "x"))
    assert main(["extension", "--list", "--baseline", str(path), "--report-dir", str(tmp_path / "r")]) == 2
    out, err = capsys.readouterr()
    assert "baseline rejected before spawn" in err and message in err and "dry run" not in out
    assert main(["extension", "--baseline", str(path), "--report-dir", str(tmp_path / "r")]) == 2  # as the run does
    assert message in capsys.readouterr().err and not (tmp_path / "r").exists()
    good = write(tmp_path, ("octet-reference-extension:EXT-0-json-text", "x"))
    assert main(["extension", "--list", "--baseline", str(good)]) == 0
    assert "dry run: " in capsys.readouterr().out
