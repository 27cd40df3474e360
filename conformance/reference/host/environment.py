"""The environment an extension child starts with (§6, §1.1).

§6 of the protocol ("Environment variables") is cut off in the document we
certify against, so the list below is this host's own choice, documented
here: a child gets only what a program needs to run -- a search PATH, a home,
locale and time zone, a temporary directory -- and nothing of the host's
credentials, tokens or configuration. §1.1 adds exactly one opt-in ambient
variable, SSH_AUTH_SOCK, copied only when an API 0.2+ manifest declares it in
``[capabilities].environment`` and the host has it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from conformance.protocol.limits import ENVIRONMENT_ALLOWLIST

# Passed through from the host when present (never anything that carries secrets).
PASSED_THROUGH = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")


def sanitized_environment(
    declared: tuple[str, ...] = (),
    *,
    source: Mapping[str, str] | None = None,
    prefer_interpreter: bool = True,
) -> dict[str, str]:
    """The child's environment. ``declared`` is the manifest's validated
    ``[capabilities].environment`` list (already checked against §1.1)."""
    host = os.environ if source is None else source
    env = {name: host[name] for name in PASSED_THROUGH if name in host}
    path = host.get("PATH", os.defpath)
    if prefer_interpreter:
        # "python3" in a manifest means the interpreter this host runs on
        # (an unactivated virtual environment included).
        path = os.pathsep.join([str(Path(sys.executable).parent), path])
    env["PATH"] = path
    for name in declared:
        if name in ENVIRONMENT_ALLOWLIST and name in host:
            env[name] = host[name]
    return env
