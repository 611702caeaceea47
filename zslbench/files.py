"""Atomic file writes and file digests, shared by result records, the data cache and feature sets.

A reader, or a run killed half-way, only ever sees the old file or the complete new one: the text
goes to a temporary file in the same folder, is fsynced, and is renamed over the target.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Files are hashed in chunks of this size.
READ_CHUNK = 4 * 2**20


def atomic_write(path: Path, write: Callable[[Any], None], mode: str = "wb") -> None:
    """Write ``path`` atomically through ``write(fh)``, with ordinary (umask) permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; these are ordinary shared files
        encoding = None if "b" in mode else "utf-8"
        with open(fd, mode, encoding=encoding) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, with ordinary (umask) permissions."""
    atomic_write(path, lambda fh: fh.write(text), mode="w")


def sha256_file(path: Path) -> str:
    """Full sha256 of a file, read in :data:`READ_CHUNK` chunks."""
    h = hashlib.sha256()
    buf = bytearray(READ_CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            h.update(view[:n])
    return h.hexdigest()
