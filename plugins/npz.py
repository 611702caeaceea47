"""Bring your own features: a GZSL dataset in one ``.npz`` file (or a folder of ``.npy`` files).

No MATLAB needed: any features (CLIP, ViT, your own backbone), any class semantics (attributes,
text embeddings), any split. Run it by its path; the dataset's name is the file's stem (``mine``)::

    zslbench run --method bt-gp --dataset path/to/mine.npz
    zslbench run --method krr --dataset path/to/mine/          # a folder of .npy files

The format: one ``.npz`` archive (``numpy.savez``), or a folder holding one ``<key>.npy`` per key,
with these keys (every index is **0-based**)::

    features         (n, d) float16/32/64   one row per image; loaded as float32
    labels           (n,)   integer         class id of each image, a row of class_semantics
    class_semantics  (c, a) number          one semantic vector per class (attributes, text
                                            embeddings); no class with images may be all zeros
    class_names      (c,)   str             one name per class
    trainval_idx     (k,)   integer         images to train on (their classes are the seen classes)
    test_seen_idx    (k,)   integer         test images of seen classes
    test_unseen_idx  (k,)   integer         test images of unseen classes (none of them in trainval)
    val_classes      (v,)   integer         optional: seen classes held out as validation-unseen
                                            classes when tuning (default: a seeded third of them)
    kind             ()     str             optional: "custom" (default), "synthetic" or "real"
    backbone         ()     str             optional: the backbone that computed the features
                                            ("vit_b32_clip"); records carry it and it enters
                                            the data fingerprint (zslbench.data.backbones)

A user's own features or classes are a *custom* benchmark: records say ``dataset_kind: custom``,
are standard when the split passes the checks every dataset passes (the three index sets pairwise
disjoint, test-seen classes among the trainval classes, no test-unseen class among them), and get
their own leaderboard page, apart from the published benchmarks. The record's data fingerprint is a
hash of the content (arrays, not file bytes), so writing the same arrays again gives the same
fingerprint and the same cached runs. ``kind="real"`` claims to be a published benchmark: such a
file is standard only if its split, labels and semantics equal those of a benchmark that a dataset
plugin declares (:class:`zslbench.data.dataset.Benchmark`; xlsa17's pins are in
``zslbench_plugins/xlsa17/registry.json``).

Write such a file with :func:`save_npz` (it checks everything the loader checks, so what it writes
always loads), or with plain numpy: ``numpy.savez("mine.npz", features=..., labels=..., ...)``;
:func:`save_dataset` exports any loaded dataset (``toy``, a ``synth-*`` stand-in).

Every mistake is refused with one line that names the file, the key and the fix: a missing or
unknown key, a wrong shape or dtype, 1-based labels or indices, a label outside ``0..c-1``, a
NaN, a file that is not an ``.npz``.

Preprocessing: the methods of the paper use the ``clip`` preprocessor (clip at 7, scale to
[0, 1]), made for non-negative ResNet activations; it refuses negative features. CLIP and ViT
features have negative values: run them with ``--set preprocessor=none``.

A third-party plugin can register a name for a file (a relative path is looked up in the data dir,
``--data-dir`` / ``$ZSLBENCH_DATA``)::

    from zslbench.hookspecs import hookimpl
    from zslbench_plugins.npz import npz_dataset

    @hookimpl
    def zslbench_datasets():
        return [npz_dataset("mine", "/data/mine.npz", description="CUB with CLIP ViT-L/14")]
"""

from __future__ import annotations

import difflib
import math
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from zslbench.data.checks import FLOAT32_MAX, KINDS
from zslbench.data.dataset import (
    DatasetSpec,
    ZSLData,
    check_backbone,
    check_name,
    resolve_data_dir,
)
from zslbench.data.splits import format_examples, format_value
from zslbench.errors import DataError
from zslbench.hookspecs import hookimpl

