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

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder, StepContext
from conformance.machines.oversized import settle_exact_bound
from conformance.manifest import Manifest, load_manifest
from conformance.peers.ext_host import ExtensionHostPeer, Patience, TargetGone
from conformance.protocol import limits
from conformance.protocol.ext_manifest import check_manifest
from conformance.protocol.ext_types import Offer
from conformance.protocol.violations import Violation
from conformance.requirements import load_catalog
from conformance.transport.schedule import Outgoing
from conformance.transport.trace import (
    HOST,
    TARGET,
    Trace,
    TraceError,
    decode_bytes,
    id_key,
    load,
    marked_entries,
    write_trace,
)


class NotReplayable(RuntimeError):
    """The trace holds a write it cannot regenerate (digest only)."""


@dataclass(frozen=True)
class ReplayOutcome:
    requirement: str
    reproduced: bool
    evidence: str
    step: int | None = None  # the last step performed when the violation was first seen
    # The entries of this replay's recording its violation was judged on (the
    # trace header's ``evidence``, re-created).
    marked: tuple[dict[str, Any], ...] = ()
    # Relations of the trace this replay could not re-create (a write's hold
    # on frames or answers that never came), in the order met.
    unmet: tuple[str, ...] = ()
    # What this replay recorded (a trace of its own: shrinking keeps the last
    # one that reproduced).
    recording: Trace | None = field(default=None, compare=False, repr=False)


def load_target(header: dict[str, Any], override: Path | None) -> Manifest:
    return load_manifest(override if override is not None else Path(header["target"]["manifest"]))


_ACTIONS = ("shutdown", "stdin_eof", "reload")
_DIRECTIONS = (HOST, TARGET)
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
        if direction != HOST:
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


def _offer(header: dict[str, Any]) -> Offer:
    offer = header["offer"]
    return Offer(
        **{
            **offer,
            "required_features": tuple(offer["required_features"]),
            "optional_features": tuple(offer["optional_features"]),
        }
    )


def _performed(entry: dict[str, Any]) -> bool:
    """Entries replay performs: the harness's writes and actions, not its
    answers to the target's own requests (made live)."""
    return entry.get("dir") == HOST and not entry.get("child_answer")


def replay_entries(
    header: dict[str, Any],
    entries: list[dict[str, Any]],
    *,
    target: Path | None = None,
    patience: Patience | None = None,
) -> ReplayOutcome:
    """Perform ``entries`` against the target; the outcome keeps what this
    replay recorded (a trace in the same format, steps numbered as in
    ``entries``)."""
    requirement = str(header["requirement"])
    manifest = load_target(header, target)
    recorder = Recorder()
    if header.get("scenario") == "manifest":
        recorder.add(check_manifest(manifest.info))
        return _outcome(requirement, recorder)
    peer = ExtensionHostPeer(manifest, recorder, patience or Patience())
    peer.start(_offer(header))
    recording = peer.trace
    step = 0
    violated_at: int | None = None
    unmet: list[str] = []
    mid_frame = False  # the last write ended inside a frame
    try:
        for entry in filter(_performed, entries):
            # The pieces of a split write went out back to back: the target
            # cannot answer a frame it has only part of, so nothing is awaited
            # before the next piece.
            if not mid_frame and not _await(peer, entry):
                unmet.append(_unmet(peer, entry))
            if violated_at is None and requirement in recorder.violations:
                violated_at = step
            if not peer.alive and entry.get("action") not in ("reload", "shutdown", "stdin_eof"):
                break
            # Frames that come from now on are stamped with this step, as in the original run.
            step = peer.step = int(entry.get("step", step))
            _reserve_ids(peer, entry)
            mid_frame = _perform(peer, entry)
            if violated_at is None and requirement in recorder.violations:
                violated_at = step
        assert peer.session is not None
        if peer.alive:
            peer.settle([r.id for r in peer.session.unanswered()])
    except TargetGone:
        pass
    finally:
        peer.close()  # the replay's recorder has no trace directory: the recording stays ours
    if violated_at is None and requirement in recorder.violations:
        violated_at = step
    return _outcome(requirement, recorder, violated_at, recording, tuple(unmet))


def _outcome(
    requirement: str,
    recorder: Recorder,
    step: int | None = None,
    recording: Trace | None = None,
    unmet: tuple[str, ...] = (),
) -> ReplayOutcome:
    seen = recorder.violations.get(requirement, [])
    evidence = seen[0].violation.message if seen else "not violated during replay"
    marked: tuple[dict[str, Any], ...] = ()
    if seen and recording is not None:
        marked = tuple(marked_entries(recording.entries, recording.evidence(requirement)))
    return ReplayOutcome(requirement, bool(seen), evidence, step if seen else None, marked, unmet, recording)


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


