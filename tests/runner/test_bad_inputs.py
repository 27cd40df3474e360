"""The bad-input corpus, part B (issue 14: output hygiene, start-up failures,
manifests, endless lines). Part A (arguments, replay, fuzz misuse) is
``test_cli_misuse.py``.

Every case ends with the right exit status, a message naming what is wrong,
no traceback and no process left:

* manifest cases run ``main()`` in-process (nothing may be spawned, so the
  proof that nothing ran is that no process group was started), except the
  ones that could hang or read without bound (a FIFO, ``/dev/zero``), which
  run the real command line in a subprocess under a hang guard;
* start-up and hostile-output cases run the real command line in a
  subprocess, then scan ``/proc`` for anything whose working directory is
  the case's folder (the target's cwd is its manifest's folder).

The hang guard is never a performance assertion; the corpus's wall time is
measured, not asserted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.transport.process import SPAWNED_GROUPS

HANG_GUARD_S = 120.0  # a hang guard only
REAP_GRACE_S = 3.0
HEADER = 'name = "bad-input"\nversion = "1.0.0"\napi_version = "0.2"\nrequires_octet = "0.8.0"\n'
GOOD = HEADER + 'command = ["python3", "main.py"]\n'
# Raw terminal controls a hostile target or manifest may try to smuggle out.
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\x00")


# -- running ----------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    code: int | None  # None: the hang guard fired
    out: str
    err: str


def run_cli(args: list[str], cwd: Path) -> Ran:
    """The real command line in its own session; SIGKILLed if it hangs."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Ran(None, out.decode(errors="replace"), err.decode(errors="replace"))
    return Ran(proc.returncode, out.decode("utf-8", "surrogateescape"), err.decode("utf-8", "surrogateescape"))


