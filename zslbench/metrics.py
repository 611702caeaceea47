"""GZSL metrics, in percent as in the paper: A_T, A_U, A_S, H, the exact seen-unseen curve, AUSUC.

* **Per-class top-1 accuracy** (Xian et al.): the mean over classes of the accuracy within each
  class, so that a class with 5000 test images weighs as much as one with 50.
* ``A_T`` (ZSL): test-unseen images classified among the unseen classes only.
* ``A_U`` / ``A_S`` (GZSL): test-unseen / test-seen images classified among *all* classes with the
  calibrated rule (eq. 10) at the calibrated gamma; ``H = 2 A_U A_S / (A_U + A_S)``.
* **Seen-unseen curve** (Chao et al. 2016; used by the paper after Yue et al.): ``(A_U(g), A_S(g))``
  for every gamma ``g``. Sample ``i`` predicts its best seen class for ``g < t_i`` and its best
  unseen class for ``g > t_i``, with ``t_i = best seen score - best unseen score``. So only samples
  whose *true* class is the best of its group ever count as correct, each on one side of its own
  breakpoint ``t_i``, and both accuracies are step functions of ``g`` that change only at those
  breakpoints. Sorting the breakpoints and taking cumulative sums of the per-sample weights
  ``100 / (n_classes_in_group * n_samples_of_its_class)`` gives the whole curve exactly in
  O(n c + n log n), with no grid to choose.
* **AUSUC**: the area under ``A_S`` as a function of ``A_U``, trapezoids between consecutive exact
  curve points from ``g = -inf`` (``A_U = 0``) to ``g = +inf`` (``A_S = 0``). It is reported as a
  percentage in [0, 100]: the area in percent x percent divided by 100 (equivalently 100 x the
  area in [0, 1] x [0, 1] units of Chao et al.). The headline averages accuracies per class;
  ``AUSUC_per_image`` averages them per image, as CNZSL's code does (AWA2: 47.6 vs 63.3 on the
  same scores), and is recorded beside it, labelled, for comparison with such papers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zslbench.classifier import GroupBest, check_gamma, group_best, predict_from_best

#: Ties of H within this many percentage points count as ties (cumulative sums of the same
#: weights in a different order can differ in the last bits).
H_TIE_TOLERANCE = 1e-9

#: Smallest offset of the end gammas beyond the extreme breakpoints, relative to the magnitude of
#: the scores: ~1e6 times float64 rounding, still negligible against any real score gap.
END_OFFSET_REL = 1e-10


def per_class_accuracy(
    y_true: np.ndarray, y_pred: np.ndarray, classes: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """Mean per-class top-1 accuracy in percent, and the accuracy of each class.

    The classes are ``classes`` in the order given, or the sorted distinct labels of ``y_true``.
    A given class with no sample in ``y_true`` has no defined accuracy and raises ``ValueError``
    rather than silently counting as 0 or being skipped.
    """
    y_true = np.asarray(y_true).ravel()
    y_pred = np.asarray(y_pred).ravel()
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has {y_true.size} labels but y_pred has {y_pred.size}")
    if y_true.size == 0:
        raise ValueError("per_class_accuracy needs at least one sample")
    present, inverse, counts = np.unique(y_true, return_inverse=True, return_counts=True)
    hits = np.bincount(inverse, weights=(y_true == y_pred), minlength=present.size)
    acc_present = 100.0 * hits / counts
    if classes is None:
        per_class = acc_present
    else:
        classes = np.asarray(classes).ravel()
        pos = np.searchsorted(present, classes)
        pos_clipped = np.minimum(pos, present.size - 1)
        missing = (pos >= present.size) | (present[pos_clipped] != classes)
        if missing.any():
            raise ValueError(
                f"classes {classes[missing].tolist()} have no sample in y_true; "
                "their accuracy is undefined"
            )
        per_class = acc_present[pos_clipped]
    return float(per_class.mean()), per_class


def harmonic_mean(a_u: float | np.ndarray, a_s: float | np.ndarray) -> Any:
    """``H = 2 a_u a_s / (a_u + a_s)``, defined as 0 where both are 0; works elementwise."""
    u = np.asarray(a_u, dtype=np.float64)
    s = np.asarray(a_s, dtype=np.float64)
    den = u + s
    h = np.divide(2.0 * u * s, den, out=np.zeros(np.broadcast(u, s).shape), where=den != 0)
    return float(h) if h.ndim == 0 else h


@dataclass(frozen=True)
class Curve:
    """The seen-unseen accuracy curve, one point per interval between consecutive breakpoints.

    Points are in increasing gamma, so ``A_U`` is non-decreasing and ``A_S`` non-increasing; the
    first point is gamma -> -inf (everything predicted seen, ``A_U = 0``) and the last is
    gamma -> +inf (everything predicted unseen, ``A_S = 0``). ``gamma[j]`` is a finite gamma
    *inside* interval ``j`` at which the calibrated rule gives exactly ``(A_U[j], A_S[j])``:
    the midpoint of its two breakpoints, and for the two unbounded intervals the extreme
    breakpoint pushed outwards by half the mean breakpoint spacing (at least a rounding-safe
    1e-10 of the score magnitude). If two breakpoints are adjacent doubles, no double lies
    strictly between them; that interval's gamma then falls on a breakpoint and the tie rule
    applies there.
    """

    gamma: np.ndarray
    A_U: np.ndarray
    A_S: np.ndarray

    def __len__(self) -> int:
        return int(self.gamma.shape[0])

    def to_dict(self) -> dict[str, list[float]]:
        """Plain lists, for JSON records."""
        return {"gamma": self.gamma.tolist(), "A_U": self.A_U.tolist(), "A_S": self.A_S.tolist()}


def _group_weights(labels: np.ndarray, in_group: np.ndarray, per_class: bool = True) -> np.ndarray:
    """Per-sample weight ``100 / (n_classes_in_group * n_samples_of_class)`` (``per_class``) or
    ``100 / n_samples_in_group``; 0 outside the group.

    With these weights, summing over the correct samples of a group gives its per-class (or
    per-image) accuracy.
    """
    w = np.zeros(labels.shape[0])
    lab = labels[in_group]
    if not per_class:
        w[in_group] = 100.0 / max(lab.size, 1)
        return w
    classes, inverse, counts = np.unique(lab, return_inverse=True, return_counts=True)
    w[in_group] = 100.0 / (classes.size * counts[inverse])
    return w


def _check_labels(labels: np.ndarray, n: int, n_classes: int) -> np.ndarray:
    y = np.asarray(labels).ravel()
    if y.shape[0] != n:
        raise ValueError(f"{y.shape[0]} labels for {n} score rows")
    if y.size and not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels must be integer column indices, got dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(
            f"labels must be column indices in [0, {n_classes}), got range [{y.min()}, {y.max()}]"
        )
    return y.astype(np.int64)


def _interval_gammas(breakpoints: np.ndarray, scale: float) -> np.ndarray:
    """A finite gamma strictly inside each of the ``m + 1`` intervals cut by ``m`` breakpoints.

    Interior intervals get their midpoint. The two unbounded ones get the extreme breakpoint
    moved outwards by half the mean breakpoint spacing (half its magnitude when there is only
    one), but never by less than ``END_OFFSET_REL * scale``, ``scale`` being the magnitude of the
    scores: closer than that, eq. 10 evaluated literally as ``scores - gamma`` could round onto
    the breakpoint, and a gamma meant to lie beyond every breakpoint would not.
    """
    m = breakpoints.size
    if m == 0:
        return np.zeros(1)
    lo, hi = breakpoints[0], breakpoints[-1]
    step = 0.5 * (hi - lo) / (m - 1) if m > 1 else 0.5 * abs(lo)
    step = max(step, END_OFFSET_REL * max(scale, abs(lo), abs(hi)))
    below = lo - step
    above = hi + step
    if not below < lo:  # all scores 0: the next double out is already exact
        below = np.nextafter(lo, -np.inf)
    if not above > hi:
        above = np.nextafter(hi, np.inf)
    mids = breakpoints[:-1] + 0.5 * (breakpoints[1:] - breakpoints[:-1])
    return np.concatenate([[below], mids, [above]])


def _curve(
    best: GroupBest, labels: np.ndarray, seen_mask: np.ndarray, per_class: bool = True
) -> Curve:
    label_seen = seen_mask[labels]
    if label_seen.all() or not label_seen.any():
        raise ValueError(
            "the seen-unseen curve needs samples of both seen and unseen classes "
            f"(got {int(label_seen.sum())} seen-class and "
            f"{int((~label_seen).sum())} unseen-class samples)"
        )
    w = _group_weights(labels, label_seen, per_class) + _group_weights(
        labels, ~label_seen, per_class
    )
    # Only samples whose true class is the best of its group can ever be right: unseen-class
    # samples become right above their breakpoint, seen-class samples are right below it.
    gains_u = ~label_seen & (best.unseen_idx == labels)
    keeps_s = label_seen & (best.seen_idx == labels)
    effective = gains_u | keeps_s
    breakpoints, inverse = np.unique(best.margin[effective], return_inverse=True)
    m = breakpoints.size
    du = np.bincount(inverse, weights=np.where(gains_u, w, 0.0)[effective], minlength=m)
    ds = np.bincount(inverse, weights=np.where(keeps_s, w, 0.0)[effective], minlength=m)
    a_u = np.concatenate([[0.0], np.cumsum(du)])
    # A_S on interval j = weight of the seen samples whose breakpoint lies above it; summing
    # from the top makes the last point exactly 0 instead of (total - total) in floating point.
    a_s = np.concatenate([np.cumsum(ds[::-1])[::-1], [0.0]])
    return Curve(_interval_gammas(breakpoints, best.scale), a_u, a_s)


def seen_unseen_curve(
    scores: np.ndarray, labels: np.ndarray, seen_mask: np.ndarray, *, per_class: bool = True
) -> Curve:
    """The exact seen-unseen curve of a score matrix (n, c) over all gamma.

    ``labels`` are column indices; samples whose label is an unseen column form ``A_U``, those
    whose label is a seen column form ``A_S``, each averaged per class over the classes present
    (zslbench's headline, after Chao et al.), or with ``per_class=False`` over the images (as
    CNZSL's code computes it; on imbalanced data the two differ a lot). Raises ``ValueError``
    when either group has no sample.
    """
    best = group_best(scores, seen_mask)
    mask = np.asarray(seen_mask)
    y = _check_labels(labels, len(best), mask.shape[0])
    return _curve(best, y, mask, per_class)


def ausuc(curve: Curve) -> float:
    """Area under the seen-unseen curve, as a percentage in [0, 100] (area in %x% / 100).

    Trapezoids between consecutive points of the curve as given; pass the full curve from
    :func:`seen_unseen_curve` (not a thinned one) for the exact value.
    """
    du = np.diff(curve.A_U)
    mean_s = 0.5 * (curve.A_S[1:] + curve.A_S[:-1])
    return float(np.dot(du, mean_s) / 100.0)


def thin_curve(curve: Curve, max_points: int = 256) -> Curve:
    """At most ``max_points`` points of ``curve``, for records and plots.

    Always kept: both endpoints (the best ``A_S`` at ``A_U = 0`` and the best ``A_U`` at
    ``A_S = 0``) and the point of highest H. The rest are spread evenly along the curve's length
    (``|dA_U| + |dA_S|``), so every stretch of the plot keeps detail in proportion to how much the
    curve moves there, not to how many samples happen to flip there. The kept points are a
    subsequence of the original: no value is invented or interpolated.
    """
    if max_points < 3:
        raise ValueError(f"max_points must be at least 3 (endpoints and best H), got {max_points}")
    n = len(curve)
    if n <= max_points:
        return curve
    h = harmonic_mean(curve.A_U, curve.A_S)
    must = np.array([0, n - 1, int(np.argmax(h))])
    length = np.concatenate(
        [[0.0], np.cumsum(np.abs(np.diff(curve.A_U)) + np.abs(np.diff(curve.A_S)))]
    )
    targets = np.linspace(0.0, length[-1], max_points - must.size)
    spread = np.minimum(np.searchsorted(length, targets), n - 1)
    keep = np.union1d(must, spread)
    return Curve(curve.gamma[keep], curve.A_U[keep], curve.A_S[keep])


def _per_class_records(
    y: np.ndarray,
    pred: np.ndarray,
    class_ids: np.ndarray,
    extra: dict[str, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    classes, counts = np.unique(y, return_counts=True)
    _, acc = per_class_accuracy(y, pred, classes)
    rows = []
    for j, (c, n_c, a) in enumerate(zip(classes, counts, acc, strict=True)):
        row: dict[str, Any] = {"class": int(class_ids[c]), "accuracy": float(a), "n_test": int(n_c)}
        for key, values in (extra or {}).items():
            row[key] = float(values[j])
        rows.append(row)
    return rows


def gzsl_evaluate(
    scores_seen_test: np.ndarray,
    y_seen_test: np.ndarray,
    scores_unseen_test: np.ndarray,
    y_unseen_test: np.ndarray,
    seen_mask: np.ndarray,
    gamma: float,
    *,
    class_ids: np.ndarray | None = None,
    max_curve_points: int = 256,
) -> dict[str, Any]:
    """Every test metric of one run, as a JSON-ready dict (floats, lists, ints; all finite).

    Both score matrices have a column per class of the whole label space (seen and unseen),
    ``seen_mask`` marks the seen columns, and the labels are column indices: test-seen labels must
    be seen columns and test-unseen labels unseen columns (``ValueError`` otherwise). ``class_ids``
    maps columns to the dataset's class ids for the per-class entries (default: the column index).

    Returns ``A_T`` (test-unseen among the unseen columns only), ``A_U``, ``A_S``, ``H`` (at
    ``gamma``), ``AUSUC`` (exact, from the full curve, per-class accuracies: the headline),
    ``AUSUC_per_image`` (the same area with per-image accuracies, as CNZSL's code reports it),
    ``gamma``, ``operating_point``
    ``{gamma, A_U, A_S, H}``, ``curve`` (thinned to ``max_curve_points``; ``curve_points`` gives
    the full length) and ``per_class`` ``{"seen": [...], "unseen": [...]}`` with one entry per
    test class: ``class``, ``n_test``, ``accuracy`` (GZSL, at ``gamma``; their mean is A_S or
    A_U) and, for unseen classes, ``accuracy_zsl`` (among unseen classes; their mean is A_T).
    """
    g = check_gamma(gamma)
    best_s = group_best(scores_seen_test, seen_mask)
    best_u = group_best(scores_unseen_test, seen_mask)
    mask = np.asarray(seen_mask)
    n_classes = mask.shape[0]
    y_s = _check_labels(y_seen_test, len(best_s), n_classes)
    y_u = _check_labels(y_unseen_test, len(best_u), n_classes)
    if y_s.size == 0 or y_u.size == 0:
        raise ValueError("gzsl_evaluate needs at least one test-seen and one test-unseen sample")
    if not mask[y_s].all():
        raise ValueError(
            f"y_seen_test contains labels of unseen columns: {np.unique(y_s[~mask[y_s]]).tolist()}"
        )
    if mask[y_u].any():
        raise ValueError(
            f"y_unseen_test contains labels of seen columns: {np.unique(y_u[mask[y_u]]).tolist()}"
        )
    ids = np.arange(n_classes) if class_ids is None else np.asarray(class_ids).ravel()
    if ids.shape != (n_classes,):
        raise ValueError(f"class_ids has {ids.size} entries for {n_classes} score columns")

    # ZSL: the best unseen column is the argmax over the unseen columns alone.
    a_t, acc_zsl = per_class_accuracy(y_u, best_u.unseen_idx)
    pred_s = predict_from_best(best_s, g)
    pred_u = predict_from_best(best_u, g)
    a_s, _ = per_class_accuracy(y_s, pred_s)
    a_u, _ = per_class_accuracy(y_u, pred_u)
    h = harmonic_mean(a_u, a_s)

    both = GroupBest.concatenate([best_s, best_u])
    y_both = np.concatenate([y_s, y_u])
    full = _curve(both, y_both, mask)
    return {
        "A_T": a_t,
        "A_U": a_u,
        "A_S": a_s,
        "H": h,
        "AUSUC": ausuc(full),
        "AUSUC_per_image": ausuc(_curve(both, y_both, mask, per_class=False)),
        "gamma": g,
        "operating_point": {"gamma": g, "A_U": a_u, "A_S": a_s, "H": h},
        "curve": thin_curve(full, max_curve_points).to_dict(),
        "curve_points": len(full),
        "per_class": {
            "seen": _per_class_records(y_s, pred_s, ids),
            "unseen": _per_class_records(y_u, pred_u, ids, {"accuracy_zsl": acc_zsl}),
        },
    }
