"""Validators for the contributions an extension pushes (§2.3, §2.4, §2.5).

Sans-IO. §2.3 and §2.4 are stateless shape checks of one notification. §2.5
snapshots are judged one at a time against a :class:`SnapshotContext` that the
session fills in (negotiation, declared commands, which host requests are
active, the last revision of this generation); the session keeps the memory.

Decisions where the text leaves room (never stricter than the document):

* §2.3/§2.4: the three messages are notifications; one sent with an ``id`` is
  reported under the section's shape rule. Members the text does not name are
  ignored; ``placement`` may be omitted (§1.5 names a default).
* §2.4: the member rules are those of the §1.6 status contribution (the
  document gives the two one shape): ``surface`` and ``text`` required.
* §2.5 revision: "monotonic" is read as never decreasing within a generation;
  repeating a revision is not flagged (the host may drop it as stale).
* §2.5 compact labels/ids: the 1,024-byte bound is applied to members named
  ``id``, ``label``, ``node_id``, ``parent_id``, ``selected_node_id`` and
  ``action_ids`` items; titles, summaries and ``secondary`` are not bounded by
  the text and are left alone.
* §2.5 encoded size: measured as the compact UTF-8 JSON of ``snapshot`` (the
  smallest encoding), so no correct extension is failed for its whitespace.
* §2.5 parent: ``parent_request_id`` must name a host request still awaiting
  its answer (any method: the text says "the active host request").
  A ``resource_owner`` is judged for its shape only: whether a triple was
  issued is the host's business (it drops stale ones).
* §2.5 plain data: only control characters (ESC and other C0/C1 codes except
  tab and newline) in labels, titles, summaries and detail bodies are judged,
  as a ``should``: the host may render them as text, and HTML cannot be told
  apart from ordinary text that contains ``<``.
* §2.5 rate bound (32 snapshots a second): the host coalesces the excess, so
  sending more is not an extension fault; it is catalogued on the host side.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from . import limits
from .describe import Path, kind
from .ext_notifications import contribution_problems
from .ext_types import Negotiated
from .members import (
    bool_member,
    enum_member,
    excerpt,
    expected_object,
    integer_member,
    is_integer,
    name,
    nullable_string_member,
    string_member,
)
from .violations import Finding, Violation, rule

ROOT = "params"

# -- §2.3 context/contribution, §2.4 status/contribution --------------------------


@rule("EXT-2.3-context-contribution")
def context_contribution(params: object, *, as_request: bool) -> Iterator[Violation]:
    if as_request:
        yield Violation(
            "EXT-2.3-context-contribution", "context/contribution was sent with an id; it is a notification"
        )
    yield from contribution_problems(params, "EXT-2.3-context-contribution", ROOT)


@rule("EXT-2.4-status-contribution")
def status_contribution(params: object, *, as_request: bool) -> Iterator[Violation]:
    requirement = "EXT-2.4-status-contribution"
    if as_request:
        yield Violation(requirement, "status/contribution was sent with an id; it is a notification")
    if not isinstance(params, dict):
        yield expected_object(params, requirement, ROOT)
        return
    yield from enum_member(params, "surface", limits.STATUS_SURFACES, requirement, ROOT, required=True)
    yield from string_member(params, "text", requirement, ROOT, required=True)
    yield from nullable_string_member(params, "style_role", requirement, ROOT)
    yield from integer_member(params, "priority", requirement, ROOT, required=False)


# -- §2.5 presentation/update ---------------------------------------------------------


SNAPSHOT: Path = ("snapshot",)
COMPACT_KEYS = frozenset({"id", "label", "node_id", "parent_id", "selected_node_id"})
TEXT_KEYS = frozenset({"label", "title", "summary", "secondary", "body", "detail"})
# C0 controls except tab and newline, DEL, and C1 controls (ESC starts ANSI).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class SnapshotContext:
    """What the session knows when a snapshot arrives."""

    negotiated: Negotiated
    presentation_declared: bool
    commands: frozenset[str]
    active_requests: frozenset[int] = frozenset()
    last_revision: int | None = None


@rule("EXT-2.5-presentation-declared")
def presentation_declared(*, as_request: bool, context: SnapshotContext) -> Iterator[Violation]:
    if context.negotiated.is_legacy:
        yield Violation(
            "EXT-2.5-presentation-declared", "presentation/update sent on API 0.1, which has no semantic presentation"
        )
    elif not context.presentation_declared:
        yield Violation(
            "EXT-2.5-presentation-declared",
            "presentation/update sent, but the manifest does not set contributes.presentation",
        )
    if as_request:
        yield Violation(
            "EXT-2.5-presentation-declared", "presentation/update was sent with an id; it is a notification"
        )


def _snapshot_of(params: object) -> dict[str, Any] | None:
    if isinstance(params, dict) and isinstance(params.get("snapshot"), dict):
        return params["snapshot"]
    return None


# shape ------------------------------------------------------------------------


@rule("EXT-2.5-snapshot-shape")
def snapshot_shape(params: object) -> Iterator[Violation]:
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.5-snapshot-shape", ROOT)
        return
    snapshot = params.get("snapshot")
    if not isinstance(snapshot, dict):
        shown = "missing" if "snapshot" not in params else kind(snapshot)
        yield Violation("EXT-2.5-snapshot-shape", f"params.snapshot is {shown}; expected an object", SNAPSHOT)
        return
    yield from integer_member(snapshot, "revision", "EXT-2.5-snapshot-shape", ROOT, SNAPSHOT, required=True, minimum=0)
    if snapshot.get("status") is not None:
        yield from _state_object(snapshot["status"], (*SNAPSHOT, "status"))
    for index, activity in _items(snapshot, "activities", SNAPSHOT):
        yield from _activity(activity, (*SNAPSHOT, "activities", index))
    if snapshot.get("collection") is not None:
        yield from _collection(snapshot["collection"], (*SNAPSHOT, "collection"))
    for index, action in _items(snapshot, "actions", SNAPSHOT):
        yield from _action(action, (*SNAPSHOT, "actions", index))


def _items(obj: Mapping[str, Any], key: str, path: Path) -> Iterator[tuple[int, Any]]:
    """Index and item of an optional array member; a non-array is skipped here
    (``_array_problem`` reports it)."""
    value = obj.get(key)
    if isinstance(value, list):
        yield from enumerate(value)


def _array_problem(obj: Mapping[str, Any], key: str, path: Path) -> Iterator[Violation]:
    value = obj.get(key)
    if value is not None and not isinstance(value, list):
        where = (*path, key)
        yield Violation("EXT-2.5-snapshot-shape", f"{name(ROOT, where)} is {kind(value)}; expected an array", where)


def _state_object(value: object, path: Path) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, "EXT-2.5-snapshot-shape", ROOT, path)
        return
    yield from enum_member(
        value, "state", limits.PRESENTATION_STATES, "EXT-2.5-snapshot-shape", ROOT, path, required=True
    )
    yield from string_member(value, "label", "EXT-2.5-snapshot-shape", ROOT, path, required=False)


def _activity(value: object, path: Path) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, "EXT-2.5-snapshot-shape", ROOT, path)
        return
    yield from string_member(value, "id", "EXT-2.5-snapshot-shape", ROOT, path, required=True)
    yield from enum_member(
        value, "state", limits.PRESENTATION_STATES, "EXT-2.5-snapshot-shape", ROOT, path, required=False
    )
    for key in ("kind", "summary", "provenance"):
        yield from string_member(value, key, "EXT-2.5-snapshot-shape", ROOT, path, required=False)
    yield from integer_member(value, "started_at_ms", "EXT-2.5-snapshot-shape", ROOT, path, required=False, minimum=0)
    if value.get("metrics") is not None:
        yield from _metrics(value["metrics"], (*path, "metrics"))
    yield from _references(value, path)


def _metrics(value: object, path: Path) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, "EXT-2.5-snapshot-shape", ROOT, path)
        return
    for key in limits.METRIC_COUNTERS:
        counter = value.get(key)
        where = (*path, key)
        if counter is None:
            continue
        number = _as_int(counter)
        if number is None or not 0 <= number <= limits.LARGEST_SAFE_JSON_INTEGER:
            shown = excerpt(counter) if is_integer(counter) else kind(counter)
            yield Violation(
                "EXT-2.5-snapshot-shape",
                f"{name(ROOT, where)} is {shown}; expected an integer in 0..{limits.LARGEST_SAFE_JSON_INTEGER}",
                where,
            )
    output, reasoning = _as_int(value.get("output_tokens")), _as_int(value.get("reasoning_tokens"))
    if output is not None and reasoning is not None and reasoning > output:
        yield Violation(
            "EXT-2.5-snapshot-shape",
            f"{name(ROOT, path)}.reasoning_tokens is {reasoning}, more than output_tokens {output}; "
            "reasoning is a subset of output",
            (*path, "reasoning_tokens"),
        )


def _references(item: Mapping[str, Any], path: Path) -> Iterator[Violation]:
    yield from _array_problem(item, "references", path)
    for index, ref in _items(item, "references", path):
        where = (*path, "references", index)
        if not isinstance(ref, dict):
            yield expected_object(ref, "EXT-2.5-snapshot-shape", ROOT, where)
            continue
        yield from enum_member(
            ref, "kind", limits.REFERENCE_KINDS, "EXT-2.5-snapshot-shape", ROOT, where, required=True
        )
        yield from string_member(ref, "id", "EXT-2.5-snapshot-shape", ROOT, where, required=True)
        yield from string_member(ref, "label", "EXT-2.5-snapshot-shape", ROOT, where, required=False)


def _collection(value: object, path: Path) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, "EXT-2.5-snapshot-shape", ROOT, path)
        return
    yield from enum_member(value, "kind", limits.COLLECTION_KINDS, "EXT-2.5-snapshot-shape", ROOT, path, required=True)
    yield from string_member(value, "title", "EXT-2.5-snapshot-shape", ROOT, path, required=False)
    yield from nullable_string_member(value, "selected_node_id", "EXT-2.5-snapshot-shape", ROOT, path)
    yield from _array_problem(value, "nodes", path)
    for index, node in _items(value, "nodes", path):
        yield from _node(node, (*path, "nodes", index))
    detail = value.get("detail")
    if detail is not None:
        where = (*path, "detail")
        if not isinstance(detail, dict):
            yield expected_object(detail, "EXT-2.5-snapshot-shape", ROOT, where)
        else:
            yield from string_member(detail, "node_id", "EXT-2.5-snapshot-shape", ROOT, where, required=True)
            yield from string_member(detail, "title", "EXT-2.5-snapshot-shape", ROOT, where, required=False)
            yield from string_member(detail, "body", "EXT-2.5-snapshot-shape", ROOT, where, required=False)
            yield from _references(detail, where)


def _node(value: object, path: Path) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, "EXT-2.5-snapshot-shape", ROOT, path)
        return
    yield from string_member(value, "id", "EXT-2.5-snapshot-shape", ROOT, path, required=True)
    yield from nullable_string_member(value, "parent_id", "EXT-2.5-snapshot-shape", ROOT, path)
    yield from enum_member(
        value, "state", limits.PRESENTATION_STATES, "EXT-2.5-snapshot-shape", ROOT, path, required=False
    )
    yield from string_member(value, "label", "EXT-2.5-snapshot-shape", ROOT, path, required=False)
    yield from string_member(value, "secondary", "EXT-2.5-snapshot-shape", ROOT, path, required=False)
    yield from _array_problem(value, "action_ids", path)
    for index, action_id in _items(value, "action_ids", path):
        if not isinstance(action_id, str):
            where = (*path, "action_ids", index)
            yield Violation(
                "EXT-2.5-snapshot-shape", f"{name(ROOT, where)} is {kind(action_id)}; expected a string", where
            )
    yield from _references(value, path)


def _action(value: object, path: Path) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, "EXT-2.5-snapshot-shape", ROOT, path)
        return
    yield from string_member(value, "id", "EXT-2.5-snapshot-shape", ROOT, path, required=True)
    yield from string_member(value, "label", "EXT-2.5-snapshot-shape", ROOT, path, required=True)
    yield from string_member(value, "command", "EXT-2.5-snapshot-shape", ROOT, path, required=True)
    yield from bool_member(value, "destructive", "EXT-2.5-snapshot-shape", ROOT, path)
    yield from _array_problem(value, "arguments", path)
    for index, argument in _items(value, "arguments", path):
        if not isinstance(argument, str):
            where = (*path, "arguments", index)
            yield Violation(
                "EXT-2.5-snapshot-shape", f"{name(ROOT, where)} is {kind(argument)}; expected a string", where
            )


# bounds -----------------------------------------------------------------------


@rule("EXT-2.5-snapshot-bounds")
def snapshot_bounds(params: object) -> Iterator[Violation]:
    snapshot = _snapshot_of(params)
    if snapshot is None:
        return
    encoded = len(json.dumps(snapshot, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    if encoded > limits.SNAPSHOT_MAX_BYTES:
        yield Violation(
            "EXT-2.5-snapshot-bounds",
            f"snapshot encodes to {encoded:,} bytes; limit {limits.SNAPSHOT_MAX_BYTES:,}",
            SNAPSHOT,
        )
    found = snapshot.get("collection")
    collection: dict[str, Any] = found if isinstance(found, dict) else {}
    counted = (
        (snapshot, "activities", limits.SNAPSHOT_MAX_ACTIVITIES, SNAPSHOT),
        (collection, "nodes", limits.SNAPSHOT_MAX_NODES, (*SNAPSHOT, "collection")),
        (snapshot, "actions", limits.SNAPSHOT_MAX_ACTIONS, SNAPSHOT),
    )
    for obj, key, limit, path in counted:
        items = obj.get(key)
        if isinstance(items, list) and len(items) > limit:
            where = (*path, key)
            yield Violation(
                "EXT-2.5-snapshot-bounds", f"{name(ROOT, where)} has {len(items)} items; limit {limit}", where
            )
    yield from _walk_bounds(snapshot, SNAPSHOT)


def _walk_bounds(value: object, path: Path) -> Iterator[Violation]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk_bounds(item, (*path, index))
        return
    if not isinstance(value, dict):
        return
    refs = value.get("references")
    if isinstance(refs, list) and len(refs) > limits.SNAPSHOT_MAX_REFERENCES:
        where = (*path, "references")
        yield Violation(
            "EXT-2.5-snapshot-bounds",
            f"{name(ROOT, where)} has {len(refs)} references; limit {limits.SNAPSHOT_MAX_REFERENCES}",
        )
    for key, member in value.items():
        where = (*path, key)
        yield from _member_bound(key, member, where)
        yield from _walk_bounds(member, where)


def _member_bound(key: str, member: object, where: Path) -> Iterator[Violation]:
    if key in COMPACT_KEYS and isinstance(member, str):
        yield from _byte_bound(member, limits.SNAPSHOT_MAX_LABEL_BYTES, where)
    elif key == "action_ids" and isinstance(member, list):
        for index, item in enumerate(member):
            if isinstance(item, str):
                yield from _byte_bound(item, limits.SNAPSHOT_MAX_LABEL_BYTES, (*where, index))
    elif key == "body" and isinstance(member, str):
        yield from _byte_bound(member, limits.SNAPSHOT_MAX_BODY_BYTES, where)
    elif (key == "revision" or key.endswith("_at_ms")) and (_as_int(member) or 0) > limits.LARGEST_SAFE_JSON_INTEGER:
        yield Violation(
            "EXT-2.5-snapshot-bounds",
            f"{name(ROOT, where)} is {member}; limit {limits.LARGEST_SAFE_JSON_INTEGER}",
            where,
        )


def _byte_bound(text: str, limit: int, where: Path) -> Iterator[Violation]:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        yield Violation(
            "EXT-2.5-snapshot-bounds", f"{name(ROOT, where)} is {size:,} UTF-8 bytes; limit {limit:,}", where
        )


# collection integrity -----------------------------------------------------------


@rule("EXT-2.5-collection-integrity")
def collection_integrity(params: object) -> Iterator[Violation]:
    snapshot = _snapshot_of(params)
    collection = snapshot.get("collection") if snapshot is not None else None
    if not isinstance(collection, dict) or not isinstance(collection.get("nodes"), list):
        return
    path: Path = (*SNAPSHOT, "collection")
    nodes = [n for n in collection["nodes"] if isinstance(n, dict) and isinstance(n.get("id"), str)]
    parents = {n["id"]: n.get("parent_id") for n in nodes}
    if collection.get("kind") == "list":
        for index, node in enumerate(nodes):
            if node.get("parent_id") is not None:
                where = (*path, "nodes", index, "parent_id")
                yield Violation(
                    "EXT-2.5-collection-integrity",
                    f"{name(ROOT, where)} is set, but a list collection has no parents",
                    where,
                )
    elif collection.get("kind") == "tree":
        yield from _tree_problems(parents, path)
    yield from _detail_matches(collection, path)


def _tree_problems(parents: Mapping[str, Any], path: Path) -> Iterator[Violation]:
    for node_id, parent in parents.items():
        if parent is not None and parent not in parents:
            yield Violation(
                "EXT-2.5-collection-integrity",
                f"tree node {excerpt(node_id)} names missing parent {excerpt(parent)}",
                path,
            )
            continue
        depth, seen, current = 1, {node_id}, parent
        while isinstance(current, str) and current in parents:
            if current in seen:
                yield Violation(
                    "EXT-2.5-collection-integrity", f"tree node {excerpt(node_id)} is on a parent cycle", path
                )
                break
            seen.add(current)
            depth += 1
            current = parents[current]
        if depth > limits.SNAPSHOT_MAX_TREE_DEPTH:
            yield Violation(
                "EXT-2.5-collection-integrity",
                f"tree node {excerpt(node_id)} is at depth {depth}; limit {limits.SNAPSHOT_MAX_TREE_DEPTH}",
                path,
            )


def _detail_matches(collection: Mapping[str, Any], path: Path) -> Iterator[Violation]:
    detail = collection.get("detail")
    if not isinstance(detail, dict) or "node_id" not in detail:
        return
    selected = collection.get("selected_node_id")
    if detail["node_id"] != selected:
        where = (*path, "detail", "node_id")
        yield Violation(
            "EXT-2.5-collection-integrity",
            f"{name(ROOT, where)} is {excerpt(detail['node_id'])}; it must match selected_node_id "
            f"{excerpt(selected) if selected is not None else 'null'}",
            where,
        )


# actions, URLs, owner, plain labels -----------------------------------------------------


@rule("EXT-2.5-action-commands")
def action_commands(params: object, *, context: SnapshotContext) -> Iterator[Violation]:
    snapshot = _snapshot_of(params)
    for index, action in _items(snapshot or {}, "actions", SNAPSHOT):
        command = action.get("command") if isinstance(action, dict) else None
        if isinstance(command, str) and command not in context.commands:
            where = (*SNAPSHOT, "actions", index, "command")
            declared = ", ".join(sorted(context.commands)) or "none"
            yield Violation(
                "EXT-2.5-action-commands",
                f"{name(ROOT, where)} is {excerpt(command)}; declared commands: {declared}",
                where,
            )


@rule("EXT-2.5-url-sanitized")
def url_references(params: object) -> Iterator[Violation]:
    snapshot = _snapshot_of(params)
    if snapshot is None:
        return
    for where, ref in _all_references(snapshot, SNAPSHOT):
        if ref.get("kind") == "url" and isinstance(ref.get("id"), str):
            problem = url_problem(ref["id"])
            if problem is not None:
                yield Violation(
                    "EXT-2.5-url-sanitized",
                    f"{name(ROOT, (*where, 'id'))} {excerpt(ref['id'])}: {problem}",
                    (*where, "id"),
                )


def _all_references(value: object, path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _all_references(item, (*path, index))
    elif isinstance(value, dict):
        for key, member in value.items():
            if key == "references" and isinstance(member, list):
                for index, ref in enumerate(member):
                    if isinstance(ref, dict):
                        yield (*path, key, index), ref
            else:
                yield from _all_references(member, (*path, key))


def url_problem(url: str) -> str | None:
    """Why ``url`` is not a sanitized absolute HTTP(S) URL (§2.5), or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        credentials = parts.username is not None or parts.password is not None
    except ValueError as error:
        return f"does not parse ({error})"
    if parts.scheme.lower() not in ("http", "https"):
        return "is not an absolute http(s) URL"
    if not host:
        return "has no host"
    if credentials:
        return "carries credentials"
    host = host.rstrip(".").lower()
    if host == "localhost" or host.endswith((".localhost", ".local")):
        return f"targets the local name {host}"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    private = address.is_private or address.is_loopback or address.is_link_local
    if private or address.is_unspecified or address.is_multicast:
        return f"targets the non-public address {address}"
    return None


