"""What a tool run produces, before tools.execute wraps it as its result (§5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Outcome:
    ok: bool
    content: Any
    error_code: str | None = None
    denied: bool = False

    def result(self, tool_call_id: str, duration_ms: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "toolCallId": tool_call_id,
            "ok": self.ok,
            "content": self.content,
            "durationMs": duration_ms,
        }
        if not self.ok:
            out["isError"] = True
            out["errorCode"] = self.error_code
        if self.denied:
            out["denied"] = True
        return out


def failure(error_code: str, message: str, **details: Any) -> Outcome:
    return Outcome(False, {"message": message, **details}, error_code)


class ToolFailure(Exception):
    """Raised inside a tool; becomes ``failure(code, message)``."""

    def __init__(self, message: str, error_code: str = "TOOL_FAILED") -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code
