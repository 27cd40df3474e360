"""§5 reload and supervision judges on records (host_supervision)."""

from __future__ import annotations

import pytest

from conformance.protocol.host_supervision import (
    DrainWatch,
    RestartWatch,
    drained,
    replay_key,
    replayed,
    restarted,
)
from conformance.protocol.violations import Exercise, Finding, Violation


def broken(findings: object) -> list[str]:
    out: list[Finding] = list(findings)  # type: ignore[call-overload]
    assert isinstance(out[0], Exercise)
    return [f.requirement for f in out if isinstance(f, Violation)]


def test_replay_keys_name_the_operation_not_the_generation() -> None:
    one = replay_key("tool/call", {"name": "t", "arguments": {"b": 1, "a": 2}, "context": {"x": 1}})
    two = replay_key("tool/call", {"name": "t", "arguments": {"a": 2, "b": 1}, "context": {"x": 2}})
    assert one == two is not None
    assert replay_key("tool/call", {"name": "t", "arguments": {"a": 3}}) != one
    assert replay_key("command/execute", {"name": "t", "arguments": ["a"]}) is not None
    assert replay_key("context/collect", {"prompt": "p"}) is None  # no effects to repeat
    assert replay_key("tool/call", ["not", "an", "object"]) is None


def test_a_replay_is_allowed_only_as_often_as_the_harness_asked() -> None:
    key = replay_key("tool/call", {"name": "t", "arguments": {}})
    assert key is not None
    assert broken(replayed(key, unresolved=frozenset({key}), licensed=0)) == ["EXT-5-host-no-replay-on-reload"]
    assert broken(replayed(key, unresolved=frozenset({key}), licensed=1)) == []
    assert broken(replayed(key, unresolved=frozenset(), licensed=0)) == []


@pytest.mark.parametrize(
    ("watch", "ok"),
    [
        (RestartWatch(relaunched=True, waited_s=10.5), True),
        (RestartWatch(relaunched=False, waited_s=10.5), False),
        (RestartWatch(relaunched=False, waited_s=10.5, parked=True), False),
    ],
)
def test_a_ready_generation_that_dies_is_restarted(watch: RestartWatch, ok: bool) -> None:
    assert broken(restarted(watch)) == ([] if ok else ["EXT-5-host-restarts-after-exit"])


@pytest.mark.parametrize(
    ("watch", "ok"),
    [
        (DrainWatch(0.3, None), True),  # nothing ended before the shutdown request
        (DrainWatch(0.3, 0.3, "cancel"), True),  # at the bound
        (DrainWatch(0.3, 1.2, "cancelled"), True),
        (DrainWatch(0.3, 0.299, "cancel"), False),
        (DrainWatch(0.3, 0.01, "failed"), False),
        (DrainWatch(0.3, -0.05, "cancelled"), False),  # before N+1 was even negotiated
    ],
)
def test_a_reload_drains_for_the_drain_it_was_given(watch: DrainWatch, ok: bool) -> None:
    assert broken(drained(watch)) == ([] if ok else ["EXT-5-host-reload-drain-sequence"])
