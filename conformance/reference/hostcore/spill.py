"""A frame buffer that spills to disk, so draining an oversized line is cheap.

The shared decoder holds up to the bound (64 MiB) of a line before it can
know the line is too long. Held in memory, draining a 128 MiB line would grow
this process by 64 MiB; with this buffer, bytes past ``SPILL_AFTER_BYTES``
go to a temporary file in the data directory, and memory stays near that
threshold. A legitimate large line is read back whole when it completes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import IO

from . import limits


class SpillBuffer:
    def __init__(self, directory: Path, *, spill_after: int = limits.SPILL_AFTER_BYTES) -> None:
        self._directory = directory
        self._spill_after = spill_after
        self._file: IO[bytes] | None = None
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def extend(self, data: bytes) -> None:
        if self._file is None:
            self._directory.mkdir(parents=True, exist_ok=True)
            # In memory up to the threshold, then a file that is unlinked
            # already (nothing to clean up if the process dies).
            self._file = tempfile.SpooledTemporaryFile(max_size=self._spill_after, mode="w+b", dir=str(self._directory))
        self._file.write(data)
        self._size += len(data)

    def head(self, size: int) -> bytes:
        if self._file is None:
            return b""
        self._file.seek(0)
        data = self._file.read(size)
        self._file.seek(0, 2)
        return data

    def take(self) -> bytes:
        if self._file is None:
            return b""
        self._file.seek(0)
        data = self._file.read()
        self.clear()
        return data

    def clear(self) -> None:
        if self._file is not None:
            self._file.close()  # frees the memory or deletes the file
        self._file = None
        self._size = 0
