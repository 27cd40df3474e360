"""One admitted host request: its cancellation token, progress sequence and
single answer; plus the admission gate and the context handlers see."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .children import ChildOutcome, ChildRequests, PendingChild
from .jsonrpc import (
    INTERNAL_ERROR,
    JsonObject,
    RequestCancelled,
    RequestId,
    error_message,
    notification_message,
    result_message,
)
from .negotiation import Session
from .runtime import ConditionLike, EventLike
from .writer import FrameEncodingError, FrameWriter

log = logging.getLogger(__name__)

MAX_PROGRESS_MESSAGE_CHARS = 1024


class Call:
    """Settles exactly once. The call lock is held while a frame for this call
    is written, so no progress can follow the answer (§2.6) and a result and
    an error can never both be sent (§1.9)."""

    def __init__(
        self, request_id: RequestId, method: str, writer: FrameWriter, *, token: EventLike | None = None
    ) -> None:
        self.request_id = request_id
        self.method = method
        self.token: EventLike = token if token is not None else threading.Event()
        self._writer = writer
        self._lock = threading.Lock()
        self._settled = False
        self._sequence = 0
        self._children: dict[str, PendingChild] = {}

    @property
    def settled(self) -> bool:
        with self._lock:
            return self._settled

    def cancel(self) -> None:
        with self._lock:
            self.token.set()
            children = list(self._children.values())
        for child in children:
            child.wake()

    def adopt(self, child: PendingChild) -> bool:
        """Tie a child to this call; False if the call is already cancelled."""
        with self._lock:
            if self.token.is_set():
                return False
            self._children[child.id] = child
            return True

    def release(self, child: PendingChild) -> None:
        with self._lock:
            self._children.pop(child.id, None)

    def emit_progress(self, event: JsonObject) -> None:
        with self._lock:
            if self._settled:
                return
            # §2.6: sequences increase strictly per request; we start at 1.
            self._sequence += 1
            params = {"request_id": self.request_id, "sequence": self._sequence, "event": event}
            try:
                self._writer.send(notification_message("$/progress", params))
            except FrameEncodingError as exc:  # progress is best effort
                log.warning("dropping unencodable progress for %r: %s", self.request_id, exc)

    def answer(self, result: Any) -> bool:
        """Send the result; True only if that result (not a fallback) went out."""
        return self._settle(result_message(self.request_id, result))

    def fail(self, code: int, message: str, data: Any = None) -> bool:
        return self._settle(error_message(self.request_id, code, message, data))

    def _settle(self, message: JsonObject) -> bool:
        with self._lock:
            if self._settled:
                return False
            self._settled = True
            try:
                self._writer.send(message)
                return True
            except FrameEncodingError as exc:
                # Still answer the id: a request must not be left unsettled.
                self._writer.send(error_message(self.request_id, INTERNAL_ERROR, f"cannot send the response: {exc}"))
                return False


class AdmissionGate:
    """At most ``limit`` handlers run at once (§0, §1.1 max_concurrent_requests);
    the rest wait in arrival order of their threads. A cancelled waiter leaves
    the queue without ever running."""

    def __init__(self, limit: int, changed: ConditionLike | None = None) -> None:
        self._limit = limit
        self._active = 0
        self._changed: ConditionLike = changed if changed is not None else threading.Condition()

    def enter(self, token: EventLike) -> bool:
        with self._changed:
            self._changed.wait_for(lambda: self._active < self._limit or token.is_set())
            if token.is_set():
                return False
            self._active += 1
            return True

    def leave(self) -> None:
        with self._changed:
            self._active -= 1
            self._changed.notify_all()

    def wake(self) -> None:
        """Re-check waiters after a cancellation."""
        with self._changed:
            self._changed.notify_all()


class CallContext:
    """Everything a handler may do besides returning: observe cancellation,
    sleep cancellably, report progress, notify, and ask the host things."""

    def __init__(self, call: Call, session: Session, children: ChildRequests, writer: FrameWriter) -> None:
        self._call = call
        self.session = session
        self._children = children
        self._writer = writer

    @property
    def request_id(self) -> RequestId:
        return self._call.request_id

    @property
    def cancelled(self) -> bool:
        return self._call.token.is_set()

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise RequestCancelled()

    def sleep(self, seconds: float) -> None:
        """Sleep, waking at once (with RequestCancelled) if cancelled."""
        if self._call.token.wait(seconds):
            raise RequestCancelled()

    def progress(self, message: str, *, current: int | None = None, total: int | None = None) -> None:
        """§2.6 status event; a no-op unless request_progress was negotiated."""
        if not self.session.progress:
            return
        event: JsonObject = {"type": "status", "message": message[:MAX_PROGRESS_MESSAGE_CHARS]}
        if current is not None:
            event["current"] = current
        if total is not None:
            event["total"] = total
        self._call.emit_progress(event)

    def confirmation_params(self, prompt: str) -> JsonObject:
        """§2.2 confirmation/request params; the parent's id where negotiated."""
        params: JsonObject = {"prompt": prompt, "destructive": False, "default": False}
        if self.session.parent_correlation:
            params = {"parent_request_id": self.request_id, **params}
        return params

    def notify(self, method: str, params: JsonObject) -> None:
        self._writer.send(notification_message(method, params))

    def request(
        self,
        method: str,
        params: JsonObject,
        *,
        id_prefix: str,
        on_answer: Callable[[ChildOutcome], None] | None = None,
    ) -> ChildOutcome:
        """Send a child request and block until the host answers it.
        ``on_answer`` runs on the reader thread as the answer arrives.

        Raises ChildBudgetExhausted, or RequestCancelled if the parent is
        cancelled first -- after telling the host to cancel the child (§1.9).
        """
        child = self._children.open(id_prefix)
        child.on_answer = on_answer
        if not self._call.adopt(child):
            self._children.forget(child.id)
            raise RequestCancelled()
        try:
            self._children.send(child, method, params)
            child.wait()
        finally:
            self._call.release(child)
            self._children.forget(child.id)
        if child.outcome is None:
            self._cancel_child(child)
            raise RequestCancelled()
        return child.outcome

    def _cancel_child(self, child: PendingChild) -> None:
        # Sent before the parent's -32800 so the child is cancelled while its
        # parent is still live; frozen API 0.1 has no $/cancelRequest.
        if self.session.cancellation:
            self.notify("$/cancelRequest", {"id": child.id, "reason": "parent request cancelled"})
