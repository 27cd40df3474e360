"""Replay a recorded generation against a target and re-check one requirement.

The trace says what the host wrote, what each write meant (requests,
cancellations, unreadable frames) and how many target frames had been
observed before it; replay waits for the same count before each write, so
"written after frame N was observed" and "written in the same write" hold
again. Child requests are answered live, as in the original run, and the
requests the harness makes itself (shutdown, a reload's initialize) get ids
above every id of the trace, as they did in the original run.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder, StepContext
from conformance.manifest import Manifest, load_manifest
from conformance.peers.ext_host import ExtensionHostPeer, Patience, TargetGone
from conformance.protocol.ext_manifest import check_manifest
from conformance.protocol.ext_types import Offer
from conformance.protocol.violations import Violation
from conformance.requirements import load_catalog
from conformance.transport.trace import TraceError, decode_bytes, load, write_trace


class NotReplayable(RuntimeError):
    """The trace holds a write it cannot regenerate (digest only)."""


@dataclass(frozen=True)
class ReplayOutcome:
    requirement: str
    reproduced: bool
    evidence: str
    step: int | None = None  # the last step performed when the violation was first seen


def load_target(header: dict[str, Any], override: Path | None) -> Manifest:
    return load_manifest(override if override is not None else Path(header["target"]["manifest"]))


_ACTIONS = ("shutdown", "stdin_eof", "reload")
_DIRECTIONS = ("host->target", "target->host")
_OFFER_KEYS = ("api_version", "protocol_version", "required_features", "optional_features")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_header_requirement(header: dict[str, Any]) -> str:
    """The header's requirement, or TraceError naming line 1: a requirement
    this suite does not know could never be "reproduced"."""
    requirement = header.get("requirement")
    if not isinstance(requirement, str) or requirement not in {r.id for r in load_catalog()}:
        raise TraceError(f"trace line 1: unknown requirement {requirement!r}; it is not in this suite's catalog")
    return requirement


def check_header(header: dict[str, Any], target: Path | None) -> None:
    """A header replay can act on honestly, or TraceError naming line 1."""
    check_header_requirement(header)
    where = header.get("target")
    if target is None and not (isinstance(where, dict) and isinstance(where.get("manifest"), str)):
        raise TraceError("trace line 1: target.manifest is missing or not a path; name the extension with --target")
    if header.get("scenario") == "manifest":
        return
    offer = header.get("offer")
    if not isinstance(offer, dict) or not all(k in offer for k in _OFFER_KEYS):
        raise TraceError(f"trace line 1: offer must be an object with {', '.join(_OFFER_KEYS)}")
    if not all(isinstance(offer[k], list) for k in _OFFER_KEYS[2:]):
        raise TraceError("trace line 1: offer.required_features and offer.optional_features must be lists")


def check_entries(entries: list[dict[str, Any]]) -> None:
    """Entries replay can perform (lines 2 onwards), or TraceError naming the line."""
    for number, entry in enumerate(entries, start=2):
        direction = entry.get("dir")
        if direction not in _DIRECTIONS:
            raise TraceError(f"trace line {number}: dir must be one of {', '.join(_DIRECTIONS)}; got {direction!r}")
        if direction != "host->target":
            continue
        if not _whole(entry.get("step")) or not _whole(entry.get("after", 0)):
            raise TraceError(f"trace line {number}: step and after must be whole numbers >= 0")
        action = entry.get("action")
        if action is not None and action not in _ACTIONS:
            raise TraceError(f"trace line {number}: unknown action {action!r} (known: {', '.join(_ACTIONS)})")
        if action is None and not any(k in entry for k in ("text", "base64", "sha256")):
            raise TraceError(f"trace line {number}: a write without its bytes (text, base64 or size + sha256)")
        requests = entry.get("requests", [])
        if not isinstance(requests, list) or not all(
            isinstance(r, dict) and "id" in r and "method" in r for r in requests
        ):
            raise TraceError(f"trace line {number}: requests must be a list of objects with id and method")


def replay_once(trace_path: Path, *, target: Path | None = None, patience: Patience | None = None) -> ReplayOutcome:
    header, entries = load(trace_path)
    check_header(header, target)
    check_entries(entries)
    return replay_entries(header, entries, target=target, patience=patience)


def replay_entries(
    header: dict[str, Any],
    entries: list[dict[str, Any]],
    *,
    target: Path | None = None,
    patience: Patience | None = None,
) -> ReplayOutcome:
    requirement = str(header["requirement"])
    manifest = load_target(header, target)
    recorder = Recorder()
    if header.get("scenario") == "manifest":
        recorder.add(check_manifest(manifest.info))
        return _outcome(requirement, recorder)
    peer = ExtensionHostPeer(manifest, recorder, patience or Patience())
    peer.start(
        Offer(
            **{
                **header["offer"],
                "required_features": tuple(header["offer"]["required_features"]),
                "optional_features": tuple(header["offer"]["optional_features"]),
            }
        )
    )
    step = 0
    violated_at: int | None = None
    try:
        for entry in entries:
            if entry.get("dir") != "host->target" or entry.get("child_answer"):
                continue
            _await(peer, entry)
            if violated_at is None and requirement in recorder.violations:
                violated_at = step
            if not peer.alive and entry.get("action") not in ("reload", "shutdown", "stdin_eof"):
                break
            _reserve_ids(peer, entry)
            _perform(peer, entry)
            step = int(entry.get("step", step))
            if violated_at is None and requirement in recorder.violations:
                violated_at = step
        assert peer.session is not None
        if peer.alive:
            peer.settle([r.id for r in peer.session.unanswered()])
    except TargetGone:
        pass
    finally:
        peer.trace = None  # a replay leaves no new trace behind
        peer.close()
    if violated_at is None and requirement in recorder.violations:
        violated_at = step
    return _outcome(requirement, recorder, violated_at)


def _outcome(requirement: str, recorder: Recorder, step: int | None = None) -> ReplayOutcome:
    seen = recorder.violations.get(requirement, [])
    evidence = seen[0].violation.message if seen else "not violated during replay"
    return ReplayOutcome(requirement, bool(seen), evidence, step if seen else None)


# Request ids the harness numbers itself stay below this; larger ones (2**53 + 1,
# the u64 maximum) are the edge ids a step chose on purpose.
_SEQUENTIAL_IDS = 2**31


def _reserve_ids(peer: ExtensionHostPeer, entry: dict[str, Any]) -> None:
    """Keep the peer's id counter above every id the trace's writes used, so
    a request the peer makes itself during replay (shutdown, a reload's
    initialize) neither reuses one -- the session would refuse it -- nor
    comes out lower than in the original run."""
    ids = [r.get("id") for r in entry.get("requests", [])]
    sequential = [i for i in ids if isinstance(i, int) and not isinstance(i, bool) and 0 < i < _SEQUENTIAL_IDS]
    if sequential:
        peer.reserve_ids(max(sequential))


def _await(peer: ExtensionHostPeer, entry: dict[str, Any]) -> None:
    """Reproduce the write's ordering: the answers it waited for first, then
    the same number of observed frames (see ExtensionHostPeer.hold)."""
    peer.hold(frames=int(entry.get("after", 0)), awaits=entry.get("awaits", []), exact=True)


def _perform(peer: ExtensionHostPeer, entry: dict[str, Any]) -> None:
    action = entry.get("action")
    if action == "shutdown":
        peer.shutdown()
        return
    if action == "stdin_eof":
        peer.stdin_eof()
        return
    if action == "reload":
        peer.reload(str(entry.get("mode", "shutdown")))
        return
    data = decode_bytes(entry)
    if data is None:
        raise NotReplayable(
            f"step {entry.get('step')}: the trace kept only a digest of a {entry.get('size')}-byte write"
        )
    assert peer.session is not None
    for r in entry.get("requests", []):
        peer.session.sent_request(r["id"], r["method"], r.get("params"), intent=r.get("intent"))
    for rid in entry.get("cancels", []):
        peer.register_cancel(rid)
    for _ in range(int(entry.get("unreadable", 0))):
        peer.mark_unreadable()
    peer.write_raw(data)


def replay(
    trace_path: Path, *, target: Path | None = None, runs: int = 1, patience: Patience | None = None
) -> list[ReplayOutcome]:
    if runs < 1:
        raise ValueError(f"runs must be >= 1; got {runs}")
    return [replay_once(trace_path, target=target, patience=patience) for _ in range(runs)]


def host_steps(entries: list[dict[str, Any]]) -> list[int]:
    """Logical steps that wrote something, initialize (step 0) and the
    generation's orderly end (see :func:`closing_step`) excluded: the steps
    shrinking may drop."""
    closing = closing_step(entries)
    return sorted(
        {int(e["step"]) for e in entries if e.get("dir") == "host->target" and int(e["step"]) > 0} - {closing}
    )


def closing_step(entries: list[dict[str, Any]]) -> int | None:
    """The last step when all it wrote is the shutdown that ends the
    generation (and answers to the target's own requests): the machine's
    teardown. It stays in every shrunk trace -- what a target writes late
    (a second response, a progress event after the answer) is seen before
    its shutdown acknowledgement, and would go unseen without it."""
    writes = [e for e in entries if e.get("dir") == "host->target"]
    if not writes:
        return None
    last = int(writes[-1]["step"])
    if last <= 0:
        return None
    own = [e for e in writes if int(e["step"]) == last]
    if any(e.get("action") == "shutdown" for e in own) and all(
        e.get("action") == "shutdown" or e.get("child_answer") for e in own
    ):
        return last
    return None


def without_steps(entries: list[dict[str, Any]], dropped: set[int]) -> list[dict[str, Any]]:
    """The trace minus whole steps. Later writes keep their ordering relation:
    their ``after`` count shrinks by the target frames the dropped steps saw."""
    kept: list[dict[str, Any]] = []
    removed_frames = 0
    for e in entries:
        if int(e.get("step", 0)) in dropped:
            removed_frames += e.get("dir") == "target->host"
            continue
        if e.get("dir") == "host->target" and removed_frames:
            e = {**e, "after": max(0, int(e.get("after", 0)) - removed_frames)}
        kept.append(e)
    return kept


def shrink(
    trace_path: Path,
    *,
    target: Path | None = None,
    patience: Patience | None = None,
    budget_s: float = 60.0,
    max_replays: int = 60,
    violation_step: int | None = None,
) -> int:
    """Remove whole steps from a failing trace while the failure still
    reproduces; rewrite the file with what is left. Returns the number of
    steps kept.

    With ``violation_step`` (the step during which the original run saw the
    violation) two guesses come first: every later step, then every earlier
    one, dropped in one go -- one replay each, and usually all it takes. Then
    delta debugging: chunks of halving size, down to single steps."""
    header, entries = load(trace_path)
    steps = host_steps(entries)
    if not steps:
        return 0
    deadline = time.monotonic() + budget_s
    replays = 0
    dropped: set[int] = set()

    def reproduces_without(candidate: set[int]) -> bool:
        nonlocal replays
        replays += 1
        return replay_entries(header, without_steps(entries, candidate), target=target, patience=patience).reproduced

    if violation_step is not None:
        for guess in ({s for s in steps if s > violation_step}, {s for s in steps if s < violation_step}):
            if guess - dropped and reproduces_without(dropped | guess):
                dropped |= guess
    chunk = max(1, len([s for s in steps if s not in dropped]) // 2)
    while chunk >= 1:
        live = [s for s in steps if s not in dropped]
        for start in range(0, len(live), chunk):
            if time.monotonic() > deadline or replays >= max_replays:
                break
            candidate = dropped | set(live[start : start + chunk])
            if reproduces_without(candidate):
                dropped = candidate
        chunk //= 2
    kept = [s for s in steps if s not in dropped]
    if dropped:
        shrunk = without_steps(entries, dropped)
        header = {**header, "shrunk": {"steps_before": len(steps), "steps_after": len(kept), "replays": replays}}
        write_trace(trace_path, header, shrunk)
    return len(kept)


def _kept(case: Path, requirement: str, recorder: Recorder) -> Path:
    """The trace a reproduced regression case leaves in the report: a copy
    (shrinking rewrites traces, and the case directory is the user's)."""
    if recorder.trace_dir is None:
        return case
    recorder.trace_dir.mkdir(parents=True, exist_ok=True)
    copy = recorder.trace_dir / f"{requirement}.jsonl"
    shutil.copyfile(case, copy)
    return copy


def replay_regressions(
    directory: Path, manifest: Manifest, recorder: Recorder, patience: Patience | None = None
) -> None:
    """Replay every saved case against ``manifest``; a reproduced case is a
    violation of its requirement, with the case as evidence."""
    for case in sorted(directory.glob("*.jsonl")):
        recorder.context = StepContext(f"regression case {case.name}")
        try:
            outcome = replay_once(case, target=manifest.path, patience=patience)
        except (OSError, ValueError, KeyError, NotReplayable) as exc:
            recorder.harness_errors.append(f"regression case {case}: cannot replay: {exc}")
            continue
        recorder.exercise(outcome.requirement)
        if outcome.reproduced:
            recorder.violate(Violation(outcome.requirement, f"regression case reproduced: {outcome.evidence}"))
            recorder.traces.setdefault(outcome.requirement, _kept(case, outcome.requirement, recorder))