#: Required keys, and what each holds (the fix a missing-key error suggests).
REQUIRED = {
    "features": "(n, d) float features, one row per image",
    "labels": "(n,) int class ids, 0-based rows of class_semantics",
    "class_semantics": "(c, a) float semantic vectors, one row per class",
    "class_names": "(c,) str class names",
    "trainval_idx": "(k,) int 0-based indices of the training images",
    "test_seen_idx": "(k,) int 0-based indices of the test images of seen classes",
    "test_unseen_idx": "(k,) int 0-based indices of the test images of unseen classes",
}
OPTIONAL = {
    "val_classes": "(v,) int 0-based seen classes held out for validation",
    "kind": 'the string "custom", "synthetic" or "real"',
    "backbone": 'the backbone name as a string, e.g. "vit_b32_clip"',
}
INDEX_KEYS = ("trainval_idx", "test_seen_idx", "test_unseen_idx")
SUFFIX = ".npz"
_HOW = "write it with zslbench_plugins.npz.save_npz or numpy.savez (format: zslbench_plugins.npz)"
#: Rows checked at a time (keeps memory flat on a memory-mapped features.npy).
_BLOCK_BYTES = 64 * 2**20


# ------------------------------------------------------------------------------------- reading


class _Arrays:
    """The members of an .npz, a folder of .npy or a dict, read on demand; errors name the file."""

    def __init__(self, path: Path, keys: list[str], get: Callable[[str], Any]) -> None:
        self.path, self.keys, self._get = path, keys, get

    def __getitem__(self, key: str) -> np.ndarray:
        try:
            value = self._get(key)
        except ValueError as exc:
            if "allow_pickle" in str(exc) or "pickled" in str(exc):
                raise DataError(
                    f"{self.path}: {key!r} is an object (pickled) array, which zslbench "
                    "does not load",
                    hint="store strings as a unicode array "
                    "(np.array(names, dtype=str)) and numbers as a numeric array",
                ) from None
            raise DataError(f"{self.path}: cannot read {key!r} ({exc})", hint=_HOW) from None
        except (OSError, zipfile.BadZipFile, EOFError, zlib.error) as exc:
            raise DataError(
                f"{self.path}: cannot read {key!r}, the file is truncated or corrupt "
                f"({type(exc).__name__}: {exc})",
                hint=f"write it again; {_HOW}",
            ) from None
        except MemoryError:
            raise DataError(
                f"{self.path}: {key!r} does not fit in memory",
                hint="free memory, or store the features as a folder of .npy files "
                "(a float32 features.npy is memory-mapped, never read whole)",
            ) from None
        return np.asarray(value) if not isinstance(value, np.ndarray) else value


def _check_header(path: Path, key: str, fh: BinaryIO, available: int) -> None:
    """Refuse an array whose ``.npy`` header claims more bytes than the file holds, before numpy
    allocates them (a corrupt header claiming a huge shape would otherwise end in a MemoryError)."""
    try:
        version = np.lib.format.read_magic(fh)
        read = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _fortran, dtype = read(fh)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(
            f"{path}: the header of {key!r} is unreadable, the file is truncated or "
            f"corrupt ({exc})",
            hint=f"write it again; {_HOW}",
        ) from None
    if dtype.hasobject:
        return  # refused as a pickled array when read
    need = math.prod(shape) * dtype.itemsize
    data = available - fh.tell()
    if need > data:
        raise DataError(
            f"{path}: the header of {key!r} claims a {dtype} array of shape "
            f"{tuple(shape)} ({need:,} bytes) but the file holds {max(data, 0):,} bytes "
            "of it: the file is truncated or corrupt",
            hint=f"write it again; {_HOW}",
        )


def _check_member(path: Path, zf: zipfile.ZipFile, key: str) -> None:
    """:func:`_check_header` for the member ``key`` of an ``.npz`` archive."""
    name = key if key in zf.namelist() else f"{key}.npy"
    info = zf.getinfo(name)
    # Deflate expands at most 1032-fold: a larger claimed size is a corrupt directory entry.
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > 1032 * info.compress_size + 64:
        raise DataError(
            f"{path}: the archive claims {info.file_size:,} bytes for {key!r}, more "
            f"than its {info.compress_size:,} compressed bytes can hold: the file is "
            "corrupt",
            hint=f"write it again; {_HOW}",
        )
    with zf.open(info) as fh:
        _check_header(path, key, fh, info.file_size)