@rule("EXT-2.5-owner-fields")
def owner_fields(params: object, *, context: SnapshotContext) -> Iterator[Violation]:
    if not isinstance(params, dict):
        return
    parent, owner = params.get("parent_request_id"), params.get("resource_owner")
    if parent is not None and owner is not None:
        yield Violation(
            "EXT-2.5-owner-fields", "params carries both parent_request_id and resource_owner; they are exclusive"
        )
    if parent is not None:
        where: Path = ("parent_request_id",)
        if not is_integer(parent):
            yield Violation(
                "EXT-2.5-owner-fields", f"params.parent_request_id is {kind(parent)}; expected an integer", where
            )
        elif parent not in context.active_requests:
            yield Violation(
                "EXT-2.5-owner-fields",
                f"params.parent_request_id {parent} names no host request awaiting its answer",
                where,
            )
    if owner is not None:
        yield from _owner_shape(owner)


def _owner_shape(owner: object) -> Iterator[Violation]:
    path: Path = ("resource_owner",)
    if not isinstance(owner, dict):
        yield expected_object(owner, "EXT-2.5-owner-fields", ROOT, path)
        return
    yield from string_member(owner, "session_id", "EXT-2.5-owner-fields", ROOT, path, required=True)
    yield from string_member(owner, "extension_instance_id", "EXT-2.5-owner-fields", ROOT, path, required=True)
    yield from integer_member(owner, "process_generation", "EXT-2.5-owner-fields", ROOT, path, required=True, minimum=0)