def _await(peer: ExtensionHostPeer, entry: dict[str, Any]) -> bool:
    """Reproduce the write's ordering: the answers it waited for first, then
    the same number of observed frames (see ExtensionHostPeer.hold). False
    when they did not come."""
    return peer.hold(frames=int(entry.get("after", 0)), awaits=entry.get("awaits", []), exact=True)


def _unmet(peer: ExtensionHostPeer, entry: dict[str, Any]) -> str:
    """The relation a write's hold could not re-create, in words."""
    what = f"the {entry['action']}" if "action" in entry else "the write"
    where = f"{what} of step {entry.get('step')} (host->target #{entry.get('index', '?')})"
    awaits = entry.get("awaits") or []
    answers = f"the answers to {', '.join(map(repr, awaits))} and " if awaits else ""
    count = int(entry.get("after", 0))
    return f"{where} followed {answers}{count} target frames; replay saw {peer.frames_observed} frames"


def _perform(peer: ExtensionHostPeer, entry: dict[str, Any]) -> bool:
    """Perform one entry; True when it was a write that ended inside a frame
    (a piece of a split write)."""
    action = entry.get("action")
    if action == "shutdown":
        peer.shutdown()
        return False
    if action == "stdin_eof":
        peer.stdin_eof()
        return False
    if action == "reload":
        peer.reload(str(entry.get("mode", "shutdown")))
        return False
    data = decode_bytes(entry)
    if data is None:
        raise NotReplayable(
            f"step {entry.get('step')}: the trace kept only a digest of a {entry.get('size')}-byte write"
        )
    for _ in range(int(entry.get("unreadable", 0))):
        peer.mark_unreadable()
    assert peer.session is not None
    allowance = peer.session.unreadable_sent
    outgoing = meanings(entry, data)
    for out in outgoing:
        peer.register(out)
    recipe = entry.get("recipe")
    peer.write_raw(data, recipe=recipe if isinstance(recipe, dict) else None)
    if len(data) - 1 == limits.MAX_FRAME_BYTES:
        # A refusable frame at exactly the bound is judged by how the
        # certification handled it, not by the session: judge it the same way.
        for out in outgoing:
            if out.kind == "request" and out.intent == "oversize":
                settle_exact_bound(peer, out.id, allowance)
    return not data.endswith(b"\n")


def meanings(entry: dict[str, Any], data: bytes) -> list[Outgoing]:
    """The requests and cancellations a recorded write carries, in the order
    its bytes hold them: the session learns them in that order, as in the
    original run (a probe written behind a cancellation proves it was read
    only when it is registered after it). What the bytes do not show whole
    (a write split across entries) follows in the order of the lists."""
    requests = {id_key(r["id"]): r for r in entry.get("requests", [])}
    cancels = {id_key(rid): rid for rid in entry.get("cancels", [])}
    out: list[Outgoing] = []
    for kind, rid, frame in _frames(data):
        key = id_key(rid)
        if kind == "request" and key in requests:
            out.append(_request(requests.pop(key), frame))
        elif kind == "cancel" and key in cancels:
            out.append(Outgoing(frame, "cancel", cancels.pop(key)))
    out += [_request(r, data) for r in requests.values()]
    out += [Outgoing(b"", "cancel", rid) for rid in cancels.values()]
    return out


def _request(recorded: dict[str, Any], frame: bytes) -> Outgoing:
    return Outgoing(
        frame, "request", recorded["id"], str(recorded["method"]), recorded.get("params"), recorded.get("intent")
    )


def _frames(data: bytes) -> list[tuple[str, Any, bytes]]:
    """("request" | "cancel", id, frame bytes) of each whole frame in ``data``."""
    found: list[tuple[str, Any, bytes]] = []
    for line in data.split(b"\n"):
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            continue
        params = message.get("params")
        if message["method"] == "$/cancelRequest" and isinstance(params, dict) and "id" in params:
            found.append(("cancel", params["id"], line + b"\n"))
        elif "id" in message:
            found.append(("request", message["id"], line + b"\n"))
    return found


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
    return sorted({int(e["step"]) for e in entries if e.get("dir") == HOST and int(e["step"]) > 0} - {closing})


