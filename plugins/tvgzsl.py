"""Feature sets as TV-GZSL circulates them: one file per (backbone, benchmark), on the xlsa17 split.

TV-GZSL (uvavision/TV-GZSL, "On the transferability of visual features in GZSL") publishes the
features of 54 backbones for CUB, SUN and AWA2. Its loader (``utils/cada_dataloader.py``,
``DATA_LOADER.read_matdataset``, commit e362eaa) reads, under its ``data/`` folder:

* ``data/<backbone>_<dataset>_data.p``: a pickle of a dict with ``features`` (images x dims, one
  row per image, *not* transposed as ``res101.mat`` is) and ``labels`` (1-based class ids, in the
  order of ``res101.mat``'s images); ``<dataset>`` lower-case (``cub``, ``sun``, ``awa2``) and
  ``<backbone>`` one of its ``--feature_backbone`` names (``vit_b32_clip``, ``resnet50``, ...);
* ``data/RN101/<DATASET>/att_splits.mat``: xlsa17's split and attributes, shared by every
  backbone (and ``res101.mat`` / ``res101_finetuned.mat`` beside it, xlsa17's own layout).

``zslbench run --dataset data/vit_b32_clip_cub_data.p`` opens such a file as the dataset
``cub@vit_b32_clip``: the xlsa17 benchmark's split and attributes with that backbone's features.
The split file is looked up in ``<folder>/RN101/CUB/`` (TV-GZSL's layout), ``<folder>/CUB/``, then
the data dir (``--data-dir``, ``$ZSLBENCH_DATA``: xlsa17's layout). ``--dataset
data/RN101/CUB/res101_finetuned.mat`` opens a ``.mat`` feature file in xlsa17's layout (features
d x n, as ``res101.mat``) beside its ``att_splits.mat`` as ``cub@res101_finetuned``.

Every file is checked as the xlsa17 files are (``zslbench_plugins.xlsa17.checks``: features,
labels, attributes, index arrays), and the runner then applies the split checks and compares the
dataset with the xlsa17 benchmark it declares, except for the features' own pins, which belong to
ResNet-101 (``zslbench.data.backbones``). The pickle is read with an unpickler that builds numpy
arrays, dicts and lists only: a pickle that asks for anything else is refused, never executed,
and lists are sized before they are built (:func:`as_array`: shared rows cannot expand a small
file into a huge array).

Assumed, not seen (the files are on a Google Drive this project cannot reach): that ``labels`` may
be (n,), (n, 1) or (1, n), and ``features`` (n, d) in any float or integer dtype.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

from zslbench.data import splits as _splits
from zslbench.data.dataset import DatasetSpec, ZSLData, check_backbone, resolve_data_dir
from zslbench.errors import DataError
from zslbench.files import sha256_file
from zslbench.hookspecs import hookimpl
from zslbench_plugins.xlsa17 import checks as _checks
from zslbench_plugins.xlsa17.loader import BACKBONE, DATASETS, benchmark, read_mat

SUFFIX = "_data.p"
#: The numpy and builtin globals a pickle of arrays needs; anything else is refused.
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("builtins", "dict"),
    ("builtins", "list"),
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),
}
_SPLIT_KEYS = ("att", "trainval_loc", "test_seen_loc", "test_unseen_loc")


class _Refused(pickle.UnpicklingError):
    """A global the pickle asks for that is not in :data:`_ALLOWED`: the file is well formed but
    asks for code (every other ``UnpicklingError`` is a damaged file: truncated, not a pickle)."""


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise _Refused(f"{module}.{name}")


def read_pickle(path: Path) -> dict[str, Any]:
    """The dict a TV-GZSL ``*_data.p`` holds, built from numpy arrays only (one line otherwise)."""
    try:
        with open(path, "rb") as fh:
            obj = _ArrayUnpickler(fh, encoding="latin1").load()
    except FileNotFoundError:
        raise DataError(
            f"{path} is missing", hint="download it from TV-GZSL's feature folder"
        ) from None
    except _Refused as exc:
        raise DataError(
            f"{path}: the pickle asks for {exc}, not a numpy array; zslbench reads "
            "only arrays from a pickle, and never runs its code",
            hint="store features and labels as numpy arrays in a dict",
        ) from None
    except Exception as exc:  # truncated, a zip, not a pickle: pickle raises many kinds
        raise DataError(
            f"{path}: cannot read it as a pickle ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''})",
            hint="the file is damaged or not a pickle: re-download it",
        ) from None
    if not isinstance(obj, dict) or not {"features", "labels"} <= set(obj):
        keys = sorted(map(str, obj)) if isinstance(obj, dict) else type(obj).__name__
        raise DataError(
            f"{path}: holds {keys}, not a dict with 'features' and 'labels'",
            hint="a TV-GZSL feature file is a dict {'features': (n, d), 'labels': (n,)}",
        )
    return obj


def _numbers_in(value: list[Any] | tuple[Any, ...], key: str, path: Path) -> int:
    """How many numbers ``value`` (a list of numbers, or of rows of numbers) expands to, counting
    each distinct row once however often it is shared; anything nested deeper is refused."""
    lengths: dict[int, int] = {}
    total = 0
    for row in value:
        if isinstance(row, np.ndarray):
            total += row.size
        elif isinstance(row, (list, tuple)):
            if id(row) not in lengths:
                if any(isinstance(x, (list, tuple, dict, np.ndarray)) for x in row):
                    raise DataError(
                        f"{path}: '{key}' nests lists deeper than rows of numbers",
                        hint="store it as a numpy array (images x dims)",
                    )
                lengths[id(row)] = len(row)
            total += lengths[id(row)]
        else:
            total += 1
    return total


def as_array(value: Any, key: str, path: Path) -> np.ndarray:
    """``obj[key]`` of a pickle as an array of numbers, sized before it is built.

    A pickle stores a list shared by many rows once, so a 1 MB file of one row listed a million
    times would expand to tens of GB in ``np.asarray``. A pickled number takes at least two bytes
    (an opcode and a byte), so lists that expand to more numbers than the file has bytes are
    shared lists, refused before they are built. Ragged rows and strings are one line too."""
    if isinstance(value, (list, tuple)):
        size, limit = _numbers_in(value, key, path), path.stat().st_size
        if size > limit:
            raise DataError(
                f"{path}: '{key}' is lists that would expand to {size} numbers from a "
                f"{limit}-byte file (rows shared by reference)",
                hint="store it as a numpy array (images x dims)",
            )
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError):  # numpy refuses ragged rows
            raise DataError(
                f"{path}: '{key}' has rows of different lengths",
                hint="store it as a numpy array, one row per image, every row as long",
            ) from None
    elif isinstance(value, np.ndarray):
        arr = value
    else:
        raise DataError(
            f"{path}: '{key}' is a {type(value).__name__}, not an array of numbers",
            hint="store it as a numpy array",
        )
    if arr.dtype.kind not in "fiu":
        raise DataError(
            f"{path}: '{key}' holds {arr.dtype} values, not numbers",
            hint="features are numbers, labels 1-based integer class ids",
        )
    return arr


def parse_name(path: Path) -> tuple[str, str]:
    """``vit_b32_clip_cub_data.p`` -> (``"cub"``, ``"vit_b32_clip"``)."""
    stem = path.name[: -len(SUFFIX)]
    backbone, _, dataset = stem.rpartition("_")
    if dataset.lower() not in DATASETS or not backbone:
        raise DataError(
            f"{path}: the name is not <backbone>_<dataset>{SUFFIX} with a dataset of "
            f"{', '.join(DATASETS)}",
            hint=f"keep TV-GZSL's file name, e.g. vit_b32_clip_cub{SUFFIX}",
        )
    return dataset.lower(), check_backbone(backbone, where=str(path))


def split_candidates(features_file: Path, dataset: str, data_dir: Path | None) -> list[Path]:
    """Where the split file of ``dataset`` may be, in the order tried."""
    folder = dataset.upper()
    here = features_file.parent
    out = [
        here / "RN101" / folder / "att_splits.mat",
        here / folder / "att_splits.mat",
        here / "att_splits.mat",
    ]
    out.append(resolve_data_dir(data_dir) / folder / "att_splits.mat")
    return list(dict.fromkeys(out))


def _find_split(features_file: Path, dataset: str, data_dir: Path | None) -> Path:
    tried = split_candidates(features_file, dataset, data_dir)
    for cand in tried:
        if cand.is_file():
            return cand
    raise DataError(
        f"{features_file}: no att_splits.mat for {dataset.upper()} (looked in "
        f"{', '.join(str(p.parent) for p in tried)})",
        hint=f"put xlsa17's {dataset.upper()}/att_splits.mat in one of them, e.g. "
        f"with `zslbench data download --dataset {dataset}`",
    )


def assemble(
    name: str,
    dataset: str,
    backbone: str,
    features: Any,
    labels: Any,
    feat_file: Path,
    att_file: Path,
    fmt: str,
) -> ZSLData:
    """The dataset of a feature file and its split file, after the xlsa17 files' own checks."""
    feats = np.asarray(features)
    if feats.ndim != 2 or feats.dtype.kind not in "fiu":
        raise DataError(
            f"{feat_file}: 'features' is {feats.dtype} of shape {feats.shape}; it must "
            "be a 2-D array of numbers (images x dims)",
            hint="store one row per image",
        )
    labels = np.asarray(labels)
    if labels.ndim == 2 and 1 in labels.shape:
        labels = labels.reshape(-1)
    att = read_mat(att_file, _SPLIT_KEYS, ("val_loc", "allclasses_names"))
    a = np.asarray(att["att"], dtype=np.float64)
    finite = np.isfinite(feats) if feats.dtype.kind == "f" else np.ones(feats.shape, bool)
    bad = np.argwhere(~finite)
    fails = _checks.check_features(
        str(feat_file),
        feats.shape,
        int(labels.size),
        nonfinite=tuple(int(x) for x in bad[0]) if len(bad) else None,
        value_range=(float(feats.min()), float(feats.max()))
        if feats.size and finite.all()
        else None,
    )
    fails += _checks.check_attributes(str(att_file), a)
    n_classes = int(a.shape[1]) if a.ndim == 2 else 0
    if not any(f.check == "count" for f in fails):
        fails += _checks.check_labels(str(feat_file), labels, n_classes, str(att_file))
    idx: dict[str, np.ndarray] = {}
    for key in (*_splits.SPLIT_KEYS, "val_loc"):
        if key in att and not fails:
            arr, parse = _splits.index_array(str(att_file), key, att[key], int(feats.shape[0]))
            fails += parse
            if arr is not None:
                idx[key] = arr
    err = _checks.primary_error(fails)
    if err is not None:
        raise err
    labels0 = labels.astype(np.int64) - 1
    for key, arr in idx.items():
        if arr.min() < 1 or arr.max() > feats.shape[0]:
            raise DataError(
                f"{att_file}: {key} points outside the {feats.shape[0]} images of "
                f"{feat_file} (up to {int(arr.max())})",
                hint=f"{feat_file.name} and this split file do not belong together: "
                "use the split file of the benchmark the features were computed on",
            )
    val = idx.get("val_loc")
    out = np.ascontiguousarray(feats, dtype=np.float32)
    out.flags.writeable = False
    attributes = np.ascontiguousarray(a.T, dtype=np.float32)
    attributes.flags.writeable = False
    names = None
    if "allclasses_names" in att:
        try:
            names = [
                str(np.asarray(x).ravel()[0]) for x in np.asarray(att["allclasses_names"]).ravel()
            ]
        except (IndexError, TypeError, ValueError):
            names = None
    source = {
        "format": fmt,
        "dataset": dataset,
        "backbone": backbone,
        "features_path": str(feat_file),
        "features_sha256": sha256_file(feat_file),
        "att_splits_path": str(att_file),
        "att_splits_sha256": sha256_file(att_file),
    }
    return ZSLData(
        name=name,
        features=out,
        labels=labels0,
        attributes=attributes,
        trainval_idx=idx["trainval_loc"] - 1,
        test_seen_idx=idx["test_seen_loc"] - 1,
        test_unseen_idx=idx["test_unseen_loc"] - 1,
        val_classes=None if val is None else np.unique(labels0[val - 1]),
        source=source,
        class_names=names if names and len(names) == attributes.shape[0] else None,
        split_naming=_splits.SplitNaming(file=str(att_file), features_file=str(feat_file)),
        backbone=backbone,
    )


