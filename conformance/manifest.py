"""``extension.toml``: the manifest of an extension under test.

The contract is documented in docs/extension-manifest.md. A manifest that
breaks the contract is rejected before any process starts, with a message
naming the field, what was expected and what was found; that is a harness
"could not run" outcome (exit status 2), not a verdict.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


class ManifestError(ValueError):
    """The manifest breaks the documented contract; nothing was spawned."""


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


def load_manifest(path: str | Path) -> Manifest:
    p = Path(path).resolve()
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{p}: no such manifest") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{p}: cannot read manifest: {exc}") from None
    return parse_manifest(data, p)


def parse_manifest(data: dict[str, Any], path: Path) -> Manifest:
    def fail(field: str, expected: str) -> ManifestError:
        got = repr(data.get(field, "absent")) if "." not in field else "invalid"
        return ManifestError(f"{path}: {field} must be {expected}; got {got}")

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
    for key in contributes:
        if key not in CONTRIBUTION_NAMES:
            raise ManifestError(
                f"{path}: contributes.{key} is not a known contribution ({', '.join(CONTRIBUTION_NAMES)})"
            )
    for key in ("tools", "commands", "hooks", "ui", "tool_renderers"):
        value = contributes.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ManifestError(f"{path}: contributes.{key} must be an array of strings; got {value!r}")
    for key in capabilities:
        if key not in CAPABILITY_NAMES:
            raise ManifestError(f"{path}: capabilities.{key} is not a known capability ({', '.join(CAPABILITY_NAMES)})")
    return Manifest(path, data["name"], data["version"], api, requires, tuple(command), contributes, capabilities)


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ManifestError(f"{path}: [{key}] must be a table; got {value!r}")
    return value
