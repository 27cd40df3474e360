"""The reference extension as an in-process simulated target.

The very same server code as ``python3 -m conformance.reference.extension``,
run by :class:`~conformance.transport.simulated.SimulatedTarget` on a virtual
clock instead of threads and pipes: for exploring races deterministically at
high step rates, and for measuring the harness without a process in the way.
"""

from __future__ import annotations

from conformance.manifest import Manifest
from conformance.protocol.limits import MAX_FRAME_BYTES
from conformance.reference.extension import ReferenceExtension, run
from conformance.transport.simulated import Scheduler, SimStdin, SimulatedTarget, Sink

REFERENCE_MODULE = "conformance.reference.extension"


def is_reference(manifest: Manifest) -> bool:
    """True when the manifest runs this suite's reference extension."""
    return REFERENCE_MODULE in manifest.command


def simulated_reference(manifest: Manifest) -> SimulatedTarget:
    """Launch the reference extension for ``manifest``'s API version in-process."""
    if not is_reference(manifest):
        raise ValueError(f"{manifest.path} does not run the reference extension; only it can be simulated")
    extension = ReferenceExtension(manifest.api_version)

    def program(stdin: SimStdin, stdout: Sink, scheduler: Scheduler) -> int:
        return run(extension, stdin, stdout, scheduler)

    return SimulatedTarget(program, MAX_FRAME_BYTES, log_names=(REFERENCE_MODULE,))
