"""The ``krr`` regressor: kernel ridge regression from class semantics to class prototypes.

The paper's KRR baselines (Table 3: "KRR" on the raw feature space, "L_BT + KRR" on the latent
space) use "the same kernel family" as the GP: we use the RBF kernel in GPyTorch's
parametrisation, ``k(s, s') = exp(-|s - s'|^2 / (2 l^2))``, with the closed form

    coef = (K + alpha I)^-1 Y,    prediction(S*) = K(S*, S) coef.

No outputscale: in ridge regression it is equivalent to rescaling ``alpha``.

Unlike the GP, KRR has no marginal likelihood to fit ``alpha`` and ``l`` with; the paper's
comparison (``gp`` vs ``krr``) is precisely about that difference, so KRR's two hyperparameters
come from a grid search on the leak-free validation split (``tune``, called by the protocol in
step 1, before the refit on trainval). The lengthscale is set as ``width`` times the median
pairwise distance between the training semantics (the "median heuristic"), so that the width
chosen on the validation split's train classes carries over to the trainval classes, whose
distances are on the same scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from zslbench.components import Regressor
from zslbench.errors import ConfigError, DataError
from zslbench.hookspecs import hookimpl
from zslbench_plugins.regressor_inputs import (
    check_fit_inputs,
    check_predict_inputs,
    require_positive,
)

#: Ridge grid (ours): 10^-6 ... 10^2 in half decades (17 values). The kernel has a unit diagonal,
#: so alpha reads as a noise-to-signal variance ratio: from near-interpolation to heavy shrinkage.
ALPHA_GRID: tuple[float, ...] = tuple(float(10.0 ** (e / 2)) for e in range(-12, 5))
#: Width grid (ours): multiples of the median pairwise distance, 2^-3 ... 2^3 in steps of sqrt(2)
#: (13 values), i.e. from a kernel that is nearly the identity on typical pairs to one that is
#: nearly linear over the whole set.
WIDTH_GRID: tuple[float, ...] = tuple(float(2.0 ** (e / 2)) for e in range(-6, 7))


class KRRRegressor(Regressor):
    """Closed-form RBF kernel ridge regression, one solve shared by all prototype dimensions.

    Hyperparameters (the paper gives none for its KRR baseline; all ours):

    * ``alpha=0.1``: the ridge. Used as given when ``tune`` is not called; the protocol calls
      ``tune``, which replaces it by the validation-optimal grid value.
    * ``width=1.0``: the RBF lengthscale in units of the median pairwise distance between the
      training class semantics (1.0 is the median heuristic itself). Tuned likewise.
    * ``alpha_grid``, ``width_grid``: the grids ``tune`` searches (``ALPHA_GRID``, ``WIDTH_GRID``).

    Fitted attributes: ``coef_`` (c, k) = (K + alpha I)^-1 Y, ``lengthscale_`` (absolute),
    ``median_distance_``, ``train_semantics_`` (c, a), ``n_features_in_``. After ``tune``: ``tune_mse_`` (widths x alphas)
    validation MSE grid and ``tune_best_mse_``.
    """

    name = "krr"

    def __init__(self, alpha: float = 0.1, width: float = 1.0,
                 alpha_grid: tuple[float, ...] = ALPHA_GRID,
                 width_grid: tuple[float, ...] = WIDTH_GRID) -> None:
        self.alpha = alpha
        self.width = width
        self.alpha_grid = alpha_grid
        self.width_grid = width_grid

    def fit(self, class_semantics: np.ndarray, class_prototypes: np.ndarray) -> KRRRegressor:
        """Solve (K + alpha I) coef = Y by Cholesky factorisation (K + alpha I is SPD)."""
        alpha = require_positive("krr", "alpha", self.alpha)
        width = require_positive("krr", "width", self.width)
        s, p = check_fit_inputs("krr", class_semantics, class_prototypes)
        self.median_distance_ = median_distance(s)
        self.lengthscale_ = width * self.median_distance_
        gram = rbf_kernel(s, s, self.lengthscale_)
        gram[np.diag_indices_from(gram)] += alpha
        self.coef_ = scipy.linalg.cho_solve(scipy.linalg.cho_factor(gram, lower=True), p)
        self.n_features_in_ = s.shape[1]
        self.train_semantics_ = s
        return self

    def predict(self, class_semantics: np.ndarray) -> np.ndarray:
        """K(S*, S) coef for ``class_semantics`` (m, a) -> (m, k) float32."""
        if not hasattr(self, "coef_"):
            raise RuntimeError("KRRRegressor.predict called before fit")
        s = check_predict_inputs("krr", class_semantics, self.n_features_in_)
        pred = rbf_kernel(s, self.train_semantics_, self.lengthscale_) @ self.coef_
        return pred.astype(np.float32)

    def tune(self, train_semantics: np.ndarray, train_prototypes: np.ndarray,
             val_semantics: np.ndarray, val_prototypes: np.ndarray) -> dict[str, Any]:
        """Pick (alpha, width) minimising the validation prototype MSE over the grids.

        Fits on the validation split's train classes and scores the predicted prototypes of its
        validation classes against their true prototypes (means over trainval images, computed
        by the protocol): MSE = mean over classes and dimensions. Sets both on ``self`` and
        returns them. Ties go to the first grid point (smallest width, then smallest alpha).

        Every grid point is the exact closed form: for each width, one eigendecomposition
        ``K = Q diag(lam) Q^T`` gives ``(K + alpha I)^-1 = Q diag(1 / (lam + alpha)) Q^T`` for
        all alphas at once.
        """
        alphas = _grid("alpha_grid", self.alpha_grid)
        widths = _grid("width_grid", self.width_grid)
        s, p = check_fit_inputs("krr", train_semantics, train_prototypes)
        sv, pv = check_fit_inputs("krr", val_semantics, val_prototypes, min_rows=1)
        if sv.shape[1] != s.shape[1] or pv.shape[1] != p.shape[1]:
            raise DataError(f"krr.tune: validation arrays {sv.shape}/{pv.shape} do not match "
                            f"training arrays {s.shape}/{p.shape}",
                            hint="pass semantics and prototypes of the same kind for both")
        med = median_distance(s)
        mse = np.empty((len(widths), len(alphas)))
        for i, w in enumerate(widths):
            lam, q = np.linalg.eigh(rbf_kernel(s, s, w * med))
            lam = np.maximum(lam, 0.0)  # K is PSD; eigh's round-off can give -1e-16
            cross = rbf_kernel(sv, s, w * med) @ q  # (m, c)
            rotated = q.T @ p  # (c, k)
            for j, a in enumerate(alphas):
                pred = cross @ (rotated / (lam + a)[:, None])
                mse[i, j] = np.mean((pred - pv) ** 2)
        i, j = np.unravel_index(int(np.argmin(mse)), mse.shape)
        best = {"alpha": float(alphas[j]), "width": float(widths[i])}
        self.set_params(**best)
        self.tune_mse_ = mse
        self.tune_best_mse_ = float(mse[i, j])
        return best


def median_distance(semantics: np.ndarray) -> float:
    """Median Euclidean distance over distinct pairs of rows (1.0 if all rows coincide)."""
    d2 = _squared_distances(semantics, semantics)
    iu = np.triu_indices(len(semantics), k=1)
    med = float(np.median(np.sqrt(d2[iu]))) if len(iu[0]) else 0.0
    return med if med > 0 else 1.0


def rbf_kernel(a: np.ndarray, b: np.ndarray, lengthscale: float) -> np.ndarray:
    """exp(-|a_i - b_j|^2 / (2 lengthscale^2)), float64 (GPyTorch's RBF parametrisation)."""
    return np.exp(-0.5 * _squared_distances(a, b) / lengthscale**2)


def _squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    shift = a.mean(axis=0, keepdims=True)  # centring limits the round-off of the expansion
    a, b = a - shift, b - shift
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    return np.maximum(d2, 0.0)


def _grid(param: str, values: Any) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        arr = np.array([])
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ConfigError(f"krr.{param}={values!r} must be a non-empty list of numbers > 0",
                          hint=f"e.g. --set krr.{param}=[0.01,0.1,1]")
    return arr


@hookimpl
def zslbench_regressors() -> list[type[Regressor]]:
    return [KRRRegressor]
