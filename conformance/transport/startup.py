"""Why a target's command cannot start, said so a person can fix it.

A command that cannot be executed is the suite's input error, not the
target's behaviour: the run stops with exit status 2 and one message,
``could not start: <argv> in <cwd>: <cause>`` plus a hint, instead of one
harness error per requirement. :func:`check_startable` looks before anything
is spawned (so nothing runs at all); :func:`start_failure` explains an
``OSError`` that ``exec`` raised anyway (a race, a ``noexec`` mount, ...).

A command that starts but is not the role it was given -- it exits at once,
rejects its arguments, or writes something other than its protocol's first
frame -- is the same kind of mistake, found a moment later:
:class:`SetupFailure` (a :class:`StartFailure`) says so with its exit status
and the tail of its stderr, before any verdict (each runner raises it from its
first generation; the command line turns it into exit status 2 and leaves the
previous report in place).
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

SHEBANG_READ_BYTES = 256  # a #! line longer than this is not run by Linux either


class StartFailure(OSError):
    """The target's command could not be started; nothing of it runs."""

    def __init__(self, argv: Sequence[str], cwd: Path, cause: str, hint: str = "") -> None:
        self.argv, self.cwd, self.cause, self.hint = list(argv), cwd, cause, hint
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"could not start: {shlex.join(self.argv)} in {self.cwd}: {self.cause}"
        return f"{text}\n  hint: {self.hint}" if self.hint else text


MANIFEST_FOLDER = "the manifest's folder"  # where an extension's command runs
CURRENT_FOLDER = "the current folder"  # where a driver's, host-core's or client's command runs


def check_startable(argv: Sequence[str], cwd: Path, env: dict[str, str], *, folder: str = MANIFEST_FOLDER) -> None:
    """Raise :class:`StartFailure` when ``argv`` cannot be executed from
    ``cwd`` with ``env``'s PATH; return quietly when it looks runnable.
    ``folder`` names ``cwd`` in the hint (a manifest's, or the current one)."""
    problem = diagnose(argv, cwd, env)
    if problem is not None:
        cause, hint = problem
        raise StartFailure(argv, cwd, cause, hint.replace(MANIFEST_FOLDER, folder))


def start_failure(argv: Sequence[str], cwd: Path, env: dict[str, str], exc: OSError) -> StartFailure:
    """A :class:`StartFailure` for an ``OSError`` raised by exec."""
    cause, hint = diagnose(argv, cwd, env) or (exc.strerror or str(exc), _exec_hint(exc))
    return StartFailure(argv, cwd, cause, hint)


