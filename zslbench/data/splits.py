"""Split V2.0 enforcement: every check the xlsa17 data must pass before any training.

Why this exists: GZSL numbers are only comparable when every paper evaluates on the same images.
xlsa17 "Split V2.0" (Xian et al., TPAMI 2018) fixed the earlier release, where test-seen images
were also training images. Copies of ``att_splits.mat`` circulate in many repositories, some
re-saved, some modified; a leaky copy inflates the seen accuracy silently. So the loader runs the
checks below on the arrays it read and *refuses* a split that fails any of them, with one line
that names the file and the check.

Checks come in two severities (:class:`Failure.structural`):

* **structural** — the data cannot be evaluated at all (an index outside ``1..N``, a NaN feature,
  an empty split, labels that do not index the attribute matrix, ...). Always refused.
* **policy** — the data can be evaluated but the numbers would not be comparable with the
  literature (overlapping splits, unseen classes among the training classes, a different feature
  extractor, an index set that is not the official one). Refused unless the user passes
  ``allow_nonstandard`` (``--allow-nonstandard-split``), in which case the data loads with
  ``standard=False`` and the reason is recorded in every result.

The content fingerprint (:func:`split_fingerprint`) is a hash of the three *sorted* 1-based index
sets, so a file re-saved by another tool (other MATLAB header, other key order, other dtype, extra
keys) still matches, while moving a single image between sets does not. The official values for
the five datasets live in ``registry.json``, computed from the original files.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from zslbench.errors import DataError, SplitError

#: The three evaluation index sets, in the order the fingerprint hashes them.
SPLIT_KEYS = ("trainval_loc", "test_seen_loc", "test_unseen_loc")
#: Prefix of the fingerprinted text; bump it if the definition ever changes.
FINGERPRINT_SCHEME = "zslbench-split-fingerprint-v1"
#: The flag that overrides policy failures, named in every policy error's hint.
OVERRIDE_FLAG = "--allow-nonstandard-split"


@functools.lru_cache(maxsize=1)
def _read_registry_file() -> str:
    return resources.files("zslbench.data").joinpath("registry.json").read_text(encoding="utf-8")


def load_registry() -> dict[str, Any]:
    """The registry of known xlsa17 files (``zslbench/data/registry.json``), freshly parsed.

    A fresh dict on every call so that no caller can mutate the shared copy; tests replace this
    function to register a miniature dataset.
    """
    return json.loads(_read_registry_file())


def registry_entry(name: str) -> dict[str, Any]:
    """The registry entry of dataset ``name`` (lower case CLI name, e.g. ``"awa2"``)."""
    return load_registry()["datasets"][name]


def split_fingerprint(trainval: Any, test_seen: Any, test_unseen: Any) -> str:
    """sha256 of the three sorted 1-based index *sets*, as text.

    Arguments are the ``trainval_loc``, ``test_seen_loc`` and ``test_unseen_loc`` arrays exactly as
    stored in ``att_splits.mat`` (1-based; pass ``idx + 1`` for 0-based arrays). Any shape and
    integer or integral float dtype is accepted: the value depends only on which images are in
    which set, so a re-saved file with the same indices has the same fingerprint.

    The hashed text is, in UTF-8::

        zslbench-split-fingerprint-v1
        trainval_loc:<sorted unique indices, comma-separated decimal>
        test_seen_loc:<...>
        test_unseen_loc:<...>

    (each line ending in ``\\n``), so it can be recomputed without zslbench.
    """
    lines = [FINGERPRINT_SCHEME]
    for key, values in zip(SPLIT_KEYS, (trainval, test_seen, test_unseen), strict=True):
        arr = np.unique(np.asarray(values).astype(np.int64).ravel())
        lines.append(f"{key}:" + ",".join(map(str, arr.tolist())))
    return hashlib.sha256(("\n".join(lines) + "\n").encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Failure:
    """One failed check: which file, which check, what is wrong, how to fix it."""

    file: str
    check: str
    message: str
    hint: str
    structural: bool

    def line(self) -> str:
        return f"{self.file}: {self.message}"


def _examples(values: np.ndarray, k: int = 3) -> str:
    vals = [str(int(v)) if float(v).is_integer() else f"{float(v):g}"
            for v in np.asarray(values).ravel()[:k]]
    more = ", ..." if np.asarray(values).size > k else ""
    return ", ".join(vals) + more


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def check_features(file: str, shape: tuple[int, ...], n_labels: int, *, expected_dim: int | None,
                   nonfinite: tuple[int, int] | None) -> list[Failure]:
    """Features (N, d) against the labels and the dataset's feature dimension.

    ``shape`` is the (N, d) shape after conversion, ``nonfinite`` the (image, dim) 0-based position
    of the first NaN/Inf or None. A dimension other than ``expected_dim`` is a policy failure (a
    user may knowingly run other features); a truncated dimension is reported with the expected one.
    """
    out: list[Failure] = []
    n, d = int(shape[0]), int(shape[1])
    if n != n_labels:
        out.append(Failure(file, "count",
                           f"features hold {n} images but labels hold {n_labels}: features/labels "
                           f"count mismatch", "the file is truncated or its keys come from different "
                           "files; re-download it", True))
    if nonfinite is not None:
        i, j = nonfinite
        out.append(Failure(file, "finite", f"features contain NaN or Inf (first at image {i + 1}, "
                           f"dimension {j + 1}, 1-based)", "the file is corrupt; re-download it or "
                           "re-extract the features", True))
    if expected_dim is not None and d != expected_dim:
        out.append(Failure(file, "feature-dim",
                           f"features are {d}-d but this dataset's xlsa17 ResNet-101 features are "
                           f"{expected_dim}-d", f"use the official res101.mat, or pass {OVERRIDE_FLAG} "
                           "to run other features as non-comparable", False))
    return out


def check_labels(file: str, labels: np.ndarray, n_classes: int, att_file: str) -> list[Failure]:
    """1-based integral labels that index the ``n_classes`` columns of ``att``.

    Every class of ``att`` must have an image: ``att`` is attr x classes, and the number of classes
    is the largest label, so a column count that differs means the two files do not belong together.
    """
    labels = np.asarray(labels).ravel()
    if labels.size == 0:
        return [Failure(file, "labels", "labels are empty", "re-download the file", True)]
    if not np.all(np.isfinite(labels)) or not np.array_equal(labels, np.round(labels)):
        bad = labels[~np.isfinite(labels) | (labels != np.round(labels))]
        return [Failure(file, "labels", f"labels must be integer class numbers; found {_examples(bad)}",
                        "re-download the file", True)]
    lab = labels.astype(np.int64)
    lo, hi = int(lab.min()), int(lab.max())
    if lo < 1:
        hint = ("labels look 0-based; xlsa17 labels are 1-based (add 1)" if lo == 0
                else "labels must be 1-based class numbers")
        return [Failure(file, "labels-range", f"label {lo} is out of range 1..{n_classes}", hint, True)]
    if hi > n_classes:
        return [Failure(file, "labels-range",
                        f"label {hi} is out of range 1..{n_classes} ({att_file} att has {n_classes} "
                        f"class columns): the attribute matrix does not match the number of classes",
                        "use the att_splits.mat and res101.mat of the same dataset", True)]
    if hi < n_classes:
        return [Failure(att_file, "attributes",
                        f"att has {n_classes} class columns but the labels in {file} only reach {hi}: "
                        "the attribute matrix does not match the number of classes",
                        "use the att_splits.mat and res101.mat of the same dataset", True)]
    return []


def check_attributes(file: str, att_classes_by_attr: np.ndarray, *,
                     expected_dim: int | None = None) -> list[Failure]:
    """``att`` (attr x classes): finite, and no class whose attribute vector is all zeros.

    An all-zero class vector cannot be L2-normalised and makes the class indistinguishable, which
    would quietly yield wrong numbers, so it is structural. A different attribute dimension than
    the dataset's is a policy failure.
    """
    att = np.asarray(att_classes_by_attr)
    out: list[Failure] = []
    if att.ndim != 2 or att.size == 0:
        return [Failure(file, "attributes", f"att must be a non-empty attr x classes matrix, got shape "
                        f"{att.shape}", "re-download the file", True)]
    if not np.all(np.isfinite(att)):
        cls = np.where(~np.all(np.isfinite(att), axis=0))[0]
        out.append(Failure(file, "attributes", f"att contains NaN or Inf (class {int(cls[0]) + 1}, "
                           "1-based)", "re-download the file", True))
    else:
        zero = np.where(~np.any(att != 0, axis=0))[0]
        if zero.size:
            out.append(Failure(file, "attributes",
                               f"att has an all-zero attribute row for class {_examples(zero + 1)} "
                               "(1-based)", "a class needs a non-zero attribute vector; re-download "
                               "the file", True))
    if expected_dim is not None and att.shape[0] != expected_dim:
        out.append(Failure(file, "attribute-dim", f"att has {att.shape[0]} attributes but this "
                           f"dataset has {expected_dim}", f"use the official att_splits.mat or pass "
                           f"{OVERRIDE_FLAG}", False))
    return out


def _as_index_array(file: str, key: str, values: Any) -> tuple[np.ndarray | None, list[Failure]]:
    arr = np.asarray(values).ravel()
    if arr.size == 0:
        return None, [Failure(file, "empty", f"{key} is empty", "every split needs at least one "
                              "image; re-download the file", True)]
    if arr.dtype.kind not in "iub" and (not np.all(np.isfinite(arr))
                                        or not np.array_equal(arr, np.round(arr))):
        return None, [Failure(file, "index", f"{key} holds non-integer indices", "re-download the file",
                              True)]
    # uint16 on disk: widen before any arithmetic so that 0 - 1 cannot wrap around.
    return arr.astype(np.int64), []


def check_split(file: str, n_images: int, labels0: np.ndarray | None, trainval: Any, test_seen: Any,
                test_unseen: Any, *, train: Any = None, val: Any = None) -> list[Failure]:
    """Split V2.0 invariants on 1-based index arrays (as stored in ``att_splits.mat``).

    ``labels0`` are the 0-based labels of all ``n_images`` images (None skips the label checks,
    e.g. when only the split file is available). Structural: non-empty, integral, every index in
    ``1..n_images``, no duplicate within a set. Policy (Split V2.0): the three sets pairwise disjoint,
    test-seen classes among the trainval classes, no test-unseen class among the trainval classes,
    every image in one of the sets, and the official validation classes among the seen classes.
    """
    out: list[Failure] = []
    sets: dict[str, np.ndarray] = {}
    for key, values in zip(SPLIT_KEYS, (trainval, test_seen, test_unseen), strict=True):
        arr, fails = _as_index_array(file, key, values)
        out += fails
        if arr is not None:
            sets[key] = arr
    optional: dict[str, np.ndarray] = {}
    for key, values in (("train_loc", train), ("val_loc", val)):
        if values is None:
            continue
        arr, fails = _as_index_array(file, key, values)
        out += fails
        if arr is not None:
            optional[key] = arr
    for key, arr in {**sets, **optional}.items():
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 1 or hi > n_images:
            bad = arr[(arr < 1) | (arr > n_images)]
            if lo == 0:
                hint = ("indices look 0-based (index 0 is present); xlsa17 indices are 1-based "
                        "(add 1 to every index)")
            elif hi == n_images + 1:
                hint = f"index {n_images + 1} is one past the {n_images} images: off by one?"
            else:
                hint = "the split file and res101.mat do not belong together"
            out.append(Failure(file, "index-range", f"{key} has {_count(bad.size, 'index', 'indices')} "
                               f"outside 1..{n_images} "
                               f"(e.g. {_examples(bad)})", hint, True))
            continue
        uniq, counts = np.unique(arr, return_counts=True)
        if np.any(counts > 1):
            dup = uniq[counts > 1]
            out.append(Failure(file, "duplicates", f"{key} lists {_count(dup.size, 'index', 'indices')} "
                               "more than once "
                               f"(e.g. {_examples(dup)})", "each image may appear once; re-download "
                               "the file", True))
    if any(f.structural for f in out) or len(sets) < 3:
        return out

    tv, ts, tu = (sets[k] for k in SPLIT_KEYS)
    for (ka, a), (kb, b) in (((SPLIT_KEYS[0], tv), (SPLIT_KEYS[1], ts)),
                             ((SPLIT_KEYS[0], tv), (SPLIT_KEYS[2], tu)),
                             ((SPLIT_KEYS[1], ts), (SPLIT_KEYS[2], tu))):
        common = np.intersect1d(a, b)
        if common.size:
            what = ("a V1-style or leaky split: test images are training images"
                    if ka == "trainval_loc" else "the test sets overlap")
            out.append(Failure(file, "disjoint", f"Split V2.0 check 'disjoint' failed: {common.size} "
                               f"{kb} indices are also in {ka} (e.g. {_examples(common)}), {what}",
                               f"use the official V2.0 att_splits.mat or pass {OVERRIDE_FLAG}", False))
    if labels0 is not None:
        lab = np.asarray(labels0)
        tv_cls = np.unique(lab[tv - 1])
        extra = np.setdiff1d(np.unique(lab[ts - 1]), tv_cls)
        if extra.size:
            out.append(Failure(file, "seen-classes", "Split V2.0 check 'seen-classes' failed: "
                               f"test_seen_loc has classes without trainval images (e.g. class "
                               f"{_examples(extra + 1)}, 1-based)", f"use the official V2.0 "
                               f"att_splits.mat or pass {OVERRIDE_FLAG}", False))
        leak = np.intersect1d(np.unique(lab[tu - 1]), tv_cls)
        if leak.size:
            out.append(Failure(file, "unseen-classes", "Split V2.0 check 'unseen-classes' failed: "
                               f"{leak.size} test-unseen classes have trainval images (e.g. class "
                               f"{_examples(leak + 1)}, 1-based): unseen classes are not unseen",
                               f"use the official V2.0 att_splits.mat or pass {OVERRIDE_FLAG}", False))
        if "val_loc" in optional:
            val_cls = np.unique(lab[optional["val_loc"] - 1])
            outside = np.setdiff1d(val_cls, tv_cls)
            if outside.size:
                out.append(Failure(file, "val-classes", f"val_loc has classes without trainval images "
                                   f"(e.g. class {_examples(outside + 1)}, 1-based): validation would "
                                   "tune on unseen classes", f"use the official V2.0 att_splits.mat "
                                   f"or pass {OVERRIDE_FLAG}", False))
    used = np.concatenate([tv, ts, tu])
    if np.unique(used).size < n_images:
        unused = np.setdiff1d(np.arange(1, n_images + 1), used)
        hint = (f"only image {n_images} is unused: are the indices 0-based with image 0 dropped?"
                if unused.size == 1 and unused[0] == n_images
                else f"use the official V2.0 att_splits.mat or pass {OVERRIDE_FLAG}")
        out.append(Failure(file, "coverage", f"{unused.size} of the {n_images} images are in no split "
                           f"(e.g. {_examples(unused)})", hint, False))
    return out


def check_registry(file: str, name: str, entry: dict[str, Any], *, n_images: int, n_classes: int,
                   n_seen: int | None, n_unseen: int | None, fingerprint: str) -> list[Failure]:
    """Counts and fingerprint against the official V2.0 values in ``registry.json`` (policy)."""
    out: list[Failure] = []
    expect = {"n_images": n_images, "n_classes": n_classes, "n_seen": n_seen, "n_unseen": n_unseen}
    wrong = [f"{k} {v} (official {entry[k]})" for k, v in expect.items()
             if v is not None and entry.get(k) is not None and int(entry[k]) != int(v)]
    if wrong:
        out.append(Failure(file, "counts", f"{name} counts differ from the official xlsa17: "
                           + ", ".join(wrong), f"use the official files or pass {OVERRIDE_FLAG}", False))
    official = entry.get("split_fingerprint")
    if official and fingerprint != official:
        out.append(Failure(file, "fingerprint",
                           f"Split V2.0 check 'fingerprint' failed: the index sets are not the official "
                           f"{name} V2.0 ones (fingerprint {fingerprint[:12]}, official {official[:12]})",
                           f"use the official att_splits.mat (zslbench data download --dataset {name}) "
                           f"or pass {OVERRIDE_FLAG}", False))
    return out


def primary_error(failures: Sequence[Failure], *, allow_nonstandard: bool = False) -> DataError | None:
    """The one error that stands for ``failures`` (None when they do not stop a load).

    The first structural failure, else (unless ``allow_nonstandard``) the first policy failure;
    the other failed checks are named in parentheses so that one line tells the whole story.
    """
    structural = [f for f in failures if f.structural]
    if structural:
        return _error(structural[0], [f.check for f in failures if f is not structural[0]])
    if failures and not allow_nonstandard:
        return _error(failures[0], [f.check for f in failures[1:]])
    return None


def enforce(failures: Sequence[Failure], *, allow_nonstandard: bool) -> tuple[bool, str]:
    """Turn check results into a decision: ``(standard, reason)`` or a raised error.

    The first structural failure is always raised. Policy failures raise the first one unless
    ``allow_nonstandard``; then the data is non-standard and ``reason`` lists every failed check.
    The error is a :class:`SplitError` for split/attribute checks, a :class:`DataError` otherwise.
    """
    err = primary_error(failures, allow_nonstandard=allow_nonstandard)
    if err is not None:
        raise err
    if failures:
        return False, "; ".join(f.line() for f in failures)
    return True, ""


_DATA_CHECKS = {"count", "finite", "feature-dim", "labels", "labels-range", "keys", "readable"}


def _error(failure: Failure, others: list[str]) -> DataError:
    message = failure.line()
    if others:
        message += f" (also failing: {', '.join(dict.fromkeys(others))})"
    cls = DataError if failure.check in _DATA_CHECKS else SplitError
    err = cls(message, hint=failure.hint)
    err.check = failure.check  # type: ignore[attr-defined]
    err.structural = failure.structural  # type: ignore[attr-defined]
    return err


__all__ = ["Failure", "SPLIT_KEYS", "check_attributes", "check_features", "check_labels",
           "check_registry", "check_split", "enforce", "primary_error", "load_registry", "registry_entry",
           "split_fingerprint"]
