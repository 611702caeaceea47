"""The xlsa17 loader: ``<data-dir>/<NAME>/res101.mat`` + ``att_splits.mat`` in, checked ``ZSLData`` out.

The files are the ones of Xian et al.'s "Zero-Shot Learning — the Good, the Bad and the Ugly"
(xlsa17, Split V2.0):

* ``res101.mat``: ``features`` 2048 x N (ResNet-101, float64), ``labels`` N x 1 (1-based class);
* ``att_splits.mat``: ``att`` attr x classes, ``trainval_loc``, ``test_seen_loc``,
  ``test_unseen_loc`` (1-based image indices, column vectors), optionally ``train_loc``/``val_loc``
  and ``allclasses_names``.

Folders are upper case (``AWA1 AWA2 APY CUB SUN``); zslbench names are lower case. The loader goes
through the cache (:mod:`zslbench_plugins.xlsa17.cache`) and refuses, naming the file, whatever
cannot be read as a dataset (:mod:`zslbench_plugins.xlsa17.checks`). The split checks and the
match with the official benchmark (:func:`benchmark`, the pins in ``registry.json``) are the
runner's (:mod:`zslbench.data.checks`), once per load, on what :func:`read_xlsa17` returns; their
messages name ``att_splits.mat`` and its 1-based ``*_loc`` (``ZSLData.split_naming``).
:func:`load_xlsa17` runs both, for a script outside the runner. The loader converts to 0-based
labels and indices; the official ``train_loc``/``val_loc`` images are never returned (they overlap
test-seen in the 2018 originals), only the *classes* of ``val_loc``, from which the protocol
derives a leak-free validation split.
"""

from __future__ import annotations

import difflib
import logging
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from zslbench.data import splits as _splits
from zslbench.data.checks import DataCheck, check_dataset
from zslbench.data.dataset import DATA_ENV, Benchmark, ZSLData, resolve_data_dir
from zslbench.data.splits import format_value
from zslbench.errors import ConfigError, DataError, UserError
from zslbench_plugins.xlsa17 import cache as _cache
from zslbench_plugins.xlsa17 import checks as _checks

#: The backbone of xlsa17's ``res101.mat``: ImageNet ResNet-101, 2048-d pooled features.
BACKBONE = "res101"

#: zslbench names of the five xlsa17 benchmarks, in the paper's order.
DATASETS = ("awa1", "awa2", "apy", "cub", "sun")
RES101 = "res101.mat"
ATT_SPLITS = "att_splits.mat"
_RES101_KEYS = ("features", "labels")
_SPLIT_KEYS_REQUIRED = ("att", "trainval_loc", "test_seen_loc", "test_unseen_loc")
_SPLIT_KEYS_OPTIONAL = ("train_loc", "val_loc")


