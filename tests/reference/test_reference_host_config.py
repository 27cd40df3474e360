"""The reference host's configuration groups and the driver's timing map.

HostConfig keeps its timings and memory bounds in small records grouped by
what reads them; the driver turns the contract's ``timing`` of a load into
fields of those records. A renamed field must fail here, not silently keep a
spec default in a certification.
"""

from __future__ import annotations

import dataclasses

import pytest

from conformance.reference.host import CallWaits, HostConfig, MemoryBounds, RestartPolicy, ShutdownTiming
from conformance.reference.host import config as config_module
from conformance.reference.host.driver import TIMING, timing_overrides


def test_the_defaults_are_the_protocol_values() -> None:
    config = HostConfig()
    assert config.shutdown == ShutdownTiming(
        stage_s=config_module.SHUTDOWN_STAGE_S,
        aggregate_s=config_module.SHUTDOWN_AGGREGATE_S,
        coordinated_s=config_module.COORDINATED_SHUTDOWN_S,
        drain_s=2.0,
    )
    assert config.restarts == RestartPolicy(0.25, 30.0, 8, 30.0)
    assert config.waits.cancel_grace_s == config_module.CANCEL_GRACE
    assert config.waits.menu_timeout_s == 5.0 and config.waits.request_timeout_s is None
    assert config.memory == MemoryBounds(4 * 1024, 256, 1024, 4096)


def test_grouped_sets_only_the_named_fields() -> None:
    options = config_module.grouped({("shutdown", "drain_s"): 1.0, ("waits", "cancel_grace_s"): 0.5})
    assert options == {"shutdown": ShutdownTiming(drain_s=1.0), "waits": CallWaits(cancel_grace_s=0.5)}
    config = HostConfig(**options, max_concurrent_requests=3)
    assert config.shutdown.stage_s == ShutdownTiming().stage_s
    assert config.restarts == RestartPolicy() and config.max_concurrent_requests == 3


def test_grouped_refuses_an_unknown_field() -> None:
    with pytest.raises(TypeError):
        config_module.grouped({("shutdown", "shutdown_stage_s"): 1.0})


@pytest.mark.parametrize("member", sorted(TIMING))
def test_every_timing_member_names_a_field_of_its_group(member: str) -> None:
    group, name, _ = TIMING[member]
    assert name in {f.name for f in dataclasses.fields(getattr(HostConfig(), group))}


def test_timing_overrides_scale_to_seconds_and_count_failures() -> None:
    overrides = timing_overrides({"drain_ms": 250, "park_after_failures": 3, "unknown_ms": 1})
    assert overrides == {("shutdown", "drain_s"): 0.25, ("restarts", "max_failed_restarts"): 3}
    assert isinstance(overrides["restarts", "max_failed_restarts"], int)
    config = HostConfig(**config_module.grouped(overrides))
    assert config.shutdown.drain_s == 0.25 and config.restarts.max_failed_restarts == 3
