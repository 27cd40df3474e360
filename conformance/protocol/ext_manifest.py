"""Checks on the manifest declarations that §1.1 constrains.

The manifest (``extension.toml``) is packaging data, but §1.1 puts three
rules on what it may declare for the wire version it selects: the secret
broker allowlist, the ambient environment allowlist, and semantic
presentation; §0 adds the bundle's exact ``requires_octet``. They are
checked here, apart from the initialize response, because they hold whether
or not the extension ever answers.

Each rule is one small function decorated with :func:`.violations.rule`; the
entry point :func:`check_manifest` chains the ones that apply to the
manifest's API version. Nothing here raises on malformed declarations: a
``capabilities`` table of the wrong shape is read as declaring nothing, and a
declaration of the wrong type is reported as a violation of its rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from .describe import dotted, duplicates, kind
from .ext_types import ManifestInfo
from .limits import ENVIRONMENT_ALLOWLIST, MAX_SECRET_NAME_BYTES
from .members import excerpt
from .violations import Finding, Violation, rule

# The frozen API; every other listed version negotiates features (§1.1).
_LEGACY_API = "0.1"
_NEGOTIATED_APIS = ("0.2", "0.4")

# §1.1 secret name grammar. ASCII-only classes on purpose: the bound is in
# ASCII bytes, so a non-ASCII letter is not a letter for this rule.
_SECRET_FIRST = re.compile(r"[A-Za-z_]")
_SECRET_REST = re.compile(r"[A-Za-z0-9_.\-]")

# §0 "exact" requirement: one full version, bare or with an equality
# operator (Cargo's "=", PEP 440's "=="), never a range, wildcard or partial
# version (which every common requirement syntax reads as a range).
_EXACT_VERSION = re.compile(r"\s*(?:==?\s*)?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?\s*")


def check_manifest(manifest: ManifestInfo) -> Iterator[Finding]:
    """Every §1.1 manifest rule that applies to ``manifest.api_version``."""
    capabilities = _table(manifest.capabilities)
    contributes = _table(manifest.contributes)
    # The catalog scopes secret names to the negotiated APIs: secrets are only
    # reachable through secret/get, which API 0.1 does not have. Unlike the
    # environment allowlist, §1.1 never calls a 0.1 secrets list invalid, so a
    # 0.1 manifest's list is not judged at all (never stricter than the text).
    if manifest.api_version in _NEGOTIATED_APIS and "secrets" in capabilities:
        yield from secret_names(capabilities["secrets"])
    yield from environment_allowlist(capabilities.get("environment"), api_version=manifest.api_version)
    if manifest.api_version == _LEGACY_API:
        yield from presentation_0_2(contributes)
    # §0 asks it only of installable bundles; whether the manifest under test
    # is one cannot be told, so an absent requirement is not judged at all.
    if manifest.requires_octet is not None:
        yield from bundle_requires_octet(manifest.requires_octet)


@rule("EXT-0-bundle-requires-octet")
def bundle_requires_octet(requires: object) -> Iterator[Violation]:
    """A present requires_octet names exactly one octet version (§0).

    Which version it pins is the host's business (it validates the pin
    before starting the process); the extension-side rule is exactness."""
    path = ("requires_octet",)
    if not isinstance(requires, str):
        yield Violation(
            "EXT-0-bundle-requires-octet", f"requires_octet is {kind(requires)}; expected an exact version string", path
        )
    elif not _EXACT_VERSION.fullmatch(requires):
        yield Violation(
            "EXT-0-bundle-requires-octet",
            f"requires_octet {excerpt(requires)} is not an exact requirement; expected one full version "
            "such as 0.8.0 or =0.8.0",
            path,
        )


@rule("EXT-1.1-secret-names")
def secret_names(secrets: object) -> Iterator[Violation]:
    """capabilities.secrets: unique names, each <= 64 ASCII bytes, starting
    with a letter or underscore, continuing with letters, digits, ``_``,
    ``-`` or ``.``. Names compare case-sensitively: the broker matches exact
    names (§1.1)."""
    base = ("capabilities", "secrets")
    if not isinstance(secrets, list):
        yield Violation("EXT-1.1-secret-names", f"{dotted(base)} is {kind(secrets)}; expected an array of names", base)
        return
    names: list[tuple[int, str]] = []
    for index, name in enumerate(secrets):
        path = (*base, index)
        if not isinstance(name, str):
            yield Violation("EXT-1.1-secret-names", f"{dotted(path)} is {kind(name)}; expected a name string", path)
            continue
        names.append((index, name))
        yield from _secret_name(name, path)
    for name, where in duplicates(names).items():
        at = ", ".join(dotted((*base, i)) for i in where)
        yield Violation(
            "EXT-1.1-secret-names",
            f"{dotted(base)} lists {excerpt(name)} {len(where)} times ({at}); names must be unique",
            (*base, where[1]),
        )


def _secret_name(name: str, path: tuple[str | int, ...]) -> Iterator[Violation]:
    subject = f"{dotted(path)} {excerpt(name)}"
    if not name.isascii():
        # The bound and the grammar are both ASCII; measuring a non-ASCII name
        # against them would only repeat this one fact.
        yield Violation("EXT-1.1-secret-names", f"{subject} contains non-ASCII characters", path)
        return
    size = len(name)  # one byte per ASCII character
    if size > MAX_SECRET_NAME_BYTES:
        yield Violation("EXT-1.1-secret-names", f"{dotted(path)} is {size} bytes; limit {MAX_SECRET_NAME_BYTES}", path)
    if not name:
        yield Violation("EXT-1.1-secret-names", f"{dotted(path)} is empty; a name needs at least one character", path)
        return
    if not _SECRET_FIRST.fullmatch(name[0]):
        yield Violation("EXT-1.1-secret-names", f"{subject} starts with {name[0]!r}; expected a letter or '_'", path)
    bad = [ch for ch in name[1:] if not _SECRET_REST.fullmatch(ch)]
    if bad:
        yield Violation(
            "EXT-1.1-secret-names",
            f"{subject} contains {bad[0]!r}; after the first character only letters, digits, "
            "'_', '-' and '.' are allowed",
            path,
        )


@rule("EXT-1.1-environment-allowlist")
def environment_allowlist(environment: object, *, api_version: str) -> Iterator[Violation]:
    """capabilities.environment: only the reviewed names, and nothing at all
    on API 0.1 (§1.1).

    An absent or empty list declares nothing and passes on every version:
    §1.1 invalidates a 0.1 *declaration*, and an empty allowlist asks the host
    for nothing (reading it as a declaration would be stricter than the text).
    Repeating an allowed name is not flagged; §1.1 asks only that names be
    supported.
    """
    base = ("capabilities", "environment")
    if environment is None:
        return
    if not isinstance(environment, list):
        message = f"{dotted(base)} is {kind(environment)}; expected an array of variable names"
        yield Violation("EXT-1.1-environment-allowlist", message, base)
        return
    if api_version == _LEGACY_API and environment:
        yield Violation(
            "EXT-1.1-environment-allowlist",
            f"{dotted(base)} declares {len(environment)} name(s) on API {_LEGACY_API}; "
            "an API 0.1 manifest cannot declare an environment allowlist",
            base,
        )
    allowed = ", ".join(ENVIRONMENT_ALLOWLIST)
    for index, name in enumerate(environment):
        path = (*base, index)
        if not isinstance(name, str):
            yield Violation(
                "EXT-1.1-environment-allowlist",
                f"{dotted(path)} is {kind(name)}; expected a variable name string",
                path,
            )
        elif name not in ENVIRONMENT_ALLOWLIST:
            message = f"{dotted(path)} {excerpt(name)} is not an allowed name; allowed: {allowed}"
            yield Violation("EXT-1.1-environment-allowlist", message, path)


@rule("EXT-1.1-presentation-0.2")
def presentation_0_2(contributes: Mapping[str, Any]) -> Iterator[Violation]:
    """An API 0.1 manifest does not opt into semantic presentation (§1.1).

    Only ``true`` opts in; ``false`` or an absent key declares nothing.
    """
    path = ("contributes", "presentation")
    if contributes.get("presentation") is True:
        yield Violation(
            "EXT-1.1-presentation-0.2",
            f"{dotted(path)} is true on API {_LEGACY_API}; semantic presentation needs API 0.2 or later",
            path,
        )


def _table(value: object) -> Mapping[str, Any]:
    """A manifest table, or an empty one when the declaration is not a table:
    the rules here judge entries, and a non-table declares no entries."""
    return value if isinstance(value, Mapping) else {}
