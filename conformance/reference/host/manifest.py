"""Manifest discovery and validation, before any process starts (§0, §1.1).

``discover(roots)`` walks each root (a folder of extension folders, each with
an ``extension.toml``) and returns one :class:`Discovered` per manifest: a
loaded :class:`Manifest` or the reason it was refused. ``load_manifest(path)``
loads one. Reads are bounded (§0 "Transport defaults": 256 KiB by default) and
``requires_octet`` must name exactly this host's version (§0), so a manifest
for another host never gets a process.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.protocol.limits import ENVIRONMENT_ALLOWLIST, MAX_SECRET_NAME_BYTES

from .config import MANIFEST_READ_BYTES

API_VERSIONS = ("0.1", "0.2", "0.4")
SOURCES = ("project", "global", "explicit")  # §1.1 initialize extension.source
MANIFEST_NAME = "extension.toml"
LIST_CONTRIBUTIONS = ("tools", "commands", "hooks", "ui", "tool_renderers")
FLAG_CONTRIBUTIONS = ("context", "notifications", "confirmations", "presentation", "menu")
# §1.1: secret names are identifiers: a letter or underscore, then letters,
# digits, underscore, hyphen or dot; at most 64 ASCII bytes.
_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


class ManifestError(ValueError):
    """The manifest is refused; nothing was started for it."""


@dataclass(frozen=True)
class Manifest:
    path: Path
    name: str
    version: str
    api_version: str
    requires_octet: str
    command: tuple[str, ...]
    source: str
    contributes: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def declared(self, key: str) -> list[str]:
        value = self.contributes.get(key, [])
        return list(value) if isinstance(value, list) else []

    @property
    def environment(self) -> tuple[str, ...]:
        return tuple(self.capabilities.get("environment", ()))

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(self.capabilities.get("secrets", ()))


@dataclass(frozen=True)
class Discovered:
    path: Path
    manifest: Manifest | None
    error: str | None


def discover(
    roots: list[tuple[Path, str]], *, octet_version: str, read_bytes: int = MANIFEST_READ_BYTES
) -> list[Discovered]:
    """Every ``<root>/<folder>/extension.toml`` under each (root, source), sorted."""
    found: list[Discovered] = []
    for root, source in roots:
        if not root.is_dir():
            continue
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            path = folder / MANIFEST_NAME
            if not path.is_file():
                continue
            try:
                manifest = load_manifest(path, source=source, octet_version=octet_version, read_bytes=read_bytes)
            except ManifestError as exc:
                found.append(Discovered(path, None, str(exc)))
            else:
                found.append(Discovered(path, manifest, None))
    return found


def read_bounded(path: Path, limit: int) -> str:
    """At most ``limit`` bytes of UTF-8 text; a longer file is refused whole."""
    try:
        with path.open("rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ManifestError(f"{path}: manifest is larger than the {limit}-byte read bound (§0)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: manifest is not UTF-8: {exc}") from None


def load_manifest(
    path: str | Path, *, source: str = "explicit", octet_version: str, read_bytes: int = MANIFEST_READ_BYTES
) -> Manifest:
    p = Path(path).absolute()
    if source not in SOURCES:
        raise ManifestError(f"source must be one of {SOURCES}; got {source!r}")
    try:
        data = tomllib.loads(read_bounded(p, read_bytes))
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{p}: not valid TOML: {exc}") from None
    return parse_manifest(data, p, source=source, octet_version=octet_version)


def parse_manifest(data: dict[str, Any], path: Path, *, source: str, octet_version: str) -> Manifest:
    for key in ("name", "version"):
        _require(isinstance(data.get(key), str) and bool(data[key]), path, key, "a non-empty string", data.get(key))
    api = data.get("api_version")
    _require(api in API_VERSIONS, path, "api_version", f"one of {API_VERSIONS}", api)
    requires = data.get("requires_octet")
    # §0: the requirement is exact; "=X" is the same requirement spelled as a
    # version constraint.
    _require(
        requires in (octet_version, f"={octet_version}"), path, "requires_octet", f"exactly {octet_version!r}", requires
    )
    command = data.get("command")
    ok = isinstance(command, list) and bool(command) and all(isinstance(c, str) and c for c in command)
    _require(ok, path, "command", "a non-empty array of non-empty strings", command)
    contributes = _table(data, "contributes", path)
    capabilities = _table(data, "capabilities", path)
    _check_contributes(contributes, str(api), path)
    _check_capabilities(capabilities, str(api), path)
    argv = tuple(str(c) for c in command or ())
    return Manifest(
        path, data["name"], data["version"], str(api), str(requires), argv, source, contributes, capabilities
    )


def _check_contributes(contributes: dict[str, Any], api: str, path: Path) -> None:
    for key, value in contributes.items():
        if key in LIST_CONTRIBUTIONS:
            ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
            _require(ok and len(set(value)) == len(value), path, f"contributes.{key}", "distinct names", value)
        elif key in FLAG_CONTRIBUTIONS:
            _require(isinstance(value, bool), path, f"contributes.{key}", "a boolean", value)
        else:
            raise ManifestError(f"{path}: contributes.{key} is not a known contribution")
    # §1.1: a 0.1 manifest cannot declare semantic presentation; §1.6b: menu
    # is API 0.2+ and needs a declared command.
    if api == "0.1":
        _require(not contributes.get("presentation"), path, "contributes.presentation", "absent on API 0.1", True)
        _require(not contributes.get("menu"), path, "contributes.menu", "absent on API 0.1", True)
    if contributes.get("menu"):
        _require(bool(contributes.get("commands")), path, "contributes.menu", "declared with a command", True)


def _check_capabilities(capabilities: dict[str, Any], api: str, path: Path) -> None:
    environment = capabilities.get("environment")
    if environment is not None:
        # §1.1: API 0.2+ only, and only reviewed names.
        _require(api != "0.1", path, "capabilities.environment", "absent on API 0.1", environment)
        ok = isinstance(environment, list) and all(name in ENVIRONMENT_ALLOWLIST for name in environment)
        _require(ok, path, "capabilities.environment", f"a list drawn from {ENVIRONMENT_ALLOWLIST}", environment)
    secrets = capabilities.get("secrets")
    if secrets is not None:
        ok = isinstance(secrets, list) and all(_secret_name(s) for s in secrets) and len(set(secrets)) == len(secrets)
        _require(ok, path, "capabilities.secrets", "distinct identifiers of at most 64 ASCII bytes", secrets)
    credentials = capabilities.get("provider_credentials")
    if credentials is not None:
        _require(
            isinstance(credentials, bool) and api != "0.1",
            path,
            "capabilities.provider_credentials",
            "a boolean on API 0.2+",
            credentials,
        )


def _secret_name(name: object) -> bool:
    return (
        isinstance(name, str)
        and name.isascii()
        and len(name) <= MAX_SECRET_NAME_BYTES
        and bool(_SECRET_NAME.match(name))
    )


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    _require(isinstance(value, dict), path, f"[{key}]", "a table", value)
    return dict(value)


def _require(ok: bool, path: Path, field_name: str, expected: str, got: object) -> None:
    if not ok:
        shown = repr(got)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise ManifestError(f"{path}: {field_name} must be {expected}; got {shown}")
