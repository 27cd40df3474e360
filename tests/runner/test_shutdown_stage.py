"""§1.8 through the peer, on the simulated transport (virtual clock: a 3 s
wait costs nothing): a refused, late or missing shutdown acknowledgement is
reported under EXT-1.8-shutdown-ack, and the exit is judged in every case."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.evidence import Recorder
from conformance.manifest import load_manifest
from conformance.peers.ext_host import ExtensionHostPeer
from conformance.peers.simulated import REFERENCE_MODULE
from conformance.protocol.limits import MAX_FRAME_BYTES
from conformance.reference.extension import ReferenceExtension
from conformance.reference.extension.calls import Call
from conformance.reference.extension.jsonrpc import INTERNAL_ERROR, Request
from conformance.reference.extension.server import Server
from conformance.reference.extension.writer import FrameWriter
from conformance.runner.extension import full_offer
from conformance.transport.simulated import Scheduler, SimStdin, SimulatedTarget, Sink

MANIFEST = Path(__file__).resolve().parents[2] / "conformance/reference/extension/manifests/api-0.2/extension.toml"
ACK, EXIT, ANSWERED = "EXT-1.8-shutdown-ack", "EXT-1.8-exit-after-shutdown", "JSONRPC-5-every-request-answered"


class Shutdown(Server):
    """Answers shutdown with ``reply`` ("ack", "error" or "none") after
    ``delay_s``, then lingers ``linger_s`` before exiting."""

    reply = "ack"
    delay_s = 0.0
    linger_s = 0.0

    def _shutdown(self, request: Request) -> None:
        self._drain()
        if self.delay_s:
            self._runtime.event().wait(self.delay_s)
        call = Call(request.id, request.method, self._writer)
        if self.reply == "ack":
            call.answer({})
        elif self.reply == "error":
            call.fail(INTERNAL_ERROR, "refused")
        if self.linger_s:
            self._runtime.event().wait(self.linger_s)


def ended(server: type[Server], end: Callable[[ExtensionHostPeer], None]) -> Recorder:
    """Start ``server`` on the virtual clock, initialize it, ``end`` it (a
    shutdown request or stdin EOF) and return what was recorded."""

    def launch(_: object) -> SimulatedTarget:
        def program(stdin: SimStdin, stdout: Sink, scheduler: Scheduler) -> int:
            return server(ReferenceExtension("0.2"), FrameWriter(stdout), scheduler).serve(stdin)

        return SimulatedTarget(program, MAX_FRAME_BYTES, log_names=(REFERENCE_MODULE,))

    peer = ExtensionHostPeer(load_manifest(MANIFEST), Recorder(), launcher=launch)
    offer = full_offer("0.2")
    peer.start(offer)
    assert peer.initialize(offer)
    end(peer)
    peer.close()
    return peer.recorder


def shut_down(reply: str, delay_s: float, linger_s: float) -> Recorder:
    server = type("S", (Shutdown,), {"reply": reply, "delay_s": delay_s, "linger_s": linger_s})
    return ended(server, ExtensionHostPeer.shutdown)


@pytest.mark.parametrize(
    ("reply", "delay_s", "linger_s", "violated"),
    [
        ("ack", 0.0, 0.0, set()),
        ("ack", 1.5, 0.0, set()),  # within the 2 s stage
        ("error", 0.0, 0.0, {ACK}),  # a refusal is no acknowledgement; the exit passes
        ("error", 0.0, 5.0, {ACK, EXIT}),  # ... and the exit is still judged
        ("ack", 3.0, 0.0, {ACK}),  # late: under the shutdown entry, not "every request answered"
        ("none", 0.0, 0.0, {ACK}),  # exits without a word
        ("none", 0.0, 10.0, {ACK, EXIT}),
    ],
)
def test_shutdown_stage(reply: str, delay_s: float, linger_s: float, violated: set[str]) -> None:
    recorder = shut_down(reply, delay_s, linger_s)
    assert set(recorder.violations) == violated, recorder.violations
    assert recorder.exercised.get(EXIT), "the exit is judged whatever the acknowledgement"
    assert ANSWERED not in recorder.violations


# -- §0 stdin EOF: no time is stated; judged where a default host would kill ---------------

EOF_EXIT = "EXT-0-stdin-eof-exit"


class LingersAfterEof(Server):
    """Exits ``linger_s`` (virtual) seconds after its stdin reaches EOF."""

    linger_s = 0.0

    def _stdin_ended(self) -> None:
        super()._stdin_ended()
        self._runtime.event().wait(self.linger_s)


def close_stdin(linger_s: float) -> Recorder:
    return ended(type("S", (LingersAfterEof,), {"linger_s": linger_s}), ExtensionHostPeer.stdin_eof)


@pytest.mark.parametrize("linger_s", [0.0, 3.0, 3.9])
def test_an_exit_within_the_default_stages_after_eof_passes(linger_s: float) -> None:
    """2 s for the reply and 2 s for the exit (§1.8): slower than either
    stage alone, still never killed by a default host."""
    recorder = close_stdin(linger_s)
    assert recorder.exercised.get(EOF_EXIT) and EOF_EXIT not in recorder.violations


def test_running_past_the_default_stages_after_eof_warns_with_the_delay_measured() -> None:
    seen = [recorder.violations[EOF_EXIT] for recorder in (close_stdin(4.5), close_stdin(60.0))]
    assert [len(s) for s in seen] == [1, 1]
    assert all(dict(s[0].measured)["running_after_s"] >= 4.0 for s in seen)
    assert seen[0][0].violation.message == seen[1][0].violation.message  # the delay stays out of it
