"""The calibrated decision rule of the paper (eq. 10), applied to any method's class scores.

A method scores every image against every class (the prototype methods by ``-||x - mu_c||^2``,
eq. 9, in :mod:`zslbench_plugins.distances`); the rule assigns the image to::

    predict(x) = argmax_c [ s_c(x) - gamma * 1{c is seen} ]          (eq. 10)

Everything downstream (the metrics, the exact seen-unseen curve, the gamma calibrator) only needs,
per sample, its best seen class, its best unseen class, and the *margin*
``t = best seen score - best unseen score``: the rule picks the seen class when ``t > gamma`` and
the unseen class when ``t < gamma``. :func:`group_best` computes these once, and :func:`predict`
decides from them, so the classifier, the curve and the calibrator compare exactly the same
float64 numbers and can never disagree about which side of a breakpoint a sample is on.

Tie rule (documented, tested): **the lowest class index wins**, as with ``np.argmax``. Within the
seen (or unseen) columns this is ``np.argmax`` itself; at ``t == gamma`` the seen and unseen
candidates tie and the one with the lower column index is returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GroupBest:
    """Per sample: best seen column, best unseen column, and the margin between their scores.

    ``margin[i] = scores[i, seen_idx[i]] - scores[i, unseen_idx[i]]`` is the breakpoint of sample
    ``i``: the calibrated rule predicts ``seen_idx[i]`` for ``gamma < margin[i]`` and
    ``unseen_idx[i]`` for ``gamma > margin[i]``.
    """

    seen_idx: np.ndarray
    unseen_idx: np.ndarray
    margin: np.ndarray
    #: Largest magnitude among the best scores; float64 rounding in eq. 10 scales with it.
    scale: float = 0.0

    def __len__(self) -> int:
        return int(self.margin.shape[0])

    @staticmethod
    def concatenate(parts: list[GroupBest]) -> GroupBest:
        """Stack the rows of several ``GroupBest`` (e.g. test-seen then test-unseen samples)."""
        return GroupBest(
            np.concatenate([p.seen_idx for p in parts]),
            np.concatenate([p.unseen_idx for p in parts]),
            np.concatenate([p.margin for p in parts]),
            max((p.scale for p in parts), default=0.0),
        )


def check_scores(scores: np.ndarray, seen_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert a score matrix (n, c) and a seen mask (c,); returns float64 and bool.

    Raises ``ValueError`` for wrong shapes, non-finite scores, or a mask without at least one seen
    and one unseen column (the calibrated rule and the curve are meaningless without both).
    """
    s = np.asarray(scores, dtype=np.float64)
    mask = np.asarray(seen_mask)
    if s.ndim != 2:
        raise ValueError(f"scores must be a 2-D (n_samples, n_classes) array, got shape {s.shape}")
    if mask.dtype != np.bool_:
        raise ValueError(f"seen_mask must be a boolean array, got dtype {mask.dtype}")
    if mask.shape != (s.shape[1],):
        raise ValueError(f"seen_mask has shape {mask.shape} but scores have {s.shape[1]} columns")
    if not mask.any() or mask.all():
        raise ValueError("seen_mask must mark at least one seen and one unseen class column")
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or infinity; the model produced non-finite distances")
    return s, mask


def group_best(scores: np.ndarray, seen_mask: np.ndarray) -> GroupBest:
    """Best seen and best unseen column of every row, and their score margin (one O(n c) pass).

    Within a group, ties go to the lowest column index (``np.argmax`` on the columns in
    increasing order).
    """
    s, mask = check_scores(scores, seen_mask)
    seen_cols = np.flatnonzero(mask)
    unseen_cols = np.flatnonzero(~mask)
    s_seen = s[:, seen_cols]
    s_unseen = s[:, unseen_cols]
    arg_s = np.argmax(s_seen, axis=1)
    arg_u = np.argmax(s_unseen, axis=1)
    rows = np.arange(s.shape[0])
    top_s = s_seen[rows, arg_s]
    top_u = s_unseen[rows, arg_u]
    scale = float(max(np.abs(top_s).max(initial=0.0), np.abs(top_u).max(initial=0.0)))
    return GroupBest(seen_cols[arg_s], unseen_cols[arg_u], top_s - top_u, scale)


def check_gamma(gamma: float) -> float:
    """``gamma`` as a finite float; ``ValueError`` otherwise."""
    g = float(gamma)
    if not np.isfinite(g):
        raise ValueError(f"gamma must be a finite number, got {gamma!r}")
    return g


def predict_from_best(best: GroupBest, gamma: float) -> np.ndarray:
    """Eq. 10 from precomputed group maxima: seen class if ``margin > gamma``, unseen if ``<``.

    At ``margin == gamma`` both candidates score the same after calibration and the lower column
    index wins, which is what ``np.argmax`` over the calibrated row would return.
    """
    g = check_gamma(gamma)
    tie_winner = np.minimum(best.seen_idx, best.unseen_idx)
    out = np.where(best.margin > g, best.seen_idx, best.unseen_idx)
    return np.where(best.margin == g, tie_winner, out).astype(np.int64)


def predict(scores: np.ndarray, seen_mask: np.ndarray, gamma: float) -> np.ndarray:
    """The calibrated rule (eq. 10): ``argmax_c [scores[:, c] - gamma * seen_mask[c]]``, (n,) int64.

    ``gamma`` may be any finite real. The paper writes gamma >= 0 (a penalty on seen classes),
    but we do not restrict it: a model biased towards unseen classes is best served by a negative
    value, and the calibrator searches the whole real line.

    The comparison is made on the margin ``best seen - best unseen`` against ``gamma``, not on
    ``scores - gamma``: the two agree exactly in real arithmetic, and the margin form avoids a
    float artefact of the literal form, where subtracting a large gamma can round two different
    seen scores to the same value and hand the win to the wrong seen class.
    """
    return predict_from_best(group_best(scores, seen_mask), gamma)
