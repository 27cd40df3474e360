"""The reference host: a careful octet extension host a product could embed.

It imports only the shared framing and limits of the suite (never the
checker's validators), so the harness and this host can disagree.

How to use::

    from conformance.reference.host import ReferenceHost, HostConfig

    host = ReferenceHost()                      # threads, real processes, non-interactive frontend
    status = host.load("path/to/extension.toml")  # validate, spawn, initialize (LoadError if refused)
    outcome = host.call_tool(status.name, "echo", {"text": "hi"})
    outcome.status, outcome.result, outcome.error
    # "ok" | "error" (the child's JSON-RPC error) | "invalid" (a result the host refused, §1.2-§1.7)
    # | "cancelled" | "timeout" | "lost" (the generation ended) | "refused" (never sent: undeclared,
    # malformed params, over the frame bound, or the extension is not ready)

    pending = host.start_tool(status.name, "slow", {"steps": 10})
    pending.cancel()                            # §1.9: skipped if unwritten, else one $/cancelRequest
    pending.wait()                              # CallOutcome(status="cancelled")
    pending.poll(0.1)                           # the outcome if it came within 0.1 s, else None (no cancel)

    host.execute_command(name, "greet", ["you"]); host.run_hook(name, "before_prompt", {"prompt": "x"})
    host.collect_context(name, prompt=None); host.collect_status(name, "status")
    host.collect_menu(name)   # §1.6b: validated menu, or one generated entry per command (5 s deadline)
    host.render_tool(name, "echo", {}, "output", is_error=False)
    host.start(name, method, params) / host.call(name, method, params, timeout=...)  # any routed request
    host.notify_lifecycle(name, "turn/started", {...})   # §1.10, only when subscribed -> bool
    host.notify_wave1(name, "shortcut/trigger", {...})   # §1.11, only when negotiated -> bool
    host.inspect(name)   # ExtensionStatus: generation, state, health, features, pending, last_error, parked...
    host.reload(name)    # §5 candidate-first reload; LoadError leaves generation N live
    host.shutdown()      # §1.8 every extension, concurrently, 3 s aggregate; shutdown(name) for one;
                         # shutdown(coordinated=True) caps the attempt at 1.4 s
    host.discover([(Path("~/.octet/extensions"), "global")])  # list[Discovered]

Constructor knobs (all optional): ``config=HostConfig(...)`` (every timing
constant, spec values by default; timings and memory bounds in small groups,
e.g. ``HostConfig(shutdown=ShutdownTiming(drain_s=1.0))``), ``runtime=`` (:class:`ThreadRuntime` or
the simulated one), ``launcher=`` (:class:`ProcessLauncher` or
:class:`SimLauncher`), ``frontend=`` (a :class:`Frontend` answering
confirmation/input prompts; :class:`NonInteractive` denies), ``events=`` (a
:class:`HostEvents` receiving diagnostics, contributions, progress, state
changes), ``rng=`` (``random.Random`` for the supervisor's jitter),
``environ=`` (the environment the sanitized child environment is drawn from).

On a virtual clock (tests; see :mod:`.simulated`)::

    world = SimWorld()
    host = ReferenceHost(runtime=world.runtime, launcher=world.launcher)
    world.run(lambda: host.load(manifest))      # drives greenlets; time jumps when idle
"""

from __future__ import annotations

from .calls import CallOutcome, PendingCall
from .channel import Channel, Launcher, LaunchError, ProcessLauncher
from .config import CallWaits, HostConfig, MemoryBounds, RestartPolicy, ShutdownTiming
from .diagnostics import Diagnostic
from .frontend import Frontend, HostEvents, NonInteractive, Prompt
from .host import ExtensionStatus, LoadError, ReferenceHost
from .manifest import Discovered, Manifest, ManifestError, discover, load_manifest
from .runtime import HostRuntime, ThreadRuntime
from .simulated import SimChildIO, SimLauncher, SimWorld

__all__ = [
    "CallOutcome",
    "CallWaits",
    "Channel",
    "Diagnostic",
    "Discovered",
    "ExtensionStatus",
    "Frontend",
    "HostConfig",
    "HostEvents",
    "HostRuntime",
    "Launcher",
    "LaunchError",
    "LoadError",
    "Manifest",
    "ManifestError",
    "MemoryBounds",
    "NonInteractive",
    "PendingCall",
    "ProcessLauncher",
    "Prompt",
    "ReferenceHost",
    "RestartPolicy",
    "ShutdownTiming",
    "SimChildIO",
    "SimLauncher",
    "SimWorld",
    "ThreadRuntime",
    "discover",
    "load_manifest",
]
