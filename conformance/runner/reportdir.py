"""Report directories that always hold one whole run, or the one before it.

A run writes into a staging directory inside the report directory and is
moved into place only when it is complete, so ``matrix.json`` and the traces
it names always belong to the same run; an interrupted or failed run leaves
the directory as it was. Before anything runs, the directory is created if
needed, proved writable (the staging directory is made there), checked for
free space (:data:`MIN_FREE_BYTES`) and locked (``flock`` on the directory
itself), so a second run into the same directory is refused instead of
mixing its files with the first one's. A write that still fails for want of
room (or permission) is said with the file it was writing, and the
directory is left as it was.

Only files this tool wrote are ever removed: each run lists what it moved
in (``.octet-conformance-files``), and the next run removes only files named
there (or, for a directory written before that list existed, the traces its
``matrix.json`` names). A user's own files beside the report stay untouched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from conformance.outfiles import write_text
from conformance.transport.process import Stopping, raise_if_stopping

OWNED_LIST = ".octet-conformance-files"
STAGING_PREFIX = ".octet-conformance-staging-"
# Moved last, so a reader that finds the new matrix finds its traces too.
LAST_FILES = ("junit.xml", "matrix.json")
_COMMIT_BLOCKED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# A run writes a few MiB (matrix, junit, shrunk traces of at most a few hundred
# KiB each); with less than this free, it would most likely end unwritten.
MIN_FREE_BYTES = 32 * 2**20
# Errors that mean "this directory cannot take the run" (disk full, quota, read-only, permission).
CANNOT_WRITE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM)


class ReportDirError(Exception):
    """The directory cannot take a run (not creatable, not writable, in use)."""


def _created_dirs(final: Path) -> list[Path]:
    """The directories ``final.mkdir(parents=True)`` is about to create, deepest first."""
    missing: list[Path] = []
    for d in (final, *final.parents):
        if d.exists() or d.is_symlink():
            break
        missing.append(d)
    return missing


def _lock(final: Path, what: str) -> int:
    """Lock ``final`` for this run; the lock ends with the process at the latest."""
    fd = os.open(final, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ReportDirError(
            f"{what} {final} is in use by another octet-conformance run; wait for it to end or choose another directory"
        ) from None
    return fd


def _prepare(final: Path, what: str) -> tuple[int, list[Path]]:
    if final.exists() and not final.is_dir():
        raise ReportDirError(f"{what} {final} exists and is not a directory; choose a directory")
    created = _created_dirs(final)
    try:
        final.mkdir(parents=True, exist_ok=True)
        fd = _lock(final, what)
    except OSError as exc:
        _remove_empty(created)
        raise ReportDirError(f"cannot use {what} {final}: {exc.strerror or exc}; choose a writable directory") from None
    try:
        _check_room(final, what)
    except BaseException:
        os.close(fd)
        _remove_empty(created)
        raise
    return fd, created


def free_bytes(directory: Path) -> int:
    """Bytes an unprivileged writer may still use on ``directory``'s file system."""
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def _check_room(final: Path, what: str) -> None:
    """Refuse, before anything runs, a directory whose disk is (nearly) full:
    found only after the run, it would cost the whole run."""
    try:
        free = free_bytes(final)
    except OSError:
        return  # a file system that cannot say: the write itself will tell
    if free < MIN_FREE_BYTES:
        raise ReportDirError(
            f"{what} {final} has {free / 2**20:.1f} MiB free on its file system; a run needs at least "
            f"{MIN_FREE_BYTES // 2**20} MiB there: free some space or choose another directory"
        )


def write_problem(exc: OSError, final: Path, what: str, stage: Path | None = None) -> ReportDirError | None:
    """A write that failed for want of room or permission, said with the file
    it was writing -- named where it was going to be, not in the staging
    directory (None for any other OSError: not ours to explain)."""
    if exc.errno not in CANNOT_WRITE:
        return None
    name = str(exc.filename) if exc.filename else ""
    if stage is not None and Path(name).is_relative_to(stage):
        name = str(final / Path(name).relative_to(stage))
    return ReportDirError(
        f"cannot write {name or 'into ' + str(final)}: {exc.strerror or exc}; {what} {final} was left as it was"
    )


