"""Why a command cannot start (conformance/transport/startup.py), without
starting anything: the end-to-end cases are in tests/runner/test_bad_inputs.py."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import pytest

from conformance.transport.startup import StartFailure, check_startable, diagnose, start_failure

ENV = {"PATH": str(Path(sys.executable).parent)}


def write(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_runnable_command_passes(tmp_path: Path) -> None:
    write(tmp_path / "run.sh", "#!/bin/sh\nexit 0\n", 0o755)
    write(tmp_path / "env.sh", f"#!/usr/bin/env {Path(sys.executable).name}\n", 0o755)
    for argv in (["./run.sh"], ["./env.sh"], [Path(sys.executable).name, "main.py"], [sys.executable]):
        assert diagnose(argv, tmp_path, ENV) is None, argv
    check_startable(["./run.sh"], tmp_path, ENV)


@pytest.mark.parametrize(
    ("argv", "content", "mode", "cause"),
    [
        (["no-such-program-x"], None, 0, "'no-such-program-x' is not on the target's PATH"),
        (["./gone"], None, 0, "gone does not exist"),
        (["./plain"], "#!/bin/sh\n", 0o644, "plain is not executable"),
        (["./bad"], "#!/no/such/sh\n", 0o755, "#! line names the interpreter /no/such/sh"),
        (["./bad"], "#!/usr/bin/env no-such-program-x -u\n", 0o755, "runs 'no-such-program-x' through env"),
        (["./bad"], "#!\n", 0o755, "has an empty #! line"),
    ],
)
def test_causes(tmp_path: Path, argv: list[str], content: str | None, mode: int, cause: str) -> None:
    if content is not None:
        write(tmp_path / argv[0][2:], content, mode)
    problem = diagnose(argv, tmp_path, ENV)
    assert problem is not None and cause in problem[0] and problem[1]  # a cause, and always a hint
    with pytest.raises(StartFailure) as caught:
        check_startable(argv, tmp_path, ENV)
    assert str(caught.value).startswith(f"could not start: {argv[0]} in {tmp_path}: ")
    assert "\n  hint: " in str(caught.value)


def test_a_directory_as_program_or_cwd(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    assert "is a directory" in (diagnose(["./bin"], tmp_path, ENV) or ("", ""))[0]
    assert "does not exist" in (diagnose(["x"], tmp_path / "gone", ENV) or ("", ""))[0]


def test_exec_failure_without_a_diagnosis_keeps_the_os_reason(tmp_path: Path) -> None:
    write(tmp_path / "prog", "not a program\n", 0o755)  # looks runnable: only exec can tell
    assert diagnose(["./prog"], tmp_path, ENV) is None
    failure = start_failure(["./prog"], tmp_path, ENV, OSError(errno.ENOEXEC, "Exec format error"))
    assert isinstance(failure, OSError)  # callers that catch OSError (replay) still catch it
    assert failure.cause == "Exec format error" and "#! line" in failure.hint
