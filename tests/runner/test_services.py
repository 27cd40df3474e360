"""The host services of §2.8-§2.12 end to end: the reference extension
exercises every new check (and passes), and the harness's scratch-file
reader refuses what a host reading no-follow would refuse. Correct
extensions using the services in other legal ways: test_legal_controls.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.manifest import load_manifest
from conformance.peers.ext_host import read_scratch
from conformance.peers.simulated import simulated_reference
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES, Profile

MANIFESTS = Path(__file__).resolve().parents[2] / "conformance" / "reference" / "extension" / "manifests"
SMALL = Profile("services", examples=4, steps=12)
SERVICE_CHECKS = (
    "EXT-2.8-artifact-publish",
    "EXT-2.8-artifact-bytes",
    "EXT-2.8-artifact-limits",
    "EXT-2.9-policy-evaluate",
    "EXT-2.9-approval-token",
    "EXT-2.11-tools-register",
    "EXT-2.12-tools-unregister",
    "EXT-2.12-no-empty-mutation",
    "EXT-1.2-catalog-revision-dispatch",
    "EXT-1.2-catalog-revision-snapshot",
    "EXT-1.2-media-kind-match",
    "EXT-1.2-media-aggregate",
    "EXT-2-owner-field-scope",
)


@pytest.mark.parametrize("api", ["0.2", "0.4"])
def test_the_reference_exercises_every_service_check(api: str) -> None:
    manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
    run = certify_extension(manifest, SMALL, PROFILES["quick"].default_seed, launcher=simulated_reference)
    verdicts = {v.requirement.id: v.verdict for v in run.verdicts}
    assert {i: verdicts[i] for i in SERVICE_CHECKS} == dict.fromkeys(SERVICE_CHECKS, "pass")
    if api == "0.4":
        assert verdicts["EXT-1.1-prompt-metadata-registration"] == "pass"


def test_scratch_reader(tmp_path: Path) -> None:
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "a.png").write_bytes(b"png")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.png"
    outside.write_bytes(b"secret")
    (tmp_path / "link.png").symlink_to(outside)
    (tmp_path / "dir-link").symlink_to(tmp_path / "shots", target_is_directory=True)
    assert read_scratch(tmp_path, "shots/a.png") == (b"png", "")
    for relative, why in [
        ("link.png", "symbolic link"),
        ("dir-link/a.png", "symbolic link"),
        ("../" + outside.name, "not inside"),
        ("shots", "not a regular file"),
        ("missing.png", "cannot be opened"),
        (".", "not inside"),
    ]:
        content, problem = read_scratch(tmp_path, relative)
        assert content is None and why in problem, (relative, problem)
    outside.unlink()
