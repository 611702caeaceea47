"""Checks on what every regressor receives: class semantics (c, a) and class prototypes (c, k).

Shared by the ``gp`` and ``krr`` regressors so that both reject the same mistakes with the same
one-line messages (a :class:`~zslbench.errors.DataError` naming the array and the fix).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zslbench.errors import DataError


def check_fit_inputs(
    who: str, semantics: Any, prototypes: Any, min_rows: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """float64 copies of ``semantics`` (c, a) and ``prototypes`` (c, k), validated; fitting needs
    at least two classes (``min_rows``), scoring a fit needs one."""
    s = _matrix(who, "class_semantics", semantics)
    p = _matrix(who, "class_prototypes", prototypes)
    if s.shape[0] != p.shape[0]:
        raise DataError(
            f"{who} got {s.shape[0]} class_semantics rows but {p.shape[0]} class_prototypes rows",
            hint="pass one semantics row and one prototype row per seen class",
        )
    if s.shape[0] < min_rows:
        raise DataError(
            f"{who} got {s.shape[0]} classes where it needs at least {min_rows}",
            hint="check the split: classes are missing",
        )
    return s, p


def check_predict_inputs(who: str, semantics: Any, n_features: int) -> np.ndarray:
    """float64 copy of ``semantics`` (m, a), with ``a`` as seen in ``fit``."""
    s = _matrix(who, "class_semantics", semantics, allow_empty=True)
    if s.shape[1] != n_features:
        raise DataError(
            f"{who}.predict got class_semantics with {s.shape[1]} columns but was "
            f"fitted on {n_features}",
            hint="predict from semantics of the same kind as those used in fit",
        )
    return s


def _matrix(who: str, name: str, value: Any, allow_empty: bool = False) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(
            f"{who}: {name} is not a numeric array",
            hint="pass a 2-D float array, one row per class",
        ) from None
    if arr.ndim != 2 or (arr.shape[0] == 0 and not allow_empty) or arr.shape[1] == 0:
        raise DataError(
            f"{who}: {name} must be a non-empty 2-D array (classes x dims), got shape {arr.shape}",
            hint="pass one row per class",
        )
    if not np.isfinite(arr).all():
        raise DataError(
            f"{who}: {name} contains NaN or infinite values",
            hint="check the attributes file and the embedder's output",
        )
    return arr