def closing_step(entries: list[dict[str, Any]]) -> int | None:
    """The last step when all it wrote is the shutdown that ends the
    generation (and answers to the target's own requests): the machine's
    teardown. It stays in every shrunk trace -- what a target writes late
    (a second response, a progress event after the answer) is seen before
    its shutdown acknowledgement, and would go unseen without it."""
    writes = [e for e in entries if e.get("dir") == HOST]
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
    """The trace minus whole steps, its schedule relations kept valid: a
    later write's ``after`` count shrinks by the target frames the dropped
    steps saw, and the answers a dropped write waited for are waited for by
    the next write kept (a write's coalesced frames and a split write's
    pieces belong to one step, so they go or stay together)."""
    kept: list[dict[str, Any]] = []
    removed_frames = 0
    carried: list[Any] = []  # answers a dropped write waited for
    for e in entries:
        if int(e.get("step", 0)) in dropped:
            removed_frames += e.get("dir") == TARGET
            if _performed(e):
                carried += [rid for rid in e.get("awaits", []) if rid not in carried]
            continue
        if _performed(e) and (removed_frames or carried):
            awaits = [*carried, *(rid for rid in e.get("awaits", []) if rid not in carried)]
            e = {**e, "after": max(0, int(e.get("after", 0)) - removed_frames), "awaits": awaits}
            carried = []
        kept.append(e)
    return kept


# A guess is kept when this many of its replays reproduce: one that reproduced
# once by luck would make a trace that does not replay.
CONFIRMATIONS = 2
# Failed replays a guess may have before it is rejected, once the trace has
# shown itself racy (one replay of a guess reproduced, another did not), and
# for the whole trace (it must reproduce for anything to be shrunk).
RACY_ATTEMPTS = 3


def first_guesses(steps: list[int], violation_step: int | None) -> list[frozenset[int]]:
    """The steps to keep, tried first: the step the violation was seen in
    with the step before it (a late frame is judged one step after the write
    that caused it; delta debugging drops whichever is not needed), then
    every step up to it. Empty when the violation was seen in initialize or
    the closing shutdown: no step at all."""
    if violation_step is None:
        return []
    v = violation_step
    keeps = [{v - 1, v}, {s for s in steps if s <= v}]
    out: list[frozenset[int]] = []
    for keep in (frozenset(k & set(steps)) for k in keeps):
        if keep not in out and keep != frozenset(steps):
            out.append(keep)
    return out


SHRINK_REPLAYS = 60  # replays one trace's shrinking may take (besides its time budget)


