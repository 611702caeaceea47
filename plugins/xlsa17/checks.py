"""The xlsa17 files' own checks, and the registry of known xlsa17 files (``registry.json``).

Every dataset passes the core contract in the runner (``zslbench.data.checks``: structure, the
split checks of :func:`zslbench.data.splits.check_split`, once per load, and the match with the
benchmark its plugin declares). What is here is what only the xlsa17 *files* have: features,
1-based labels that index the columns of ``att``, and an ``att`` as stored. The loader runs these
on the arrays it read, so that a problem is reported with the file that holds it (``res101.mat``
or ``att_splits.mat``) and the fix; every failure here is structural (the data cannot be read as a
dataset at all).

``registry.json`` lists the known files and, per dataset, its identity as a published benchmark:
the split fingerprint and the other pins that ``zslbench_plugins.xlsa17.loader.benchmark``
declares to the runner (:class:`zslbench.data.dataset.Benchmark`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from zslbench.data.splits import Failure, format_examples, format_value
from zslbench.errors import DataError, SplitError


@functools.lru_cache(maxsize=1)
def _read_registry_file() -> str:
    return (
        resources.files("zslbench_plugins.xlsa17")
        .joinpath("registry.json")
        .read_text(encoding="utf-8")
    )


def load_registry() -> dict[str, Any]:
    """The registry of known xlsa17 files (``registry.json`` beside this module), freshly parsed.

    A fresh dict on every call so that no caller can mutate the shared copy; tests replace this
    function to register a miniature dataset.
    """
    return json.loads(_read_registry_file())


def registry_entry(name: str) -> dict[str, Any]:
    """The registry entry of dataset ``name`` (lower case CLI name, e.g. ``"awa2"``)."""
    return load_registry()["datasets"][name]


def check_features(
    file: str,
    shape: tuple[int, ...],
    n_labels: int,
    *,
    nonfinite: tuple[int, int] | None,
    beyond_float32: tuple[int, int, str] | None = None,
    stored_class: str | None = None,
    value_range: tuple[float, float] | list[float] | None = None,
) -> list[Failure]:
    """Features (N, d) as stored, against the labels.

    ``shape`` is the (N, d) shape after conversion, ``nonfinite`` the (image, dim) 0-based position
    of the first NaN/Inf or None, ``beyond_float32`` the position and value (as written) of the
    first finite value too large for float32, ``stored_class`` the MATLAB class in the file,
    ``value_range`` (min, max) of the values. Logical (bool), non-finite, out-of-range and constant
    features are structural, with the same words as the runner's contract
    (``zslbench.data.checks``) but naming the file. (A dimension other than the benchmark's is the
    runner's policy check: a user may knowingly run other features.)
    """
    out: list[Failure] = []
    n = int(shape[0])
    if n != n_labels:
        out.append(
            Failure(
                file,
                "count",
                f"features hold {n} images but labels hold {n_labels}: features/labels "
                f"count mismatch",
                "the file is truncated or its keys come from different files; re-download it",
                True,
            )
        )
    if stored_class == "logical":
        out.append(
            Failure(
                file,
                "dtype",
                "features are MATLAB logical (bool) values; they must be real numbers",
                "store them as single or double (xlsa17's res101.mat "
                "holds double ResNet-101 activations); re-download it",
                True,
            )
        )
    if nonfinite is not None:
        i, j = nonfinite
        out.append(
            Failure(
                file,
                "finite",
                f"features contain NaN or Inf (first at image {i + 1}, dimension {j + 1}, 1-based)",
                "the file is corrupt; re-download it or re-extract the features",
                True,
            )
        )
    if beyond_float32 is not None:
        i, j, value = beyond_float32
        out.append(
            Failure(
                file,
                "float32-range",
                f"feature value {value} (image {int(i) + 1}, "
                f"dimension {int(j) + 1}, 1-based) does not fit in float32, which every "
                "method computes in",
                "the file is corrupt or holds no activations; "
                "re-download it or re-extract the features",
                True,
            )
        )
    if stored_class != "logical" and value_range is not None and value_range[0] == value_range[1]:
        out.append(
            Failure(
                file,
                "constant",
                f"every feature value is "
                f"{format_value(np.float32(value_range[0]))}: the features are constant",
                "the feature file is empty or was not written; re-download it or "
                "re-extract the features",
                True,
            )
        )
    return out


def check_labels(file: str, labels: np.ndarray, n_classes: int, att_file: str) -> list[Failure]:
    """1-based integral labels that index the ``n_classes`` columns of ``att``.

    Every class of ``att`` must have an image: ``att`` is attr x classes, and the number of classes
    is the largest label, so a column count that differs means the two files do not belong together.
    Values are compared as stored and reported as written (``1e+20``), never after a cast to
    int64, which would wrap a huge value around.
    """
    labels = np.asarray(labels).ravel()
    if labels.size == 0:
        return [Failure(file, "labels", "labels are empty", "re-download the file", True)]
    if labels.dtype.kind == "f" and (
        not np.all(np.isfinite(labels)) or not np.array_equal(labels, np.round(labels))
    ):
        bad = labels[~np.isfinite(labels) | (labels != np.round(labels))]
        return [
            Failure(
                file,
                "labels",
                f"labels must be integer class numbers; found {format_examples(bad)}",
                "re-download the file",
                True,
            )
        ]
    lo, hi = labels.min(), labels.max()
    if lo < 1:
        hint = (
            "labels look 0-based; xlsa17 labels are 1-based (add 1)"
            if lo == 0
            else "labels must be 1-based class numbers"
        )
        return [
            Failure(
                file,
                "labels-range",
                f"label {format_value(lo)} is out of range 1..{n_classes}",
                hint,
                True,
            )
        ]
    if hi > n_classes:
        return [
            Failure(
                file,
                "labels-range",
                f"label {format_value(hi)} is out of range 1..{n_classes} ({att_file} att has "
                f"{n_classes} class columns): the attribute matrix does not match the number "
                "of classes",
                "use the att_splits.mat and res101.mat of the same dataset",
                True,
            )
        ]
    if hi < n_classes:
        return [
            Failure(
                att_file,
                "attributes",
                f"att has {n_classes} class columns but the labels in {file} only reach "
                f"{format_value(hi)}: the attribute matrix does not match the number of "
                "classes",
                "use the att_splits.mat and res101.mat of the same dataset",
                True,
            )
        ]
    return []


def check_attributes(file: str, att_classes_by_attr: np.ndarray) -> list[Failure]:
    """``att`` (attr x classes): finite, and no class whose attribute vector is all zeros.

    An all-zero class vector cannot be L2-normalised and makes the class indistinguishable, which
    would quietly yield wrong numbers, so it is structural. (A different attribute dimension
    than the benchmark's is the runner's policy check.)
    """
    att = np.asarray(att_classes_by_attr)
    out: list[Failure] = []
    if att.ndim != 2 or att.size == 0:
        return [
            Failure(
                file,
                "attributes",
                f"att must be a non-empty attr x classes matrix, got shape {att.shape}",
                "re-download the file",
                True,
            )
        ]
    if not np.all(np.isfinite(att)):
        cls = np.where(~np.all(np.isfinite(att), axis=0))[0]
        out.append(
            Failure(
                file,
                "attributes",
                f"att contains NaN or Inf (class {int(cls[0]) + 1}, 1-based)",
                "re-download the file",
                True,
            )
        )
    else:
        zero = np.where(~np.any(att != 0, axis=0))[0]
        if zero.size:
            out.append(
                Failure(
                    file,
                    "attributes",
                    f"att has an all-zero attribute row for class {format_examples(zero + 1)} "
                    "(1-based)",
                    "a class needs a non-zero attribute vector; re-download the file",
                    True,
                )
            )
    return out


def primary_error(failures: Sequence[Failure]) -> DataError | None:
    """The one error that stands for ``failures`` (None when there are none): the first, with
    the other failed checks named in parentheses, so that one line tells the whole story."""
    if not failures:
        return None
    return _error(failures[0], [f.check for f in failures[1:]])


_DATA_CHECKS = {
    "count",
    "dtype",
    "finite",
    "float32-range",
    "constant",
    "labels",
    "labels-range",
    "keys",
    "readable",
}


def _error(failure: Failure, others: list[str]) -> DataError:
    message = failure.line()
    if others:
        message += f" (also failing: {', '.join(dict.fromkeys(others))})"
    cls = DataError if failure.check in _DATA_CHECKS else SplitError
    err = cls(message, hint=failure.hint)
    err.check = failure.check  # type: ignore[attr-defined]
    err.structural = failure.structural  # type: ignore[attr-defined]
    return err


__all__ = [
    "check_attributes",
    "check_features",
    "check_labels",
    "load_registry",
    "primary_error",
    "registry_entry",
]
