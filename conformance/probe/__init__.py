"""The probe: the suite's own extension, launched by the host under test.

How to use: the harness (``conformance.peers.probe.ProbeListener``) writes an
``extension.toml`` whose command is
``python -m conformance.probe --connect SOCKET --token TOKEN``; the host under
test spawns it like any extension. The probe connects back to the harness over
that Unix socket (its argv carries everything: the host sanitizes the
environment) and then

* relays every byte the host writes to its stdin to the harness, untouched;
* writes to its stdout exactly the bytes the harness sends, nothing else, ever;
* obeys control commands: write stderr bytes, flood stderr (with or without
  newlines), exit with a code, crash (SIGKILL itself), ignore SIGTERM, spawn a
  grandchild that ignores SIGTERM, close its stdout.

The control channel's messages are defined in :mod:`conformance.probe.channel`.
When the channel closes (the harness is gone) the probe exits, so it never
outlives the run that made it.
"""
