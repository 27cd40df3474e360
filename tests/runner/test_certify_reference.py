"""End to end: the reference extension certifies clean at every API version."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.manifest import load_manifest
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES
from conformance.verdicts import summary

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "conformance" / "reference" / "extension" / "manifests"


@pytest.mark.parametrize("api", ["0.1", "0.2", "0.4"])
def test_reference_extension_passes_clean(api: str, no_leftover_processes: None) -> None:
    manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
    run = certify_extension(manifest, PROFILES["quick"], PROFILES["quick"].default_seed)
    counts = summary(run.verdicts)
    bad = [(v.requirement.id, v.verdict, v.evidence) for v in run.verdicts if v.verdict in ("fail", "warn", "error")]
    assert not bad, bad
    assert counts["pass"] >= 40, counts
    assert not run.harness_errors
