"""The split checks every dataset passes (``zslbench.data.checks`` runs them in the runner).

Why this exists: GZSL numbers are only comparable when every paper evaluates on the same images.
xlsa17 "Split V2.0" (Xian et al., TPAMI 2018) fixed the earlier release, where test-seen images
were also training images; a leaky copy inflates the seen accuracy silently. :func:`check_split`
runs the Split V2.0 invariants on the three index sets of any dataset and returns one
:class:`Failure` per failed check, each one line that names the file (or dataset) and the check.

Checks come in two severities (:attr:`Failure.structural`):

* **structural** - the data cannot be evaluated at all (an index outside ``1..N``, an empty split,
  a duplicate index). Always refused.
* **policy** - the data can be evaluated but the numbers would not be comparable with the
  literature (overlapping splits, unseen classes among the training classes). Refused unless the
  user passes ``--allow-nonstandard-split`` (:data:`OVERRIDE_FLAG`), in which case every record is
  marked non-standard with the reason.

The split fingerprint (:func:`split_fingerprint`) is a hash of the three *sorted* 1-based index
sets, so a file re-saved by another tool (other header, key order, dtype, extra keys) still matches,
while moving a single image between sets does not.

Format-specific checks (the xlsa17 files' 1-based labels, their ResNet-101 dimension, the registry
of known files) belong to the format's plugin (``zslbench_plugins.xlsa17.checks``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The three evaluation index sets, in the order the fingerprint hashes them.
SPLIT_KEYS = ("trainval_loc", "test_seen_loc", "test_unseen_loc")
#: Prefix of the fingerprinted text; bump it if the definition ever changes.
FINGERPRINT_SCHEME = "zslbench-split-fingerprint-v1"
#: The flag that overrides policy failures, named in every policy error's hint.
OVERRIDE_FLAG = "--allow-nonstandard-split"


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


def format_value(value: Any) -> str:
    """A number as it is written in the file: ``3`` for an integral value, ``1e+20`` or ``2.5``
    otherwise (numpy's shortest repr for the value's own dtype, never a wrapped-around integer)."""
    v = np.asarray(value).ravel()[0] if np.ndim(value) else np.asarray(value)[()]
    if isinstance(v, np.bool_):
        return str(bool(v))
    if isinstance(v, np.integer):
        return str(int(v))
    if isinstance(v, np.floating) and np.isfinite(v) and float(v).is_integer() and abs(v) < 1e16:
        return str(int(v))
    return str(v)


def format_examples(values: np.ndarray, k: int = 3) -> str:
    """The first ``k`` values, each as written in the file (:func:`format_value`), for messages."""
    arr = np.asarray(values).ravel()
    vals = [format_value(v) for v in arr[:k]]
    more = ", ..." if arr.size > k else ""
    return ", ".join(vals) + more


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def index_array(
    file: str, key: str, values: Any, n_images: int
) -> tuple[np.ndarray | None, list[Failure]]:
    """``values`` as an int64 vector of indices, or None and the structural failure that stops it:
    empty, not numbers, not integral, or too large to be an index (a value beyond any image count
    would wrap around when cast to int64). A loader parses a file's index sets with it; where the
    indices point (range, duplicates, policy) is :func:`check_split`'s."""
    arr = np.asarray(values).ravel()
    if arr.size == 0:
        return None, [
            Failure(
                file,
                "empty",
                f"{key} is empty",
                "every split needs at least one image; re-download the file",
                True,
            )
        ]
    if arr.dtype.kind not in "iufb":
        return None, [
            Failure(
                file,
                "index",
                f"{key} holds {arr.dtype} values, not indices",
                "store the indices as integers",
                True,
            )
        ]
    if arr.dtype.kind == "f" and (
        not np.all(np.isfinite(arr)) or not np.array_equal(arr, np.round(arr))
    ):
        return None, [
            Failure(file, "index", f"{key} holds non-integer indices", "re-download the file", True)
        ]
    # Report such a value here, as it is written in the file (int64 would make 1e20 -2**63).
    huge = (arr < -(2**53)) | (arr > 2**53)
    if np.any(huge):
        bad = arr[(arr < 1) | (arr > n_images)]
        return None, [
            Failure(
                file,
                "index-range",
                f"{key} has {_count(bad.size, 'index', 'indices')} "
                f"outside 1..{n_images} (e.g. {format_examples(arr[huge])})",
                "the split file and the features do not belong together",
                True,
            )
        ]
    # uint16 on disk: widen before any arithmetic so that 0 - 1 cannot wrap around.
    return arr.astype(np.int64), []


