"""The fast binary cache behind the xlsa17 loader, and the file-hash memo it relies on.

Why: ``res101.mat`` is a MATLAB file of float64 features (about 600 MB for AWA2); parsing it takes
seconds and twice its size in memory. The first load converts it once to a float32 ``.npy`` that
later loads memory-map read-only (no copy, pages read on demand), so a cached load takes a few
tens of milliseconds.

Layout, under ``<data-dir>/.cache/``::

    hashes.json                         # memo: path -> (size, mtime_ns, ctime_ns, inode, sha256)
    <FOLDER>/res101-<sha256[:20]>/      # one *entry* per source file content
        features.npy labels.npy meta.json
    <FOLDER>/att_splits-<sha256[:20]>/
        att.npy trainval_loc.npy ... meta.json

Entries are keyed by the sha256 of the source file, so an edited source file can never be served
from a stale entry. Hashing a 600 MB file takes about a second, so the memo trusts a stored sha256
while the file's (size, mtime_ns, ctime_ns, inode) are unchanged; any change re-hashes it.

Integrity: an entry is written to a temporary directory and renamed into place, so a crash never
leaves a half-written entry under the final name. Later damage (disk errors, a stray write) is
detected on every load by a *sampled keyed digest*: blake2b keyed with a random per-entry key over
the file size, the first and last 64 KiB and 62 more 64 KiB blocks at key-derived positions
(files up to 8 MiB are hashed whole). That reads about 4 MiB instead of 300 MB, and because the
positions are unpredictable, no fixed damage pattern escapes it systematically. A mismatch deletes
the entry and rebuilds it from the source. ``zslbench data verify`` additionally checks the full
sha256 of every cache file, which the sampled digest cannot replace for single flipped bits.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zslbench.files import atomic_write_text

#: Bump when the entry layout changes: older entries are then rebuilt.
CACHE_FORMAT = 2
#: Digest sampling parameters (see the module docstring).
SAMPLE_BLOCK = 64 * 1024
SAMPLE_BLOCKS = 64
FULL_DIGEST_LIMIT = 8 * 1024 * 1024
_HASH_CHUNK = 4 * 1024 * 1024


class CacheCorrupt(Exception):
    """A cache entry failed its integrity check (internal: the loader rebuilds the entry)."""


def sha256_file(path: Path) -> str:
    """Full sha256 of a file, read in 4 MiB chunks."""
    h = hashlib.sha256()
    buf = bytearray(_HASH_CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            h.update(view[:n])
    return h.hexdigest()


def sampled_digest(path: Path, key: bytes) -> str:
    """Keyed blake2b over the size and sampled blocks of ``path`` (whole file when small).

    Cheap enough for every load (about 4 MiB read) and keyed so that the sampled positions differ
    between entries; see the module docstring for what it does and does not detect.
    """
    size = path.stat().st_size
    h = hashlib.blake2b(key=key, digest_size=32)
    h.update(size.to_bytes(8, "little"))
    with open(path, "rb") as fh:
        if size <= FULL_DIGEST_LIMIT:
            h.update(fh.read())
            return h.hexdigest()
        n_blocks = (size + SAMPLE_BLOCK - 1) // SAMPLE_BLOCK
        rng = np.random.default_rng(int.from_bytes(key, "little"))
        picks = rng.choice(np.arange(1, n_blocks - 1), size=min(SAMPLE_BLOCKS - 2, n_blocks - 2),
                           replace=False)
        for block in sorted({0, n_blocks - 1, *picks.tolist()}):
            fh.seek(block * SAMPLE_BLOCK)
            h.update(block.to_bytes(8, "little"))
            h.update(fh.read(SAMPLE_BLOCK))
    return h.hexdigest()


class HashStore:
    """sha256 of source files, remembered per path while the file's stat is unchanged.

    ``path`` is the JSON memo file; ``None`` keeps the memo in memory only (read-only data dirs).
    Writes are atomic (temporary file + rename); a lost update between two concurrent processes
    only costs a re-hash later.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._memo: dict[str, list[Any]] | None = None

    def _load(self) -> dict[str, list[Any]]:
        if self._memo is None:
            self._memo = {}
            if self.path is not None and self.path.is_file():
                try:
                    data = json.loads(self.path.read_text(encoding="utf-8"))
                    if isinstance(data, dict):
                        self._memo = {k: v for k, v in data.items() if isinstance(v, list) and len(v) == 5}
                except (OSError, ValueError):
                    self._memo = {}  # a damaged memo is only a lost optimisation
        return self._memo

    @staticmethod
    def _stamp(st: os.stat_result) -> list[int]:
        return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]

    def sha256(self, path: Path) -> str:
        """The file's sha256, from the memo when its stat is unchanged, else computed and stored."""
        path = Path(path).resolve()
        memo = self._load()
        stamp = self._stamp(path.stat())
        known = memo.get(str(path))
        if known is not None and known[:4] == stamp:
            return str(known[4])
        digest = sha256_file(path)
        if self._stamp(path.stat()) == stamp:  # unchanged while we read it
            memo[str(path)] = [*stamp, digest]
            self._save()
        return digest

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            atomic_write_text(self.path, json.dumps(self._memo, indent=0, sort_keys=True))
        except OSError:
            self.path = None  # read-only: keep the memo in memory for this process


