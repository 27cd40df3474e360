"""The reference host certifies clean on a busy machine (issue 20).

Every timing judgement of a host certification must hold on a loaded two-core
machine: the reference host is certified at the quick profile while
:func:`tests.cpu_load.busy_cpus` keeps four processes spinning, and the run must
give no ``fail``, ``warn`` or ``error``. Nothing here measures or asserts time.
"""

from __future__ import annotations

import pytest
from cpu_load import busy_cpus

from conformance.runner.host import REFERENCE_DRIVER, certify_host
from conformance.runner.profiles import PROFILES


@pytest.mark.parametrize("api_version", ["0.1", "0.2"])
def test_reference_host_certifies_clean_under_load(api_version: str) -> None:
    with busy_cpus(4):
        run = certify_host(REFERENCE_DRIVER, api_version, PROFILES["quick"], 1)
    assert not run.harness_errors
    bad = [(v.requirement.id, v.verdict, v.evidence) for v in run.verdicts if v.verdict in ("fail", "warn", "error")]
    assert not bad
