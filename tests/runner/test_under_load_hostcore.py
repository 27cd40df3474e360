"""The reference host-core certifies clean on a busy machine (issue 20).

Every timing judgement of the host-core scenarios must hold when the
harness and the target share two cores with four spinning processes: what a
judge concludes from "should have happened by now" waits for the patience,
and what it concludes from the order of two events holds only where the
harness forced that order. The extension and client counterparts are in
test_under_load.py.
"""

from __future__ import annotations

from cpu_load import busy_cpus

from conformance.runner.hostcore import certify_hostcore, reference_command
from conformance.runner.profiles import PROFILES

QUICK = PROFILES["quick"]


def test_reference_hostcore_certifies_clean_under_load(no_leftover_processes: None) -> None:
    with busy_cpus(4):
        # The 64 MiB line is the one scenario that only costs time here.
        run = certify_hostcore(reference_command(), QUICK, QUICK.default_seed, oversized=False)
    assert not run.harness_errors
    flagged = {v.requirement.id: v.evidence for v in run.verdicts if v.verdict in ("fail", "warn", "error")}
    assert not flagged