def entry_dir(cache_root: Path, folder: str, kind: str, sha256: str) -> Path:
    """Where the entry for a source file of content ``sha256`` lives."""
    return cache_root / folder / f"{kind}-{sha256[:20]}"


class _HashingWriter:
    """A write-only file wrapper that hashes what passes through it."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh
        self._h = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self._h.update(data)
        return self._fh.write(data)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def write_entry(path: Path, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> Path:
    """Write arrays (one ``.npy`` each) and ``meta.json`` as a new entry at ``path``, atomically.

    The entry is assembled in a temporary sibling directory and renamed into place; when another
    process won the race, its (equivalent) entry is kept and ours discarded.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        key = os.urandom(16)
        files: dict[str, dict[str, Any]] = {}
        for name, arr in arrays.items():
            target = tmp / f"{name}.npy"
            with open(target, "wb") as fh:
                writer = _HashingWriter(fh)  # full sha256 while writing: no second read
                np.lib.format.write_array(writer, np.ascontiguousarray(arr), allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
            files[name] = {"size": target.stat().st_size, "digest": sampled_digest(target, key),
                           "sha256": writer.hexdigest()}
        full_meta = {**meta, "format": CACHE_FORMAT, "key": key.hex(), "files": files}
        (tmp / "meta.json").write_text(json.dumps(full_meta, indent=1, sort_keys=True), encoding="utf-8")
        try:
            os.rename(tmp, path)  # fails if ``path`` exists: callers remove damaged entries first
        except OSError:
            if not (path / "meta.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # a concurrent build finished first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def read_meta(path: Path) -> dict[str, Any]:
    """An entry's ``meta.json``; :class:`CacheCorrupt` if absent, unreadable or of another format."""
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CacheCorrupt("meta.json is missing") from None
    except (OSError, ValueError) as exc:
        raise CacheCorrupt(f"meta.json is unreadable ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT or "files" not in meta:
        raise CacheCorrupt(f"entry format is not {CACHE_FORMAT}")
    return meta


def open_entry(path: Path, *, mmap: tuple[str, ...] = (), full: bool = False
               ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Check an entry and return ``(meta, arrays)``; raise :class:`CacheCorrupt` when damaged.

    Arrays named in ``mmap`` come back as read-only memory maps, the others are read into memory.
    ``full=True`` checks the full sha256 of every file instead of the sampled digest.
    """
    meta = read_meta(path)
    try:
        key = bytes.fromhex(meta["key"])
    except (KeyError, TypeError, ValueError):
        raise CacheCorrupt("meta.json has no valid key") from None
    arrays: dict[str, np.ndarray] = {}
    for name, info in meta["files"].items():
        target = path / f"{name}.npy"
        try:
            size = target.stat().st_size
        except FileNotFoundError:
            raise CacheCorrupt(f"{target.name} is missing") from None
        if size != info.get("size"):
            raise CacheCorrupt(f"{target.name} has {size} bytes, expected {info.get('size')}")
        if full:
            if sha256_file(target) != info.get("sha256"):
                raise CacheCorrupt(f"{target.name} fails its sha256")
        elif sampled_digest(target, key) != info.get("digest"):
            raise CacheCorrupt(f"{target.name} fails its digest")
        try:
            arrays[name] = np.load(target, mmap_mode="r" if name in mmap else None, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise CacheCorrupt(f"{target.name} is unreadable ({exc})") from None
    return meta, arrays


def remove_stale(cache_root: Path, folder: str, kind: str, keep: Path) -> None:
    """Delete the other entries of the same source kind (older versions of an edited file)."""
    parent = cache_root / folder
    if not parent.is_dir():
        return
    for other in parent.glob(f"{kind}-*"):
        if other.is_dir() and other.resolve() != keep.resolve():
            shutil.rmtree(other, ignore_errors=True)


def disk_usage(path: Path) -> int:
    """Total bytes of the regular files under ``path`` (0 when absent)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    if path.is_dir():
        for root, _dirs, files in os.walk(path):
            for name in files:
                try:
                    total += (Path(root) / name).stat().st_size
                except OSError:
                    pass
    return total


def list_entries(cache_root: Path) -> list[dict[str, Any]]:
    """Every cache entry with its dataset folder, kind, size and source, for ``zslbench data info``."""
    out: list[dict[str, Any]] = []
    if not cache_root.is_dir():
        return out
    for folder in sorted(p for p in cache_root.iterdir() if p.is_dir()):
        for entry in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
            try:
                meta = read_meta(entry)
                source = meta.get("source_path", "")
                state = "ok"
            except CacheCorrupt as exc:
                source, state = "", f"damaged: {exc}"
            out.append({"folder": folder.name, "entry": entry.name, "kind": entry.name.split("-")[0],
                        "bytes": disk_usage(entry), "source": source, "state": state})
    return out


__all__ = ["CACHE_FORMAT", "CacheCorrupt", "HashStore", "atomic_write_text", "disk_usage",
           "entry_dir", "list_entries", "open_entry", "read_meta", "remove_stale", "sampled_digest",
           "sha256_file", "write_entry"]
