"""``extension.toml``: the manifest of an extension under test.

The contract is documented in docs/extension-manifest.md. A manifest that
breaks the contract is rejected before any process starts, with a message
naming the field, what was expected and what was found; that is a harness
"could not run" outcome (exit status 2), not a verdict.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .manifest_file import ManifestError, read_manifest
from .protocol.ext_types import API_VERSIONS, ManifestInfo

OCTET_VERSION = "0.8.0"  # the host version the harness plays (§0: requires_octet is exact)
CONTRIBUTION_NAMES = (
    "tools",
    "commands",
    "hooks",
    "ui",
    "context",
    "tool_renderers",
    "notifications",
    "confirmations",
    "presentation",
    "menu",
)
CAPABILITY_NAMES = ("filesystem", "process", "network", "secrets", "environment", "provider_credentials")
TOP_LEVEL_KEYS = ("name", "version", "api_version", "requires_octet", "command", "contributes", "capabilities")
TABLES = ("contributes", "capabilities")
# The type every declaration must have (docs/extension-manifest.md). A value
# of the wrong type is the suite's input error (refused, exit 2): the harness
# could not send the declaration as written. capabilities.secrets and
# capabilities.environment are absent on purpose: §1.1 judges them, so a
# wrong shape there is a verdict (conformance/protocol/ext_manifest.py).
STRING_LISTS = ("tools", "commands", "hooks", "ui", "tool_renderers")
BOOLEAN_CONTRIBUTIONS = ("context", "notifications", "confirmations", "presentation", "menu")
CAPABILITY_TYPES: dict[str, type] = {"filesystem": str, "process": bool, "network": bool, "provider_credentials": bool}

__all__ = ["Manifest", "ManifestError", "command_target", "load_manifest", "parse_manifest", "program_name"]


@dataclass(frozen=True)
class Manifest:
    path: Path
    name: str
    version: str
    api_version: str
    requires_octet: object  # as written, None when absent: judged by EXT-0-bundle-requires-octet, not here
    command: tuple[str, ...]
    contributes: dict[str, Any]
    capabilities: dict[str, Any]

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def info(self) -> ManifestInfo:
        return ManifestInfo(
            self.name,
            self.version,
            self.api_version,
            dict(self.contributes),
            dict(self.capabilities),
            requires_octet=self.requires_octet,
        )


# How a target without a manifest (a host-core, a client: only a command) is
# named in reports: by the program the command runs, not by its interpreter.
_INTERPRETER = re.compile(
    r"(python|pypy|node|nodejs|deno|bun|ruby|perl|php|java|dotnet|sh|bash|dash|zsh|env)[0-9.]*(\.exe)?"
)
_SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".sh", ".jar", ".dll", ".exe")
# An entry point named like these says nothing: the folder it sits in names the program.
_GENERIC_ENTRIES = ("main", "__main__", "index", "cli", "app", "server", "start")
_LAYOUT_DIRS = ("src", "dist", "build", "bin", "lib", "out", "release", "debug", "target")


def program_name(argv: Sequence[str], cwd: Path, fallback: str) -> str:
    """What a person calls the program ``argv`` runs from ``cwd``:
    ``octet-hostcore --data-dir ...`` -> ``octet-hostcore``,
    ``python3 main.py`` in ``.../abort-any-tool`` -> ``abort-any-tool``,
    ``node dist/index.js`` in ``.../my-core`` -> ``my-core``,
    ``python3 -m my_core`` -> ``my_core``. Interpreters (and their options)
    are skipped; a script with a generic name (main, index, ...) is named by
    its folder, layout folders (src, dist, bin ...) skipped."""
    args = list(argv)
    while args and _INTERPRETER.fullmatch(Path(args[0]).name):
        interpreter = Path(args.pop(0)).name
        while args and (args[0].startswith("-") or "=" in args[0]):  # interpreter options, env's VAR=value
            option = args.pop(0)
            if option == "-m" and args:
                return args[0]
            if option == "-c":  # inline code names no program
                return interpreter
    if not args:
        return Path(argv[0]).name if argv else fallback
    program = Path(args[0])
    stem = program.name.removesuffix(program.suffix) if program.suffix in _SCRIPT_SUFFIXES else program.name
    if stem not in _GENERIC_ENTRIES:
        return stem or fallback
    for folder in (cwd / program).resolve().parents:
        if folder.name and folder.name not in _LAYOUT_DIRS:
            return folder.name
    return stem


def command_target(argv: Sequence[str], cwd: Path, api_version: str, fallback: str) -> Manifest:
    """A target that has no manifest, described as reports name a target: the
    command stands in for the manifest, :func:`program_name` for its name."""
    program = argv[0] if argv else fallback
    return Manifest(
        path=Path(program),
        name=program_name(argv, cwd, fallback),
        version="",
        api_version=api_version,
        requires_octet=None,
        command=tuple(argv),
        contributes={},
        capabilities={},
    )


def load_manifest(path: str | Path) -> Manifest:
    """Read (bounded, never blocking: conformance/manifest_file.py) and check."""
    resolved, data = read_manifest(path)
    return parse_manifest(data, resolved)


def parse_manifest(data: dict[str, Any], path: Path) -> Manifest:
    def fail(field: str, expected: str) -> ManifestError:
        got = _shown(data[field]) if field in data else "nothing (the key is missing)"
        return ManifestError(f"{path}: {field} must be {expected}; got {got}")

    _unknown_keys(data, TOP_LEVEL_KEYS, "", path)
    for key in ("name", "version"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise fail(key, "a non-empty string")
    api = data.get("api_version")
    if api not in API_VERSIONS:
        raise fail("api_version", " or ".join(f'"{v}"' for v in API_VERSIONS))
    # §0: requires_octet is required only of installable bundles, so a
    # manifest without it runs; a present one is a verdict (EXT-0-bundle-
    # requires-octet, conformance/protocol/ext_manifest.py), not a refusal.
    requires = data.get("requires_octet")
    command = data.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) and c for c in command):
        raise fail("command", "a non-empty array of non-empty strings (argv)")
    contributes = _table(data, "contributes", path)
    capabilities = _table(data, "capabilities", path)
    _check_contributes(contributes, path)
    _check_capabilities(capabilities, path)
    return Manifest(path, data["name"], data["version"], api, requires, tuple(command), contributes, capabilities)


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ManifestError(f"{path}: [{key}] must be a table; got {_shown(value)}")
    return value


def _check_contributes(contributes: dict[str, Any], path: Path) -> None:
    _unknown_keys(contributes, CONTRIBUTION_NAMES, "contributes.", path)
    for key in STRING_LISTS:
        value = contributes.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ManifestError(f"{path}: contributes.{key} must be an array of strings; got {_shown(value)}")
    for key in BOOLEAN_CONTRIBUTIONS:
        if key in contributes and not isinstance(contributes[key], bool):
            raise ManifestError(
                f"{path}: contributes.{key} must be a boolean (true or false); got {_shown(contributes[key])}"
            )


def _check_capabilities(capabilities: dict[str, Any], path: Path) -> None:
    _unknown_keys(capabilities, CAPABILITY_NAMES, "capabilities.", path)
    for key, expected in CAPABILITY_TYPES.items():
        if key in capabilities and not isinstance(capabilities[key], expected):
            wanted = "a boolean (true or false)" if expected is bool else "a string"
            raise ManifestError(f"{path}: capabilities.{key} must be {wanted}; got {_shown(capabilities[key])}")


def _unknown_keys(table: dict[str, Any], known: tuple[str, ...], prefix: str, path: Path) -> None:
    """Refuse keys the contract does not have. The spec does not make an
    unknown key the extension's fault (no requirement names it), but running
    it anyway would be worse: a misspelt ``[contribute]`` would be ignored and
    every declaration in it would turn into failures blamed on the extension.
    So it is the suite's input error, with the nearest known name."""
    for key, value in table.items():
        if key in known:
            continue
        shown = f"[{prefix}{key}]" if isinstance(value, dict) and not prefix else f"{prefix}{key}"
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"did you mean {_name(prefix, close[0])}? " if close else ""
        raise ManifestError(
            f"{path}: unknown key {shown}; {hint}known {'keys' if not prefix else prefix.rstrip('.') + ' keys'}: "
            f"{', '.join(known)}"
        )


def _name(prefix: str, key: str) -> str:
    return f"[{key}]" if not prefix and key in TABLES else f"{prefix}{key}"


def _toml_kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"  # the only other TOML type


def _shown(value: object) -> str:
    """A manifest value as a message shows it: short, typed."""
    text = repr(value)
    if len(text) > 80:
        text = text[:79] + "…"
    return f"{text} ({_toml_kind(value)})"
