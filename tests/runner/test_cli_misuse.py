"""Misuse of the command line, as a table: each case ends with the right exit
status, a message that says what to fix, no traceback, and no process left.

Arguments are checked before anything runs; a trace that cannot be replayed
honestly is exit 2 with the line at fault; harness errors are exit 2 in every
command. ``{name}`` in an argv names a file made by :func:`paths`. Cases run
``main(argv)`` in-process (argparse errors arrive as ``SystemExit``).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance import outfiles
from conformance.cli import cache_dir, main
from conformance.peers.rpc_client import DATA_DIR
from conformance.runner import arguments, reportdir
from conformance.transport.process import SPAWNED_GROUPS, group_exists
from conformance.transport.trace import TRACE_FORMAT

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "conformance" / "reference" / "extension" / "manifests" / "api-0.2" / "extension.toml"
REQUIREMENT = "JSONRPC-5-one-response"
OFFER = {"api_version": "0.2", "protocol_version": 1, "required_features": [], "optional_features": []}


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    code: int
    message: str  # a fragment of stderr


def header(**changes: object) -> str:
    base: dict[str, object] = {
        "format": TRACE_FORMAT,
        "requirement": REQUIREMENT,
        "target": {"manifest": str(REFERENCE)},
        "offer": OFFER,
    }
    base.update(changes)
    return json.dumps({k: v for k, v in base.items() if v is not ...}) + "\n"


WRITE = '{"dir": "host->target", "step": 1, "after": 0, "awaits": [], "text": "{}\\n"}\n'
UNSTARTABLE = """name = "unstartable"
version = "1"
api_version = "0.2"
requires_octet = "0.8.0"
command = ["./no-such-program"]
"""
# Files the cases name: {name} in an argv is replaced by the path.
FILES: dict[str, str | bytes] = {
    "a_file": "just a file\n",
    "truncated": header() + WRITE + WRITE.rstrip("\n"),
    "unknown_req": header(requirement="EXT-9-no-such-requirement"),
    "null_manifest": header(target={"manifest": None}),
    "no_target": header(target=...),
    "matrix_json": json.dumps({"format": "octet-conformance/matrix@3"}, indent=2) + "\n",
    "other_format": json.dumps({"format": "something/else@1"}) + "\n",
    "binary": b"\x89PNG\r\n\x1a\n\x00\xff\xfe",
    "empty": "",
    "entry_not_object": header() + "[1, 2]\n",
    "entry_bad_dir": header() + '{"dir": "sideways", "step": 1}\n',
    "entry_bad_step": header() + '{"dir": "host->target", "step": -1, "text": "{}\\n"}\n',
    "entry_no_bytes": header() + '{"dir": "host->target", "step": 1}\n',
    "entry_bad_action": header() + '{"dir": "host->target", "step": 1, "action": "explode"}\n',
    "blank_line": header() + "\n" + WRITE,
    "header_list": "[]\n",
    "bad_offer": header(offer={"api_version": "0.2"}),
    "header_only": header(),
    "no_host_steps": header() + '{"dir": "target->host", "step": 0, "index": 0, "text": "{}\\n"}\n',
    "unstartable/extension.toml": UNSTARTABLE,
}

PATIENCE_FIX = "takes a number of seconds > 0"
SEED_FIX = "--seed takes a whole number from 0 to 2**64-1"

CASES: dict[str, Case] = {
    # -- extension: arguments ------------------------------------------------------
    "patience-zero": Case(("extension", "--patience", "0"), 2, PATIENCE_FIX),
    "patience-negative": Case(("extension", "--patience", "-1"), 2, PATIENCE_FIX),
    "patience-nan": Case(("extension", "--patience", "nan"), 2, PATIENCE_FIX),
    "patience-inf": Case(("extension", "--patience", "inf"), 2, PATIENCE_FIX),
    "patience-word": Case(("extension", "--patience", "soon"), 2, PATIENCE_FIX),
    "patience-huge": Case(("extension", "--patience", "1e9"), 2, "<= 3600"),
    "seed-negative": Case(("extension", "--seed", "-1"), 2, SEED_FIX),
    "seed-2-to-64": Case(("extension", "--seed", str(2**64)), 2, SEED_FIX),
    "seed-fraction": Case(("extension", "--seed", "1.5"), 2, SEED_FIX),
    "seed-word": Case(("extension", "--seed", "lucky"), 2, SEED_FIX),
    "profile-unknown": Case(("extension", "--profile", "fast"), 2, "invalid choice: 'fast' (choose from"),
    "report-dir-empty": Case(("extension", "--report-dir", ""), 2, "empty directory name is refused"),
    "report-dir-blank": Case(("extension", "--report-dir", "  "), 2, "empty directory name is refused"),
    "regressions-missing": Case(("extension", "--regressions", "{tmp}/none"), 2, "does not exist"),
    "regressions-a-file": Case(("extension", "--regressions", "{a_file}"), 2, "is not a directory"),
    "unknown-option": Case(("extension", "--bogus"), 2, "unrecognized arguments: --bogus"),
    "manifest-missing": Case(("extension", "{tmp}/none.toml"), 2, "rejected before spawn"),
    # -- extension: report directory, checked before any target starts -----------------
    "report-dir-a-file": Case(("extension", "--report-dir", "{a_file}"), 2, "exists and is not a directory"),
    "report-dir-under-a-file": Case(("extension", "--report-dir", "{a_file}/r"), 2, "cannot use report directory"),
    "report-dir-in-use": Case(("extension", "--report-dir", "{locked}"), 2, "in use by another octet-conformance run"),
    # -- fuzz ----------------------------------------------------------------------------
    "fuzz-seconds-zero": Case(("fuzz", str(REFERENCE), "--seconds", "0"), 2, "--seconds takes a number of seconds"),
    "fuzz-seconds-negative": Case(("fuzz", str(REFERENCE), "--seconds", "-5"), 2, "--seconds takes"),
    "fuzz-seconds-nan": Case(("fuzz", str(REFERENCE), "--seconds", "nan"), 2, "--seconds takes"),
    "fuzz-seconds-inf": Case(("fuzz", str(REFERENCE), "--seconds", "inf"), 2, "--seconds takes"),
    "fuzz-patience-zero": Case(("fuzz", str(REFERENCE), "--patience", "0"), 2, PATIENCE_FIX),
    "fuzz-seed-negative": Case(("fuzz", str(REFERENCE), "--seed", "-3"), 2, SEED_FIX),
    "fuzz-work-dir-empty": Case(("fuzz", str(REFERENCE), "--work-dir", ""), 2, "empty directory name"),
    "fuzz-regressions-empty": Case(("fuzz", str(REFERENCE), "--regressions", ""), 2, "empty directory name"),
    "fuzz-no-manifest": Case(("fuzz",), 2, "the following arguments are required: manifest"),
    "fuzz-work-dir-under-a-file": Case(
        ("fuzz", str(REFERENCE), "--work-dir", "{a_file}/w", "--regressions", "{tmp}/reg"),
        2,
        "cannot use fuzz work directory",
    ),
    "fuzz-work-dir-in-use": Case(
        ("fuzz", str(REFERENCE), "--work-dir", "{locked}", "--regressions", "{tmp}/reg"), 2, "in use by another"
    ),
    "fuzz-unstartable-target": Case(
        ("fuzz", "{unstartable}", "--seconds", "5", "--work-dir", "{tmp}/w", "--regressions", "{tmp}/r"),
        2,
        "could not start: ",  # refused before anything runs (test_bad_inputs.py has the start-up cases)
    ),
    # -- replay ----------------------------------------------------------------------------
    "replay-missing": Case(("replay", "{tmp}/none.jsonl"), 2, "does not exist"),
    "replay-a-directory": Case(("replay", "{tmp}"), 2, "is not a regular file"),
    "replay-runs-zero": Case(("replay", "{truncated}", "--runs", "0"), 2, "--runs takes a whole number from 1"),
    "replay-runs-word": Case(("replay", "{truncated}", "--runs", "many"), 2, "--runs takes"),
    "replay-target-missing": Case(("replay", "{truncated}", "--target", "{tmp}/none.toml"), 2, "does not exist"),
    "replay-patience-nan": Case(("replay", "{truncated}", "--patience", "nan"), 2, PATIENCE_FIX),
    "replay-truncated": Case(("replay", "{truncated}"), 2, "trace line 3: no newline at its end; the trace"),
    "replay-unknown-requirement": Case(("replay", "{unknown_req}"), 2, "trace line 1: unknown requirement"),
    "replay-null-manifest": Case(("replay", "{null_manifest}"), 2, "trace line 1: target.manifest is missing"),
    "replay-no-target": Case(("replay", "{no_target}"), 2, "trace line 1: target.manifest is missing"),
    "replay-a-matrix": Case(("replay", "{matrix_json}"), 2, "trace line 1: the header is not JSON"),
    "replay-other-format": Case(("replay", "{other_format}"), 2, f"trace line 1: not a {TRACE_FORMAT} trace"),
    "replay-binary": Case(("replay", "{binary}"), 2, "not UTF-8 text"),
    "replay-empty": Case(("replay", "{empty}"), 2, "trace line 1: the file is empty"),
    "replay-header-a-list": Case(("replay", "{header_list}"), 2, "trace line 1: the header must be a JSON object"),
    "replay-entry-not-object": Case(("replay", "{entry_not_object}"), 2, "trace line 2: an entry must be a JSON"),
    "replay-entry-bad-dir": Case(("replay", "{entry_bad_dir}"), 2, "trace line 2: dir must be one of"),
    "replay-entry-bad-step": Case(("replay", "{entry_bad_step}"), 2, "trace line 2: step and after must be whole"),
    "replay-entry-no-bytes": Case(("replay", "{entry_no_bytes}"), 2, "trace line 2: a write without its bytes"),
    "replay-entry-bad-action": Case(("replay", "{entry_bad_action}"), 2, "trace line 2: unknown action 'explode'"),
    "replay-blank-line": Case(("replay", "{blank_line}"), 2, "trace line 2: empty"),
    "replay-bad-offer": Case(("replay", "{bad_offer}"), 2, "trace line 1: offer must be an object"),
    "replay-header-only": Case(("replay", "{header_only}"), 2, "trace line 1: a header and no steps"),
    "replay-no-host-steps": Case(("replay", "{no_host_steps}"), 2, "trace line 1: a header and no steps"),
    # -- requirements ----------------------------------------------------------------------
    "requirements-side-unknown": Case(("requirements", "--side", "bogus"), 2, "invalid choice: 'bogus' (choose from"),
    "no-command": Case((), 2, "the following arguments are required"),
}


@pytest.fixture
def paths(tmp_path: Path) -> Iterator[dict[str, str]]:
    made = {"tmp": str(tmp_path)}
    for name, content in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        made[name.split("/")[0]] = str(path)  # a file in a folder is named by its folder
    locked = tmp_path / "locked"
    locked.mkdir()
    made["locked"] = str(locked)
    fd = os.open(locked, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as another run holding the directory would
    try:
        yield made
    finally:
        os.close(fd)


def run_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code or 0)


def test_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", sorted(CASES))
def test_misuse(name: str, paths: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES[name]
    started = len(SPAWNED_GROUPS)
    code = run_main([arg.format(**paths) for arg in case.argv])
    out, err = capsys.readouterr()
    assert code == case.code, (out, err)
    assert case.message in err, err
    assert "Traceback" not in err + out
    if name.startswith("fuzz-"):  # a time box that judged nothing never claims "0 new failing"
        assert "new failing requirement" not in out
    deadline = time.monotonic() + 2.0
    while any(group_exists(g) for g in SPAWNED_GROUPS[started:]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [g for g in SPAWNED_GROUPS[started:] if group_exists(g)]


def test_misuse_writes_nothing(paths: dict[str, str]) -> None:
    """A refused report directory is not created, nor any directory above it."""
    assert run_main(["extension", "--report-dir", f"{paths['a_file']}/r"]) == 2
    assert run_main(["extension", "--patience", "0", "--report-dir", f"{paths['tmp']}/r"]) == 2
    assert not (Path(paths["tmp"]) / "r").exists()


def test_requirements_into_a_closed_pipe_ends_quietly() -> None:
    """``requirements | head -1``: the reader went away. Made deterministic by
    closing the read end before the CLI starts, so its first write fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        cli = subprocess.run(
            [sys.executable, "-m", "conformance.cli", "requirements"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    err = cli.stderr.decode()
    assert cli.returncode == 141, err  # 128 + SIGPIPE, as a tool killed by it
    assert "Traceback" not in err and "BrokenPipe" not in err and not err.strip(), err


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"HOME": "/home/u"}, "/home/u/.cache/octet-conformance"),
        ({"XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"}, "/xdg/octet-conformance"),
        ({}, None),  # no HOME at all
        ({"HOME": ""}, None),
        ({"HOME": "/"}, None),  # never the filesystem root
        ({"HOME": "relative/dir"}, None),
        ({"HOME": "/no/such/home"}, None),
    ],
)
def test_cache_dir_never_lands_at_the_root(
    env: dict[str, str], expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(os.path, "isdir", lambda p: p == "/home/u" or p == "/")
    fallback = Path(tempfile.gettempdir()) / f"octet-conformance-{os.getuid()}"
    assert cache_dir() == (Path(expected) if expected else fallback)


# -- hostcore: the {data_dir} placeholder, checked before anything starts ------------------

HOSTCORE_PLACEHOLDER_CASES: dict[str, tuple[list[str], str]] = {
    "missing": (["octet-hostcore"], "names no {data_dir}"),
    "missing-with-other-args": (["octet-hostcore", "--data-dir", "data"], "names no {data_dir}"),
    "no-underscore": (["octet-hostcore", "--data-dir", "{datadir}"], "'{datadir}' in argument 2"),
    "hyphen": (["octet-hostcore", "--data-dir", "{data-dir}"], "'{data-dir}' in argument 2"),
    "upper-case": (["octet-hostcore", "--data-dir", "{DATA_DIR}"], "'{DATA_DIR}' in argument 2"),
    "spaces": (["octet-hostcore", "--data-dir", "{ data_dir }"], "'{ data_dir }' in argument 2"),
    "inside-an-option": (["octet-hostcore", "--data-dir={data_directory}"], "'{data_directory}' in argument 1"),
    "shell-expansion": (["sh", "-c", "octet-hostcore --data-dir ${data_dir}"], "'${data_dir}' in argument 2"),
    "double-braces": (["octet-hostcore", "--data-dir", "{{data_dir}}"], "'{{data_dir}}' in argument 2"),
    "beside-the-right-one": (
        ["octet-hostcore", "--data-dir", "{data_dir}", "--cache", "{datadir}/cache"],
        "'{datadir}' in argument 4",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTCORE_PLACEHOLDER_CASES))
def test_hostcore_command_without_its_placeholder_is_refused(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused with exit 2 and one line naming the placeholder, before any
    process, report directory or literal "{datadir}" folder exists."""
    command, message = HOSTCORE_PLACEHOLDER_CASES[name]
    monkeypatch.chdir(tmp_path)  # the default report directory and a literal placeholder would land here
    started = len(SPAWNED_GROUPS)
    code = run_main(["hostcore", "--profile", "quick", "--", *command])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert message in err and "{data_dir}" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err + out
    assert len(SPAWNED_GROUPS) == started
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "command",
    [
        ["octet-hostcore", "--data-dir", "{data_dir}"],
        ["octet-hostcore", "--data-dir={data_dir}/state"],
        ["sh", "-c", "exec octet-hostcore --data-dir {data_dir}"],
        ["octet-hostcore", "--data-dir", "{data_dir}", "--config", '{"data": {"dir": 1}}', "{}"],
    ],
)
def test_hostcore_placeholder_written_right_is_accepted(command: list[str]) -> None:
    assert arguments.data_dir_problem(command, DATA_DIR) is None


# -- a full disk: refused before the run, or named when a write still fails ---------------------
QUICK_RUN = ("extension", "--simulate", "--profile", "quick", "--only", "EXT-0-json-text", "-q")


def test_a_nearly_full_report_disk_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(reportdir, "free_bytes", lambda directory: 5 * 2**20)
    report = tmp_path / "report"
    assert run_main([*QUICK_RUN, "--report-dir", str(report)]) == 2
    out, err = capsys.readouterr()
    assert f"report directory {report} has 5.0 MiB free on its file system; a run needs at least 32 MiB" in err
    assert "Traceback" not in err and not out and not report.exists()  # nothing ran, nothing was created


def test_a_disk_that_fills_during_the_run_names_the_file_and_keeps_the_previous_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report"
    assert run_main([*QUICK_RUN, "--report-dir", str(report)]) == 0
    before = (report / "matrix.json").read_bytes()
    capsys.readouterr()

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outfiles.os, "fsync", disk_full)
    assert run_main([*QUICK_RUN, "--seed", "7", "--report-dir", str(report)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {report / 'matrix.json'}: No space left on device; report directory {report} was left" in err
    assert "internal error" not in err and "Traceback" not in err
    assert (report / "matrix.json").read_bytes() == before
    kept = [".octet-conformance-files", "junit.xml", "matrix.json", "report.html"]
    assert sorted(p.name for p in report.iterdir()) == kept
