"""The reference extension's behaviour: one method per handler.

Test fixtures subclass ``ReferenceExtension`` and override exactly one method
to inject one fault; everything about transport, concurrency and cancellation
lives in :mod:`.server`, so an override cannot break it by accident.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import struct
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias

from . import catalog
from .calls import CallContext
from .children import ChildBudgetExhausted, ChildOutcome, confirmed
from .jsonrpc import INVALID_PARAMS, JsonObject, RpcError
from .negotiation import negotiate
from .schema import first_violation

Handler: TypeAlias = Callable[[JsonObject, CallContext], Any]
ToolHandler: TypeAlias = Callable[[JsonObject, CallContext], JsonObject]
HookHandler: TypeAlias = Callable[[JsonObject, CallContext], JsonObject]

# Keeps every reply frame far below the 1 MiB frame bound (§0), even when
# JSON escaping grows the text several-fold.
MAX_ECHO_BYTES = 64 * 1024
MAX_NAME_BYTES = 256
STYLE_PREFIX = "extension.octet_reference_extension"
# §2.5: labels and detail are plain data; control characters (ANSI escapes
# included) are replaced before anything user-supplied lands in a snapshot.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# §2.5: a url reference must be a public absolute https URL.
ABOUT_URL = "https://example.com/octet/reference-extension"
# §2.10: the one name in the manifests' [capabilities].secrets allowlist.
SECRET_NAME = "reference.token"
# §2.20: the one shortcut, registered inside initialize when shortcuts is offered.
SHORTCUT = {"id": "reference:greet", "key": "ctrl+shift+g", "description": "Greet from the keyboard"}

# §2.8: the scratch directory a path publication is relative to, and the
# host's default inline bound (larger artifacts go through a scratch file).
SCRATCH_VARIABLE = "OCTET_EXTENSION_SCRATCH"
MAX_INLINE_ARTIFACT_BYTES = 256 * 1024


def tiny_png(red: int, green: int, blue: int) -> bytes:
    """A valid 1x1 RGB PNG (§2.8 checks the media signature)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(bytes([0, red, green, blue]))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def truncate_utf8(text: str, limit: int) -> str:
    """At most ``limit`` UTF-8 bytes, cut on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def plain_text(text: str) -> str:
    """Text with control characters shown as U+FFFD (§2.5 plain data)."""
    return CONTROL_CHARACTERS.sub("\ufffd", text)


def continue_hook() -> JsonObject:
    return {"disposition": {"action": "continue"}, "context": [], "notifications": []}


class ReferenceExtension:
    """A correct extension for one API version ("0.1", "0.2" or "0.4")."""

    def __init__(self, api_version: str) -> None:
        if api_version not in catalog.API_VERSIONS:
            raise ValueError(f"unsupported API version {api_version!r}; expected one of {catalog.API_VERSIONS}")
        self.api_version = api_version
        self.tools = catalog.tools_for(api_version)
        # §2.5: snapshots only when the manifest (as the host passed it in
        # initialize) sets contributes.presentation, and never on API 0.1.
        self.presents = False
        self.secret_names: frozenset[str] = frozenset()  # §1.1 allowlist, as the host passed it
        self._revision = -1
        self._revision_lock = threading.Lock()
        # §2.12: committed catalog epochs (0 = the initialize catalog), the
        # newest RETAINED_EPOCHS kept; calls name the epoch they dispatch in.
        self.epochs: dict[int, dict[str, catalog.ToolSpec]] = {0: dict(self.tools)}
        self._catalog_lock = threading.Lock()
        self._published = 0  # §2.8: numbers scratch files

    # -- routing --------------------------------------------------------------

    def handler_for(self, method: str) -> Handler | None:
        """The handler for a host request method other than initialize and
        shutdown (the server runs those two itself); None -> -32601."""
        handlers: dict[str, Handler] = {
            "tool/call": self.tool_call,
            "command/execute": self.command_execute,
            "hook/run": self.hook_run,
            "context/collect": self.context_collect,
            "status/collect": self.status_collect,
            "tool/render": self.tool_render,
            "menu/collect": self.menu_collect,
        }
        return handlers.get(method)

    def tool_handlers(self) -> dict[str, ToolHandler]:
        handlers: dict[str, ToolHandler] = {
            "echo": self.tool_echo,
            "slow": self.tool_slow,
            "structured": self.tool_structured,
            "failing": self.tool_failing,
            "confirm": self.tool_confirm,
            "picture": self.tool_picture,
        }
        return handlers

    def hook_handlers(self) -> dict[str, HookHandler]:
        handlers: dict[str, HookHandler] = {
            "before_prompt": self.hook_before_prompt,
            "after_response": self.hook_after_response,
            "before_tool_call": self.hook_before_tool_call,
            "after_tool_call": self.hook_after_tool_call,
        }
        if self.api_version == "0.4":  # §1.4b: the model-turn observations
            handlers |= dict.fromkeys(catalog.MODEL_TURN_HOOKS, self.hook_model_turn)
        return handlers

    # -- §1.1 initialize -------------------------------------------------------

    def initialize(self, params: JsonObject) -> JsonObject:
        requested = params.get("api_version")
        if requested != self.api_version:
            # §1.1: the response must match the manifest-selected version; a
            # mismatch means host and manifest disagree, so say so plainly.
            message = f"this extension speaks API {self.api_version}, host asked for {requested!r}"
            raise RpcError(INVALID_PARAMS, message)
        protocol = negotiate(self.api_version, params.get("protocol"))
        capabilities = params.get("capabilities")
        secrets = capabilities.get("secrets") if isinstance(capabilities, dict) else None
        if isinstance(secrets, list):
            self.secret_names = frozenset(name for name in secrets if isinstance(name, str))
        contributes = params.get("contributes")
        self.presents = (
            self.api_version != "0.1" and isinstance(contributes, dict) and contributes.get("presentation") is True
        )
        features = protocol["features"] if protocol is not None else []
        result: JsonObject = {
            "api_version": self.api_version,
            "tools": catalog.tool_definitions(
                self.api_version, with_prompt_metadata="tool_prompt_metadata_v1" in features
            ),
            "commands": catalog.command_definitions(),
        }
        if protocol is not None:
            result["protocol"] = protocol
        return result

    # -- §1.2 tool/call --------------------------------------------------------

    def tool_call(self, params: JsonObject, ctx: CallContext) -> JsonObject:
        name = params.get("name")
        tools = self.catalog_for(params, ctx)
        handler = self.tool_handlers().get(name) if isinstance(name, str) and name in tools else None
        if handler is None or not isinstance(name, str):
            known = ", ".join(tools)
            raise RpcError(INVALID_PARAMS, f"unknown tool {name!r}; this extension provides: {known}")
        arguments = params.get("arguments", {})
        problem = first_violation(arguments, tools[name].parameters)
        if problem is not None:
            raise RpcError(INVALID_PARAMS, f"invalid arguments for tool {name!r}: {problem}")
        return handler(arguments, ctx)

    def catalog_for(self, params: JsonObject, ctx: CallContext) -> dict[str, catalog.ToolSpec]:
        """§1.2/§2.12: with dynamic_tools the call names the epoch the model
        saw; dispatch against that snapshot, refusing one never published or
        no longer retained."""
        if "dynamic_tools" not in ctx.session.features:
            return self.tools
        revision = params.get("catalog_revision")
        with self._catalog_lock:
            if revision is None:  # a host that omits it (§1.2 says it will not): the newest catalog
                return self.epochs[max(self.epochs)]
            tools = self.epochs.get(revision) if isinstance(revision, int) and not isinstance(revision, bool) else None
        if tools is None:
            raise RpcError(INVALID_PARAMS, f"unknown or retired catalog_revision {revision!r}")
        return tools

    def tool_result(self, text: str, *, is_error: bool = False, structured: JsonObject | None = None) -> JsonObject:
        """§1.2 result shape: a string on API 0.1, content parts on 0.2+."""
        if self.api_version == "0.1":
            return {"content": text, "is_error": is_error}
        result: JsonObject = {"content": [{"type": "text", "text": text}], "is_error": is_error}
        if structured is not None:
            result["structured_content"] = structured
        return result

    def tool_echo(self, arguments: JsonObject, ctx: CallContext) -> JsonObject:
        return self.tool_result(truncate_utf8(arguments["text"], MAX_ECHO_BYTES))

    def tool_slow(self, arguments: JsonObject, ctx: CallContext) -> JsonObject:
        steps = int(arguments.get("steps", catalog.DEFAULT_SLOW_STEPS))
        delay_ms = int(arguments.get("delay_ms", catalog.DEFAULT_SLOW_DELAY_MS))
        for step in range(1, steps + 1):
            ctx.sleep(delay_ms / 1000)  # raises RequestCancelled (§1.9)
            ctx.progress(f"step {step} of {steps}", current=step, total=steps)
        return self.tool_result(f"slept {steps} x {delay_ms} ms")

    def tool_structured(self, arguments: JsonObject, ctx: CallContext) -> JsonObject:
        text: str = arguments["text"]
        # §1.2: structured_content is bounded to 256 KiB; cap the copy.
        upper = truncate_utf8(text.upper(), MAX_ECHO_BYTES)
        structured = {"length": len(text), "upper": upper}
        return self.tool_result(f"{len(text)} characters", structured=structured)

    def tool_failing(self, arguments: JsonObject, ctx: CallContext) -> JsonObject:
        # A tool-level failure is a *result* with is_error, not a JSON-RPC error.
        return self.tool_result("the failing tool always fails", is_error=True)

    def tool_confirm(self, arguments: JsonObject, ctx: CallContext) -> JsonObject:
        params = ctx.confirmation_params(truncate_utf8(arguments["question"], MAX_ECHO_BYTES))
        try:
            outcome = ctx.request("confirmation/request", params, id_prefix="confirm")
        except ChildBudgetExhausted as exc:
            return self.tool_result(f"cannot ask for confirmation: {exc}", is_error=True)
        return self.tool_result("confirmed" if confirmed(outcome) else "declined")

    def tool_picture(self, arguments: JsonObject, ctx: CallContext) -> JsonObject:
        """A dynamic tool (§2.11): publish a tiny PNG (§2.8) and show it."""
        caption = truncate_utf8(str(arguments.get("caption", "a tiny picture")), MAX_NAME_BYTES)
        artifact_id = self.publish_png(tiny_png(40, 120, 200), ctx)
        result = self.tool_result(f"picture: {caption}")
        result["metadata"] = {"width": 1, "height": 1}  # §1.2: bounded, never shown to the model
        if artifact_id is not None:
            result["content"].append(self.picture_part(artifact_id, caption))
        return result

    def picture_part(self, artifact_id: str, caption: str) -> JsonObject:
        """§1.2: an image part naming the verified PNG artifact."""
        return {"type": "image", "artifact_id": artifact_id, "mime_type": "image/png", "alt": caption}

    # -- §2.8 artifact/publish ---------------------------------------------------

    def publish_png(self, data: bytes, ctx: CallContext) -> str | None:
        """Publish ``data`` as image/png (artifacts negotiated, numeric parent):
        inline, or every other time from the scratch directory when the host
        names one. None when not published (refused, or no feature)."""
        if "artifacts" not in ctx.session.features or not isinstance(ctx.request_id, int):
            return None
        params = self.publication(data, ctx.request_id)
        with self._catalog_lock:
            self._published += 1
            number = self._published
        scratch = os.environ.get(SCRATCH_VARIABLE)
        if scratch and (number % 2 == 0 or len(data) > MAX_INLINE_ARTIFACT_BYTES):
            relative = f"pictures/picture-{os.getpid()}-{number}.png"
            target = Path(scratch) / relative
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                params["path"] = relative
            except OSError:
                params["data"] = {"encoding": "base64", "data": base64.b64encode(data).decode("ascii")}
        else:
            params["data"] = {"encoding": "base64", "data": base64.b64encode(data).decode("ascii")}
        try:
            outcome = ctx.request("artifact/publish", self.finish_publication(params), id_prefix="artifact")
        except ChildBudgetExhausted:
            return None
        answer = outcome.result if outcome.error is None else None
        artifact_id = answer.get("artifact_id") if isinstance(answer, dict) else None
        return artifact_id if isinstance(artifact_id, str) else None

    def publication(self, data: bytes, parent: int) -> JsonObject:
        """§2.8 params describing ``data`` (the source is added by the caller)."""
        digest = hashlib.sha256(data).hexdigest()
        return {"parent_request_id": parent, "mime_type": "image/png", "size": len(data), "sha256": digest}

    def finish_publication(self, params: JsonObject) -> JsonObject:
        """The complete publication, as sent."""
        return params

    # -- §2.9 policy/evaluate ------------------------------------------------------

    def policy_allows(self, operation: str, ctx: CallContext) -> bool:
        """Ask the host to classify an external side effect; only allow
        proceeds (ask would need the person, deny stops). Without
        policy_intents there is no classifier to ask: proceed."""
        if "policy_intents" not in ctx.session.features or not isinstance(ctx.request_id, int):
            return True
        try:
            outcome = ctx.request("policy/evaluate", self.policy_params(operation, ctx.request_id), id_prefix="policy")
        except ChildBudgetExhausted:
            return False
        answer = outcome.result if outcome.error is None else None
        return isinstance(answer, dict) and answer.get("decision") == "allow"

    def policy_params(self, operation: str, parent: int) -> JsonObject:
        """§2.9: an external side effect with this extension's hints."""
        intent = {
            "kind": "external_side_effect",
            "operation": operation,
            "target": {"label": "Greeting card"},
            "data_classes": ["user_text"],
            "adapter_hints": {"read_only": False, "destructive": False},
        }
        return {"parent_request_id": parent, "intent": intent}

    # -- §2.11, §2.12 tools/register and tools/unregister ------------------------------

    def toggle_picture_tool(self, ctx: CallContext) -> None:
        """With dynamic_tools, each greeting registers the picture tool or,
        when the current catalog has it, unregisters it. The new epoch is
        committed on the reader thread as the acknowledgement arrives."""
        if "dynamic_tools" not in ctx.session.features:
            return
        with self._catalog_lock:
            newest = max(self.epochs)
            current = self.epochs[newest]
        method, params = self.catalog_mutation(register=catalog.PICTURE.name not in current)

        def commit(outcome: ChildOutcome) -> None:
            answer = outcome.result if outcome.error is None else None
            revision = answer.get("revision") if isinstance(answer, dict) else None
            accepted = answer.get("tools") if isinstance(answer, dict) else None
            if not isinstance(revision, int) or not isinstance(accepted, list):
                return  # refused: the published catalog is unchanged
            known = {**current, catalog.PICTURE.name: catalog.PICTURE}
            with self._catalog_lock:
                self.epochs[revision] = {n: known[n] for n in accepted if isinstance(n, str) and n in known}
                for old in sorted(self.epochs)[: -catalog.RETAINED_EPOCHS]:
                    del self.epochs[old]

        try:
            ctx.request(method, params, id_prefix="catalog", on_answer=commit)
        except ChildBudgetExhausted:
            return

    def catalog_mutation(self, *, register: bool) -> tuple[str, JsonObject]:
        """§2.11/§2.12: register the picture tool, or unregister it."""
        if register:
            return "tools/register", {"tools": [catalog.PICTURE.definition(with_prompt_metadata=False)]}
        return "tools/unregister", {"names": [catalog.PICTURE.name]}

    # -- §1.3 command/execute --------------------------------------------------

    def command_execute(self, params: JsonObject, ctx: CallContext) -> JsonObject:
        name = params.get("name")
        if name != "greet":
            raise RpcError(INVALID_PARAMS, f"unknown command {name!r}; this extension provides: greet")
        arguments = params.get("arguments", [])
        if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
            raise RpcError(INVALID_PARAMS, "command arguments must be an array of strings")
        return self.command_greet(arguments, ctx)

    def command_greet(self, arguments: list[str], ctx: CallContext) -> JsonObject:
        named = " ".join(arguments).strip() or self.ask_name(ctx)
        who = truncate_utf8(plain_text(named), MAX_NAME_BYTES) or "world"
        notification = {"level": "info", "title": "Greeting", "message": f"Hello, {who}!"}
        # §2.1: an unsolicited notification; allowed because initialize has
        # been answered before any command can run.
        ctx.notify("notification", notification)
        self.check_token(ctx)
        if self.policy_allows("reference.greeting_card.share", ctx):
            self.publish_png(tiny_png(250, 200, 40), ctx)
        self.toggle_picture_tool(ctx)
        self.push_contributions(who, ctx)
        self.use_wave1(who, ctx)
        return {"text": f"Hello, {who}!", "notifications": [notification], "context": []}

    def ask_name(self, ctx: CallContext) -> str:
        """§2.7: ask the person whom to greet (API 0.2+, parented on this
        command). A null answer, an error, a cancelled frontend or an
        exhausted child budget all mean "nobody said": greet the world."""
        if self.api_version == "0.1" or not isinstance(ctx.request_id, int):
            return ""
        params: JsonObject = {"parent_request_id": ctx.request_id, "prompt": "Whom should I greet?", "secret": False}
        try:
            outcome = ctx.request("input/request", params, id_prefix="input")
        except ChildBudgetExhausted:
            return ""
        answer = outcome.result if outcome.error is None else None
        value = answer.get("value") if isinstance(answer, dict) else None
        return value.strip() if isinstance(value, str) else ""

    def check_token(self, ctx: CallContext) -> bool:
        """§2.10: look the token up where the host brokers secrets. The value
        is never logged, echoed or kept; an error (-32004 unavailable, ...)
        just means no token."""
        if "secrets" not in ctx.session.features or SECRET_NAME not in self.secret_names:
            return False  # §2.10: only exact allowlisted names, only with the feature
        if not isinstance(ctx.request_id, int):
            return False
        try:
            outcome = ctx.request(
                "secret/get", {"parent_request_id": ctx.request_id, "name": SECRET_NAME}, id_prefix="secret"
            )
        except ChildBudgetExhausted:
            return False
        answer = outcome.result if outcome.error is None else None
        return isinstance(answer, dict) and isinstance(answer.get("value"), str)

    # -- §2.19-§2.24 Wave-1 host services -----------------------------------------

    def use_wave1(self, who: str, ctx: CallContext) -> None:
        """Each Wave-1 service negotiated, parented on this command: put the
        greeting in the composer, record it as a session entry and label it,
        say it as the assistant, keep our tools active, and borrow the
        terminal for a moment. A refusal (or an exhausted child budget) just
        skips what depended on it."""
        if self.api_version == "0.1" or not isinstance(ctx.request_id, int):
            return
        features = ctx.session.features
        # §2.19/§2.22: plain text, no lone surrogates, no terminal controls.
        greeting = plain_text(f"Hello, {who}!").encode("utf-8", "replace").decode("utf-8")
        if "composer" in features:
            self.wave1_request(ctx, "composer/get", {})
            self.wave1_request(ctx, "composer/insert", {"text": greeting})
        if "session_entries" in features:
            entry = self.wave1_request(ctx, "session/append_entry", {"entry_type": "greeting", "data": {"who": who}})
            entry_id = entry.get("entry_id") if isinstance(entry, dict) else None
            if isinstance(entry_id, str):
                self.wave1_request(ctx, "session/set_label", {"entry_id": entry_id, "label": "greeting"})
        if "message_injection" in features:
            self.wave1_request(ctx, "session/send_message", {"role": "assistant", "text": greeting})
        if "active_tools" in features:
            self.wave1_request(ctx, "tools/set_active", {"names": sorted(self.tools)})
        if "terminal_handoff" in features and isinstance(self.wave1_request(ctx, "terminal/acquire", {}), dict):
            self.wave1_request(ctx, "terminal/release", {})

    def wave1_request(self, ctx: CallContext, method: str, params: JsonObject) -> Any:
        """The host's result, or None when it refused or nothing could be sent."""
        try:
            outcome = ctx.request(method, {"parent_request_id": ctx.request_id, **params}, id_prefix="wave1")
        except ChildBudgetExhausted:
            return None
        return outcome.result if outcome.error is None else None

    def shortcut_registrations(self, params: JsonObject) -> list[JsonObject]:
        """§2.20: what to register inside initialize (nothing unless offered)."""
        protocol = params.get("protocol")
        offered = [] if not isinstance(protocol, dict) else protocol.get("optional_features", [])
        if self.api_version == "0.1" or not isinstance(offered, list) or "shortcuts" not in offered:
            return []
        return [dict(SHORTCUT)]

    def shortcut_triggered(self, shortcut_id: str) -> JsonObject:
        """§1.11: the handler of an admitted shortcut: a notification (§2.1)."""
        return {"level": "info", "title": "Greeting", "message": "Hello from the keyboard!"}

    # -- §2.3, §2.4, §2.5 pushed contributions -----------------------------------

    def push_contributions(self, who: str, ctx: CallContext) -> None:
        """Unsolicited context and status (§2.3, §2.4, notifications on every
        API version) and, where declared, a presentation snapshot (§2.5)."""
        ctx.notify("context/contribution", self.greeting_context(who))
        ctx.notify("status/contribution", self.greeting_status(who))
        if self.presents:
            self.publish_snapshot(who, ctx)

    def greeting_context(self, who: str) -> JsonObject:
        content = f"The person asked to be greeted as {who}."
        return {"label": catalog.EXTENSION_NAME, "content": content, "placement": "prompt_suffix"}

    def greeting_status(self, who: str) -> JsonObject:
        return {"surface": "status", "text": f"greeted {who}", "style_role": f"{STYLE_PREFIX}.status", "priority": 0}

    def publish_snapshot(self, who: str, ctx: CallContext) -> None:
        """§2.5: one complete snapshot, correlated to the running command.
        The revision is taken and written under one lock, so concurrent
        greetings cannot put a lower revision on the wire after a higher one."""
        params = self.snapshot_owner(ctx)
        with self._revision_lock:
            self._revision += 1
            params["snapshot"] = self.snapshot(self._revision, plain_text(who))
            ctx.notify("presentation/update", params)

    def snapshot_owner(self, ctx: CallContext) -> JsonObject:
        """§2.5: correlate to the running command; with a non-numeric id the
        snapshot is process-scoped instead (and holds no session data)."""
        return {"parent_request_id": ctx.request_id} if isinstance(ctx.request_id, int) else {}

    def snapshot(self, revision: int, who: str) -> JsonObject:
        greeting = f"Hello, {who}!"
        return {
            "revision": revision,
            "status": {"state": "active", "label": f"{revision + 1} greeting(s)"},
            "activities": [
                {
                    "id": "greeting",
                    "kind": "greeting",
                    "state": "succeeded",
                    "summary": truncate_utf8(greeting, 1024),
                    "provenance": "reference extension",
                    "metrics": {"tool_calls": 0, "input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0},
                    "references": [{"kind": "url", "id": ABOUT_URL, "label": "About"}],
                }
            ],
            "collection": {
                "kind": "tree",
                "title": "Greetings",
                "nodes": [
                    {"id": "greetings", "parent_id": None, "state": "active", "label": "Greetings"},
                    {
                        "id": "greeting:last",
                        "parent_id": "greetings",
                        "state": "succeeded",
                        "label": truncate_utf8(who, 1024),
                        "action_ids": ["greet-again"],
                    },
                ],
                "selected_node_id": "greeting:last",
                "detail": {"node_id": "greeting:last", "title": "Last greeting", "body": greeting},
            },
            "actions": [{"id": "greet-again", "label": "Greet again", "command": "greet", "arguments": ["again"]}],
        }

    # -- §1.4 hook/run ---------------------------------------------------------

    def hook_run(self, params: JsonObject, ctx: CallContext) -> JsonObject:
        hook = params.get("hook")
        handler = self.hook_handlers().get(hook) if isinstance(hook, str) else None
        if handler is None:
            declared = ", ".join(self.hook_handlers())
            raise RpcError(INVALID_PARAMS, f"unknown or undeclared hook {hook!r}; declared: {declared}")
        payload = params.get("payload", {})
        if not isinstance(payload, dict):
            raise RpcError(INVALID_PARAMS, "hook payload must be an object")
        return handler(payload, ctx)

    def hook_before_prompt(self, payload: JsonObject, ctx: CallContext) -> JsonObject:
        return continue_hook()

    def hook_after_response(self, payload: JsonObject, ctx: CallContext) -> JsonObject:
        return continue_hook()

    def hook_before_tool_call(self, payload: JsonObject, ctx: CallContext) -> JsonObject:
        return continue_hook()

    def hook_after_tool_call(self, payload: JsonObject, ctx: CallContext) -> JsonObject:
        return continue_hook()

    def hook_model_turn(self, payload: JsonObject, ctx: CallContext) -> JsonObject:
        """§1.4b: an observation only: the ordinary envelope with an explicit
        session_operation continue, no context (it would be invalid)."""
        return {"disposition": {"action": "continue"}, "notifications": [], "session_operation": {"action": "continue"}}

    # -- §1.5 context/collect, §1.6 status/collect, §1.7 tool/render ------------

    def context_collect(self, params: JsonObject, ctx: CallContext) -> list[JsonObject]:
        content = "The octet reference extension is active; it offers echo, slow and confirm tools."
        return [{"label": catalog.EXTENSION_NAME, "content": content, "placement": "system_suffix"}]

    def status_collect(self, params: JsonObject, ctx: CallContext) -> JsonObject | None:
        surface = params.get("surface")
        if surface not in catalog.STATUS_SURFACES:
            raise RpcError(INVALID_PARAMS, f"surface must be one of {list(catalog.STATUS_SURFACES)}, got {surface!r}")
        if surface not in catalog.DECLARED_SURFACES:
            return None  # §1.6: null contributes nothing to undeclared surfaces
        return {"surface": surface, "text": "reference ready", "style_role": f"{STYLE_PREFIX}.status", "priority": 0}

    def tool_render(self, params: JsonObject, ctx: CallContext) -> JsonObject:
        name = params.get("name")
        if name not in catalog.TOOL_RENDERERS:
            raise RpcError(INVALID_PARAMS, f"no renderer for tool {name!r}; renderers: {list(catalog.TOOL_RENDERERS)}")
        output = params.get("output", "")
        if not isinstance(output, str):
            raise RpcError(INVALID_PARAMS, "output must be a string")
        role = f"{STYLE_PREFIX}.{'error' if params.get('is_error') is True else 'echo'}"
        first_line = output.split("\n", 1)[0][:80]
        return {"segments": [{"text": f"echo · {first_line}", "style_role": role}]}

    # -- §1.6b menu/collect ------------------------------------------------------

    def menu_collect(self, params: JsonObject, ctx: CallContext) -> JsonObject:
        """A fixed menu, answered at once and without side effects: every
        action runs the declared greet command with literal arguments."""
        return {
            "title": "Reference extension",
            "status": {"state": "active", "label": "Ready"},
            "detail": "Greets whoever you name.",
            "items": [
                {
                    "id": "greet",
                    "label": "Say hello",
                    "command": "greet",
                    "arguments": ["menu"],
                    "recommended": True,
                    "description": "Greet from the menu",
                },
                {
                    "id": "more",
                    "label": "More greetings",
                    "items": [{"id": "world", "label": "Greet the world", "command": "greet", "arguments": ["world"]}],
                },
            ],
        }

    # -- §1.8 shutdown ---------------------------------------------------------

    def shutdown(self, params: JsonObject) -> JsonObject:
        return {}