@contextmanager
def _open(path: Path) -> Iterator[_Arrays]:
    """The arrays of an ``.npz`` file or of a folder of ``.npy`` files."""
    if path.is_dir():
        files = {p.stem: p for p in sorted(path.glob("*.npy"))}
        if not files:
            raise DataError(
                f"{path} holds no .npy files", hint=f"save one <key>.npy per key; {_HOW}"
            )

        def get(key: str) -> Any:
            with open(files[key], "rb") as fh:
                _check_header(files[key], key, fh, os.fstat(fh.fileno()).st_size)
            mmap = "r" if key == "features" else None  # a large features.npy is never copied whole
            return np.load(files[key], mmap_mode=mmap, allow_pickle=False)

        yield _Arrays(path, list(files), get)
        return
    if not path.exists():
        raise DataError(f"{path} does not exist", hint=f"check the path; {_HOW}")
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})", hint=_HOW) from None
    if magic == b"\x93NUMPY":  # never np.load it: that would read the whole array
        raise DataError(
            f"{path} holds a single array, not an .npz archive of named arrays",
            hint=f"save every key in one archive: numpy.savez(path, features=..., "
            f"labels=..., ...); {_HOW}",
        )
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path} is not an .npz file ({detail})", hint=_HOW) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise DataError(f"{path} is not an .npz archive of named arrays", hint=_HOW)
    with loaded:

        def member(key: str) -> Any:
            _check_member(path, loaded.zip, key)
            return loaded[key]

        yield _Arrays(path, list(loaded.files), member)


def _dict_arrays(path: Path, arrays: Mapping[str, Any]) -> _Arrays:
    return _Arrays(path, [k for k, v in arrays.items() if v is not None], lambda k: arrays[k])


def _check_keys(src: _Arrays) -> None:
    known = list(REQUIRED) + list(OPTIONAL)
    for key in src.keys:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = (
                f"did you mean {close[0]!r}? " if close else ""
            ) + f"the format's keys: {', '.join(known)}"
            raise DataError(f"{src.path} has an unknown key {key!r}", hint=hint)
    for key, what in REQUIRED.items():
        if key not in src.keys:
            has = ", ".join(sorted(src.keys)) or "nothing"
            raise DataError(
                f"{src.path} lacks the key {key!r} (has: {has})", hint=f"add {key}: {what}"
            )


def _vector(
    src: _Arrays, key: str, *, integer: bool, length: int | None = None, length_of: str = ""
) -> np.ndarray:
    arr = src[key]
    if arr.ndim == 2 and 1 in arr.shape:
        raise DataError(
            f"{src.path}: {key!r} has shape {arr.shape}; it must be a vector",
            hint=f"store {key}.ravel()",
        )
    if arr.ndim != 1:
        raise DataError(
            f"{src.path}: {key!r} has shape {arr.shape}; it must be a vector",
            hint=f"store {key} as {(REQUIRED | OPTIONAL)[key]}",
        )
    if integer and arr.dtype.kind not in "iu":
        raise DataError(
            f"{src.path}: {key!r} has dtype {arr.dtype}; it must hold integers",
            hint=f"store {key}.astype(np.int64)",
        )
    if length is not None and arr.shape[0] != length:
        raise DataError(
            f"{src.path}: {key!r} has {arr.shape[0]} entries but {length_of} has {length}",
            hint=f"{key} needs one entry per "
            + (
                "image (row of features)"
                if length_of == "features"
                else "class (row of class_semantics)"
            ),
        )
    return arr


