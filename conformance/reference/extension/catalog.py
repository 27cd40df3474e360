"""What this extension contributes: tools and commands, per API version.

§1.1: without dynamic_tools the tool and command names returned by initialize
must equal the manifest's contributes lists exactly, so the manifests under
``manifests/`` are generated from the same facts (a test checks they agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .jsonrpc import JsonObject

API_VERSIONS = ("0.1", "0.2", "0.4")
EXTENSION_NAME = "octet-reference-extension"
EXTENSION_VERSION = "0.1.0"

DEFAULT_SLOW_STEPS = 5  # the schema caps a call at 10 x 100 ms: certification runs stay short
DEFAULT_SLOW_DELAY_MS = 100


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: JsonObject
    output_schema: JsonObject | None = None
    # §1.1: a 0.1 tool cannot declare output_schema, so tools that need one
    # exist only from API 0.2 on.
    since_api: str = "0.1"
    prompt_metadata: JsonObject = field(default_factory=dict)

    def available_in(self, api_version: str) -> bool:
        return API_VERSIONS.index(api_version) >= API_VERSIONS.index(self.since_api)

    def definition(self, *, with_prompt_metadata: bool) -> JsonObject:
        out: JsonObject = {"name": self.name, "description": self.description, "parameters": self.parameters}
        if self.output_schema is not None:
            out["output_schema"] = self.output_schema
        if with_prompt_metadata:
            out.update(self.prompt_metadata)
        return out


def _object_schema(properties: dict[str, Any], required: list[str]) -> JsonObject:
    schema: JsonObject = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


ECHO = ToolSpec(
    name="echo",
    description="Return the given text unchanged (truncated to 64 KiB).",
    parameters=_object_schema({"text": {"type": "string", "description": "Text to echo back."}}, ["text"]),
    # §1.1 (API 0.4, tool_prompt_metadata_v1): presentation only; <= 16
    # guidelines and <= 1,024 UTF-8 bytes per string.
    prompt_metadata={
        "prompt_snippet": "echo: repeat a piece of text back verbatim",
        "prompt_guidelines": ["Use echo only to test the extension round trip."],
    },
)

SLOW = ToolSpec(
    name="slow",
    description="Sleep steps x delay_ms milliseconds, reporting progress after each step; cancellable.",
    parameters=_object_schema(
        {
            "steps": {"type": "integer", "minimum": 0, "maximum": 10, "default": DEFAULT_SLOW_STEPS},
            "delay_ms": {"type": "integer", "minimum": 0, "maximum": 100, "default": DEFAULT_SLOW_DELAY_MS},
        },
        [],
    ),
)

STRUCTURED = ToolSpec(
    name="structured",
    description="Measure a text and upper-case it, returning structured content.",
    parameters=_object_schema({"text": {"type": "string"}}, ["text"]),
    # §1.1: only keywords from the supported output_schema subset.
    output_schema=_object_schema(
        {"length": {"type": "integer", "minimum": 0}, "upper": {"type": "string"}},
        ["length", "upper"],
    ),
    since_api="0.2",
)

FAILING = ToolSpec(
    name="failing",
    description="Always report a tool error (is_error true) without failing the request.",
    parameters=_object_schema({}, []),
)

CONFIRM = ToolSpec(
    name="confirm",
    description="Ask the user a yes/no question through the host and report the answer.",
    parameters=_object_schema({"question": {"type": "string", "description": "The question to ask."}}, ["question"]),
)

ALL_TOOLS = (ECHO, SLOW, STRUCTURED, FAILING, CONFIRM)

# §2.11: registered at run time (dynamic_tools), never declared in the
# manifest; it publishes a picture as an artifact when artifacts is negotiated.
PICTURE = ToolSpec(
    name="picture",
    description="Publish a tiny picture as an artifact and return it as an image part.",
    parameters=_object_schema({"caption": {"type": "string", "description": "Alt text."}}, []),
    since_api="0.2",
)
# §2.12: committed catalog snapshots kept for overlapping turns (like the Python SDK).
RETAINED_EPOCHS = 8

GREET_COMMAND: JsonObject = {
    "name": "greet",
    "description": "Greet someone with a notification.",
    "usage": "/greet [name]",
}

HOOKS = ("before_prompt", "after_response", "before_tool_call", "after_tool_call")
MODEL_TURN_HOOKS = ("model_turn_start", "model_turn_end")  # §1.4b: declared at API 0.4, run with session_entries
STATUS_SURFACES = ("status", "header", "footer")  # §1.6
DECLARED_SURFACES = ("status",)  # contributes.ui
TOOL_RENDERERS = ("echo",)  # contributes.tool_renderers


def tools_for(api_version: str) -> dict[str, ToolSpec]:
    return {tool.name: tool for tool in ALL_TOOLS if tool.available_in(api_version)}


def tool_definitions(api_version: str, *, with_prompt_metadata: bool) -> list[JsonObject]:
    return [tool.definition(with_prompt_metadata=with_prompt_metadata) for tool in tools_for(api_version).values()]


def command_definitions() -> list[JsonObject]:
    return [dict(GREET_COMMAND)]
