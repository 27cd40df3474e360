"""Every extension-side check has a faulty fixture that makes it fail.

House rule: a check that cannot fail is a defect. For the checks the harness
runs against an extension (catalog entries with ``side = "extension"`` and a
check), the proof is a fixture in ``fixtures/extensions/`` whose
``expect.toml`` names the requirement, as ``requirement`` or in ``also``;
``tests/fixtures/test_faulty_extensions.py`` then shows that certifying it
flags exactly that. This file only checks the bookkeeping: nothing runs.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from conformance.requirements import Requirement, load_catalog

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "extensions"

# Requirement id -> why no extension can be made to fail it. Keep it empty
# unless a check truly cannot fire against any extension; a requirement that
# fails only together with another one gets a fixture with ``also`` instead.
NO_FIXTURE_POSSIBLE: dict[str, str] = {}


def extension_checks() -> list[Requirement]:
    return [r for r in load_catalog() if r.side == "extension" and r.has_check]


def named_by_fixtures() -> dict[str, list[str]]:
    """Requirement id -> the fixtures whose expect.toml names it."""
    named: dict[str, list[str]] = {}
    for path in sorted(FIXTURES.glob("*/expect.toml")):
        expect = tomllib.loads(path.read_text(encoding="utf-8"))
        for requirement in [expect["requirement"], *expect.get("also", [])]:
            named.setdefault(requirement, []).append(path.parent.name)
    return named


def test_every_extension_check_has_a_faulty_fixture() -> None:
    named = named_by_fixtures()
    missing = [r.id for r in extension_checks() if r.id not in named and r.id not in NO_FIXTURE_POSSIBLE]
    assert not missing, f"extension-side checks no faulty fixture makes fail: {missing}"


def test_exceptions_are_reasoned_and_current() -> None:
    checks = {r.id for r in extension_checks()}
    named = named_by_fixtures()
    for requirement, reason in NO_FIXTURE_POSSIBLE.items():
        assert requirement in checks, f"{requirement} is not an extension-side check"
        assert reason.strip(), f"{requirement}: the exception needs a reason"
        assert requirement not in named, f"{requirement} has a fixture now ({named[requirement]}): drop the exception"


def test_fixtures_name_only_extension_checks() -> None:
    checks = {r.id for r in extension_checks()}
    strays = {i: where for i, where in named_by_fixtures().items() if i not in checks}
    assert not strays, f"expect.toml files name requirements that are not extension-side checks: {strays}"
