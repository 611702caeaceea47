"""SAE, the Semantic AutoEncoder of Kodirov, Xiang & Gong ("Semantic Autoencoder for Zero-Shot
Learning", CVPR 2017), as a plugin model. Official code: github.com/Elyorcv/SAE (MATLAB).

A linear encoder ``W`` (a x d) maps an image to the semantic space and its transpose maps it back;
the paper's relaxed objective ``||X - W^T S||^2 + lambda ||W X - S||^2`` over the training images
``X`` (d x n) and their classes' semantics ``S`` (a x n) is minimised where its gradient vanishes,
a Sylvester equation (paper Sec. 3; official ``library/SAE.m`` lines 11-14)::

    A W + W B = C,   A = S S^T,   B = lambda X X^T,   C = (1 + lambda) S X^T.

Both ways the paper uses ``W`` for zero-shot recognition are here, as ``direction``:

* ``"v2s"`` (the paper's ``SAE (W)``): project the image to the semantic space, ``W x``, and compare
  it with every class's semantics;
* ``"s2v"`` (``SAE (W^T)``): project every class's semantics to the feature space, ``W^T s_c``, and
  compare the image with it.

``v2s`` is the default, method ``sae``: it is the better of the two in the paper's Table 2 on AwA,
CUB, aP&Y and ImNet-1 (84.7/61.4/55.4/46.1 vs 84.0/60.9/54.8/45.4), worse on SUN 707/10 and
ImNet-2 (91.0/26.3 vs 91.5/27.2), equal on SUN 645/72 (the table as published in the official
repository, ``images/zsl_cvpr_results.png``, commit e023de8; ``awa_demo.m`` lines 12-13).
``s2v`` is method ``sae-s2v``: a separate method rather than only ``--set model.direction=s2v``
because the paper reports the two as separate rows, each direction gets its own lambda from the
search (the validation optimum differs by orders of magnitude), and leaderboards list methods.

The official code's conventions, followed here (file and line of github.com/Elyorcv/SAE):

* training features: each feature *dimension* scaled to unit L2 norm over the training images
  (``awa_demo.m`` line 26, ``NormalizeFea(X_tr')'``). The images scored are used as they are, as in
  ``awa_demo.m`` lines 41 and 48 (``normalize="image"`` instead scales each training image to unit
  norm, the GBU-era reimplementation mvp18/Popular-ZSL-Algorithms ``SAE/sae_gzsl.py`` line 120; then
  lambda does not depend on the number of images);
* ``W``'s rows are scaled to unit norm before use, and the class semantics' *columns* (attributes)
  to unit norm over the candidate classes (``awa_demo.m`` lines 41 and 47, ``zsl_el.m`` line 12);
  for ``s2v``, the projected class prototypes' columns too (``zsl_el.m`` line 12 applied to
  ``X_te_pro``);
* the score is the cosine similarity (``zsl_el.m`` line 12, ``1 - pdist2(..., 'cosine')``);
* lambda: 500000, ``awa_demo.m`` line 31 (AwA, GoogLeNet features). The paper sets it by
  class-wise cross-validation on the training classes; here the harness searches ``lam_grid``
  on the leak-free validation split.

The solver is the Bartels-Stewart algorithm that ``scipy.linalg.solve_sylvester`` runs, specialised
to the symmetric positive semi-definite ``A`` and ``B`` of SAE, whose Schur forms are their
eigendecompositions: with ``A = P diag(a) P^T`` and ``X X^T = Q diag(b) Q^T``,
``W = P [(P^T C Q)_ij / (a_i + lambda b_j)] Q^T``. The decomposition of ``X X^T`` (a d x d
eigenproblem, the whole cost) does not depend on lambda, so the search's candidates, which refit on
the same training arrays, share it: each extra lambda costs two matrix products. Measured at
synth-apy's shape (5000 x 2048 features, 64 attributes, one BLAS thread, shared machine):
decomposition 20 s then 0.2 s per lambda, against 160 s per lambda for ``solve_sylvester``, with
the same ``W`` to 3e-13. Where both ``a_i`` and ``b_j`` vanish the equation leaves the entry free
(``C``'s entry is then zero too); it is set to zero, the minimum-norm solution.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from zslbench import hyperparams as hp
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.model import FitInputs, Model
from zslbench.stages import Stage, StagedModel

#: lambda grid (ours): 10^-2 ... 10^7 in half decades (19 values). It spans both normalisations:
#: with ``normalize="dimension"`` the official values grow with the number of training images
#: (500000 for AwA's 24295 images, ``awa_demo.m`` line 31), with ``"image"`` they are of order 1
#: (0.08 ... 100 in mvp18's ``SAE/sae_gzsl.py`` lines 24-28).
LAMBDA_GRID: tuple[float, ...] = tuple(float(10.0 ** (e / 2)) for e in range(-4, 15))
DIRECTIONS = ("v2s", "s2v")
NORMALIZATIONS = ("dimension", "image")
#: Norms below this are treated as zero (NormalizeFea.m line 33 uses 1e-10 the same way).
_TINY = 1e-10


class SAE(StagedModel):
    """Semantic AutoEncoder with cosine nearest-class scores (see the module docstring).

    Parameters: ``lam=500000.0`` (official ``awa_demo.m`` line 31; searched over ``lam_grid``
    unless fixed), ``direction="v2s"`` or ``"s2v"``, ``normalize="dimension"`` (official) or
    ``"image"``, ``lam_grid`` (``LAMBDA_GRID``).

    Fitted state: ``W_`` (a x d) the Sylvester solution, ``projection_`` (d x k) applied to the
    images scored (``v2s``: the row-normalised ``W`` transposed, ``s2v``: None), ``targets_`` (c, k)
    the unit-norm class targets compared with them, ``classes_``.

    Three stages (:mod:`zslbench.stages`): ``eigendecomposition`` (independent of lambda, so the
    search's refits reuse it), ``sylvester_solve`` and ``class_targets``.
    """

    name = "sae"
    search_strategy: ClassVar[str] = "refine"
    stages: ClassVar[tuple[Stage, ...]] = (
        Stage("eigendecomposition", reads=("normalize",)),
        Stage("sylvester_solve", reads=("lam",), after=("eigendecomposition",)),
        Stage("class_targets", reads=("direction",), after=("sylvester_solve",)),
    )

    def __init__(
        self,
        lam: float = 500000.0,
        direction: str = "v2s",
        normalize: str = "dimension",
        lam_grid: tuple[float, ...] = LAMBDA_GRID,
    ) -> None:
        self.lam = lam
        self.direction = direction
        self.normalize = normalize
        self.lam_grid = lam_grid

    @property
    def search_space(self) -> dict[str, tuple[float, ...]]:  # type: ignore[override]
        """lambda, searched by the harness on the validation split (an ordered grid: refine)."""
        return {"lam": tuple(self.lam_grid)}

    def check_params(self) -> None:
        hp.real("sae", "lam", self.lam)
        hp.choice("sae", "direction", self.direction, DIRECTIONS)
        hp.choice("sae", "normalize", self.normalize, NORMALIZATIONS)
        hp.reals("sae", "lam_grid", self.lam_grid)

    def fit_eigendecomposition(self, inp: FitInputs) -> tuple[np.ndarray, ...]:
        """What the Sylvester solve needs for any lambda (:func:`_decompose`): the search's
        refits for other lambdas reuse it (:mod:`zslbench.stages`)."""
        return _decompose(inp.features, inp.class_semantics[inp.y], self.normalize)

    def fit_sylvester_solve(
        self, inp: FitInputs, eigendecomposition: tuple[np.ndarray, ...]
    ) -> np.ndarray:
        return solve_sae(*eigendecomposition, lam=float(self.lam))

    def fit_class_targets(
        self, inp: FitInputs, sylvester_solve: np.ndarray
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """(the projection applied to the images scored, the unit-norm class targets)."""
        w_unit = _unit_rows(sylvester_solve)  # awa_demo.m lines 41 and 47: NormalizeFea(W)
        sem = _unit_columns(inp.class_semantics)  # NormalizeFea(S')' over the classes
        if self.direction == "v2s":
            return w_unit.T, _unit_rows(sem)
        return None, _unit_rows(_unit_columns(sem @ w_unit))

    def end_fit(self, inp: FitInputs, outputs: Mapping[str, Any]) -> None:
        self.W_ = outputs["sylvester_solve"]
        self.projection_, self.targets_ = outputs["class_targets"]
        self.classes_ = inp.classes

    def decision_function(self, features: np.ndarray) -> np.ndarray:
        """Cosine similarity between each image (projected to the semantic space for ``v2s``)
        and each class target, float64 of shape (m, c)."""
        if not hasattr(self, "targets_"):
            raise RuntimeError("SAE.decision_function called before fit")
        x = np.asarray(features, dtype=np.float64)
        if self.projection_ is not None:
            x = x @ self.projection_
        return _unit_rows(x) @ self.targets_.T


def _decompose(
    features: np.ndarray, semantics: np.ndarray, normalize: str
) -> tuple[np.ndarray, ...]:
    """What the Sylvester solve needs for any lambda: the eigendecompositions of ``S S^T`` and
    ``X X^T`` and ``S X^T`` in their eigenbases. ``semantics`` (n, a): each image's class's."""
    x = np.asarray(features, dtype=np.float64)
    x = _unit_columns(x) if normalize == "dimension" else _unit_rows(x)
    s = np.asarray(semantics, dtype=np.float64)
    a_vals, a_vecs = np.linalg.eigh(s.T @ s)
    b_vals, b_vecs = np.linalg.eigh(x.T @ x)
    c_rot = a_vecs.T @ (s.T @ x) @ b_vecs
    return a_vals, a_vecs, b_vals, b_vecs, c_rot


def solve_sae(
    a_vals: np.ndarray,
    a_vecs: np.ndarray,
    b_vals: np.ndarray,
    b_vecs: np.ndarray,
    c_rot: np.ndarray,
    lam: float,
) -> np.ndarray:
    """``W`` solving ``A W + W (lam X X^T) = (1 + lam) S X^T`` from :func:`_decompose`'s output."""
    denom = np.maximum(a_vals, 0.0)[:, None] + lam * np.maximum(b_vals, 0.0)[None, :]
    floor = denom.max() * max(denom.shape) * np.finfo(np.float64).eps
    w_rot = np.divide((1.0 + lam) * c_rot, denom, out=np.zeros_like(c_rot), where=denom > floor)
    return a_vecs @ w_rot @ b_vecs.T


def _unit_rows(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), _TINY)


def _unit_columns(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=0, keepdims=True), _TINY)


@hookimpl
def zslbench_models() -> list[type[Model]]:
    return [SAE]


_CITATION = (
    "E. Kodirov, T. Xiang and S. Gong, Semantic Autoencoder for Zero-Shot Learning, "
    "CVPR 2017; official code github.com/Elyorcv/SAE"
)


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    common: dict[str, Any] = {"model": "sae", "preprocessor": "none", "citation": _CITATION}
    return [
        MethodSpec(
            "sae",
            params={"model": {"direction": "v2s"}},
            paper_name="SAE (W)",
            description="Semantic autoencoder, images projected to the semantic space "
            "(Kodirov et al. 2017)",
            **common,
        ),
        MethodSpec(
            "sae-s2v",
            params={"model": {"direction": "s2v"}},
            paper_name="SAE (W^T)",
            description="Semantic autoencoder, class semantics projected to the feature "
            "space (Kodirov et al. 2017)",
            **common,
        ),
    ]
