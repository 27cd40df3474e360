"""What the host asks of its embedder: a frontend for prompts, a sink for events.

The host never decides on the person's behalf: ``confirmation/request``
(§2.2) and ``input/request`` (§2.7) go to a :class:`Frontend`. The default,
:class:`NonInteractive`, denies every confirmation and answers every input
with null -- §2.2: a non-interactive frontend denies. :class:`HostEvents`
receives what extensions publish (notifications, contributions, progress) and
the host's diagnostics; every method has a do-nothing default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .diagnostics import Diagnostic


@dataclass(frozen=True)
class Prompt:
    """One confirmation or input request, as the frontend sees it."""

    extension: str
    generation: int
    request_id: Any
    method: str  # "confirmation/request" or "input/request"
    params: dict[str, Any]


class Frontend:
    """Subclass and override; both calls may block (they run on a worker)."""

    interactive = False

    def confirm(self, prompt: Prompt) -> bool:
        return False

    def input(self, prompt: Prompt) -> str | None:
        return None


class NonInteractive(Frontend):
    """Denies every confirmation, answers every input with null (§2.2)."""


class HostEvents:
    """Override what you need; the host calls these from its workers."""

    def diagnostic(self, diagnostic: Diagnostic) -> None:
        return None

    def contribution(self, extension: str, generation: int, method: str, params: Any) -> None:
        """notification, context/contribution, status/contribution, presentation/update (§2.1-§2.5)."""

    def progress(self, extension: str, generation: int, request_id: int, sequence: int, event: Any) -> None:
        """An accepted $/progress (§2.6)."""

    def state_changed(self, extension: str, generation: int, state: str) -> None:
        """A lifecycle transition (§5)."""

    def supervisor_state(self, extension: str, generation: int, state: str, delay_s: float | None = None) -> None:
        """The supervisor's view of the extension (§5): ``backoff`` (restarting
        after ``delay_s``) or ``parked`` (no more restarts until a manual reload)."""