@dataclass(frozen=True)
class SplitNaming:
    """How a dataset's format lays out its index sets, for :func:`check_split`: the file and keys
    its messages name, the base of the indices and class ids they show, the fixes they suggest,
    and whether the format puts every image in a set.

    The arrays passed in are always 1-based; only the messages follow the naming, so that a
    dataset read from an xlsa17 file hears about ``trainval_loc`` in its ``att_splits.mat`` and
    1-based indices, and any other dataset about its 0-based ``trainval_idx``.
    """

    keys: tuple[str, str, str] = SPLIT_KEYS
    base: int = 1
    #: The fix of a policy failure (the override flag is added).
    fix: str = "use the official V2.0 att_splits.mat"
    #: The fix of a damaged index set.
    refetch: str = "re-download the file"
    #: The file that holds the index sets (and the class semantics), named by the runner's
    #: messages about them ("": the dataset's name).
    file: str = ""
    #: The file that holds the features, named by messages about them ("": as ``file``).
    features_file: str = ""
    #: Every image is in one of the three sets (xlsa17's files): an image in none is a policy
    #: failure. Not a contract every dataset has (a file of one's own may hold spare images).
    complete: bool = True


#: xlsa17's ``att_splits.mat``: ``*_loc`` keys, 1-based.
XLSA17_NAMING = SplitNaming()
#: A loaded dataset (``ZSLData``): ``*_idx`` index sets, 0-based.
DATASET_NAMING = SplitNaming(
    keys=("trainval_idx", "test_seen_idx", "test_unseen_idx"),
    base=0,
    fix="fix the dataset's index sets",
    refetch="fix the dataset's loader or file",
    complete=False,
)


