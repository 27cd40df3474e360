"""The §1.1 manifest rules (ext_manifest)."""

from __future__ import annotations

from typing import Any

import conformance.strategies as strategies
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import limits
from conformance.protocol.ext_manifest import check_manifest
from conformance.protocol.ext_types import ManifestInfo
from conformance.protocol.violations import Exercise, Finding, Violation

SECRETS = "EXT-1.1-secret-names"
ENVIRONMENT = "EXT-1.1-environment-allowlist"
PRESENTATION = "EXT-1.1-presentation-0.2"
ALL_IDS = {SECRETS, ENVIRONMENT, PRESENTATION, "EXT-0-bundle-requires-octet"}


def manifest(api: str = "0.2", *, capabilities: Any = None, contributes: Any = None) -> ManifestInfo:
    return ManifestInfo(
        name="demo",
        version="1.0.0",
        api_version=api,
        contributes={"tools": ["greet"]} if contributes is None else contributes,
        capabilities={} if capabilities is None else capabilities,
    )


def findings(m: ManifestInfo) -> list[Finding]:
    return list(check_manifest(m))


def violations(found: list[Finding]) -> list[Violation]:
    return [f for f in found if isinstance(f, Violation)]


def exercised(found: list[Finding]) -> set[str]:
    return {f.requirement for f in found if isinstance(f, Exercise)}


def assert_clean(found: list[Finding], requirement: str) -> None:
    assert requirement in exercised(found)
    assert violations(found) == []


def assert_only(found: list[Finding], requirement: str) -> list[Violation]:
    broken = violations(found)
    assert broken, f"expected a {requirement} violation"
    assert {v.requirement for v in broken} == {requirement}, broken
    return broken


# -- which rules run where -----------------------------------------------------


@pytest.mark.parametrize(
    ("api", "expected"),
    [("0.1", {ENVIRONMENT, PRESENTATION}), ("0.2", {ENVIRONMENT}), ("0.4", {ENVIRONMENT})],
)
def test_plain_manifest_is_clean(api: str, expected: set[str]) -> None:
    found = findings(manifest(api))
    assert violations(found) == []
    assert exercised(found) == expected


def test_secret_names_run_only_where_declared_on_negotiated_apis() -> None:
    assert SECRETS in exercised(findings(manifest("0.2", capabilities={"secrets": []})))
    assert SECRETS in exercised(findings(manifest("0.4", capabilities={"secrets": ["A"]})))
    # Not declared: nothing to judge.
    assert SECRETS not in exercised(findings(manifest("0.2")))


def test_secrets_on_api_0_1_are_not_judged() -> None:
    # §1.1 invalidates a 0.1 environment declaration but says no such thing of
    # secrets; the catalog scopes the rule to 0.2+.
    found = findings(manifest("0.1", capabilities={"secrets": ["1 bad name", "1 bad name"]}))
    assert SECRETS not in exercised(found)
    assert violations(found) == []


# -- EXT-1.1-secret-names --------------------------------------------------------


@pytest.mark.parametrize(
    "names",
    [
        [],
        ["API_TOKEN"],
        ["_private", "a", "Z9", "a.b-c_d", "x-1.2"],
        ["token", "TOKEN"],  # exact names: case differs, so they are distinct
        ["A" * (limits.MAX_SECRET_NAME_BYTES - 1)],
        ["A" * limits.MAX_SECRET_NAME_BYTES],
    ],
)
def test_secret_names_valid(names: list[str]) -> None:
    assert_clean(findings(manifest("0.2", capabilities={"secrets": names})), SECRETS)


@pytest.mark.parametrize(
    ("secrets", "fragment"),
    [
        (["A" * (limits.MAX_SECRET_NAME_BYTES + 1)], "is 65 bytes; limit 64"),
        (["1TOKEN"], "starts with '1'"),
        (["-TOKEN"], "starts with '-'"),
        ([".TOKEN"], "starts with '.'"),
        (["MY TOKEN"], "contains ' '"),
        (["MY/TOKEN"], "contains '/'"),
        ([""], "is empty"),
        (["clé"], "non-ASCII"),
        (["TOKEN", "OTHER", "TOKEN"], "lists 'TOKEN' 2 times"),
        ("TOKEN", "is a string; expected an array"),
        ({"TOKEN": True}, "is an object; expected an array"),
        (["OK", 5], "capabilities.secrets[1] is an integer"),
        (["OK", None], "capabilities.secrets[1] is null"),
    ],
)
def test_secret_names_invalid(secrets: Any, fragment: str) -> None:
    broken = assert_only(findings(manifest("0.4", capabilities={"secrets": secrets})), SECRETS)
    assert any(fragment in v.message for v in broken), [v.message for v in broken]


def test_secret_name_paths_point_at_the_entry() -> None:
    broken = assert_only(findings(manifest("0.2", capabilities={"secrets": ["OK", "9"]})), SECRETS)
    assert [v.path for v in broken] == [("capabilities", "secrets", 1)]


def test_overlong_non_ascii_secret_name_is_one_violation() -> None:
    # The non-ASCII fact already explains both the bound and the grammar.
    broken = assert_only(findings(manifest("0.2", capabilities={"secrets": ["é" * 70]})), SECRETS)
    assert len(broken) == 1


