"""Judges of how a host-core generation ends (host RPC §2, §2.1, §7), fed
what the scenarios of conformance/scenarios/hostcore_ending.py observed, and
of the permission prompt held open for a whole run (§6,
conformance/scenarios/hostcore_held.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.protocol import rpc_errors, rpc_limits
from conformance.protocol.violations import Violation, rule

SHUTTING_DOWN = "HOST_SHUTTING_DOWN"


@rule("RPC-7-shutting-down")
def refused_as_shutting_down(method: str, response: dict[str, Any] | None) -> Iterator[Violation]:
    """A call written just before stdin EOF may have been admitted before the
    drain began: a result passes, and so does no answer (whether one is owed
    is RPC-2-final-unterminated-frame's matter). Only a refusal is judged, on
    its data.errorCode (§7: the string is the contract)."""
    if response is None or "error" not in response:
        return
    error = response["error"]
    error_code = rpc_errors.error_code_of(error)
    if error_code != SHUTTING_DOWN:
        code = error.get("code") if isinstance(error, dict) else None
        yield Violation(
            "RPC-7-shutting-down",
            f"{method} written just before stdin EOF was refused with {code} {error_code}; "
            f"a refusal while draining is {SHUTTING_DOWN}",
        )


@rule("RPC-2-pipe-error-ends-host")
def ended_on_pipe_error(exit_status: int | None, waited: float) -> Iterator[Violation]:
    """``exit_status``: None while the process still runs (any status passes)."""
    if exit_status is None:
        yield Violation(
            "RPC-2-pipe-error-ends-host",
            f"the host-core still ran {waited:.1f} s after a request it had to answer on a closed stdout",
        )


@rule("RPC-2.1-wait-timeout")
def wait_settled(answer: dict[str, Any] | None, waited: float) -> Iterator[Violation]:
    """Any answer passes: what a call whose wait ran out receives is not stated."""
    if answer is None:
        yield Violation(
            "RPC-2.1-wait-timeout",
            f"a Bash call kept waiting for admission was still unanswered after {waited:.0f} s "
            f"(a wait ends after {rpc_limits.ADMISSION_WAIT_S:g} s)",
        )


@rule("RPC-6-pending-until-decided")
def still_pending(answer: dict[str, Any] | None, listed: bool | None) -> Iterator[Violation]:
    """``answer``: what the held call got before any decision (None: nothing,
    as it should be); ``listed``: whether permissions.pending still lists it
    (None: not asked, since the call was answered)."""
    if answer is not None:
        message = (
            "a tools.execute waiting on a permission prompt nobody answered was answered (the prompt was held open)"
        )
        yield Violation("RPC-6-pending-until-decided", message)
        yield Violation("RPC-10-04-permission-pending", message)
    elif listed is False:
        message = "permissions.pending no longer lists a permission request nobody answered"
        yield Violation("RPC-6-pending-until-decided", message)