def read_tvgzsl(path: str | Path, data_dir: Path | None = None) -> ZSLData:
    """The dataset ``<dataset>@<backbone>`` of a TV-GZSL ``<backbone>_<dataset>_data.p``."""
    path = Path(path)
    dataset, backbone = parse_name(path)
    obj = read_pickle(path)
    features = as_array(obj["features"], "features", path)
    labels = as_array(obj["labels"], "labels", path)
    att_file = _find_split(path, dataset, data_dir)
    return assemble(
        f"{dataset}@{backbone}",
        dataset,
        backbone,
        features,
        labels,
        path,
        att_file,
        "tv-gzsl",
    )


def read_mat_features(path: str | Path) -> ZSLData:
    """The dataset ``<dataset>@<stem>`` of a ``.mat`` feature file in xlsa17's layout
    (``<DATASET>/<stem>.mat`` beside ``att_splits.mat``; ``features`` d x n, ``labels`` 1-based)."""
    path = Path(path)
    dataset = path.parent.name.lower()
    backbone = check_backbone(path.stem, where=str(path))
    res = read_mat(path, ("features", "labels"))
    return assemble(
        f"{dataset}@{backbone}",
        dataset,
        backbone,
        np.asarray(res["features"]).T,
        res["labels"],
        path,
        path.parent / "att_splits.mat",
        "xlsa17-layout",
    )


