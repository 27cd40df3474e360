"""Every reference certifies clean on a busy machine (issue 20).

Each reference is certified at the quick profile while four processes spin
on the CPU (tests/cpu_load.py: on the two-core CI machine that is twice as
many runnable processes as cores). A correct target must come out with no
``fail``, ``warn`` or ``error``: a judgement that flips under load depends on
timing the harness did not force.

One row per role in ``REFERENCES``: a function that certifies that role's
reference and returns its RunResult. Adding a role is one row.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cpu_load import busy_cpus  # tests/cpu_load.py: pytest puts tests/ (the conftest folder) on sys.path

from conformance.manifest import load_manifest
from conformance.results import RunResult
from conformance.runner.client import certify_client
from conformance.runner.client import reference_command as reference_client
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "conformance" / "reference" / "extension" / "manifests"
QUICK = PROFILES["quick"]
SPINNERS = 4
BAD = ("fail", "warn", "error")


def reference_extension() -> RunResult:
    manifest = load_manifest(MANIFESTS / "api-0.2" / "extension.toml")
    return certify_extension(manifest, QUICK, QUICK.default_seed)


def reference_client_run() -> RunResult:
    return certify_client(reference_client(), QUICK, QUICK.default_seed)


REFERENCES: dict[str, Callable[[], RunResult]] = {
    "extension": reference_extension,
    "client": reference_client_run,
}


@pytest.mark.parametrize("role", sorted(REFERENCES))
def test_reference_certifies_clean_under_load(role: str, no_leftover_processes: None) -> None:
    with busy_cpus(SPINNERS):
        run = REFERENCES[role]()
    assert not run.harness_errors, run.harness_errors
    flagged = {v.requirement.id: (v.verdict, v.evidence) for v in run.verdicts if v.verdict in BAD}
    assert not flagged, flagged
    assert any(v.verdict == "pass" for v in run.verdicts)
