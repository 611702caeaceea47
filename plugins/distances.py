"""The prototype methods' scorer: negative squared Euclidean distances, computed stably in float64.

It belongs to the prototype methods (``prototype`` scores an image by ``-||x - mu_c||^2``, eq. 9;
``krr`` builds its RBF kernel from the same distances), not to the core: the core's
:mod:`zslbench.classifier` only takes a score matrix and applies the calibrated decision rule
(eq. 10), whatever method produced the scores.
"""

from __future__ import annotations

import numpy as np


def squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``||a_i - b_j||^2`` (float64, (n, m)) by the expansion ``||a||^2 + ||b||^2 - 2 a.b``, after
    moving the origin to the mean row of ``b`` (see :func:`scores` for why); never negative."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    origin = b.mean(axis=0)
    a = a - origin
    b = b - origin
    sq = np.einsum("ij,ij->i", a, a)[:, None] + np.einsum("ij,ij->i", b, b)[None, :]
    sq -= 2.0 * (a @ b.T)
    np.maximum(sq, 0.0, out=sq)
    return sq


def scores(latent: np.ndarray, prototypes: np.ndarray) -> np.ndarray:
    """Negative squared Euclidean distances ``-||x_i - mu_c||^2``, float64 of shape (n, c).

    Computed with the expansion ``||a||^2 + ||b||^2 - 2 a.b`` (one BLAS matrix product instead of
    an (n, c, k) difference tensor), in float64, after moving the origin to the mean prototype.
    The expansion subtracts large numbers when the vectors are far from the origin but close to
    each other; centring on the prototypes keeps the terms of the order of the distances
    themselves, so the result matches the direct ``sum((x - mu)**2)`` to ~1e-13 relative even for
    latent vectors offset by 1e4 (tested). Tiny negative values from rounding are clamped to 0.
    """
    x = np.asarray(latent, dtype=np.float64)
    mu = np.asarray(prototypes, dtype=np.float64)
    if x.ndim != 2 or mu.ndim != 2 or x.shape[1] != mu.shape[1]:
        raise ValueError(
            f"scores: latent {x.shape} and prototypes {mu.shape} must be (n, k) and "
            "(c, k) with the same latent dimension k"
        )
    if mu.shape[0] == 0:
        raise ValueError("scores: no prototypes given")
    sq = squared_distances(x, mu)
    np.negative(sq, out=sq)
    return sq
