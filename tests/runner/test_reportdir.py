"""Report directories (conformance/runner/reportdir.py): a run is moved in
whole or not at all, a second run is refused, and only files this tool wrote
are ever removed."""

from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path

import pytest

from conformance.runner import reportdir
from conformance.runner.reportdir import OWNED_LIST, STAGING_PREFIX, ReportDirError, locked, owned_files, staged
from conformance.transport.process import Stopping


def write_run(stage: Path, traces: list[str]) -> None:
    (stage / "traces").mkdir(exist_ok=True)
    for name in traces:
        (stage / "traces" / name).write_text(name)
    (stage / "matrix.json").write_text(json.dumps({"traces": traces}))
    (stage / "junit.xml").write_text("<testsuite/>")


def listing(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


def test_a_run_is_moved_in_whole_and_replaces_only_what_the_last_run_wrote(tmp_path: Path) -> None:
    final = tmp_path / "report"
    (final / "traces").mkdir(parents=True)
    (final / "notes.txt").write_text("mine")
    (final / "traces" / "user.jsonl").write_text("mine too")  # a user's file where traces go
    with staged(final) as stage:
        write_run(stage, ["A.jsonl", "B.jsonl"])
        assert not (final / "matrix.json").exists()  # nothing is in place before the end
    assert owned_files(final) == {"junit.xml", "matrix.json", "traces/A.jsonl", "traces/B.jsonl"}
    with staged(final) as stage:
        write_run(stage, ["B.jsonl", "C.jsonl"])
    assert listing(final) == [
        OWNED_LIST,
        "junit.xml",
        "matrix.json",
        "notes.txt",
        "traces/B.jsonl",
        "traces/C.jsonl",
        "traces/user.jsonl",
    ]
    assert (final / "notes.txt").read_text() == "mine" and (final / "traces" / "user.jsonl").read_text() == "mine too"


def test_an_older_report_is_known_by_its_matrix(tmp_path: Path) -> None:
    """A directory written before the listing existed: its matrix names its traces."""
    final = tmp_path / "report"
    (final / "traces").mkdir(parents=True)
    old = {"format": "octet-conformance/matrix@2", "results": [{"trace": "traces/Old.jsonl"}, {"trace": None}]}
    (final / "matrix.json").write_text(json.dumps(old))
    (final / "traces" / "Old.jsonl").write_text("old")
    (final / "traces" / "user.jsonl").write_text("mine")
    with staged(final) as stage:
        write_run(stage, [])
    assert not (final / "traces" / "Old.jsonl").exists()
    assert (final / "traces" / "user.jsonl").read_text() == "mine"


def test_listed_paths_outside_the_directory_are_never_removed(tmp_path: Path) -> None:
    final = tmp_path / "report"
    final.mkdir()
    outside = tmp_path / "precious.txt"
    outside.write_text("keep")
    (final / OWNED_LIST).write_text(json.dumps(["../precious.txt", str(outside), "", 7]))
    assert owned_files(final) == set()
    with staged(final) as stage:
        write_run(stage, [])
    assert outside.read_text() == "keep"


@pytest.mark.parametrize("error", [Stopping(15), RuntimeError("harness failed")], ids=["signal", "error"])
def test_an_interrupted_run_leaves_the_directory_as_it_was(tmp_path: Path, error: BaseException) -> None:
    final = tmp_path / "report"
    with staged(final) as stage:
        write_run(stage, ["A.jsonl"])
    before = {p: (final / p).read_bytes() for p in listing(final)}
    with pytest.raises(type(error)) as caught, staged(final) as stage:
        write_run(stage, ["B.jsonl"])
        raise error
    assert {p: (final / p).read_bytes() for p in listing(final)} == before
    assert not [p for p in final.iterdir() if p.name.startswith(STAGING_PREFIX)]
    if isinstance(error, Stopping):
        assert f"report directory {final} left as it was" in caught.value.__notes__


def test_a_directory_created_for_an_interrupted_run_is_removed_again(tmp_path: Path) -> None:
    final = tmp_path / "a" / "b" / "report"
    with pytest.raises(Stopping), staged(final) as stage:
        write_run(stage, ["A.jsonl"])
        raise Stopping(2)
    assert not (tmp_path / "a").exists()


def test_a_second_run_into_the_same_directory_is_refused(tmp_path: Path) -> None:
    final = tmp_path / "report"
    with staged(final), pytest.raises(ReportDirError, match="in use by another octet-conformance run"):
        with staged(final):
            pass
    with staged(final) as stage:  # the first run's lock ended with it
        write_run(stage, [])


def test_the_lock_is_the_directory_itself(tmp_path: Path) -> None:
    """Another process holding flock on the directory (as a concurrent run does) is seen."""
    final = tmp_path / "report"
    final.mkdir()
    fd = os.open(final, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ReportDirError, match="in use"), locked(final, what="fuzz work directory"):
            pass
    finally:
        os.close(fd)


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_an_unusable_directory_is_refused_before_anything_runs(tmp_path: Path, where: str) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    final = a_file if where == "file" else a_file / "report"
    ran = False
    with pytest.raises(ReportDirError), staged(final):
        ran = True
    assert not ran and a_file.read_text() == "x"


def test_a_nearly_full_disk_is_refused_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found after the run, a full disk would cost the whole run: the free
    space is checked when the directory is prepared, and the error names it."""
    monkeypatch.setattr(reportdir, "free_bytes", lambda directory: reportdir.MIN_FREE_BYTES - 1)
    final = tmp_path / "a" / "report"
    ran = False
    with pytest.raises(ReportDirError, match=f"report directory {final} has 32.0 MiB free") as caught, staged(final):
        ran = True
    assert not ran and not (tmp_path / "a").exists()
    assert "free some space or choose another directory" in str(caught.value)
    monkeypatch.setattr(reportdir, "free_bytes", lambda directory: reportdir.MIN_FREE_BYTES)
    with staged(final) as stage:  # exactly the floor is enough
        write_run(stage, [])


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS])
def test_a_write_that_runs_out_of_room_names_the_file_and_keeps_the_last_run(tmp_path: Path, code: int) -> None:
    final = tmp_path / "report"
    with staged(final) as stage:
        write_run(stage, ["A.jsonl"])
    before = {p: (final / p).read_bytes() for p in listing(final)}
    with pytest.raises(ReportDirError) as caught, staged(final) as stage:
        raise OSError(code, os.strerror(code), str(stage / "matrix.json"))
    # named where it was going, not in the staging directory
    assert (
        str(caught.value)
        == f"cannot write {final / 'matrix.json'}: {os.strerror(code)}; report directory {final} was left as it was"
    )
    assert {p: (final / p).read_bytes() for p in listing(final)} == before
    with pytest.raises(OSError, match="not a room problem"), staged(final):  # any other OSError is not explained away
        raise OSError(errno.EINVAL, "not a room problem")
