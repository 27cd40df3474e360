"""Same seed, same target, same verdicts."""

from __future__ import annotations

from pathlib import Path

from conformance.manifest import load_manifest
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[2]


def test_equal_seeds_give_equal_verdicts() -> None:
    manifest = load_manifest(ROOT / "conformance/reference/extension/manifests/api-0.2/extension.toml")
    profile = PROFILES["quick"]
    runs = [certify_extension(manifest, profile, 7) for _ in range(2)]
    first, second = ([(v.requirement.id, v.verdict, v.evidence) for v in run.verdicts] for run in runs)
    assert first == second