def _remove_empty(created: list[Path]) -> None:
    for d in created:  # deepest first; only what we created, only if still empty
        with contextlib.suppress(OSError):
            d.rmdir()


def _safe_relative(name: object) -> str | None:
    """A listed path, if it names a file inside the directory (no '..', not absolute)."""
    if not isinstance(name, str) or not name:
        return None
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or path.parts[0].startswith(STAGING_PREFIX):
        return None
    return path.as_posix()


def owned_files(final: Path) -> set[str]:
    """Files an earlier run of this tool wrote into ``final`` (relative paths)."""
    listed: object = None
    with contextlib.suppress(OSError, ValueError):
        listed = json.loads((final / OWNED_LIST).read_text(encoding="utf-8"))
    if listed is None:
        with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
            matrix = json.loads((final / "matrix.json").read_text(encoding="utf-8"))
            if str(matrix.get("format", "")).startswith("octet-conformance/matrix@"):
                listed = [r.get("trace") for r in matrix.get("results", [])]
    if not isinstance(listed, list):
        return set()
    return {rel for rel in map(_safe_relative, listed) if rel is not None}


def _staged_files(stage: Path) -> list[str]:
    files = [p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file() and not p.is_symlink()]
    return sorted(files, key=lambda rel: (LAST_FILES.index(rel) + 1 if rel in LAST_FILES else 0, rel))


def commit(stage: Path, final: Path) -> list[str]:
    """Move the staged run into ``final``, then remove what the previous run
    wrote and this one did not. Signals wait until it is done: a run is either
    committed whole or not at all."""
    old = owned_files(final)
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _COMMIT_BLOCKED)
    try:
        new = _staged_files(stage)
        for rel in new:
            (final / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / rel, final / rel)
        for rel in sorted(old - set(new)):
            target = final / rel
            if target.is_file() or target.is_symlink():
                target.unlink()
        if not new and not old:
            return new  # nothing written: no listing either (an empty round of fuzz)
        write_text(final / OWNED_LIST, json.dumps(new, indent=1) + "\n")
        return new
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def staged(final: Path, *, what: str = "report directory") -> Iterator[Path]:
    """Prepare, lock and stage ``final``; yield the staging directory to write
    the run into; move it into place when the body ends normally. On an
    exception (a signal, a harness failure) ``final`` is left as it was."""
    fd, created = _prepare(final, what)
    committed = False
    try:
        try:
            stage = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=final))
        except OSError as exc:
            raise ReportDirError(f"cannot write into {what} {final}: {exc.strerror or exc}") from None
        try:
            yield stage
            raise_if_stopping()  # a run cut short by a signal is never committed
            committed = bool(commit(stage, final)) or not created
        except Stopping as exc:
            exc.add_note(f"{what} {final} left as it was")
            raise
        except OSError as exc:
            problem = write_problem(exc, final, what, stage)
            if problem is None:
                raise
            raise problem from exc
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    finally:
        if not committed:
            _remove_empty(created)
        os.close(fd)


@contextlib.contextmanager
def locked(directory: Path, *, what: str) -> Iterator[Path]:
    """Create (if needed), prove writable and lock ``directory`` for the body."""
    fd, created = _prepare(directory, what)
    try:
        try:
            probe = tempfile.NamedTemporaryFile(prefix=STAGING_PREFIX, dir=directory)
        except OSError as exc:
            raise ReportDirError(f"cannot write into {what} {directory}: {exc.strerror or exc}") from None
        probe.close()
        yield directory
    finally:
        _remove_empty(created)  # only if the run left it empty
        os.close(fd)