@dataclass
class _Shrinking:
    """One trace being shrunk: its budget, what was replayed so far, and the
    best trace found (the recording of the last replay that reproduced)."""

    header: dict[str, Any]
    steps: list[int]
    target: Path | None
    patience: Patience | None
    deadline: float
    max_replays: int
    # Told the steps left and the replays tried after each replay (a progress display's).
    on_replay: Callable[[int, int], None] | None = None
    attempts: int = 1  # failed replays a guess may have; RACY_ATTEMPTS once the trace showed itself racy
    replays: int = 0
    spent: bool = False
    best: ReplayOutcome | None = None
    dropped: frozenset[int] = frozenset()  # steps the best trace lacks
    rate: float = 0.0  # the share of the best trace's replays that reproduced
    failed: set[frozenset[int]] = field(default_factory=set)  # guesses rejected

    def replay(self, entries: list[dict[str, Any]]) -> ReplayOutcome | None:
        """One replay; None once the budget is spent (it is checked before each)."""
        if self.spent or time.monotonic() > self.deadline or self.replays >= self.max_replays:
            self.spent = True
            return None
        self.replays += 1
        try:
            return replay_entries(self.header, entries, target=self.target, patience=self.patience)
        finally:
            if self.on_replay is not None:
                self.on_replay(len(self.kept()), self.replays)

    def reproduce(self, entries: list[dict[str, Any]], attempts: int) -> tuple[ReplayOutcome | None, float]:
        """The last of :data:`CONFIRMATIONS` replays that reproduce the
        violation, within ``attempts`` failed ones (None: the guess is
        rejected), and the share of the replays that did. Successes and
        failures of one guess show the trace is racy: later guesses get
        :data:`RACY_ATTEMPTS`."""
        hits, failures, last = 0, 0, None
        while hits < CONFIRMATIONS and failures < attempts:
            outcome = self.replay(entries)
            if outcome is None:
                return None, 0.0
            if outcome.reproduced:
                hits, last = hits + 1, outcome
            else:
                failures += 1
        if hits and failures:
            self.attempts = RACY_ATTEMPTS
        return (last if hits >= CONFIRMATIONS else None), hits / (hits + failures)

    def current(self) -> list[dict[str, Any]]:
        assert self.best is not None and self.best.recording is not None
        return self.best.recording.entries

    def try_dropping(self, entries: list[dict[str, Any]], dropped: frozenset[int], attempts: int) -> bool:
        """Replay ``entries`` (which lack the steps dropped so far) without
        ``dropped``; keep the result when it reproduces, as reliably as the
        best trace so far (a step whose loss makes a race of a sure thing
        stays: its trace would replay less often)."""
        if dropped in self.failed or (self.best is not None and dropped == self.dropped):
            return False
        found, rate = self.reproduce(without_steps(entries, set(dropped - self.dropped)), attempts)
        if found is None or found.recording is None or rate < self.rate:
            if not self.spent:
                self.failed.add(dropped)
            return False
        self.best, self.dropped, self.rate = found, dropped, rate
        if self.on_replay is not None:
            self.on_replay(len(self.kept()), self.replays)  # the steps left now
        return True

    def start(self, entries: list[dict[str, Any]], violation_step: int | None) -> bool:
        """A first trace that reproduces: a guess around the violation's step,
        else the whole trace (a few tries: it may be racy)."""
        everything = frozenset(self.steps)
        for keep in first_guesses(self.steps, violation_step):
            if self.try_dropping(entries, everything - keep, self.attempts):
                return True
        return self.try_dropping(entries, frozenset(), RACY_ATTEMPTS)

    def delta_debug(self) -> None:
        """Chunks of the steps left, of halving size, down to single steps."""
        chunk = max(1, len(self.kept()) // 2)
        while chunk >= 1 and not self.spent:
            live = self.kept()
            for start in range(0, len(live), chunk):
                self.try_dropping(self.current(), self.dropped | set(live[start : start + chunk]), self.attempts)
            chunk //= 2

    def kept(self) -> list[int]:
        return [s for s in self.steps if s not in self.dropped]


def shrink(
    trace_path: Path,
    *,
    target: Path | None = None,
    patience: Patience | None = None,
    budget_s: float = 60.0,
    max_replays: int = SHRINK_REPLAYS,
    violation_step: int | None = None,
    on_replay: Callable[[int, int], None] | None = None,
) -> int:
    """Remove whole steps from a failing trace while the failure still
    reproduces, and rewrite the file as the last replay that reproduced it
    recorded (so every frame the violation was judged on is in it, marked).
    Returns the number of steps kept.

    With ``violation_step`` (the step during which the original run saw the
    violation) guesses around it come first (:func:`first_guesses`); else
    the whole trace must reproduce. Then delta debugging. A guess is kept
    when :data:`CONFIRMATIONS` of its replays reproduce, at a rate no lower
    than the trace's so far; a trace that showed itself racy gives each
    guess :data:`RACY_ATTEMPTS` failed replays before rejecting it. The
    budget is checked before each replay; when it runs out, the header says
    so. ``on_replay(steps_left, replays)`` is called after each replay."""
    header, entries = load(trace_path)
    steps = host_steps(entries)
    if not steps:
        return 0
    run = _Shrinking(header, steps, target, patience, time.monotonic() + budget_s, max_replays, on_replay)
    if not run.start(entries, violation_step) or run.best is None:
        return _write_unreproduced(trace_path, header, entries, run, violation_step)
    run.delta_debug()
    _write_shrunk(trace_path, header, run)
    return len(run.kept())


def _write_unreproduced(
    path: Path, header: dict[str, Any], entries: list[dict[str, Any]], run: _Shrinking, violation_step: int | None
) -> int:
    """No replay reproduced the violation (or none could run): keep what the
    original run recorded, cut after the step the violation was seen in --
    nothing written later can have caused it, and every entry it was judged
    on is in the steps kept (the closing shutdown stays too)."""
    later = {s for s in run.steps if violation_step is not None and s > violation_step}
    kept = len(run.steps) - len(later)
    why = f"budget spent at {kept} steps" if run.spent else f"not reproduced in {run.replays} replays"
    shrunk = {"steps_before": len(run.steps), "steps_after": kept, "replays": run.replays}
    write_trace(path, {**header, "shrunk": shrunk, "shrink": why}, without_steps(entries, later))
    return kept


_TRANSIENT = ("requirement", "violation", "evidence", "dropped_entries", "shrunk", "shrink")


def _write_shrunk(path: Path, header: dict[str, Any], run: _Shrinking) -> None:
    """Write the recording of the last replay that reproduced under the
    original header: target, offer, run and context stay; the violation and
    the marked entries are the replay's."""
    best = run.best
    assert best is not None and best.recording is not None
    recording = best.recording
    kept = len(run.kept())
    recording.header = {k: v for k, v in header.items() if k not in _TRANSIENT}
    recording.header["shrunk"] = {"steps_before": len(run.steps), "steps_after": kept, "replays": run.replays}
    if run.spent:
        recording.header["shrink"] = f"budget spent at {kept} steps"
    recording.dump(path, requirement=best.requirement, message=best.evidence)


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