def _mat_claims(p: Path) -> bool:
    return (
        p.suffix.lower() == ".mat"
        and p.name != "att_splits.mat"
        and p.parent.name.lower() in DATASETS
        and (p.parent / "att_splits.mat").is_file()
    )


@hookimpl
def zslbench_open_dataset(location: str) -> DatasetSpec | None:
    """``--dataset data/vit_b32_clip_cub_data.p`` (TV-GZSL) or ``data/RN101/CUB/res101_finetuned.mat``."""
    p = Path(location).expanduser()
    if p.name.endswith(SUFFIX):
        dataset, backbone = parse_name(p)
        path = p.absolute()

        def load(data_dir: Path | None = None) -> ZSLData:
            return read_tvgzsl(path, data_dir)

        def missing(data_dir: Path | None = None) -> list[str]:
            if not path.is_file():
                return [f"{path} is missing: download it from TV-GZSL's feature folder"]
            if not any(c.is_file() for c in split_candidates(path, dataset, data_dir)):
                return [
                    f"no att_splits.mat for {dataset.upper()} beside {path} or in the data "
                    f"dir: `zslbench data download --dataset {dataset}` fetches it"
                ]
            return []
    elif _mat_claims(p):
        dataset, backbone = p.parent.name.lower(), check_backbone(p.stem, where=str(p))
        if backbone == BACKBONE:
            raise DataError(
                f"{p}: res101.mat is the benchmark's own feature set",
                hint=f"run it as --dataset {dataset} --data-dir {p.parent.parent}",
            )
        path = p.absolute()

        def load(data_dir: Path | None = None) -> ZSLData:
            return read_mat_features(path)

        missing = None  # type: ignore[assignment]
    else:
        return None
    return DatasetSpec(
        name=f"{dataset}@{backbone}",
        load=load,
        kind="real",
        description=f"{dataset.upper()} (xlsa17 split) with {backbone} features from {location}",
        missing=missing,
        benchmark=benchmark(dataset),
    )


__all__ = ["as_array", "read_mat_features", "read_pickle", "read_tvgzsl", "zslbench_open_dataset"]
