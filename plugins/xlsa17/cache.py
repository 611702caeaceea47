"""The fast binary cache behind the xlsa17 loader, and the file-hash memo it relies on.

Why: ``res101.mat`` is a MATLAB file of float64 features (about 600 MB for AWA2); parsing it takes
seconds and twice its size in memory. The first load converts it once to a float32 ``.npy`` that
later loads memory-map read-only, so a cached load skips the parsing entirely.

Layout, under ``<data-dir>/.cache/``::

    hashes.json                         # memo: path -> (size, mtime_ns, ctime_ns, inode, sha256)
    <FOLDER>/res101-<sha256[:20]>/      # one *entry* per source file content
        features.npy labels.npy meta.json
    <FOLDER>/att_splits-<sha256[:20]>/
        att.npy trainval_loc.npy ... meta.json

Entries are keyed by the sha256 of the source file, so an edited source file can never be served
from a stale entry. The memo trusts a stored sha256 while the file's (size, mtime_ns, ctime_ns,
inode) are unchanged; any change re-hashes it (``data verify --full`` re-hashes regardless).

Integrity: **every byte** of every cache file is checked on every load against the digest written
with the entry (:func:`file_digest`); a mismatch deletes the entry and rebuilds it from the source,
so a damaged entry is never used. (An earlier sampled digest read 64 of the ~1918 64-KiB blocks of
AWA2's ``features.npy`` and missed a zeroed block elsewhere.) The digest is sha256 over fixed
16 MiB segments, hashed in parallel threads (hashlib releases the GIL) and combined::

    sha256( "zslbench-cache-digest-v1 <size> <segment>\n" + sha256(seg_0) + sha256(seg_1) + ... )

(raw 32-byte segment digests), so it is the same for any number of threads and can be recomputed
without zslbench. sha256 rather than blake2b: with the SHA extensions of current x86 and ARM CPUs
it is about twice as fast as hashlib's blake2b (measured: ``benchmarks/test_bench_data.py``).

Temporaries: an entry is assembled in a hidden temporary directory next to it and renamed into
place, so a crash never leaves a half-written entry under the final name. The temporary is named
``.<entry>.zslbench-<pid>-<random>.tmp`` and its writer holds an exclusive ``flock`` on the
``writer.lock`` file inside for as long as it writes; the kernel releases the lock when the writer
dies, however it dies (SIGKILL, SIGTERM, a power cut). :func:`clean_stale` (called by every load)
removes the temporaries whose lock is free and lists nothing else: never a temporary a live process
holds, never a name that is not zslbench's own, never a file or a symbolic link. Temporaries of
zslbench versions without the lock (``.<entry>.<random>.tmp``) are removed once they are an hour
old (a build takes seconds to a minute).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from zslbench.files import atomic_write_text, sha256_file

try:  # POSIX; elsewhere the age of a temporary is all there is to go on
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: Bump when the entry layout changes: older entries are then rebuilt.
CACHE_FORMAT = 3
#: Definition of :func:`file_digest`: bump it if the definition ever changes.
DIGEST_SCHEME = "zslbench-cache-digest-v1"
#: Bytes per digest segment (the unit of parallel hashing).
SEGMENT = 16 * 2**20
#: At most this many hashing threads (memory bandwidth is the limit beyond).
MAX_HASH_THREADS = 8
_READ_CHUNK = 4 * 2**20
#: The lock file a writer holds inside its temporary directory.
LOCK_NAME = "writer.lock"
#: A temporary without a lock is older than this only when its writer died (seconds).
NO_LOCK_GRACE = 60.0
#: Temporaries of zslbench versions without the lock are stale after this long (seconds).
LEGACY_STALE_AFTER = 3600.0
_TMP_RE = re.compile(
    r"^\.(?P<stem>[A-Za-z0-9_-]+)\.zslbench-(?P<pid>\d+)-[a-z0-9_]{8}"
    r"\.(?P<suffix>tmp|extract)$"
)
_LEGACY_TMP_RE = re.compile(r"^\.(?P<stem>(?:res101|att_splits)-[0-9a-f]{20})\.[a-z0-9_]{8}\.tmp$")


class CacheCorrupt(Exception):
    """A cache entry failed its integrity check (internal: the loader rebuilds the entry)."""


def _segment_digest(path: Path, start: int, length: int) -> bytes:
    h = hashlib.sha256()
    buf = bytearray(min(_READ_CHUNK, max(length, 1)))
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        left = length
        while left > 0:
            n = fh.readinto(view[: min(left, len(buf))])
            if not n:
                raise CacheCorrupt(f"{path.name} ended while it was read")
            h.update(view[:n])
            left -= n
    return h.digest()


def file_digest(path: Path, *, threads: int | None = None) -> str:
    """The digest of every byte of ``path`` (definition in the module docstring).

    Segments are hashed by up to ``threads`` threads (default: the CPU count, at most
    :data:`MAX_HASH_THREADS`); the value does not depend on the number of threads.
    """
    size = Path(path).stat().st_size
    starts = list(range(0, size, SEGMENT))
    n = min(len(starts), threads or min(os.cpu_count() or 1, MAX_HASH_THREADS))
    if n <= 1:
        parts = [_segment_digest(path, s, min(SEGMENT, size - s)) for s in starts]
    else:
        with ThreadPoolExecutor(max_workers=n) as pool:
            parts = list(
                pool.map(lambda s: _segment_digest(path, s, min(SEGMENT, size - s)), starts)
            )
    h = hashlib.sha256(f"{DIGEST_SCHEME} {size} {SEGMENT}\n".encode())
    for part in parts:
        h.update(part)
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
                        self._memo = {
                            k: v for k, v in data.items() if isinstance(v, list) and len(v) == 5
                        }
                except (OSError, ValueError):
                    self._memo = {}  # a damaged memo is only a lost optimisation
        return self._memo

    @staticmethod
    def _stamp(st: os.stat_result) -> list[int]:
        return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]

    def sha256(self, path: Path, *, trust_memo: bool = True) -> str:
        """The file's sha256, from the memo when its stat is unchanged (and ``trust_memo``), else
        computed and stored. ``trust_memo=False`` (``data verify --full``) re-reads the file, which
        catches a file changed behind an unchanged stat (bit rot, a restored backup)."""
        path = Path(path).resolve()
        memo = self._load()
        stamp = self._stamp(path.stat())
        known = memo.get(str(path))
        if trust_memo and known is not None and known[:4] == stamp:
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


# ------------------------------------------------------------------------------------ temporaries


class WriterDir:
    """A hidden temporary directory that zslbench is writing, and the lock that says so.

    ``.<stem>.zslbench-<pid>-<random><suffix>`` next to its final place; the writer holds an
    exclusive ``flock`` on ``writer.lock`` inside until :meth:`publish` renames the directory into
    place or :meth:`discard` deletes it. Use it as a context manager: leaving the block without
    publishing discards it.
    """

    def __init__(self, parent: Path, stem: str, suffix: str = ".tmp") -> None:
        self.published = False
        parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(
            tempfile.mkdtemp(prefix=f".{stem}.zslbench-{os.getpid()}-", suffix=suffix, dir=parent)
        )
        self._lock: int | None = None
        try:
            self._lock = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
            if fcntl is not None:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(self._lock, f"{os.getpid()}\n".encode())  # non-empty: the lock is taken
        except BaseException:
            self.discard()
            raise

    def publish(self, target: Path) -> None:
        """Rename the directory to ``target`` (which must not exist), without the lock file."""
        (self.path / LOCK_NAME).unlink(missing_ok=True)  # still locked through the open descriptor
        os.rename(self.path, target)
        self.published = True
        self._release()

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # closing releases the flock
            self._lock = None

    def __enter__(self) -> WriterDir:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.published:
            self.discard()


def _writer_state(path: Path, legacy: bool, now: float) -> tuple[str, int | None]:
    """``("live" | "gone" | "unknown", fd holding the writer's lock or None)`` of a temporary.

    ``gone``: the writer died (its lock is free, or it never took one and the directory is older
    than :data:`NO_LOCK_GRACE`, or a lock-less legacy temporary is older than
    :data:`LEGACY_STALE_AFTER`). When ``gone`` came from taking the lock, the returned descriptor
    holds it: the caller deletes the directory, then closes it.
    """
    try:
        age = now - path.stat().st_mtime
    except OSError:
        return "unknown", None
    if legacy:
        return ("gone" if age > LEGACY_STALE_AFTER else "unknown"), None
    try:
        fd = os.open(path / LOCK_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return ("gone" if age > NO_LOCK_GRACE else "live"), None
    except OSError:
        return "unknown", None
    if fcntl is None:  # no way to ask: only a very old temporary is taken for dead
        os.close(fd)
        return ("gone" if age > LEGACY_STALE_AFTER else "unknown"), None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return "live", None
    except OSError:  # e.g. a file system without locks
        os.close(fd)
        return ("gone" if age > LEGACY_STALE_AFTER else "unknown"), None
    # The writer creates the lock file, then locks it, then writes its pid: an empty, free lock
    # file in a young directory is a writer between the first two steps.
    if os.fstat(fd).st_size == 0 and age <= NO_LOCK_GRACE:
        os.close(fd)
        return "live", None
    return "gone", fd


def list_temporaries(parent: Path, *, legacy: bool = True) -> list[dict[str, Any]]:
    """zslbench's temporary directories directly under ``parent``, with their size and state.

    ``state`` is ``"stale"`` (writer gone: :func:`clean_stale` removes it), ``"live"`` (a running
    zslbench holds it; ``pid`` says which) or ``"unknown"`` (kept: a lock-less temporary of an
    older zslbench, younger than an hour). Nothing is removed here.
    """
    out: list[dict[str, Any]] = []
    if not parent.is_dir():
        return out
    now = time.time()
    for p in sorted(parent.iterdir()):
        m = _TMP_RE.match(p.name)
        old = None if m else (_LEGACY_TMP_RE.match(p.name) if legacy else None)
        if (m is None and old is None) or p.is_symlink() or not p.is_dir():
            continue
        state, fd = _writer_state(p, legacy=m is None, now=now)
        if fd is not None:
            os.close(fd)
        out.append(
            {
                "path": p,
                "bytes": disk_usage(p),
                "pid": int(m["pid"]) if m else None,
                "state": {"gone": "stale", "live": "live"}.get(state, "unknown"),
            }
        )
    return out


def clean_stale(parent: Path, *, legacy: bool = True) -> list[Path]:
    """Remove the temporaries under ``parent`` whose writer is gone; return what was removed.

    Only directories named by zslbench's own patterns (module docstring), never a file or a
    symbolic link, never one whose writer still holds its lock. ``legacy`` also removes lock-less
    temporaries of older zslbench versions once they are an hour old.
    """
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    now = time.time()
    for p in sorted(parent.iterdir()):
        m = _TMP_RE.match(p.name)
        old = None if m else (_LEGACY_TMP_RE.match(p.name) if legacy else None)
        if (m is None and old is None) or p.is_symlink() or not p.is_dir():
            continue
        state, fd = _writer_state(p, legacy=m is None, now=now)
        try:
            if state == "gone":
                shutil.rmtree(p, ignore_errors=True)
                if not p.exists():
                    removed.append(p)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


# ---------------------------------------------------------------------------------------- entries


def write_entry(path: Path, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> Path:
    """Write arrays (one ``.npy`` each) and ``meta.json`` as a new entry at ``path``, atomically.

    The entry is assembled in a locked temporary sibling directory (:class:`WriterDir`) and
    renamed into place; when another process won the race, its (equivalent) entry is kept and ours
    discarded.
    """
    with WriterDir(path.parent, path.name) as tmp:
        files: dict[str, dict[str, Any]] = {}
        for name, arr in arrays.items():
            target = tmp.path / f"{name}.npy"
            with open(target, "wb") as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(arr), allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
            files[name] = {"size": target.stat().st_size, "digest": file_digest(target)}
        full_meta = {**meta, "format": CACHE_FORMAT, "digest": DIGEST_SCHEME, "files": files}
        (tmp.path / "meta.json").write_text(
            json.dumps(full_meta, indent=1, sort_keys=True), encoding="utf-8"
        )
        try:
            tmp.publish(path)  # fails if ``path`` exists: callers remove damaged entries first
        except OSError:
            if not (path / "meta.json").is_file():
                raise
            # a concurrent build finished first: the block's exit discards ours
    return path


#: The arrays the loader needs from an entry of each source kind (``<kind>-<sha256[:20]>``).
REQUIRED_ARRAYS = {
    "res101": ("features", "labels"),
    "att_splits": ("att", "trainval_loc", "test_seen_loc", "test_unseen_loc"),
}
_ARRAY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def read_meta(path: Path, *, require: tuple[str, ...] = ()) -> dict[str, Any]:
    """An entry's ``meta.json``; :class:`CacheCorrupt` if absent, unreadable, of another format,
    or if its file table is not one a complete entry has (each array with a size and a digest,
    the arrays ``require`` names among them: :data:`REQUIRED_ARRAYS` of the entry's kind). A
    damaged table is damage like any other: a load rebuilds the entry and ``data info`` calls it
    damaged (an emptied table must not pass here and then fail the load with a ``KeyError``)."""
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CacheCorrupt("meta.json is missing") from None
    except (OSError, ValueError) as exc:
        raise CacheCorrupt(f"meta.json is unreadable ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT or "files" not in meta:
        raise CacheCorrupt(f"entry format is not {CACHE_FORMAT}")
    files = meta["files"]
    if not isinstance(files, dict):
        raise CacheCorrupt("meta.json's file table is not a table")
    for name, info in files.items():
        if not _ARRAY_NAME.match(str(name)):
            raise CacheCorrupt(f"meta.json lists a file named {name!r}")
        if (
            not isinstance(info, dict)
            or not isinstance(info.get("size"), int)
            or not isinstance(info.get("digest"), str)
        ):
            raise CacheCorrupt(f"meta.json has no size and digest for {name}.npy")
    missing = [a for a in require if a not in files]
    if missing or not files:
        raise CacheCorrupt(
            f"meta.json lists no {(missing or ['array'])[0]}.npy (its file table is incomplete)"
        )
    return meta


def open_entry(
    path: Path, *, mmap: tuple[str, ...] = (), require: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Check every byte of an entry and return ``(meta, arrays)``; :class:`CacheCorrupt` if damaged
    or without an array ``require`` names.

    Arrays named in ``mmap`` come back as read-only memory maps, the others are read into memory.
    """
    meta = read_meta(path, require=require)
    arrays: dict[str, np.ndarray] = {}
    for name, info in meta["files"].items():
        target = path / f"{name}.npy"
        try:
            size = target.stat().st_size
        except FileNotFoundError:
            raise CacheCorrupt(f"{target.name} is missing") from None
        if not isinstance(info, dict) or size != info.get("size"):
            raise CacheCorrupt(
                f"{target.name} has {size} bytes, expected "
                f"{info.get('size') if isinstance(info, dict) else '?'}"
            )
        if file_digest(target) != info.get("digest"):
            raise CacheCorrupt(f"{target.name} fails its digest")
        try:
            arrays[name] = np.load(
                target, mmap_mode="r" if name in mmap else None, allow_pickle=False
            )
        except (OSError, ValueError) as exc:
            raise CacheCorrupt(f"{target.name} is unreadable ({exc})") from None
    return meta, arrays


def remove_stale(cache_root: Path, folder: str, kind: str, keep: Path) -> None:
    """Delete the other entries of the same source kind (older versions of an edited file)."""
    parent = cache_root / folder
    if not parent.is_dir():
        return
    for other in parent.glob(f"{kind}-*"):
        if other.is_dir() and not other.is_symlink() and other.resolve() != keep.resolve():
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
        for entry in sorted(
            p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")
        ):
            try:
                meta = read_meta(entry, require=REQUIRED_ARRAYS.get(entry.name.split("-")[0], ()))
                source = meta.get("source_path", "")
                state = "ok"
            except CacheCorrupt as exc:
                source, state = "", f"damaged: {exc}"
            out.append(
                {
                    "folder": folder.name,
                    "entry": entry.name,
                    "kind": entry.name.split("-")[0],
                    "bytes": disk_usage(entry),
                    "source": source,
                    "state": state,
                }
            )
    return out


__all__ = [
    "CACHE_FORMAT",
    "CacheCorrupt",
    "DIGEST_SCHEME",
    "HashStore",
    "REQUIRED_ARRAYS",
    "SEGMENT",
    "WriterDir",
    "clean_stale",
    "disk_usage",
    "entry_dir",
    "file_digest",
    "list_entries",
    "list_temporaries",
    "open_entry",
    "read_meta",
    "remove_stale",
    "sha256_file",
    "write_entry",
]
