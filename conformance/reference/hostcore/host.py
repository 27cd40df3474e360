"""The host-core's method table and the §3 handshake gate.

:meth:`HostCore.call` is the single entry point the server uses: it checks
the handshake (§3 rule 3: every call but app.handshake needs a successful
handshake first), shutdown (§7 HOST_SHUTTING_DOWN), the params shape, finds
the handler and turns every failure into a :class:`HostError` -- handlers
never let an exception escape as a dropped response.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import app, fork, limits, notifications, permissions, plans, sessions, shells, todos, tools, workspace
from .admission import Admission
from .clock import Clock, SystemClock, iso
from .errors import METHOD_NOT_FOUND, HostError
from .store import Store

log = logging.getLogger(__name__)

Handler = Callable[["HostCore", dict[str, Any]], Any]


@dataclass(frozen=True)
class Method:
    name: str
    handler: Handler
    # True: may block (tools, waits); runs on a worker thread under the
    # dispatcher cap. False: short state work, run inline in arrival order.
    blocking: bool = False


class UnknownMethod(HostError):
    def to_error(self) -> dict[str, Any]:
        # §7 gives -32601 no string code.
        return {"code": METHOD_NOT_FOUND, "message": self.message}


class HostCore:
    def __init__(
        self,
        data_dir: Path,
        *,
        clock: Clock | None = None,
        admission: Admission | None = None,
        plan_approval_ttl_s: float = limits.PLAN_APPROVAL_TTL_S,
    ) -> None:
        self.data_dir = Path(os.path.realpath(data_dir))  # canonical: the scratch roots derive from it
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.plan_approval_ttl_s = plan_approval_ttl_s
        self.store = Store(data_dir)
        with self.store.transaction() as db:
            # Before serving anything (§8.7): no earlier plan work survives.
            plans.interrupt_at_startup(db, iso(self.clock.now()))
        self.admission = admission if admission is not None else Admission()
        self.permissions = permissions.Permissions(self.emit)
        self.tool_calls = tools.ToolCalls()
        self._emitter: Callable[[str, dict[str, Any]], None] | None = None
        self._handshaken = threading.Event()
        self._shutting_down = threading.Event()
        self._methods: dict[str, Method] = {}
        for module in (app, workspace, sessions, fork, notifications, permissions, plans, shells, todos, tools):
            for name, (handler, blocking) in module.METHODS.items():
                self._methods[name] = Method(name, handler, blocking)

    def method(self, name: str) -> Method | None:
        return self._methods.get(name)

    def call(self, name: str, params: Any) -> Any:
        """The method's result, or the HostError to answer with."""
        try:
            return self._dispatch(name, params)
        except HostError as exc:
            return exc
        except Exception as exc:
            # §7 INTERNAL: an unexpected failure still gets its answer.
            log.exception("%s failed", name)
            return HostError("INTERNAL", f"internal error in {name}: {type(exc).__name__}")

    def _dispatch(self, name: str, params: Any) -> Any:
        if self._shutting_down.is_set():
            raise HostError("HOST_SHUTTING_DOWN", "the host is shutting down")
        if name != "app.handshake" and not self._handshaken.is_set():
            # §3 rule 3, checked before the method name so nothing leaks.
            raise HostError("UNAUTHORIZED", f"{name} refused: app.handshake has not succeeded")
        method = self._methods.get(name)
        if method is None:
            raise UnknownMethod("METHOD_NOT_FOUND", f"unknown method {name!r}")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise HostError("INVALID_PARAMS", "params must be an object")
        return method.handler(self, params)

    def tool_budget(self) -> dict[str, int]:
        """§2.1 ToolBudgetHealth, straight from the admission counters."""
        return self.admission.health()

    def set_emitter(self, emitter: Callable[[str, dict[str, Any]], None]) -> None:
        self._emitter = emitter

    def emit(self, method: str, params: dict[str, Any]) -> None:
        """Send a server notification (§8.3: any time after the handshake)."""
        if self._emitter is not None:
            self._emitter(method, params)

    def scratch_dir(self, session_id: str) -> str:
        """The session's scratch root (D114); a second inside-root for tools."""
        return os.path.join(self.data_dir, "scratch", session_id.replace(os.sep, "_"))

    def sweep(self) -> None:
        plans.sweep_expired(self)

    def handshake_succeeded(self) -> None:
        self._handshaken.set()

    def begin_shutdown(self) -> None:
        """stdin EOF: refuse new calls; open prompts end as cancelled (§6)
        and running tools are stopped, process trees included."""
        self._shutting_down.set()
        self.permissions.cancel_all()
        for entry in self.tool_calls.all():
            tools.abort(self, {"sessionId": entry.call.session_id, "toolCallId": entry.call.tool_call_id})

    def close(self) -> None:
        self.store.close()