def diagnose(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[str, str] | None:
    """(cause, hint) when ``argv[0]`` cannot be executed, else None."""
    if not cwd.is_dir():
        return f"the working directory {cwd} does not exist", "the command runs in the manifest's folder"
    program = argv[0]
    if os.sep not in program:
        found = shutil.which(program, path=env.get("PATH"))
        if found is None:
            return (
                f"{program!r} is not on the target's PATH ({env.get('PATH', '')})",
                "the target's PATH is the suite's Python directory followed by the caller's PATH; "
                f"give a path relative to the manifest's folder (./{program}) or an absolute one",
            )
        return _executable(Path(found), env)
    return _executable(cwd / program, env)


def _executable(path: Path, env: dict[str, str]) -> tuple[str, str] | None:
    if not path.exists():
        return f"{path} does not exist", "a program path in command is resolved against the manifest's folder"
    if path.is_dir():
        return f"{path} is a directory", "command[0] must name a program, not a folder"
    if not os.access(path, os.X_OK):
        return (
            f"{path} is not executable",
            f"make it executable (chmod +x {shlex.quote(path.name)}) or name its interpreter first, "
            f'e.g. command = ["python3", "{path.name}"]',
        )
    return _interpreter(path, env)


def _interpreter(path: Path, env: dict[str, str]) -> tuple[str, str] | None:
    """The program behind a ``#!`` line must exist too (else exec says only
    "No such file or directory", naming the script that is right there)."""
    try:
        with path.open("rb") as f:
            head = f.read(SHEBANG_READ_BYTES)
    except OSError:
        return None  # executable but unreadable: exec may still work (a binary with --x)
    if not head.startswith(b"#!"):
        return None  # a binary (or a format binfmt_misc knows): only exec can tell; see start_failure
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    parts = line.split()
    if not parts:
        return f"{path} has an empty #! line", "name an interpreter after #! or remove the line"
    interpreter = parts[0]
    if not os.access(interpreter, os.X_OK) or Path(interpreter).is_dir():
        return (
            f"its #! line names the interpreter {interpreter}, which does not exist or is not executable",
            "install that interpreter, fix the #! line, or name an interpreter in command, "
            f'e.g. command = ["python3", "{path.name}"]',
        )
    if Path(interpreter).name == "env":
        name = next((p for p in parts[1:] if not p.startswith("-")), None)
        if name is not None and "=" not in name and shutil.which(name, path=env.get("PATH")) is None:
            return (
                f"its #! line runs {name!r} through env, and {name!r} is not on the target's PATH "
                f"({env.get('PATH', '')})",
                f"install {name}, or name an interpreter that exists in command",
            )
    return None


def _exec_hint(exc: OSError) -> str:
    """For an ENOEXEC raised by exec: a script without a #! line."""
    if exc.errno == errno.ENOEXEC:
        return "it is neither a binary nor a script with a #! line: add one, or name its interpreter in command"
    return ""


# -- a role that started but could not be set up ---------------------------------------------

SETUP_TAIL_LINES = 8  # the stderr lines quoted: enough for a traceback's last frames and its message
SETUP_TAIL_CHARS = 2048
SETTLE_S = 1.0  # how long a process that is going away may take to exit and finish its stderr


class Ending(Protocol):
    """What :func:`setup_failure` reads of a process that is going away
    (transport.process.TargetProcess; a Protocol, as process.py imports this module)."""

    def last_words(self, timeout: float) -> tuple[int | None, str]: ...


class SetupFailure(StartFailure):
    """A role's process started, but not as the role it was given: it exited
    at once, rejected its arguments, or wrote something other than the
    start of its protocol. Like :class:`StartFailure` (which it is, so every
    path that stops a run for one stops it for this), the run cannot happen
    at all: exit status 2, one message, no verdict and no report written.
    ``status``: its exit status (negative: killed by that signal; None:
    still running); ``stderr``: the tail of what it wrote there."""

    def __init__(
        self,
        role: str,
        argv: Sequence[str],
        cwd: Path,
        what: str,
        *,
        status: int | None,
        stderr: str,
        hint: str = "",
    ) -> None:
        self.role, self.what, self.status, self.stderr = role, what, status, stderr
        super().__init__(argv, cwd, what, hint)

    def __str__(self) -> str:
        lines = [
            f"{self.role} could not be set up: {shlex.join(self.argv)} in {self.cwd}: {self.what}",
            f"  {exit_text(self.status)}",
        ]
        tail = stderr_tail(self.stderr)
        if tail:
            lines.append(f"  stderr (last {len(tail)} line(s)):")
            lines.extend(f"    | {line}" for line in tail)
        else:
            lines.append("  stderr: (nothing)")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


def setup_failure(
    role: str, argv: Sequence[str], cwd: Path, what: str, process: Ending, *, hint: str = ""
) -> SetupFailure:
    """A :class:`SetupFailure` for ``process``, once it has had a moment to
    exit and finish writing its stderr (its last words say why it went)."""
    status, stderr = process.last_words(SETTLE_S)
    return SetupFailure(role, argv, cwd, what, status=status, stderr=stderr, hint=hint)


def exit_text(status: int | None) -> str:
    if status is None:
        return "still running (killed by the harness)"
    if status < 0:
        return f"killed by signal {-status}"
    return f"exit status {status}"


def stderr_tail(stderr: str) -> list[str]:
    """The last non-blank lines of ``stderr``, each cut to a screen's width."""
    lines = [line.rstrip() for line in stderr[-SETUP_TAIL_CHARS:].splitlines() if line.strip()]
    return [line if len(line) <= 200 else line[:197] + "..." for line in lines[-SETUP_TAIL_LINES:]]