@rule("EXT-2.5-plain-labels")
def plain_labels(params: object) -> Iterator[Violation]:
    snapshot = _snapshot_of(params)
    if snapshot is not None:
        yield from _plain_walk(snapshot, SNAPSHOT)


def _plain_walk(value: object, path: Path) -> Iterator[Violation]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _plain_walk(item, (*path, index))
    elif isinstance(value, dict):
        for key, member in value.items():
            where = (*path, key)
            if key in TEXT_KEYS and isinstance(member, str) and (found := CONTROL.search(member)):
                yield Violation(
                    "EXT-2.5-plain-labels",
                    f"{name(ROOT, where)} contains control character U+{ord(found.group()):04X}",
                    where,
                )
            else:
                yield from _plain_walk(member, where)


@rule("EXT-2.5-revision-monotonic")
def revision_monotonic(params: object, *, context: SnapshotContext) -> Iterator[Violation]:
    revision = revision_of(params)
    if revision is not None and context.last_revision is not None and revision < context.last_revision:
        yield Violation(
            "EXT-2.5-revision-monotonic",
            f"snapshot revision {revision} is below the previous {context.last_revision} of this generation",
            (*SNAPSHOT, "revision"),
        )


def check_presentation(params: object, *, as_request: bool, context: SnapshotContext) -> Iterator[Finding]:
    """Judge one ``presentation/update`` (§2.5). Undeclared or API 0.1
    presentation is reported alone: the snapshot rules apply to a message
    that may exist."""
    findings = list(presentation_declared(as_request=as_request, context=context))
    yield from findings
    if context.negotiated.is_legacy or not context.presentation_declared:
        return
    yield from snapshot_shape(params)
    yield from snapshot_bounds(params)
    yield from collection_integrity(params)
    yield from action_commands(params, context=context)
    yield from url_references(params)
    yield from owner_fields(params, context=context)
    yield from plain_labels(params)
    yield from revision_monotonic(params, context=context)


def revision_of(params: object) -> int | None:
    snapshot = _snapshot_of(params)
    return _as_int(snapshot.get("revision")) if snapshot is not None else None


def _as_int(value: object) -> int | None:
    """A JSON integer (``3`` or ``3.0``) as an int, else None."""
    return int(value) if is_integer(value) and isinstance(value, int | float) else None
