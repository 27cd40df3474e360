"""Report directories that always hold one whole run, or the one before it.

A run writes into a staging directory inside the report directory and is
moved into place only when it is complete, so ``matrix.json`` and the traces
it names always belong to the same run; an interrupted or failed run leaves
the directory as it was. Before anything runs, the directory is created if
needed, proved writable (the staging directory is made there) and locked
(``flock`` on the directory itself), so a second run into the same
directory is refused instead of mixing its files with the first one's.

Only files this tool wrote are ever removed: each run lists what it moved
in (``.octet-conformance-files``), and the next run removes only files named
there (or, for a directory written before that list existed, the traces its
``matrix.json`` names). A user's own files beside the report stay untouched.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from conformance.transport.process import Stopping, raise_if_stopping

OWNED_LIST = ".octet-conformance-files"
STAGING_PREFIX = ".octet-conformance-staging-"
# Moved last, so a reader that finds the new matrix finds its traces too.
LAST_FILES = ("junit.xml", "matrix.json")
_COMMIT_BLOCKED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


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
        return _lock(final, what), created
    except OSError as exc:
        _remove_empty(created)
        raise ReportDirError(f"cannot use {what} {final}: {exc.strerror or exc}; choose a writable directory") from None


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
        listing = final / f"{OWNED_LIST}.tmp"
        listing.write_text(json.dumps(new, indent=1) + "\n", encoding="utf-8")
        os.replace(listing, final / OWNED_LIST)
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
