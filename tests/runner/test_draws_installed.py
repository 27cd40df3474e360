"""One seed, one run: the command line of a ``pip install .`` (not editable)
and the Python API of this checkout certify with the same draws, so their
matrices agree on every result (conformance/runner/draws.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conformance.cli import default_manifest
from conformance.manifest import load_manifest
from conformance.peers.simulated import simulated_reference
from conformance.report.matrix import matrix, results
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[2]
SEED = 7


def installed_venv(where: Path) -> Path:
    """A venv holding a non-editable install of this checkout; its
    dependencies come from this interpreter's site-packages (a .pth line)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=60)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=30,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "octet-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(ROOT)],
        check=True, capture_output=True, timeout=240,
    )  # fmt: skip
    return where / "bin" / "octet-conformance"


@pytest.mark.slow
def test_cli_of_a_pip_install_and_the_api_draw_the_same_run(tmp_path: Path) -> None:
    cli = installed_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    argv = [str(cli), "extension", "--simulate", "--profile", "quick", "--seed", str(SEED), "--report-dir", "report"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    through_cli = json.loads((tmp_path / "report" / "matrix.json").read_text(encoding="utf-8"))
    # The command line ran the installed copy, not this checkout.
    where = [str(cli.parent / "python"), "-c", "import conformance; print(conformance.__file__)"]
    shown = subprocess.run(where, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert "site-packages" in shown.stdout

    manifest = load_manifest(default_manifest())
    run = certify_extension(manifest, PROFILES["quick"], SEED, launcher=simulated_reference)
    through_api = json.loads(json.dumps(matrix(run)))
    assert results(through_cli) == results(through_api)