def canonical_name(name: str) -> str:
    """``"AWA2"``/``"awa2"`` -> ``"awa2"``; an unknown name is a ConfigError suggesting the closest."""
    low = str(name).strip().lower()
    if low in DATASETS:
        return low
    close = difflib.get_close_matches(low, DATASETS, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(
        f"unknown xlsa17 dataset {name!r}",
        hint=f"{hint}(xlsa17 datasets: {', '.join(DATASETS)}; or all)",
    )


def dataset_folder(name: str) -> str:
    """The upper-case folder of a dataset (``"awa2"`` -> ``"AWA2"``)."""
    return str(_checks.registry_entry(canonical_name(name))["folder"])


def dataset_paths(name: str, data_dir: str | Path | None) -> tuple[Path, Path]:
    """``(res101.mat, att_splits.mat)`` paths of a dataset under the resolved data dir."""
    folder = Path(resolve_data_dir(data_dir)) / dataset_folder(name)
    return folder / RES101, folder / ATT_SPLITS


def missing_files(name: str, data_dir: str | Path | None) -> list[str]:
    """One line per missing file of dataset ``name``, saying how to get it.

    Empty when both files exist. The runner prints these lines and stops; it never substitutes
    other data, so the lines also point to the embedded stand-ins for a run without downloads.
    """
    name = canonical_name(name)
    root = resolve_data_dir(data_dir)
    lines = []
    for path in dataset_paths(name, root):
        if not path.is_file():
            lines.append(
                f"{path} is missing: run `zslbench data download --dataset {name} "
                f"--data-dir {root}` to fetch the xlsa17 benchmark (about 879 MB for all five), "
                f"or use `--dataset synth-{name}` / `--dataset synth-all` for the embedded "
                f"SYNTHETIC stand-ins (not the real benchmark)"
            )
    return lines


# --------------------------------------------------------------------------------------- reading


def read_mat(path: Path, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """Read ``keys`` (required) and ``optional`` keys of a MATLAB v5 file with scipy.

    Every failure becomes one :class:`DataError` line naming the file: v7.3 (HDF5) files, which
    scipy cannot read; truncated or corrupt files; a missing required key.
    """
    import scipy.io
    from scipy.io.matlab import MatReadError

    try:
        with open(path, "rb") as fh:
            head = fh.read(128)
    except FileNotFoundError:
        raise DataError(f"{path} is missing", hint="run `zslbench data download`") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot open ({exc.strerror})") from None
    if head.startswith(b"MATLAB 7.3") or head[:8] == b"\x89HDF\r\n\x1a\n":
        raise DataError(
            f"{path} is a MATLAB v7.3 (HDF5) file, which zslbench cannot read",
            hint="re-save it as v7 in MATLAB (save(f, '-v7')) or re-download the "
            "original xlsa17 file",
        )
    try:
        data = scipy.io.loadmat(str(path), variable_names=list(keys + optional))
    except NotImplementedError:
        raise DataError(
            f"{path} is a MATLAB v7.3 (HDF5) file, which zslbench cannot read",
            hint="re-save it as v7 in MATLAB or re-download the original",
        ) from None
    except MemoryError:
        raise
    except (MatReadError, Exception) as exc:  # scipy raises OSError, ValueError, IndexError, ...
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(
            f"{path}: cannot read the MATLAB file, it is truncated or corrupt ({detail})",
            hint="delete it and re-download it (zslbench data download)",
        ) from None
    missing = [k for k in keys if k not in data]
    if missing:
        raise DataError(
            f"{path} lacks the required key {missing[0]!r} (has: "
            f"{', '.join(sorted(k for k in data if not k.startswith('__'))) or 'nothing'})",
            hint="this is not an xlsa17 file; re-download it",
        )
    return data


def _numeric(path: Path, key: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iufb":
        raise DataError(
            f"{path}: {key!r} is not a numeric array (MATLAB class {arr.dtype})",
            hint="this is not an xlsa17 file; re-download it",
        )
    return arr


#: The largest finite float32: the cache holds float32 features, and every method computes in them.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _first(mask: np.ndarray) -> list[int]:
    """(image, dimension), 0-based, of the first True of an (N, d) ``mask``."""
    i, j = np.argwhere(mask)[0]
    return [int(i), int(j)]


def _convert_res101(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read ``res101.mat`` into (N, d) float32 features and raw labels, for the cache.

    What the checks need to know about the values as *stored* goes into the meta: the first
    NaN/Inf, the first finite value beyond float32 (which the float32 cast would turn into an
    Inf), whether the file stores a MATLAB ``logical`` array, and the value range (constant
    features). The checks then refuse such files with one line naming this file.
    """
    data = read_mat(path, _RES101_KEYS)
    feats = _numeric(path, "features", data["features"])
    labels = _numeric(path, "labels", data["labels"])
    if labels.ndim > 2 or (labels.ndim == 2 and min(labels.shape) > 1):
        raise DataError(
            f"{path}: 'labels' must be a vector, got shape {labels.shape}",
            hint="this is not an xlsa17 file; re-download it",
        )
    labels = labels.ravel().astype(np.float64)
    if feats.ndim != 2:
        raise DataError(
            f"{path}: 'features' must be a 2-D d x N matrix, got shape {feats.shape}",
            hint="this is not an xlsa17 file; re-download it",
        )
    # xlsa17 stores d x N (one column per image); MATLAB is column-major, so .T is (N, d) C-order.
    transposed = feats.shape[1] != labels.size and feats.shape[0] == labels.size
    out = feats if transposed else feats.T
    nonfinite = beyond = None
    if feats.dtype.kind == "f":
        finite = np.isfinite(out)
        if not finite.all():
            nonfinite = _first(~finite)
        elif feats.dtype.itemsize > 4:
            big = np.abs(out) > FLOAT32_MAX
            if big.any():
                i, j = _first(big)
                beyond = [i, j, format_value(out[i, j])]
        del finite
    with np.errstate(over="ignore", invalid="ignore"):  # out-of-range values are reported above
        features = np.ascontiguousarray(out, dtype=np.float32)
    lo = hi = None
    if nonfinite is None and beyond is None and features.size:
        lo, hi = float(features.min()), float(features.max())
    meta = {
        "shape": list(features.shape),
        "stored_shape": list(feats.shape),
        "stored_dtype": str(feats.dtype),
        "stored_class": _matlab_class(path, "features"),
        "transposed": bool(transposed),
        "nonfinite": nonfinite,
        "beyond_float32": beyond,
        "value_range": None if lo is None else [lo, hi],
    }
    return {"features": features, "labels": labels}, meta


def _matlab_class(path: Path, key: str) -> str | None:
    """The MATLAB class of ``key`` as stored (``'double'``, ``'logical'``, ...), from the header.

    scipy reads a MATLAB ``logical`` array as uint8 0/1; only the header tells it apart.
    """
    import scipy.io

    try:
        for name, _shape, cls in scipy.io.whosmat(str(path)):
            if name == key:
                return str(cls)
    except Exception:  # the data itself was read; the class is only used to refuse logicals
        return None
    return None


def _convert_att_splits(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read ``att_splits.mat`` into raw arrays (dtypes kept) and class names, for the cache."""
    data = read_mat(path, _SPLIT_KEYS_REQUIRED, _SPLIT_KEYS_OPTIONAL + ("allclasses_names",))
    arrays: dict[str, np.ndarray] = {}
    for key in _SPLIT_KEYS_REQUIRED + _SPLIT_KEYS_OPTIONAL:
        if key in data:
            arrays[key] = _numeric(path, key, data[key])
    names = None
    if "allclasses_names" in data:
        try:
            names = [
                str(np.asarray(x).ravel()[0]) for x in np.asarray(data["allclasses_names"]).ravel()
            ]
        except (IndexError, TypeError, ValueError):
            names = None  # class names are cosmetic; a malformed list is ignored
    return arrays, {"class_names": names, "keys": sorted(arrays)}


@dataclass
class _Source:
    path: Path
    size: int
    sha256: str


def _cached(
    kind: str,
    src: _Source,
    folder: str,
    cache_root: Path | None,
    convert: Any,
    mmap: tuple[str, ...],
) -> tuple[dict[str, np.ndarray], dict[str, Any], str]:
    """Arrays of one source file from its cache entry, (re)building the entry when needed.

    Every byte of an existing entry is checked (:func:`~zslbench_plugins.xlsa17.cache.open_entry`);
    a damaged entry is deleted and rebuilt from the source, never used.
    """
    if cache_root is None:
        arrays, meta = convert(src.path)
        return arrays, meta, "disabled"
    entry = _cache.entry_dir(cache_root, folder, kind, src.sha256)
    status = "hit"
    if entry.exists():
        try:
            meta, arrays = _cache.open_entry(entry, mmap=mmap, require=_cache.REQUIRED_ARRAYS[kind])
            if meta.get("source_sha256") == src.sha256:
                return arrays, meta, status
            status = "rebuilt (entry belongs to another file)"
            shutil.rmtree(entry, ignore_errors=True)
        except _cache.CacheCorrupt as exc:
            status = f"rebuilt (corrupt cache entry {entry.name}: {exc})"
            logging.getLogger("zslbench.data").warning("%s: %s; rebuilding it", entry, exc)
            shutil.rmtree(entry, ignore_errors=True)
    else:
        status = "built"
    arrays, meta = convert(src.path)
    meta = {
        **meta,
        "source_path": str(src.path),
        "source_sha256": src.sha256,
        "source_size": src.size,
    }
    try:
        _cache.write_entry(entry, arrays, meta)
        _cache.remove_stale(cache_root, folder, kind, keep=entry)
        meta, arrays = _cache.open_entry(entry, mmap=mmap, require=_cache.REQUIRED_ARRAYS[kind])
    except OSError as exc:  # read-only or full disk: serve from memory, say so
        status = f"disabled (cannot write {entry}: {exc.strerror or exc})"
    except _cache.CacheCorrupt as exc:  # e.g. removed by a concurrent process: use what we read
        status = f"disabled (the new entry {entry.name} did not read back: {exc})"
    return arrays, meta, status


# ------------------------------------------------------------------------------------ inspection


@dataclass
class FileReport:
    """What ``zslbench data verify`` shows about one source file."""

    path: Path
    present: bool
    size: int | None = None
    sha256: str | None = None
    known: str | None = None


@dataclass
class Inspection:
    """Everything the loader learned about one dataset, failures included (nothing raised).

    ``error`` holds a reading error (missing/unreadable file, missing key); ``failures`` the
    results of the checks when both files could be read.
    """

    name: str
    data_dir: Path
    files: dict[str, FileReport] = field(default_factory=dict)
    error: UserError | None = None
    failures: list[_splits.Failure] = field(default_factory=list)
    features_shape: tuple[int, int] | None = None
    att_shape: tuple[int, int] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    fingerprint: str = ""
    official_fingerprint: str = ""
    cache_status: dict[str, str] = field(default_factory=dict)
    #: Temporaries of killed cache builds that this inspection removed (their writer was gone).
    cleaned: list[str] = field(default_factory=list)
    arrays: dict[str, Any] = field(default_factory=dict)
    #: The parsed 1-based index arrays (``trainval_loc`` ... and ``val_loc`` when present).
    indices: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failures


def _cache_root(data_dir: Path, cache_dir: Path | None, use_cache: bool) -> Path | None:
    if not use_cache:
        return None
    root = Path(cache_dir) if cache_dir is not None else data_dir / ".cache"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return root if os.access(root, os.W_OK) else None


def inspect_xlsa17(
    name: str,
    data_dir: str | Path | None = None,
    *,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    rehash_sources: bool = False,
) -> Inspection:
    """Read (through the cache) and check one dataset; report every problem instead of raising.

    :func:`load_xlsa17` and ``zslbench data verify`` share this, so both see the same checks.
    First removes the temporaries of killed cache builds of this dataset (never one a live process
    is writing). ``rehash_sources`` re-reads the source files instead of trusting their remembered
    sha256 (``data verify --full``).
    """
    name = canonical_name(name)
    root = resolve_data_dir(data_dir)
    entry = _checks.registry_entry(name)
    folder = entry["folder"]
    res_path, att_path = dataset_paths(name, root)
    rep = Inspection(
        name=name, data_dir=root, official_fingerprint=entry.get("split_fingerprint") or ""
    )
    for key, path in (("res101", res_path), ("att_splits", att_path)):
        rep.files[key] = FileReport(path=path, present=path.is_file())
    missing = missing_files(name, root)
    if missing:
        rep.error = DataError(missing[0])
        return rep
    cache_root = _cache_root(root, cache_dir, use_cache)
    if cache_root is not None:
        rep.cleaned = [str(p) for p in _cache.clean_stale(cache_root / folder)]
        if rep.cleaned:
            logging.getLogger("zslbench.data").info(
                "removed the temporaries of killed cache builds: %s", ", ".join(rep.cleaned)
            )
    store = _cache.HashStore(cache_root / "hashes.json" if cache_root is not None else None)
    sources: dict[str, _Source] = {}
    known_files = entry.get("known_files", {})
    for key, path in (("res101", res_path), ("att_splits", att_path)):
        try:
            sha = store.sha256(path, trust_memo=not rehash_sources)
            size = path.stat().st_size
        except OSError as exc:
            rep.error = DataError(f"{path}: cannot read ({exc.strerror or exc})")
            return rep
        sources[key] = _Source(path, size, sha)
        known = known_files.get(path.name, {}).get(sha)
        rep.files[key] = FileReport(
            path=path, present=True, size=size, sha256=sha, known=(known or {}).get("source")
        )
    try:
        res, res_meta, res_status = _cached(
            "res101", sources["res101"], folder, cache_root, _convert_res101, ("features",)
        )
        att, att_meta, att_status = _cached(
            "att_splits", sources["att_splits"], folder, cache_root, _convert_att_splits, ()
        )
    except UserError as exc:
        rep.error = exc
        return rep
    rep.cache_status = {"res101": res_status, "att_splits": att_status}
    rep.arrays = {
        "features": res["features"],
        "labels": res["labels"],
        **att,
        "class_names": att_meta.get("class_names"),
        "transposed": bool(res_meta.get("transposed")),
    }
    rep.failures = _run_checks(rep, res, res_meta, att, res_path, att_path)
    return rep


def _run_checks(
    rep: Inspection,
    res: dict[str, np.ndarray],
    res_meta: dict[str, Any],
    att: dict[str, np.ndarray],
    res_path: Path,
    att_path: Path,
) -> list[_splits.Failure]:
    """What only the files can be checked for: features, labels and ``att`` as stored, and index
    arrays that parse as indices. Where the indices point (the split checks) and whether the
    content is the official benchmark are the runner's checks (``zslbench.data.checks``), which
    run once per load on what :func:`read_xlsa17` returns."""
    features, labels = res["features"], res["labels"]
    n_images = int(features.shape[0])
    rep.features_shape = (n_images, int(features.shape[1]))
    a = np.asarray(att["att"])
    rep.att_shape = tuple(int(s) for s in a.shape) if a.ndim == 2 else None  # type: ignore[assignment]
    nonfinite = res_meta.get("nonfinite")
    beyond = res_meta.get("beyond_float32")
    fails = _checks.check_features(
        str(res_path),
        rep.features_shape,
        int(labels.size),
        nonfinite=tuple(nonfinite) if nonfinite else None,
        beyond_float32=tuple(beyond) if beyond else None,
        stored_class=res_meta.get("stored_class"),
        value_range=res_meta.get("value_range"),
    )
    fails += _checks.check_attributes(str(att_path), a)
    n_classes = int(a.shape[1]) if a.ndim == 2 else 0
    fails += _checks.check_labels(str(res_path), labels, n_classes, str(att_path))
    if any(f.check == "count" for f in fails):
        return fails  # which images do the indices mean? nothing below would be meaningful
    locs: dict[str, np.ndarray] = {}
    for key in (*_splits.SPLIT_KEYS, "val_loc"):
        if att.get(key) is None:
            continue
        arr, parse = _splits.index_array(str(att_path), key, att[key], n_images)
        fails += parse
        if arr is not None:
            locs[key] = arr
    val = locs.get("val_loc")
    if val is not None and (val.min() < 1 or val.max() > n_images):
        bad = val[(val < 1) | (val > n_images)]
        fails.append(
            _splits.Failure(
                str(att_path),
                "index-range",
                f"val_loc has {bad.size} "
                f"{'index' if bad.size == 1 else 'indices'} outside "
                f"1..{n_images} (e.g. {_splits.format_examples(bad)})",
                "the split file and res101.mat do not belong together",
                True,
            )
        )
    if not fails:
        rep.indices = locs
        rep.fingerprint = _splits.split_fingerprint(*(locs[k] for k in _splits.SPLIT_KEYS))
        rep.counts = {
            "n_images": n_images,
            "n_classes": n_classes,
            **{k.replace("_loc", ""): int(locs[k].size) for k in _splits.SPLIT_KEYS},
        }
    return fails


def benchmark(name: str) -> Benchmark:
    """The published benchmark dataset ``name`` is (xlsa17, Split V2.0) and what pins it, from
    ``registry.json``: the declaration the runner's checks compare every load with."""
    registry = _checks.load_registry()
    entry = registry["datasets"][canonical_name(name)]
    return Benchmark.from_mapping(
        {
            **registry["benchmark"],
            **entry,
            "name": canonical_name(name),
            "split": entry["split_fingerprint"],
            "backbone": BACKBONE,
        }
    )


def dataset_from(rep: Inspection) -> ZSLData:
    """The dataset an inspection without failures read: 0-based, read-only, its provenance."""
    arr = rep.arrays
    labels0 = np.asarray(arr["labels"]).astype(np.int64) - 1
    idx = {k: rep.indices[k] - 1 for k in _splits.SPLIT_KEYS}
    val_classes = None
    if "val_loc" in rep.indices:
        val_classes = np.unique(labels0[rep.indices["val_loc"] - 1])
    features = arr["features"]
    if not isinstance(features, np.memmap):  # cache disabled: still hand out read-only data
        features = np.asarray(features)
        features.flags.writeable = False
    attributes = np.ascontiguousarray(np.asarray(arr["att"], dtype=np.float32).T)
    attributes.flags.writeable = False
    files = rep.files
    source = {
        "format": "xlsa17",
        "dataset": rep.name,
        "data_dir": str(rep.data_dir),
        "res101_path": str(files["res101"].path),
        "res101_sha256": files["res101"].sha256,
        "res101_size": files["res101"].size,
        "att_splits_path": str(files["att_splits"].path),
        "att_splits_sha256": files["att_splits"].sha256,
        "att_splits_size": files["att_splits"].size,
        "att_splits_known": files["att_splits"].known,
        "official_fingerprint": rep.official_fingerprint,
        "features_transposed": arr["transposed"],
        "cache": dict(rep.cache_status),
    }
    if rep.cleaned:
        source["cache_cleaned"] = list(rep.cleaned)
    names = arr.get("class_names")
    return ZSLData(
        name=rep.name,
        features=features,
        labels=labels0,
        attributes=attributes,
        trainval_idx=idx["trainval_loc"],
        test_seen_idx=idx["test_seen_loc"],
        test_unseen_idx=idx["test_unseen_loc"],
        val_classes=val_classes,
        source=source,
        class_names=list(names) if names and len(names) == attributes.shape[0] else None,
        split_naming=replace(
            _splits.XLSA17_NAMING,
            file=str(files["att_splits"].path),
            features_file=str(files["res101"].path),
        ),
        backbone=BACKBONE,
    )


def read_xlsa17(
    name: str,
    data_dir: str | Path | None = None,
    *,
    cache_dir: Path | None = None,
    use_cache: bool = True,
) -> ZSLData:
    """Read one xlsa17 dataset, refusing (one line naming the file) what cannot be read as one.

    What the runner loads (the dataset's ``spec.load``): the split and the official-benchmark
    checks are not run here but by the runner, once per load. Returns 0-based labels and
    indices, float32 features (N, 2048) as a read-only memory map of the cache, and attributes
    (classes, attr) float32. ``val_classes`` are the classes of the official ``val_loc`` images
    (None when the file has no ``val_loc``).
    """
    rep = inspect_xlsa17(name, data_dir, cache_dir=cache_dir, use_cache=use_cache)
    if rep.error is not None:
        raise rep.error
    err = _checks.primary_error(rep.failures)
    if err is not None:
        raise err
    return dataset_from(rep)


def check_xlsa17(data: ZSLData, *, allow_nonstandard: bool = False) -> DataCheck:
    """The runner's checks (``zslbench.data.checks``) on a dataset :func:`read_xlsa17` returned,
    against the benchmark it declares: what ``zslbench run`` and ``data verify`` decide."""
    return check_dataset(
        data, "real", benchmark=benchmark(data.name), allow_nonstandard=allow_nonstandard
    )


def load_xlsa17(
    name: str,
    data_dir: str | Path | None = None,
    *,
    allow_nonstandard: bool = False,
    cache_dir: Path | None = None,
    use_cache: bool = True,
) -> ZSLData:
    """Load one xlsa17 dataset with every check enforced, as a script outside the runner needs it.

    :func:`read_xlsa17`, then the runner's checks against the official benchmark
    (:func:`check_xlsa17`). Raises :class:`~zslbench.errors.DataError` /
    :class:`~zslbench.errors.SplitError` with one line naming the file and the failed check; with
    ``allow_nonstandard=True`` a dataset failing only policy checks (leaky, altered, other
    features) loads, and ``source["standard"]`` / ``source["reason"]`` say why it is not standard.
    """
    data = read_xlsa17(name, data_dir, cache_dir=cache_dir, use_cache=use_cache)
    verdict = check_xlsa17(data, allow_nonstandard=allow_nonstandard)
    data.source.update(standard=verdict.standard, reason=verdict.reason)
    return data


__all__ = [
    "BACKBONE",
    "DATASETS",
    "DATA_ENV",
    "FileReport",
    "Inspection",
    "benchmark",
    "canonical_name",
    "check_xlsa17",
    "dataset_folder",
    "dataset_from",
    "dataset_paths",
    "inspect_xlsa17",
    "load_xlsa17",
    "missing_files",
    "read_mat",
    "read_xlsa17",
    "resolve_data_dir",
]