def processes_in(folder: Path) -> dict[int, str]:
    """Live processes whose cwd is ``folder`` or below it."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            state = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if (cwd == str(folder) or cwd.startswith(f"{folder}{os.sep}")) and state not in ("Z", "X"):
            found[int(entry)] = cwd
    return found


def survivors(folder: Path) -> dict[int, str]:
    """What is still alive after a grace period (SIGKILLed before returning)."""
    deadline = time.monotonic() + REAP_GRACE_S
    alive = processes_in(folder)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = processes_in(folder)
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return alive


def assert_clean(ran: Ran, code: int, *needles: str) -> None:
    both = ran.out + ran.err
    assert ran.code is not None, f"hung: killed after {HANG_GUARD_S:.0f}s\n{both}"
    assert ran.code == code, f"exit {ran.code}, expected {code}\nstdout:\n{ran.out}\nstderr:\n{ran.err}"
    assert "Traceback" not in ran.err, ran.err
    for needle in needles:
        assert needle in both, f"{needle!r} not in the output:\n{both}"
    for raw in RAW_CONTROLS:
        assert raw not in both, f"raw {raw!r} reached the terminal:\n{both!r}"


# -- manifest cases ---------------------------------------------------------------------

Build = Callable[[Path], Path]  # makes the case's manifest (or path) under a folder; returns it


def text(content: str | bytes) -> Build:
    def build(folder: Path) -> Path:
        path = folder / "extension.toml"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return build


def replaced(old: str, new: str) -> Build:
    """The reference-like GOOD manifest plus tables, with one line changed."""
    base = (
        GOOD + '[contributes]\ntools = ["echo"]\ncontext = true\n[capabilities]\nfilesystem = "none"\nprocess = false\n'
    )
    assert old in base
    return text(base.replace(old, new))


def symlink_to(target: str) -> Build:
    def build(folder: Path) -> Path:
        link = folder / "extension.toml"
        link.symlink_to(target)
        return link

    return build


def symlink_loop(folder: Path) -> Path:
    (folder / "a.toml").symlink_to(folder / "extension.toml")
    (folder / "extension.toml").symlink_to(folder / "a.toml")
    return folder / "extension.toml"


def directory_with_manifest(folder: Path) -> Path:
    (folder / "extension.toml").write_text(GOOD)
    return folder


MANIFEST_CASES: dict[str, tuple[Build, tuple[str, ...]]] = {
    # the file itself
    "missing": (lambda f: f / "nope.toml", ("no such manifest",)),
    "directory-with-manifest": (directory_with_manifest, ("is a directory", "did you mean", "extension.toml")),
    "directory": (lambda f: f, ("is a directory", "regular file")),
    "symlink-loop": (symlink_loop, ("symbolic link loop",)),
    "dangling-symlink": (symlink_to("gone.toml"), ("symbolic link", "gone.toml", "does not exist")),
    "too-large": (text(GOOD + "#" * (300 * 1024) + "\n"), ("262,144-byte", "256 KiB")),
    "utf8-bom": (text(b"\xef\xbb\xbf" + GOOD.encode()), ("UTF-8 byte-order mark", "BOM")),
    "utf16-bom": (text(b"\xff\xfe" + GOOD.encode("utf-16-le")), ("UTF-16", "byte-order mark")),
    "not-utf8": (text(GOOD.encode() + b"# caf\xe9\n"), ("not UTF-8", "0xE9", "line 6")),
    "not-toml": (text(GOOD + "command = [\n"), ("not valid TOML",)),
    "empty": (text(""), ("name must be a non-empty string", "got nothing (the key is missing)")),
    # keys and tables the contract does not have
    "misspelt-key": (text(GOOD.replace("name =", "nmae =")), ("unknown key nmae", "did you mean name?")),
    "misspelt-table": (
        replaced("[contributes]", "[contribute]"),
        ("unknown key [contribute]", "did you mean [contributes]?"),
    ),
    "unknown-key": (text(GOOD + 'homepage = "https://example.org"\n'), ("unknown key homepage", "known keys:")),
    "misspelt-contribution": (
        replaced('tools = ["echo"]', 'toolz = ["echo"]'),
        ("unknown key contributes.toolz", "did you mean contributes.tools?"),
    ),
    "misspelt-capability": (
        replaced("process = false", "proces = false"),
        ("unknown key capabilities.proces", "did you mean capabilities.process?"),
    ),
    # the type of every declaration
    "context-yes": (
        replaced("context = true", 'context = "yes"'),
        ("contributes.context must be a boolean", "got 'yes' (a string)"),
    ),
    "notifications-int": (
        replaced("context = true", "notifications = 1"),
        ("contributes.notifications must be a boolean", "got 1 (an integer)"),
    ),
    "tools-string": (
        replaced('tools = ["echo"]', 'tools = "echo"'),
        ("contributes.tools must be an array of strings", "(a string)"),
    ),
    "tools-numbers": (
        replaced('tools = ["echo"]', "tools = [1, 2]"),
        ("contributes.tools must be an array of strings", "(an array)"),
    ),
    "process-string": (
        replaced("process = false", 'process = "no"'),
        ("capabilities.process must be a boolean", "got 'no' (a string)"),
    ),
    "filesystem-bool": (
        replaced('filesystem = "none"', "filesystem = false"),
        ("capabilities.filesystem must be a string", "got False (a boolean)"),
    ),
    "provider-credentials-string": (
        replaced("process = false", 'provider_credentials = "true"'),
        ("capabilities.provider_credentials must be a boolean",),
    ),
    "contributes-not-a-table": (text(GOOD + 'contributes = "all"\n'), ("[contributes] must be a table", "(a string)")),
    "name-number": (text(GOOD.replace('"bad-input"', "5")), ("name must be a non-empty string", "got 5 (an integer)")),
    "unknown-api-version": (text(GOOD.replace('"0.2"', '"0.3"')), ("api_version must be", "got '0.3' (a string)")),
    "command-empty": (
        text(HEADER + "command = []\n"),
        ("command must be a non-empty array of non-empty strings",),
    ),
    "command-string": (
        text(HEADER + 'command = "python3 main.py"\n'),
        ("command must be a non-empty array", "(a string)"),
    ),
    # manifest text reaches the terminal escaped
    "escapes-in-a-value": (
        text(GOOD.replace('"0.2"', '"0.2\\u001b[2J\\u009b\\u202e"')),
        ("api_version must be", "\\x1b[2J"),
    ),
}


@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_manifest_refused_before_spawn(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build, needles = MANIFEST_CASES[case]
    folder = tmp_path / "ext"
    folder.mkdir()
    manifest = build(folder)
    spawned = len(SPAWNED_GROUPS)
    code = main(["extension", str(manifest), "--profile", "quick", "--report-dir", str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert_clean(Ran(code, out, err), 2, "manifest rejected before spawn", *needles)
    assert SPAWNED_GROUPS[spawned:] == [], "a manifest that is refused must not start anything"
    assert not (tmp_path / "r").exists()


def test_context_yes_is_refused_by_fuzz_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = replaced("context = true", 'context = "yes"')(tmp_path)
    args = ["fuzz", str(manifest), "--seconds", "5", "--regressions", str(tmp_path / "reg")]
    code = main([*args, "--work-dir", str(tmp_path / "work")])
    out, err = capsys.readouterr()
    assert_clean(Ran(code, out, err), 2, "contributes.context must be a boolean")
    assert not (tmp_path / "reg").exists()


def _mkfifo(folder: Path) -> Path:
    os.mkfifo(folder / "extension.toml")
    return folder / "extension.toml"


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (_mkfifo, "is a FIFO"),  # nobody writes it: a blocking open would hang forever
        (symlink_to("/dev/zero"), "is a character device"),  # an unbounded read would never end
        (lambda folder: Path("/dev/zero"), "is a character device"),
    ],
    ids=["fifo", "symlink-to-dev-zero", "dev-zero"],
)
def test_special_files_refused_without_blocking(build: Build, needle: str, tmp_path: Path) -> None:
    folder = tmp_path / "ext"
    folder.mkdir()
    ran = run_cli(["extension", str(build(folder)), "--report-dir", str(tmp_path / "r")], cwd=tmp_path)
    assert_clean(ran, 2, "manifest rejected before spawn", needle, "regular file")


# -- start-up failures -------------------------------------------------------------------


def script(name: str, content: str, mode: int) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / name).write_text(content)
        (folder / name).chmod(mode)

    return make


def nothing(folder: Path) -> None:
    pass


def subfolder(folder: Path) -> None:
    (folder / "bin").mkdir()


STARTUP_CASES: dict[str, tuple[str, Callable[[Path], None], tuple[str, ...]]] = {
    "bare-name-not-on-path": (
        '["octet-no-such-program"]',
        nothing,
        ("'octet-no-such-program' is not on the target's PATH", "hint: ", "relative to the manifest's folder"),
    ),
    "missing-path": ('["./serve.sh"]', nothing, ("serve.sh does not exist", "resolved against the manifest's folder")),
    "not-executable": (
        '["./serve.sh"]',
        script("serve.sh", "#!/bin/sh\nexit 0\n", 0o644),
        ("serve.sh is not executable", "chmod +x serve.sh"),
    ),
    "missing-interpreter": (
        '["./serve.py"]',
        script("serve.py", "#!/opt/octet/no-such-python3\nprint()\n", 0o755),
        ("#! line names the interpreter /opt/octet/no-such-python3", "does not exist"),
    ),
    "missing-env-interpreter": (
        '["./serve.py"]',
        script("serve.py", "#!/usr/bin/env octet-no-such-python\nprint()\n", 0o755),
        ("runs 'octet-no-such-python' through env", "not on the target's PATH"),
    ),
    "no-shebang": (
        '["./serve"]',
        script("serve", "echo this is not a program\n", 0o755),
        ("Exec format error", "#! line"),
    ),
    "directory": ('["./bin"]', subfolder, ("bin is a directory",)),
}


@pytest.mark.parametrize("case", sorted(STARTUP_CASES))
def test_unstartable_target_is_one_message_and_exit_2(case: str, tmp_path: Path) -> None:
    command, make, needles = STARTUP_CASES[case]
    folder = tmp_path / "ext"
    folder.mkdir()
    make(folder)
    (folder / "extension.toml").write_text(HEADER + f"command = {command}\n")
    args = ["extension", str(folder / "extension.toml"), "--profile", "quick", "--report-dir", str(tmp_path / "r")]
    ran = run_cli(args, cwd=tmp_path)
    assert not survivors(folder)
    assert_clean(ran, 2, "could not start: ", f" in {folder}: ", *needles)
    # one message, not one line per requirement naming an internal attribute
    assert "ERROR" not in ran.out and "harness error" not in ran.err
    assert len(ran.err.strip().splitlines()) <= 2, ran.err


def test_unstartable_target_stops_fuzz_with_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "ext"
    folder.mkdir()
    (folder / "extension.toml").write_text(HEADER + 'command = ["octet-no-such-program"]\n')
    args = ["fuzz", str(folder / "extension.toml"), "--seconds", "5"]
    ran = run_cli([*args, "--regressions", str(tmp_path / "reg"), "--work-dir", str(tmp_path / "w")], cwd=tmp_path)
    assert_clean(ran, 2, "could not start: ", "not on the target's PATH")
    assert "new failing requirement" not in ran.out


# -- hostile output ----------------------------------------------------------------------

EXITS_AT_ONCE = r"""
import sys
sys.stderr.write("loading \x1b[31mconfig\x1b[0m\x07 \x9b2J \u202egnp.exe\n")
sys.stderr.write("fatal: missing dependency 'octet-sdk'\n")
sys.exit(3)
"""

# Answers initialize (id 1, the harness's first request) without reading it:
# a log line full of terminal controls on stdout, then an error response
# whose message holds a lone surrogate and controls (JSON escapes), then it
# exits.
HOSTILE_FRAMES = r"""
import sys
out = sys.stdout.buffer
out.write(b"\x1b[2J\x1b]0;pwned\x07 \xc2\x9b log line on stdout\n")
out.write(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,'
          b'"message":"\\ud800 \\u001b[31m \\u009b \\u202e","data":"\\udfff"}}\n')
