"""Command-line values, checked before anything runs.

Each function is an argparse ``type``: it returns the value or raises
``ArgumentTypeError`` with a message that says how to fix the call, and
argparse turns that into a usage error (exit status 2).
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

SEED_LIMIT = 2**64  # seeds are 0 <= seed < 2**64 (README, --help)
MAX_PATIENCE_S = 3600.0  # an hour for one response: beyond it a hang only looks like patience
MAX_FUZZ_SECONDS = 30 * 24 * 3600.0
MAX_RUNS = 10_000
MAX_JOBS = 64  # worker processes of one certification


def _seconds(text: str, option: str, example: str, ceiling: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= ceiling):
        raise argparse.ArgumentTypeError(
            f"{option} takes a number of seconds > 0 and <= {ceiling:g} (got {text!r}); for example {option} {example}"
        )
    return value


def patience(text: str) -> float:
    return _seconds(text, "--patience", "15", MAX_PATIENCE_S)


def fuzz_seconds(text: str) -> float:
    return _seconds(text, "--seconds", "300", MAX_FUZZ_SECONDS)


def seed(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"--seed takes a whole number from 0 to 2**64-1 = {SEED_LIMIT - 1} (got {text!r}); for example --seed 42"
        )
    return value


def jobs(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_JOBS:
        raise argparse.ArgumentTypeError(
            f"--jobs takes a whole number from 1 to {MAX_JOBS} (got {text!r}); for example --jobs 2"
        )
    return value


def runs(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_RUNS:
        raise argparse.ArgumentTypeError(f"--runs takes a whole number from 1 to {MAX_RUNS} (got {text!r})")
    return value


def output_dir(text: str) -> Path:
    """A directory the run writes into (created if missing): never empty,
    which would silently mean the current directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "an empty directory name is refused (it would mean the current directory); give a path, e.g. reports/latest"
        )
    return Path(text)


def existing_dir(text: str) -> Path:
    path = Path(text)
    if not text or not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise argparse.ArgumentTypeError(
            f"{text!r} {what}; give the directory of saved fuzz cases (octet-conformance fuzz --regressions DIR)"
        )
    return path


def existing_file(text: str) -> Path:
    path = Path(text)
    if not text or not path.is_file():
        what = "does not exist" if not path.exists() else "is not a regular file"
        raise argparse.ArgumentTypeError(f"{text!r} {what}; check the path")
    return path


def id_glob(text: str) -> str:
    """A requirement id or an fnmatch pattern of ids (``EXT-1.9-*``)."""
    if not text or text != text.strip() or any(ch.isspace() for ch in text):
        raise argparse.ArgumentTypeError(
            f"--only takes a requirement id or a glob of ids without spaces (got {text!r}); "
            "for example --only 'EXT-1.9-*'"
        )
    return text


def section(text: str) -> str:
    """A heading number: ``0``, ``1.9``, ``2.24b``."""
    if not re.fullmatch(r"\d+(\.\d+)*[a-z]?", text):
        raise argparse.ArgumentTypeError(
            f"--section takes a heading number such as 1.9, 2 or 1.4b (got {text!r}); for example --section 1.9"
        )
    return text


def feature(text: str) -> str:
    """A negotiated feature's name, as the catalog spells it (``request_cancellation``)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", text):
        raise argparse.ArgumentTypeError(f"--feature takes a feature name such as request_cancellation (got {text!r})")
    return text


# A brace group that reads like the data directory placeholder but is not it
# ({datadir}, {DATA_DIR}, { data_dir }, {data-dir}, {data_directory}, {dir}), or
# the placeholder inside one more layer of braces or a shell expansion
# (${data_dir}, {{data_dir}}): each would reach the target half replaced, or
# literally, as a relative directory created in the current one.
_BRACES = re.compile(r"\$?\{+[\w\s.-]+\}+")  # a word in braces; JSON such as {"a": 1} is not one


def data_dir_problem(argv: tuple[str, ...] | list[str], placeholder: str) -> str | None:
    """Why a host-core command cannot receive its data directory, or None.

    ``placeholder`` (``{data_dir}``) must appear, exactly, at least once; a
    near miss anywhere refuses the command, naming it."""
    for position, arg in enumerate(argv):
        for match in _BRACES.finditer(arg):
            group = match.group()
            if group != placeholder and _looks_like_data_dir(group):
                return (
                    f"{group!r} in argument {position} of the host-core command is not the placeholder: write "
                    f"{placeholder} exactly (the harness replaces it with a fresh data directory)"
                )
    if not any(placeholder in arg for arg in argv):
        return (
            f"the host-core command names no {placeholder}: put it where the host-core takes its data "
            f"directory, for example -- my-hostcore --data-dir {placeholder}"
        )
    return None


def _looks_like_data_dir(group: str) -> bool:
    letters = re.sub(r"[^a-z]", "", group.lower())
    return "data" in letters or letters in ("dir", "directory")
