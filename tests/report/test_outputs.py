"""Output files are written whole or not at all (conformance/outfiles.py), and
``report -o -`` / ``baseline -o -`` write to stdout.

A full disk is simulated by making the write fail part-way (the ``fsync``
before the rename is where a delayed-allocation file system reports it):
the old file must be left as it was, with no temporary file beside it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from conformance import outfiles
from conformance.cli import main
from conformance.outfiles import TEMP_SUFFIX, copy_file, replacing, write_text
from conformance.transport.trace import write_trace

FAILING = {"JSONRPC-5-one-response": "fail", "EXT-0-json-text": "pass"}


def disk_full(fd: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(TEMP_SUFFIX))


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "report.html"
    write_text(path, "old report\n")
    monkeypatch.setattr(outfiles.os, "fsync", disk_full)
    with pytest.raises(OSError) as caught:
        write_text(path, "new report, half written")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)  # the error names the file
    assert path.read_text() == "old report\n" and leftovers(tmp_path) == []
    with pytest.raises(RuntimeError), replacing(path) as out:  # any exception in the body: same
        out.write("partial")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old report\n" and leftovers(tmp_path) == []


def test_permissions_and_symbolic_links_are_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    write_text(real, "a\n")
    real.chmod(0o640)
    link = tmp_path / "baseline.toml"
    link.symlink_to(real)
    write_text(link, "b\n")
    assert link.is_symlink() and real.read_text() == "b\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    copy_file(real, tmp_path / "copy.toml")
    assert (tmp_path / "copy.toml").read_text() == "b\n" and leftovers(tmp_path) == []


def test_a_trace_is_written_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "traces" / "X.jsonl"
    write_trace(path, {"format": "t"}, [{"dir": "host->target", "step": 0}])
    before = path.read_bytes()
    monkeypatch.setattr(outfiles.os, "fsync", disk_full)
    with pytest.raises(OSError):
        write_trace(path, {"format": "t"}, [{"step": n} for n in range(1000)])
    assert path.read_bytes() == before and leftovers(path.parent) == []


@pytest.mark.parametrize("command", ["report", "baseline"])
def test_a_full_disk_keeps_the_previous_output(
    command: str, make_run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    run = make_run("run", FAILING)
    out = tmp_path / "out" / "file"
    out.parent.mkdir()
    assert main([command, str(run), "-o", str(out)]) == 0
    before = out.read_bytes()
    capsys.readouterr()
    monkeypatch.setattr(outfiles.os, "fsync", disk_full)
    assert main([command, str(run), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {out}: No space left on device; nothing was changed" in err and "Traceback" not in err
    assert out.read_bytes() == before and leftovers(out.parent) == []


@pytest.mark.parametrize(("command", "start"), [("report", "<!DOCTYPE html>"), ("baseline", "# Written by")])
def test_dash_means_stdout(
    command: str, start: str, make_run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    run = make_run("run", FAILING)
    monkeypatch.chdir(tmp_path)
    assert main([command, str(run), "-o", "-"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(start) and f"{command}: written to stdout" in err
    assert not (tmp_path / "-").exists()  # never a file named "-"
    if command == "baseline":
        assert 'requirement = "JSONRPC-5-one-response"' in out