def _check_features(path: Path, f: np.ndarray) -> None:
    """2-D float, finite, within float32, not constant; blockwise so a memory map stays a map."""
    if f.ndim != 2 or 0 in f.shape:
        raise DataError(
            f"{path}: 'features' has shape {f.shape}; it must be a non-empty (n, d) "
            "matrix, one row per image",
            hint="store features as an (n, d) array",
        )
    if f.dtype.kind != "f":
        what = "bool" if f.dtype.kind == "b" else str(f.dtype)
        raise DataError(
            f"{path}: 'features' have dtype {what}; they must be real floating-point numbers",
            hint="store features.astype(np.float32)",
        )
    rows = max(1, _BLOCK_BYTES // max(1, f.shape[1] * f.dtype.itemsize))
    lo, hi = np.inf, -np.inf
    for start in range(0, f.shape[0], rows):
        block = np.asarray(f[start : start + rows])
        finite = np.isfinite(block)
        if not finite.all():
            i, j = np.argwhere(~finite)[0]
            raise DataError(
                f"{path}: 'features' contain NaN or Inf (first at image {start + i}, "
                f"dimension {j}, 0-based)",
                hint="repair or re-extract the features",
            )
        big = np.abs(block) > FLOAT32_MAX
        if big.any():
            i, j = np.argwhere(big)[0]
            raise DataError(
                f"{path}: 'features' value {format_value(block[i, j])} (image "
                f"{start + i}, dimension {j}, 0-based) does not fit in float32, which "
                "every method computes in",
                hint="rescale or re-extract the features",
            )
        lo, hi = min(lo, float(block.min())), max(hi, float(block.max()))
    if lo == hi:
        raise DataError(
            f"{path}: every value of 'features' is {format_value(np.float32(lo))}: the "
            "features are constant",
            hint="the features were not written; re-extract them",
        )


def _index_sets(src: _Arrays, n: int) -> dict[str, np.ndarray]:
    sets = {k: _vector(src, k, integer=True) for k in INDEX_KEYS}
    for key, arr in sets.items():
        if arr.size == 0:
            raise DataError(
                f"{src.path}: {key!r} is empty", hint="every split needs at least one image"
            )
    lo = min(int(a.min()) for a in sets.values())
    hi = max(int(a.max()) for a in sets.values())
    if lo >= 1 and hi == n:
        key = next(k for k, a in sets.items() if int(a.max()) == n)
        raise DataError(
            f"{src.path}: {key!r} holds index {n}, one past the {n} images, and no set "
            "holds index 0: the indices look 1-based",
            hint="the format's indices are 0-based: subtract 1 from every index",
        )
    for key, arr in sets.items():
        bad = arr[(arr < 0) | (arr >= n)]
        if bad.size:
            raise DataError(
                f"{src.path}: {key!r} has {bad.size} "
                f"{'index' if bad.size == 1 else 'indices'} outside 0..{n - 1} "
                f"(e.g. {format_examples(bad)})",
                hint="indices are 0-based rows of features",
            )
        uniq, counts = np.unique(arr, return_counts=True)
        if np.any(counts > 1):
            raise DataError(
                f"{src.path}: {key!r} lists {format_examples(uniq[counts > 1])} more than once",
                hint="each image may appear once in a set",
            )
    return {k: a.astype(np.int64) for k, a in sets.items()}


def _read(src: _Arrays, name: str) -> tuple[ZSLData, str]:
    """Check every key of ``src`` and build the dataset; one DataError line per mistake."""
    path = src.path
    _check_keys(src)
    features = src["features"]
    _check_features(path, features)
    n = int(features.shape[0])
    sem = src["class_semantics"]
    if sem.ndim != 2 or 0 in sem.shape:
        raise DataError(
            f"{path}: 'class_semantics' has shape {sem.shape}; it must be a non-empty "
            "(c, a) matrix, one row per class",
            hint="store class_semantics as (c, a)",
        )
    if sem.dtype.kind not in "biuf":
        raise DataError(
            f"{path}: 'class_semantics' has dtype {sem.dtype}; it must hold numbers",
            hint="store class_semantics.astype(np.float32)",
        )
    if not np.isfinite(sem).all():
        row = int(np.argwhere(~np.isfinite(sem))[0][0])
        raise DataError(
            f"{path}: 'class_semantics' contains NaN or Inf (class {row}, 0-based)",
            hint="repair the class semantics",
        )
    c = int(sem.shape[0])
    labels = _vector(src, "labels", integer=True, length=n, length_of="features")
    lo, hi = labels.min(), labels.max()
    if lo >= 1 and hi == c:
        raise DataError(
            f"{path}: 'labels' run from 1 to {c}, the number of classes: they look 1-based",
            hint="the format's labels are 0-based rows of class_semantics: subtract 1",
        )
    if lo < 0 or hi >= c:
        bad = lo if lo < 0 else hi
        raise DataError(
            f"{path}: 'labels' hold {format_value(bad)}, outside 0..{c - 1} "
            f"(class_semantics has {c} rows)",
            hint="labels are 0-based rows of class_semantics",
        )
    labels = labels.astype(np.int64)
    used = np.unique(labels)
    zero = used[~np.any(sem[used] != 0, axis=1)]
    if zero.size:
        raise DataError(
            f"{path}: 'class_semantics' row {int(zero[0])} is all zeros, and class "
            f"{int(zero[0])} has images",
            hint="every class needs a non-zero semantic vector",
        )
    names = _vector(src, "class_names", integer=False, length=c, length_of="class_semantics")
    if names.dtype.kind not in "US":
        raise DataError(
            f"{path}: 'class_names' has dtype {names.dtype}; it must hold strings",
            hint="store np.array(names, dtype=str)",
        )
    class_names = [
        x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in names.tolist()
    ]
    idx = _index_sets(src, n)
    val_classes = None
    if "val_classes" in src.keys:
        val = _vector(src, "val_classes", integer=True)
        if val.size:
            bad = val[(val < 0) | (val >= c)]
            if bad.size:
                raise DataError(
                    f"{path}: 'val_classes' holds {format_examples(bad)}, outside 0..{c - 1}",
                    hint="val_classes are 0-based rows of class_semantics",
                )
            val_classes = np.unique(val.astype(np.int64))
            seen = np.unique(labels[idx["trainval_idx"]])
            if np.isin(seen, val_classes).all():
                raise DataError(
                    f"{path}: 'val_classes' holds every one of the {seen.size} seen "
                    "classes, so none is left to train on during validation",
                    hint="keep val_classes to a part (about a third) of the seen classes",
                )
    kind = "custom"
    if "kind" in src.keys:
        raw = src["kind"]
        value = raw.reshape(-1)[0] if raw.size == 1 else None
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str) or value not in KINDS:
            raise DataError(
                f"{path}: 'kind' is {raw.tolist()!r}; it must be one of "
                f"{', '.join(map(repr, KINDS))}",
                hint="store np.array('custom')",
            )
        kind = value
    backbone = None
    if "backbone" in src.keys:
        raw = src["backbone"]
        value = raw.reshape(-1)[0] if raw.size == 1 else None
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        backbone = check_backbone(
            value if isinstance(value, str) else raw.tolist(), where=f"{path}: 'backbone'"
        )
    feats = np.asarray(features, dtype=np.float32) if features.dtype != np.float32 else features
    if feats.flags.writeable:
        feats.flags.writeable = False  # read-only, as every loader hands them out
    attributes = np.ascontiguousarray(sem, dtype=np.float32)
    attributes.flags.writeable = False
    data = ZSLData(
        name=name,
        features=feats,
        labels=labels,
        attributes=attributes,
        trainval_idx=idx["trainval_idx"],
        test_seen_idx=idx["test_seen_idx"],
        test_unseen_idx=idx["test_unseen_idx"],
        val_classes=val_classes,
        source={
            "format": "npz",
            "layout": "folder of .npy" if path.is_dir() else "npz",
            "path": str(path.resolve()),
            "kind": kind,
        },
        class_names=class_names,
        backbone=backbone,
    )
    return data, kind