def check_split(
    file: str,
    n_images: int,
    labels0: np.ndarray | None,
    trainval: Any,
    test_seen: Any,
    test_unseen: Any,
    *,
    train: Any = None,
    val: Any = None,
    naming: SplitNaming = XLSA17_NAMING,
) -> list[Failure]:
    """Split V2.0 invariants on 1-based index arrays (as stored in ``att_splits.mat``).

    ``labels0`` are the 0-based labels of all ``n_images`` images (None skips the label checks,
    e.g. when only the split file is available). Structural: non-empty, integral, every index in
    ``1..n_images``, no duplicate within a set. Policy (Split V2.0): the three sets pairwise disjoint,
    test-seen classes among the trainval classes, no test-unseen class among the trainval classes,
    every image in one of the sets (when ``naming.complete``), and the official validation classes
    among the seen classes. ``naming`` says how the messages name the sets and number the indices (:class:`SplitNaming`).
    """
    base, shift = naming.base, naming.base - 1
    name = dict(zip(SPLIT_KEYS, naming.keys, strict=True))
    policy_fix = f"{naming.fix} or pass {OVERRIDE_FLAG}"
    out: list[Failure] = []
    sets: dict[str, np.ndarray] = {}
    for key, values in zip(SPLIT_KEYS, (trainval, test_seen, test_unseen), strict=True):
        arr, fails = index_array(file, name[key], values, n_images)
        out += fails
        if arr is not None:
            sets[key] = arr
    optional: dict[str, np.ndarray] = {}
    for key, values in (("train_loc", train), ("val_loc", val)):
        if values is None:
            continue
        arr, fails = index_array(file, key, values, n_images)
        out += fails
        if arr is not None:
            optional[key] = arr
    out = [
        f
        if f.check != "empty"
        else Failure(
            f.file,
            f.check,
            f.message,
            f"every split needs at least one image; {naming.refetch}",
            True,
        )
        for f in out
    ]
    for key, arr in {**sets, **optional}.items():
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 1 or hi > n_images:
            bad = arr[(arr < 1) | (arr > n_images)]
            if lo == 0 and base == 1:
                hint = (
                    "indices look 0-based (index 0 is present); xlsa17 indices are 1-based "
                    "(add 1 to every index)"
                )
            elif hi == n_images + 1:
                hint = (
                    f"index {n_images + shift + 1} is one past the {n_images} images: off by one?"
                    + (" (indices are 0-based)" if base == 0 else "")
                )
            else:
                hint = (
                    "the split file and res101.mat do not belong together"
                    if base == 1
                    else f"indices are {base}-based rows of the features"
                )
            out.append(
                Failure(
                    file,
                    "index-range",
                    f"{name.get(key, key)} has "
                    f"{_count(bad.size, 'index', 'indices')} outside "
                    f"{base}..{n_images + shift} (e.g. {format_examples(bad + shift)})",
                    hint,
                    True,
                )
            )
            continue
        uniq, counts = np.unique(arr, return_counts=True)
        if np.any(counts > 1):
            dup = uniq[counts > 1]
            out.append(
                Failure(
                    file,
                    "duplicates",
                    f"{name.get(key, key)} lists "
                    f"{_count(dup.size, 'index', 'indices')} more than once "
                    f"(e.g. {format_examples(dup + shift)})",
                    f"each image may appear once; {naming.refetch}",
                    True,
                )
            )
    if any(f.structural for f in out) or len(sets) < 3:
        return out

    tv, ts, tu = (sets[k] for k in SPLIT_KEYS)
    for (ka, a), (kb, b) in (
        ((SPLIT_KEYS[0], tv), (SPLIT_KEYS[1], ts)),
        ((SPLIT_KEYS[0], tv), (SPLIT_KEYS[2], tu)),
        ((SPLIT_KEYS[1], ts), (SPLIT_KEYS[2], tu)),
    ):
        common = np.intersect1d(a, b)
        if common.size:
            what = (
                "a V1-style or leaky split: test images are training images"
                if ka == "trainval_loc"
                else "the test sets overlap"
            )
            out.append(
                Failure(
                    file,
                    "disjoint",
                    f"Split V2.0 check 'disjoint' failed: {common.size} "
                    f"{name[kb]} indices are also in {name[ka]} "
                    f"(e.g. {format_examples(common + shift)}), {what}",
                    policy_fix,
                    False,
                )
            )
    if labels0 is not None:
        lab = np.asarray(labels0)
        tv_cls = np.unique(lab[tv - 1])
        extra = np.setdiff1d(np.unique(lab[ts - 1]), tv_cls)
        if extra.size:
            out.append(
                Failure(
                    file,
                    "seen-classes",
                    "Split V2.0 check 'seen-classes' failed: "
                    f"{name['test_seen_loc']} has classes without trainval images (e.g. "
                    f"class {format_examples(extra + base)}, {base}-based)",
                    policy_fix,
                    False,
                )
            )
        leak = np.intersect1d(np.unique(lab[tu - 1]), tv_cls)
        if leak.size:
            out.append(
                Failure(
                    file,
                    "unseen-classes",
                    "Split V2.0 check 'unseen-classes' failed: "
                    f"{leak.size} test-unseen classes have trainval images (e.g. class "
                    f"{format_examples(leak + base)}, {base}-based): unseen classes are "
                    "not unseen",
                    policy_fix,
                    False,
                )
            )
        if "val_loc" in optional:
            val_cls = np.unique(lab[optional["val_loc"] - 1])
            outside = np.setdiff1d(val_cls, tv_cls)
            if outside.size:
                out.append(
                    Failure(
                        file,
                        "val-classes",
                        f"val_loc has classes without trainval images "
                        f"(e.g. class {format_examples(outside + base)}, {base}-based): "
                        "validation would tune on unseen classes",
                        policy_fix,
                        False,
                    )
                )
    used = np.concatenate([tv, ts, tu])
    if naming.complete and np.unique(used).size < n_images:
        unused = np.setdiff1d(np.arange(1, n_images + 1), used)
        hint = (
            f"only image {n_images} is unused: are the indices 0-based with image 0 dropped?"
            if unused.size == 1 and unused[0] == n_images and base == 1
            else policy_fix
        )
        out.append(
            Failure(
                file,
                "coverage",
                f"{unused.size} of the {n_images} images are in no split "
                f"(e.g. {format_examples(unused + shift)})",
                hint,
                False,
            )
        )
    return out


__all__ = [
    "DATASET_NAMING",
    "FINGERPRINT_SCHEME",
    "Failure",
    "OVERRIDE_FLAG",
    "SPLIT_KEYS",
    "SplitNaming",
    "XLSA17_NAMING",
    "check_split",
    "index_array",
    "format_examples",
    "format_value",
    "split_fingerprint",
]
