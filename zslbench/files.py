"""Atomic file writes and file digests, shared by result records, the data cache and feature sets.

A reader, or a run killed half-way, only ever sees the old file or the complete new one: the text
goes to a temporary file in the same folder, is fsynced, and is renamed over the target.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Files are hashed in chunks of this size.
READ_CHUNK = 4 * 2**20
#: The largest file read from a results folder. The largest committed record is 161 KB (SUN's
#: per-class lists and curves) and a recheck entry ~1 KB, so 16 MB is a hundred times what a
#: real file needs while a link to ``/dev/zero`` or a planted huge file costs 16 MB, not the RAM.
MAX_FOLDER_FILE = 16 * 2**20


def read_folder_file(path: Path, limit: int = MAX_FOLDER_FILE) -> bytes:
    """The bytes of a regular file of a results folder, refused (``OSError`` saying why) when it
    is not a regular file (a FIFO, a device, a folder, or a link to one) or exceeds ``limit``.

    The one reader of folder content: every file there is untrusted. The file is opened with
    ``O_NONBLOCK`` (opening a FIFO never waits for a writer) and checked on the open descriptor
    (no race between a check and the read), and at most ``limit + 1`` bytes are ever read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if info.st_size > limit:
            raise OSError(f"{path} is {info.st_size} bytes, over the {limit}-byte limit")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew while read
        raise OSError(f"{path} is over the {limit}-byte limit")
    return data


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