out.flush()
sys.exit(0)
"""

ENDLESS_LINE = """
import os, time
os.write(1, b"x" * (2 * 1024 * 1024))  # past the 1 MiB bound, and no newline ever
time.sleep(3600)
"""


def certify(tmp_path: Path, main_py: str, *, name: str = "bad-input") -> tuple[Ran, Path, Path]:
    folder = tmp_path / "ext"
    folder.mkdir()
    (folder / "main.py").write_text(textwrap.dedent(main_py))
    (folder / "extension.toml").write_text(GOOD.replace('"bad-input"', json.dumps(name)))
    report = tmp_path / "r"
    args = ["extension", str(folder / "extension.toml"), "--profile", "quick", "--patience", "1"]
    ran = run_cli([*args, "--report-dir", str(report)], cwd=tmp_path)
    assert not survivors(folder)
    return ran, folder, report


def assert_reports_well_formed(report: Path) -> dict[str, Any]:
    """junit.xml parses as XML; matrix.json parses strictly and re-encodes as
    UTF-8 (no lone surrogate), whatever the target sent."""
    ET.parse(report / "junit.xml")
    (report / "report.html").read_bytes().decode("utf-8")  # written beside them, whatever the target sent
    raw = (report / "matrix.json").read_bytes()
    document = json.loads(raw.decode("utf-8"))  # strict: no raw control characters
    # a "\\ud800" escape would have decoded to a lone surrogate: this raises
    json.dumps(document, ensure_ascii=False).encode("utf-8")
    assert isinstance(document, dict)
    return document


def test_extension_that_exits_at_once_shows_status_and_stderr(tmp_path: Path) -> None:
    ran, _, report = certify(tmp_path, EXITS_AT_ONCE)
    assert_clean(
        ran,
        1,
        "FAIL §5 JSONRPC-5-every-request-answered \u2014 ",
        "exited with status 3",
        "fatal: missing dependency 'octet-sdk'",  # the stderr tail, under the failure
        "\\x1b[31mconfig",  # its controls shown, not obeyed
    )
    lines = ran.out.splitlines()
    failure = next(i for i, line in enumerate(lines) if line.startswith("  FAIL"))
    # under the failure's own lines (statement, expected/observed), before the replay command
    assert "exited with status 3" in lines[failure + 2]
    document = assert_reports_well_formed(report)
    observed = document["run"]["observed"]["JSONRPC-5-every-request-answered"]
    assert observed["measured"] == {"exit_status": 3.0} and "octet-sdk" in observed["stderr_tail"]


def test_control_characters_in_the_manifest_name(tmp_path: Path) -> None:
    name = "evil\x1b]0;pwned\x07\x1b[2J\x00\x9b\u202e\x7f"
    ran, _, report = certify(tmp_path, EXITS_AT_ONCE, name=name)
    assert_clean(ran, 1, "evil\\x1b]0;pwned\\x07\\x1b[2J\\x00\\x9b\\u202e\\x7f 1.0.0")
    suite = ET.parse(report / "junit.xml").getroot()
    assert suite.get("name", "").startswith("octet-conformance extension evil\\x1b]0;pwned")
    document = assert_reports_well_formed(report)
    assert document["target"]["name"] == name  # JSON carries controls escaped, exactly


def test_hostile_frames_reach_no_terminal_and_break_no_report(tmp_path: Path) -> None:
    ran, _, report = certify(tmp_path, HOSTILE_FRAMES)
    assert_clean(ran, 1, "FAIL §0 EXT-0-diagnostics-stderr \u2014 ", "\\x1b[2J")
    assert_reports_well_formed(report)


def test_endless_line_fails_the_frame_bound(tmp_path: Path) -> None:
    ran, _, report = certify(tmp_path, ENDLESS_LINE)
    assert_clean(ran, 1, "FAIL §0 EXT-0-frame-bound \u2014 ", "longer than the 1,048,576-byte limit")
    document = assert_reports_well_formed(report)
    verdicts = {r["id"]: r["verdict"] for r in document["results"]}
    assert verdicts["EXT-0-frame-bound"] == "fail"


# -- replay against a bad target -------------------------------------------------------


@pytest.fixture(scope="module")
def failure_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real failure trace (an extension that exits at once) to replay."""
    ran, _, report = certify(tmp_path_factory.mktemp("trace"), EXITS_AT_ONCE)
    assert ran.code == 1, ran.err
    return report / "traces" / "JSONRPC-5-every-request-answered.jsonl"


@pytest.mark.parametrize(
    ("target", "needles"),
    [
        (HEADER + 'command = ["octet-no-such-program"]\n', ("could not start: ", "not on the target's PATH")),
        ("\ufeff" + GOOD, ("UTF-8 byte-order mark",)),
        (GOOD + 'context = "yes"\n', ("unknown key context",)),
    ],
    ids=["unstartable", "bom", "stray-key"],
)
def test_replay_against_a_bad_target(
    failure_trace: Path, target: str, needles: tuple[str, ...], tmp_path: Path
) -> None:
    folder = tmp_path / "ext"
    folder.mkdir()
    (folder / "extension.toml").write_text(target, encoding="utf-8")
    ran = run_cli(["replay", str(failure_trace), "--target", str(folder / "extension.toml")], cwd=tmp_path)
    assert not survivors(folder)
    assert_clean(ran, 2, "cannot replay", *needles)
