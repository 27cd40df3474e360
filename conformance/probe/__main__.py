"""``python -m conformance.probe --connect SOCKET --token TOKEN`` (see the package docstring)."""

from __future__ import annotations

import sys

from conformance.probe.process import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