def dataset_name(path: str | Path) -> str:
    """The name a file's dataset is run and recorded under: ``path/to/mine.npz`` -> ``mine``.

    The name becomes part of every record's file name and of the record: a file whose name
    cannot be one (``.npz`` alone, a leading ``.``, control characters) is refused with one line
    that says to rename it (:func:`zslbench.data.dataset.name_problem`).
    """
    p = Path(path)
    name = p.name[: -len(SUFFIX)] if p.name.lower().endswith(SUFFIX) else p.name
    if not name:
        raise DataError(
            f"{p}: a file named {p.name!r} gives no dataset name (the name is what "
            f"comes before {SUFFIX})",
            hint=f"rename it, e.g. to mine{SUFFIX}",
        )
    return check_name(
        name,
        where=str(p),
        hint="rename the file: its name (without .npz) names "
        "the dataset in every record; use printable characters, no leading '.'",
    )


def load_npz(path: str | Path, *, name: str | None = None) -> ZSLData:
    """Load a dataset in this module's format; one-line :class:`DataError` for any mistake.

    Features come back float32 and read-only (a memory map for a float32 ``features.npy`` in a
    folder). What is *standard* is not decided here: the runner's checks decide, for every dataset.
    """
    path = Path(path).expanduser()
    with _open(path) as src:
        data, _kind = _read(src, name or dataset_name(path))
    return data


def read_kind(path: str | Path) -> str:
    """The ``kind`` a file declares ("custom" when absent, or when the file cannot be read yet:
    its load then fails with the reason)."""
    try:
        with _open(Path(path).expanduser()) as src:
            if "kind" not in src.keys:
                return "custom"
            raw = src["kind"]
    except DataError:
        return "custom"
    value = raw.reshape(-1)[0] if raw.size == 1 else None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value if isinstance(value, str) and value in KINDS else "custom"


# ------------------------------------------------------------------------------------- writing


