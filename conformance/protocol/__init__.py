"""The sans-IO protocol core: bytes in, frames and violations out.

Nothing in this package performs I/O, starts threads or reads clocks (ruff's
banned-api rule enforces it). Every peer -- harness and reference
implementations alike -- frames its traffic through :mod:`.framing`.
"""
