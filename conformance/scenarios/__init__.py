"""Fixed scenarios: scripts that play one situation each against a target.

Machines (conformance/machines/) explore; scenarios are data: a named,
fixed script the runner plays in order, each on fresh state. A scenario
drives the target and records what happened; judging belongs to the
protocol core (its ``@rule`` functions), though some host scenarios still
judge in place (tests/meta/test_layers.py lists them, and the list only
shrinks).

How to use: the lists are ``conformance.scenarios.host.scenarios_for`` (and
``host_handling``, ``host_lifecycle``, ``host_storms`` beside it) for the
host, each ``Scenario.run(rig)``; ``conformance.scenarios.hostcore.SCENARIOS``
for the host-core, each ``Scenario.run(command, recorder, response_s, work)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scenario:
    """A fixed scenario: the name that reports, traces and ``--scenario``
    selection use, and the script that plays it (its arguments are the
    role's: a HostRig for the host, the command, recorder, patience and work
    folder for the host-core)."""

    name: str
    run: Callable[..., Any]
