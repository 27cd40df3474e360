"""Validators for notifications the extension sends (§2.1, §2.6).

Sans-IO and stateless: each check looks at one ``params`` value. Whether a
``$/progress`` names a still-active request, and whether its sequence rises,
needs memory of the session and is judged in :mod:`.ext_session`. The frame
level (no ``id``, ``jsonrpc`` member) is judged by :mod:`.jsonrpc`.

The shapes of a notification and of a context contribution are also used
inside command and hook results (§1.3, §1.4, §1.5), so their member checks live
here as plain helpers parameterised by the requirement they report under.

Decisions where the text leaves room (never stricter than the document):

* §2.1: ``level`` may be omitted (the document names a default) and ``title``
  is optional; ``message`` is required. Optional members set to ``null`` count
  as absent (see :mod:`.members`).
* §2.6: ``request_id`` is an integer or a string (the ids the host uses),
  ``sequence`` a non-negative integer. ``current``/``total`` are any numbers:
  the text bounds neither their sign nor their order.
* §2.6: ``output`` events must name both ``stream`` and ``encoding`` (neither
  is marked optional nor given a default); base64 ``data`` must decode under
  the standard RFC 4648 alphabet with padding -- the document names no other
  variant.
* §2.25 admits one more event, ``partial_result``, during an active tool call
  on API 0.4 once request_progress and content_parts are negotiated. It is
  accepted on API 0.4 only (its section is API 0.4), with just its envelope
  checked here (``result`` an object carrying ``content``); its inner limits are
  the §1.2 content limits, judged by the result validators' ids, not here.
* When request_progress is not negotiated, only the feature rule is reported:
  the shape requirement is conditional on that feature, so it is not
  evaluated (no Exercise) for a message that should not exist at all.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator

from . import limits
from .describe import Path, kind
from .ext_types import Negotiated
from .members import (
    enum_member,
    excerpt,
    expected_object,
    integer_member,
    is_integer,
    name,
    number_member,
    string_member,
)
from .violations import Finding, Violation, rule

# -- shapes shared with the result validators ---------------------------------


def notification_problems(value: object, requirement: str, root: str, path: Path = ()) -> Iterator[Violation]:
    """An ExtensionNotification: {level?, title?, message} (§2.1, §1.3)."""
    if not isinstance(value, dict):
        yield expected_object(value, requirement, root, path)
        return
    yield from enum_member(value, "level", limits.NOTIFICATION_LEVELS, requirement, root, path, required=False)
    yield from string_member(value, "title", requirement, root, path, required=False)
    yield from string_member(value, "message", requirement, root, path, required=True)


def contribution_problems(value: object, requirement: str, root: str, path: Path = ()) -> Iterator[Violation]:
    """A ContextContribution: {label, content, placement?} (§1.5, §2.3)."""
    if not isinstance(value, dict):
        yield expected_object(value, requirement, root, path)
        return
    yield from string_member(value, "label", requirement, root, path, required=True)
    yield from string_member(value, "content", requirement, root, path, required=True)
    # placement defaults to prompt_suffix (§1.5), so it may be omitted.
    yield from enum_member(value, "placement", limits.CONTEXT_PLACEMENTS, requirement, root, path, required=False)


ItemCheck = Callable[[object, str, str, Path], Iterator[Violation]]


def array_items_problems(
    container: dict[str, object], key: str, requirement: str, root: str, check_item: ItemCheck
) -> Iterator[Violation]:
    """An optional array member (``null`` = absent) whose items pass ``check_item``."""
    value = container.get(key)
    if value is None:
        return
    if not isinstance(value, list):
        yield Violation(requirement, f"{name(root, (key,))} is {kind(value)}; expected an array", (key,))
        return
    for index, item in enumerate(value):
        yield from check_item(item, requirement, root, (key, index))


# -- §2.1 notification ----------------------------------------------------------


@rule("EXT-2.1-notification-shape")
def notification_shape(params: object) -> Iterator[Violation]:
    yield from notification_problems(params, "EXT-2.1-notification-shape", "params")


def check_notification(params: object) -> Iterator[Finding]:
    """Judge the params of a ``notification`` (§2.1)."""
    yield from notification_shape(params)


# -- §2.6 $/progress ------------------------------------------------------------


@rule("EXT-2.6-progress-needs-feature")
def progress_needs_feature(*, negotiated: Negotiated) -> Iterator[Violation]:
    if negotiated.has("request_progress"):
        return
    if negotiated.is_legacy:
        message = "$/progress sent on API 0.1, which has no progress (request_progress cannot be negotiated)"
    else:
        message = "$/progress sent but request_progress was not negotiated"
    yield Violation("EXT-2.6-progress-needs-feature", message)


def _status_event(event: dict[str, object], path: Path) -> Iterator[Violation]:
    yield from string_member(event, "message", "EXT-2.6-event-shape", "params", path, required=True)
    yield from number_member(event, "current", "EXT-2.6-event-shape", "params", path)
    yield from number_member(event, "total", "EXT-2.6-event-shape", "params", path)
    yield from string_member(event, "unit", "EXT-2.6-event-shape", "params", path, required=False)


def _output_event(event: dict[str, object], path: Path) -> Iterator[Violation]:
    yield from enum_member(
        event, "stream", limits.PROGRESS_OUTPUT_STREAMS, "EXT-2.6-event-shape", "params", path, required=True
    )
    yield from enum_member(
        event, "encoding", limits.PROGRESS_OUTPUT_ENCODINGS, "EXT-2.6-event-shape", "params", path, required=True
    )
    problems = list(string_member(event, "data", "EXT-2.6-event-shape", "params", path, required=True))
    yield from problems
    data = event.get("data")
    if problems or event.get("encoding") != "base64" or not isinstance(data, str):
        return
    try:
        base64.b64decode(data.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error) as error:
        where = (*path, "data")
        yield Violation(
            "EXT-2.6-event-shape",
            f"{name('params', where)} is not valid base64 ({error}); data starts {excerpt(data)}",
            where,
        )


def _decoration_event(event: dict[str, object], path: Path, negotiated: Negotiated) -> Iterator[Violation]:
    if not negotiated.has("progress_decoration"):
        yield Violation(
            "EXT-2.6-event-shape",
            f"{name('params', path)} is a decoration event but progress_decoration was not negotiated",
            (*path, "type"),
        )
    yield from string_member(event, "label", "EXT-2.6-event-shape", "params", path, required=True)
    yield from string_member(event, "detail", "EXT-2.6-event-shape", "params", path, required=False)


def _partial_result_event(event: dict[str, object], path: Path, negotiated: Negotiated) -> Iterator[Violation]:
    if negotiated.api_version != "0.4":
        yield Violation(
            "EXT-2.6-event-shape",
            f"{name('params', (*path, 'type'))} is {limits.PROGRESS_PARTIAL_RESULT!r}, an API 0.4 event "
            f"(§2.25), on API {negotiated.api_version}; expected one of {', '.join(limits.PROGRESS_EVENT_TYPES)}",
            (*path, "type"),
        )
        return
    result = event.get("result")
    where = (*path, "result")
    if not isinstance(result, dict):
        shown = "missing" if "result" not in event else kind(result)
        yield Violation("EXT-2.6-event-shape", f"{name('params', where)} is {shown}; expected an object", where)
    elif "content" not in result:
        yield Violation("EXT-2.6-event-shape", f"{name('params', where)} has no content", where)


@rule("EXT-2.6-event-shape")
def progress_event_shape(params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.6-event-shape", "params")
        return
    if "request_id" not in params:
        yield Violation("EXT-2.6-event-shape", "params has no request_id; expected an integer or a string")
    else:
        request_id = params["request_id"]
        if not (isinstance(request_id, str) or is_integer(request_id)):
            yield Violation(
                "EXT-2.6-event-shape",
                f"params.request_id is {kind(request_id)}; expected an integer or a string",
                ("request_id",),
            )
    yield from integer_member(params, "sequence", "EXT-2.6-event-shape", "params", required=True, minimum=0)

    if "event" not in params:
        yield Violation("EXT-2.6-event-shape", "params has no event; expected an object")
        return
    event = params["event"]
    path: Path = ("event",)
    if not isinstance(event, dict):
        yield expected_object(event, "EXT-2.6-event-shape", "params", path)
        return
    event_type = event.get("type")
    if event_type == "status":
        yield from _status_event(event, path)
    elif event_type == "output":
        yield from _output_event(event, path)
    elif event_type == "decoration":
        yield from _decoration_event(event, path, negotiated)
    elif event_type == limits.PROGRESS_PARTIAL_RESULT:
        yield from _partial_result_event(event, path, negotiated)
    else:
        if "type" not in event:
            shown = "missing"
        else:
            shown = excerpt(event_type) if isinstance(event_type, str) else kind(event_type)
        yield Violation(
            "EXT-2.6-event-shape",
            f"params.event.type is {shown}; expected one of {', '.join(limits.PROGRESS_EVENT_TYPES)}",
            (*path, "type"),
        )


def check_progress_event(params: object, *, negotiated: Negotiated) -> Iterator[Finding]:
    """Judge the params of one ``$/progress`` on their own (§2.6).

    Active-request and sequence tracking belong to the session state.
    """
    yield from progress_needs_feature(negotiated=negotiated)
    if negotiated.has("request_progress"):
        yield from progress_event_shape(params, negotiated=negotiated)
