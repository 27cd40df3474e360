"""What `pip install .` (README command 1) ships.

pyproject.toml lists the packages by hand (strategies/ is mapped to
conformance.strategies), so a new subpackage that is not listed works in an
editable install and in these tests, and is missing from a normal install.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(project["tool"]["setuptools"]["packages"])


def test_every_package_under_conformance_is_installed() -> None:
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "conformance").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    missing = sorted(found - _declared())
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"


def test_every_declared_package_exists() -> None:
    mapped = {"conformance.strategies": ROOT / "strategies"}
    for name in sorted(_declared()):
        folder = mapped.get(name, ROOT.joinpath(*name.split(".")))
        assert (folder / "__init__.py").is_file(), f"{name} is declared in pyproject.toml but {folder} is no package"


def test_non_python_files_the_code_reads_are_package_data() -> None:
    """Catalog TOML and reference manifests are read at run time."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = project["tool"]["setuptools"]["package-data"]
    assert "*.toml" in data["conformance.requirements"]
    for package, patterns in data.items():
        folder = ROOT.joinpath(*package.split("."))
        for pattern in patterns:
            assert list(folder.glob(pattern)), f"package-data {package}: {pattern} matches nothing"