# -- EXT-1.1-environment-allowlist -----------------------------------------------


@pytest.mark.parametrize(
    ("api", "environment"),
    [
        ("0.2", ["SSH_AUTH_SOCK"]),
        ("0.4", ["SSH_AUTH_SOCK"]),
        ("0.2", []),
        ("0.1", []),  # an empty allowlist asks for nothing, on any version
        ("0.2", None),
    ],
)
def test_environment_valid(api: str, environment: list[str] | None) -> None:
    capabilities = {} if environment is None else {"environment": environment}
    assert_clean(findings(manifest(api, capabilities=capabilities)), ENVIRONMENT)


@pytest.mark.parametrize(
    ("api", "environment", "fragment"),
    [
        ("0.1", ["SSH_AUTH_SOCK"], "on API 0.1"),
        ("0.2", ["HOME"], "'HOME' is not an allowed name"),
        ("0.4", ["ssh_auth_sock"], "is not an allowed name"),
        ("0.2", ["SSH_AUTH_SOCK", "PATH"], "capabilities.environment[1]"),
        ("0.2", "SSH_AUTH_SOCK", "is a string; expected an array"),
        ("0.2", [7], "is an integer; expected a variable name"),
    ],
)
def test_environment_invalid(api: str, environment: Any, fragment: str) -> None:
    broken = assert_only(findings(manifest(api, capabilities={"environment": environment})), ENVIRONMENT)
    assert any(fragment in v.message for v in broken), [v.message for v in broken]


def test_environment_on_0_1_with_unsupported_name_reports_both_facts() -> None:
    broken = assert_only(findings(manifest("0.1", capabilities={"environment": ["HOME"]})), ENVIRONMENT)
    assert len(broken) == 2


# -- EXT-1.1-presentation-0.2 ----------------------------------------------------


@pytest.mark.parametrize("contributes", [{}, {"presentation": False}, {"tools": ["greet"]}])
def test_presentation_valid_on_0_1(contributes: dict[str, Any]) -> None:
    assert_clean(findings(manifest("0.1", contributes=contributes)), PRESENTATION)


def test_presentation_invalid_on_0_1() -> None:
    broken = assert_only(findings(manifest("0.1", contributes={"presentation": True})), PRESENTATION)
    assert broken[0].path == ("contributes", "presentation")
    assert "API 0.1" in broken[0].message


@pytest.mark.parametrize("api", ["0.2", "0.4"])
def test_presentation_is_allowed_from_0_2(api: str) -> None:
    found = findings(manifest(api, contributes={"presentation": True}))
    assert PRESENTATION not in exercised(found)
    assert violations(found) == []


# -- robustness ---------------------------------------------------------------

json_values = strategies.json_values(max_leaves=25)


@given(
    api=st.sampled_from(["0.1", "0.2", "0.4", "9.9"]),
    capabilities=json_values | st.fixed_dictionaries({"secrets": json_values, "environment": json_values}),
    contributes=json_values | st.fixed_dictionaries({"presentation": json_values}),
)
def test_check_manifest_never_raises(api: str, capabilities: Any, contributes: Any) -> None:
    found = findings(manifest(api, capabilities=capabilities, contributes=contributes))
    assert all(isinstance(f, Exercise | Violation) for f in found)
    assert {f.requirement for f in found} <= ALL_IDS
    assert all(v.message for v in violations(found))


# -- EXT-0-bundle-requires-octet (§0) ---------------------------------------------

REQUIRES = "EXT-0-bundle-requires-octet"


def with_requirement(requires: object) -> ManifestInfo:
    return ManifestInfo("demo", "1.0.0", "0.2", {"tools": ["greet"]}, {}, requires_octet=requires)


def test_absent_requires_octet_is_not_judged() -> None:
    # §0 asks it of installable bundles only; a manifest without it runs.
    assert REQUIRES not in exercised(findings(with_requirement(None)))


@pytest.mark.parametrize("requires", ["0.8.0", "=0.8.0", "==0.8.0", "= 0.8.0", "0.8.0-rc.1", "1.2.3+build.5", "0.9.0"])
def test_exact_requirements_pass(requires: str) -> None:
    found = findings(with_requirement(requires))
    assert REQUIRES in exercised(found)
    assert violations(found) == []


@pytest.mark.parametrize(
    ("requires", "fragment"),
    [
        (">=0.8.0", "requires_octet '>=0.8.0' is not an exact requirement"),
        ("^0.8", "is not an exact requirement"),
        ("~0.8.0", "is not an exact requirement"),
        ("0.8", "is not an exact requirement"),  # partial: a range in every common syntax
        ("0.8.*", "is not an exact requirement"),
        ("*", "is not an exact requirement"),
        ("", "is not an exact requirement"),
        ("=0.8.0, <0.9", "is not an exact requirement"),
        (8, "requires_octet is an integer; expected an exact version string"),
    ],
)
def test_inexact_requirements_fail(requires: object, fragment: str) -> None:
    broken = violations(findings(with_requirement(requires)))
    assert [v.requirement for v in broken] == [REQUIRES]
    assert fragment in broken[0].message
