"""Requests the extension sends to the host ("child requests", §2, §2.2, §2.7).

Admission, in order (each refusal is answered and diagnosed):

1. the id is an unsigned 64-bit integer or a string of at most 256 UTF-8
   bytes (§2) -- otherwise answered -32600 with a null id, since the id
   cannot be echoed;
2. the id is not outstanding -- a duplicate of an outstanding id is not
   answered at all (an answer would be ambiguous) and is diagnosed;
3. the id was not used before in this generation, at most 128 requests are
   outstanding and at most 65,536 distinct ids are used (§2);
4. the method is one this host serves for this extension;
5. API 0.2+ operation-scoped methods name an *active* parent: a tool/call or
   command/execute on the wire, not cancelled, not settled (§1.2, §2).

When a parent settles (answered, cancelled or lost) every unresolved child
it owns is answered -32800 and a late frontend answer is ignored (§2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import jsonrpc as rpc
from .frontend import Prompt

if TYPE_CHECKING:
    from .calls import Call
    from .connection import Connection

# §2: operation-scoped methods need an active numeric parent on API 0.2+.
OPERATION_SCOPED = ("confirmation/request", "input/request", "artifact/publish", "policy/evaluate", "secret/get")
# §1.2: model-tool and declared-command requests are active parents;
# prompt/context handlers are not.
PARENT_METHODS = ("tool/call", "command/execute")
MAX_INPUT_BYTES = 256 * 1024  # §4 ExtensionInputRequest: non-null value capped at 256 KiB
MAX_SECRET_BYTES = 64 * 1024  # §2.10: a secret value is capped at 64 KiB
SECRET_UNAVAILABLE = -32004  # §2.10: one generic answer for "no value" and "broker failed"
# §2.20 shortcut/register bounds.
MAX_SHORTCUTS = 64
MAX_SHORTCUT_ID_BYTES = 128
MAX_SHORTCUT_KEY_BYTES = 128
MAX_SHORTCUT_DESCRIPTION_BYTES = 4 * 1024


def id_key(value: Any) -> tuple[str, Any]:
    """Integers and strings are different ids (5 is not "5")."""
    return ("i", value) if isinstance(value, int) else ("s", value)


class ChildRequests:
    def __init__(self, connection: Connection) -> None:
        self._conn = connection
        self._outstanding: dict[tuple[str, Any], Any] = {}  # key -> the parent call id (or None)
        self._used: set[tuple[str, Any]] = set()
        self.shortcuts: set[str] = set()  # §2.20 admitted registrations
        self._preapproved: set[int] = set()  # §1.6b: parents whose first confirmation is already granted

    def preapprove(self, parent_id: int) -> None:
        """§1.6b: the person confirmed a destructive menu action: its first
        confirmation/request is answered yes without asking again."""
        with self._conn._cond:
            self._preapproved.add(parent_id)

    @property
    def outstanding(self) -> int:
        return len(self._outstanding)

    def on_request(self, message: rpc.Incoming) -> None:
        conn = self._conn
        if not rpc.valid_child_id(message.id):
            conn.diagnose(
                "child-request-refused", f"{message.method[:80]}: id {str(message.id)[:80]!r} is not a valid id"
            )
            conn.send_frame(rpc.error(None, rpc.INVALID_REQUEST, "id must be a u64 or a string of at most 256 bytes"))
            return
        key = id_key(message.id)
        with conn._cond:
            if key in self._outstanding:
                refusal: tuple[int, str] | None = None
                duplicate = True
            else:
                duplicate = False
                refusal = self._admit(key, message)
        if duplicate:
            conn.diagnose("child-request-refused", f"id {str(message.id)[:80]!r} is already outstanding; not answered")
        elif message.method == "shortcut/register" and refusal is None:
            return  # answered while admitted
        elif refusal is not None:
            code, text = refusal
            conn.diagnose("child-request-refused", f"{message.method[:80]} (id {str(message.id)[:80]!r}): {text}")
            conn.send_frame(rpc.error(message.id, code, text))
        else:
            conn.runtime.submit(lambda: self._serve(key, message), "host-child-request")

    def _admit(self, key: tuple[str, Any], message: rpc.Incoming) -> tuple[int, str] | None:
        """Under the lock: None when admitted (and recorded), else (code, reason)."""
        conn = self._conn
        config = conn.config
        if message.method == "shortcut/register" and conn.state == "initializing":
            return self._register_shortcut(key, message)
        if conn.state not in ("ready", "draining") or conn.negotiated is None:
            return rpc.NOT_AVAILABLE, "not accepting requests outside a ready generation"
        if key in self._used:
            return rpc.INVALID_REQUEST, "id was already used in this process generation"
        if len(self._outstanding) >= config.max_outstanding_children:
            return rpc.INVALID_REQUEST, f"{config.max_outstanding_children} child requests are already outstanding"
        if len(self._used) >= config.max_child_ids:
            return rpc.INVALID_REQUEST, f"this generation used its {config.max_child_ids} child ids"
        self._used.add(key)
        if message.method == "shortcut/register" and conn.negotiated.has("shortcuts"):
            # §2/§2.20: its parent (the initialize request) has settled; no owner
            # this host issued can stand in for it, and a late registration is
            # never admitted.
            return rpc.NOT_AVAILABLE, "not_foreground_owner: shortcut/register after initialize settled"
        if not self._served(message.method):
            return rpc.METHOD_NOT_FOUND, f"method {message.method[:80]!r} is not available to this extension"
        if not isinstance(message.params, dict):
            return rpc.INVALID_PARAMS, "params must be an object"
        parent_id = None
        if conn.manifest.api_version != "0.1" and message.method in OPERATION_SCOPED:
            params = message.params if isinstance(message.params, dict) else {}
            parent = conn.active_parent(params.get("parent_request_id"), PARENT_METHODS)
            if parent is None:
                return rpc.NOT_AVAILABLE, "parent_request_id must name an active tool/call or command/execute"
            parent.children.add(key)
            parent_id = parent.id
        self._outstanding[key] = parent_id
        return None

    def _register_shortcut(self, key: tuple[str, Any], message: rpc.Incoming) -> tuple[int, str] | None:
        """§2.20: written inside the initialize request's scope (its id is the
        parent); bounded; a refused registration leaves the shortcut unavailable.
        Answered {} by the caller when admitted (see on_request)."""
        conn = self._conn
        offered = conn.handshake.offer is not None and "shortcuts" in conn.handshake.offer.offered
        params = message.params if isinstance(message.params, dict) else {}
        shortcut, shortcut_key = params.get("id"), params.get("key")
        description = params.get("description", "")
        if not offered or key in self._used:
            return rpc.METHOD_NOT_FOUND, "shortcut/register is not available"
        self._used.add(key)
        problem = None
        if params.get("parent_request_id") != conn.handshake.initialize_id:
            problem = "parent_request_id must be the initialize request"
        elif not _bounded_str(shortcut, MAX_SHORTCUT_ID_BYTES) or not _bounded_str(
            shortcut_key, MAX_SHORTCUT_KEY_BYTES
        ):
            problem = "id and key must be strings of at most 128 bytes"
        elif not _bounded_str(description, MAX_SHORTCUT_DESCRIPTION_BYTES):
            problem = "description must be a string of at most 4 KiB"
        elif shortcut in self.shortcuts or len(self.shortcuts) >= MAX_SHORTCUTS:
            problem = "duplicate shortcut id, or 64 shortcuts already registered"
        if problem is not None:
            return rpc.INVALID_PARAMS, problem
        self.shortcuts.add(str(shortcut))
        conn._enqueue(rpc.frame(rpc.result(message.id, {})), None)
        return None

    def settle_shortcuts(self, negotiated: bool) -> None:
        """Registrations stand only if the feature was negotiated (§1.11)."""
        if not negotiated:
            self.shortcuts.clear()

    def _served(self, method: str) -> bool:
        manifest = self._conn.manifest
        if method == "confirmation/request":
            return bool(manifest.contributes.get("confirmations"))
        if method == "secret/get":
            negotiated = self._conn.negotiated
            return negotiated is not None and negotiated.has("secrets") and self._conn.config.secret_broker is not None
        return method == "input/request" and manifest.api_version != "0.1"

    def _secret(self, key: tuple[str, Any], message: rpc.Incoming) -> None:
        """§2.10: exact allowlisted names only; the owner comes from the active
        parent, never from the request; no value and a failing broker give
        the same -32004; the value is never logged."""
        conn = self._conn
        name = message.params.get("name") if isinstance(message.params, dict) else None
        if not isinstance(name, str) or name not in conn.manifest.secrets:
            self._answer(key, rpc.error(message.id, rpc.INVALID_PARAMS, "secret name is not declared"))
            return
        broker = conn.config.secret_broker
        parent = self._outstanding.get(key)
        try:
            value = broker(conn.name, conn.generation, parent or 0, name) if broker is not None else None
        except Exception:  # provider details stay host-side
            value = None
        if not isinstance(value, str) or len(value.encode("utf-8", "surrogatepass")) > MAX_SECRET_BYTES:
            self._answer(key, rpc.error(message.id, SECRET_UNAVAILABLE, "secret is unavailable"))
            return
        self._answer(key, rpc.result(message.id, {"value": value}))

    def _serve(self, key: tuple[str, Any], message: rpc.Incoming) -> None:
        conn = self._conn
        if message.method == "secret/get":
            self._secret(key, message)
            return
        prompt = Prompt(conn.name, conn.generation, message.id, message.method, dict(message.params))
        try:
            with conn._cond:
                parent = self._outstanding.get(key)
                granted = message.method == "confirmation/request" and parent in self._preapproved
                if granted:
                    self._preapproved.discard(parent)
            if granted:
                answer: Any = {"confirmed": True}
            elif message.method == "confirmation/request":
                answer = {"confirmed": conn.frontend.confirm(prompt) is True}
            else:
                value = conn.frontend.input(prompt)
                too_big = isinstance(value, str) and len(value.encode("utf-8", "replace")) > MAX_INPUT_BYTES
                answer = {"value": value if isinstance(value, str) and not too_big else None}
        except Exception as exc:  # a frontend bug must not leave the extension waiting
            conn.diagnose("child-request-refused", f"frontend failed: {exc}")
            answer = {"confirmed": False} if message.method == "confirmation/request" else {"value": None}
        self._answer(key, rpc.result(message.id, answer))

    def _answer(self, key: tuple[str, Any], response: rpc.JsonObject) -> None:
        conn = self._conn
        with conn._cond:
            if key not in self._outstanding:
                return  # cancelled with its parent: the late answer is ignored (§2)
            del self._outstanding[key]
        conn.send_frame(response)

    def cancel_owned_by(self, call: Call) -> None:
        """Under the lock: the parent settled; answer its unresolved children -32800."""
        conn = self._conn
        for key in list(call.children):
            if key in self._outstanding:
                del self._outstanding[key]
                child_id = key[1]
                message = rpc.error(child_id, rpc.REQUEST_CANCELLED, f"parent request {call.id} settled")
                if not conn._writer_closed:
                    conn._enqueue(rpc.frame(message), None)
        call.children.clear()

    def clear(self) -> None:
        self.shortcuts.clear()
        self._preapproved.clear()
        self._outstanding.clear()


def _bounded_str(value: Any, limit: int) -> bool:
    return isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) <= limit