def save_npz(
    path: str | Path,
    *,
    features: Any,
    labels: Any,
    class_semantics: Any,
    class_names: Any,
    trainval_idx: Any,
    test_seen_idx: Any,
    test_unseen_idx: Any,
    val_classes: Any = None,
    kind: str = "custom",
    compress: bool = False,
    backbone: str | None = None,
) -> Path:
    """Write a dataset in this module's format to ``path`` (``.npz`` appended when missing).

    Runs every check :func:`load_npz` runs first, so a file it writes always loads; the file is
    written to a temporary beside ``path`` and renamed over it, so a reader never sees half a file.
    ``compress`` uses ``numpy.savez_compressed`` (smaller, but the features can then not be
    memory-mapped and load slower).
    """
    path = Path(path).expanduser()
    if not path.name.lower().endswith(SUFFIX):
        path = path.with_name(path.name + SUFFIX)
    arrays: dict[str, Any] = {
        "features": np.asarray(features),
        "labels": np.asarray(labels),
        "class_semantics": np.asarray(class_semantics),
        "class_names": np.asarray(
            [str(x) for x in np.asarray(class_names).ravel().tolist()]
            if np.asarray(class_names).dtype.kind == "O"
            else class_names
        ),
        "trainval_idx": np.asarray(trainval_idx),
        "test_seen_idx": np.asarray(test_seen_idx),
        "test_unseen_idx": np.asarray(test_unseen_idx),
        "kind": np.asarray(kind),
    }
    if val_classes is not None:
        arrays["val_classes"] = np.asarray(val_classes)
    if backbone is not None:
        arrays["backbone"] = np.asarray(backbone)
    _read(_dict_arrays(path, arrays), dataset_name(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            (np.savez_compressed if compress else np.savez)(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_dataset(
    data: ZSLData, path: str | Path, *, kind: str = "custom", compress: bool = False
) -> Path:
    """Export a loaded dataset (``toy``, a ``synth-*`` stand-in, a file of your own) to ``path``."""
    names = data.class_names or [f"class{i}" for i in range(data.n_classes)]
    return save_npz(
        path,
        features=data.features,
        labels=data.labels,
        class_semantics=data.attributes,
        class_names=names,
        trainval_idx=data.trainval_idx,
        test_seen_idx=data.test_seen_idx,
        test_unseen_idx=data.test_unseen_idx,
        val_classes=data.val_classes,
        kind=kind,
        compress=compress,
        backbone=data.backbone,
    )


# ---------------------------------------------------------------------------------- registration


def npz_dataset(
    name: str,
    path: str | Path,
    *,
    kind: str | None = None,
    description: str = "",
    groups: tuple[str, ...] = (),
) -> DatasetSpec:
    """A ``DatasetSpec`` that loads the file (or folder) at ``path`` under the name ``name``.

    For a plugin's ``zslbench_datasets`` hook. A relative ``path`` is looked up in the data dir
    (``--data-dir``, ``$ZSLBENCH_DATA``). ``kind`` defaults to the file's own (``"custom"``).
    """
    raw = Path(path).expanduser()

    def where(data_dir: Path | None) -> Path:
        return raw if raw.is_absolute() else resolve_data_dir(data_dir) / raw

    def load(data_dir: Path | None = None) -> ZSLData:
        return load_npz(where(data_dir), name=name)

    def missing(data_dir: Path | None = None) -> list[str]:
        p = where(data_dir)
        return [] if p.exists() else [f"{p} is missing: dataset {name!r} is read from it; {_HOW}"]

    if kind is None:
        kind = read_kind(raw) if raw.is_absolute() else "custom"
    if kind not in KINDS:
        raise DataError(
            f"npz_dataset({name!r}): kind {kind!r} is not one of {', '.join(KINDS)}",
            hint='use kind="custom" for your own benchmark',
        )
    return DatasetSpec(
        name=name,
        load=load,
        kind=kind,  # type: ignore[arg-type]
        description=description or f"{raw} (npz format)",
        groups=groups,
        missing=missing,
    )


def _claims(location: str) -> bool:
    p = Path(location).expanduser()
    if location.lower().endswith(SUFFIX):
        return True
    return p.is_dir() and any((p / f"{k}.npy").is_file() for k in REQUIRED)


@hookimpl
def zslbench_open_dataset(location: str) -> DatasetSpec | None:
    """``--dataset path/to/mine.npz`` (or a folder of .npy files): the dataset ``mine``."""
    if not _claims(location):
        return None
    path = Path(location).expanduser()
    return npz_dataset(
        dataset_name(path.resolve() if path.is_dir() else path),
        path.absolute(),
        description=f"{location} (npz format)",
    )


__all__ = [
    "dataset_name",
    "load_npz",
    "npz_dataset",
    "read_kind",
    "save_dataset",
    "save_npz",
    "zslbench_open_dataset",
]
