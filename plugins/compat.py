"""Bilinear compatibility models: ALE, DeViSE and SJE, as evaluated by Xian et al. (GBU).

All three score image ``x`` against class ``y`` with the bilinear compatibility

    F(x, y) = θ(x)ᵀ W φ(y)

(θ(x): the normalised image feature, d-dim; φ(y): the class semantic vector, a-dim; W: d x a) and
differ only in the ranking loss over the *seen* classes Y_tr that W is trained with (Xian, Lampert,
Schiele, Akata, "Zero-Shot Learning - A Comprehensive Evaluation of the Good, the Bad and the
Ugly", TPAMI 2019, Sec. 3.2.1, "Learning linear compatibility"). With Δ(y_n, y) = margin for
y != y_n and 0 for y = y_n, and ``v_y = Δ(y_n, y) + F(x_n, y) - F(x_n, y_n)``:

* ``devise`` (Frome et al., NeurIPS 2013, eq. 1; GBU eq. 3): the hinge rank loss summed over the
  classes, ``Σ_{y≠y_n} [v_y]_+``;
* ``ale`` (Akata et al., TPAMI 2016, Sec. 3.4 eq. 8; GBU eq. 4): the weighted approximate ranking
  (WAR) loss ``l_r / r · Σ_{y≠y_n} [v_y]_+`` where ``r`` is the number of violating classes
  (``v_y > 0``) and ``l_k = Σ_{i≤k} 1/i`` (``l_0 = 0``), which puts more weight on the top of
  the ranked list than DeViSE's sum;
* ``sje`` (Akata et al., CVPR 2015, eq. 3; GBU eq. 5): the structured SVM loss, the most violating
  class only, ``[max_{y≠y_n} v_y]_+``.

Training (GBU Sec. 3.2.1: "optimized by SGD"; Sec. 5: learning rate and number of epochs chosen on
validation) is plain SGD without regularisation, one image at a time by default, as in the per-image
updates of the SJE/ALE/DeViSE papers (each follows WSABIE-style stochastic updates) and of the only
public Python reimplementation under the GBU protocol we found (mvp18/Popular-ZSL-Algorithms,
``{ALE,DeViSE,SJE}/*_gzsl.py``, ``update_W``: a loop over a shuffled permutation of the images, one
``W += lr x (φ(y_n) - φ(y))ᵀ`` step each). ``batch_size > 1`` gives mini-batch SGD with the
per-image losses *summed*, so that ``lr`` keeps its per-image meaning.

The ALE and DeViSE losses are computed exactly over all classes, vectorised, instead of by the
sampling of the papers (ALE's WARP rank estimate ``floor((C-1)/N)`` from the number N of negatives
drawn until the first violation; DeViSE's "stop at the first violating term"): with at most a few
hundred classes the exact sum costs one small matrix-vector product, and the WARP step (``l_r``
times one uniformly drawn violating class), with the exact rank in place of its estimate, has the
gradient of the exact WAR loss above as its expectation.

Fast and exact per-image SGD: a W update is rank one, ``W += x_t δ_tᵀ``, so within a block of
``B`` consecutive images the scores every image sees are those at the block's start plus the
contributions of the earlier images of the block, ``G[t, s] = x_tᵀ x_s`` times their class-space
effect. The expensive d-dimensional products (block scores, the B x B Gram matrix, the W update)
are then three matrix products per block, run by torch on ``device`` (where the features and W
live), and only a (C,)-vector recursion runs image by image, in NumPy on the host: a (B, C) and a
(B, B) matrix cross once per block, where a per-image loop of small torch ops would cost a kernel
launch (CUDA) or ~5x NumPy's dispatch time (CPU) per op. This is the same sequence of SGD iterates
as the naive loop (tested against it), up to rounding.

Differences from mvp18/Popular-ZSL-Algorithms (found running it on synth-apy; none is in the
papers): its SJE picks the most violating class on ``preprocessing.scale(XW)`` (XW standardised
over the attributes) but updates and scores with the raw XW, which on synth-apy leaves it at
chance (A_T 14.7 after 3 epochs at lr 0.1; 33.1 with that line removed); its DeViSE takes the first
violating class in class-index order per image, not a sum nor a random one; its L2 mode normalises
training but not test features (argmax-invariant, AUSUC-relevant); its final W is the epoch of best
*training* accuracy. We follow the papers' losses, score every image the same way in training and
test, and keep the last epoch's W.

Epochs are a searched hyperparameter (never early stopping: ``fit`` never sees validation data). A
search walks the epochs grid in increasing order for each learning rate; the SGD stage declares
``epochs`` resumable (:mod:`zslbench.stages`), so when a fit differs from the previous one only by
more epochs, on the very same training arrays, the harness continues it from the cached state (W
and the random stream) instead of starting over: the iterates are those of a fresh fit of that
many epochs, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np
import torch

from zslbench import hyperparams as hp
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.model import Model
from zslbench.progress import steps
from zslbench.stages import Stage, StagedModel

LOSSES = ("ale", "devise", "sje")
#: Feature normalisations (mvp18 ``*_gzsl.py`` ``--norm_type``: std, L2, None).
NORMS = ("l2", "std", "none")

#: Learning rates searched (``lr_grid=None``), the same for the three losses. Our choice: a
#: decade-wide grid over the values mvp18's README reports chosen on the real validation splits
#: with L2-normalised features (ALE 0.01-0.3, SJE 0.01-1.0, DeViSE 0.001-1.0). With unit-norm θ(x)
#: and φ(y), one step of size lr moves a margin violation by about lr. On synth-apy the validation
#: H rose monotonically with lr up to 0.1 for DeViSE in a (0.001, 0.01, 0.1) grid, and 1.0 then
#: scored below 0.1, hence this grid; SJE on synth-cub still chose the top corner (lr 1, 25 epochs).
LR_GRID: tuple[float, ...] = (0.01, 0.1, 1.0)
#: Epochs searched (``epochs_grid=None``); mvp18 trains up to 100 epochs (``-e 100``) and stops
#: early with a patience of 10 (``-es 10``) on validation accuracy; we search the number of epochs
#: instead (no early stopping inside ``fit``), each learning rate's fits warm-starting from the
#: previous epoch count, so the whole grid costs max(epochs_grid) epochs per learning rate. Our
#: choice: on synth-apy (ALE), 50 epochs never beat the best 25-epoch candidate (validation H 72.4
#: vs 73.3); a larger learning rate reaches what a smaller one needs more epochs for.
EPOCHS_GRID: tuple[int, ...] = (5, 10, 25)
#: Images per block of the exact per-image SGD (see the module docstring): large enough that the
#: per-block matrix products dominate, small enough that the B x B Gram matrix stays cheap.
_BLOCK = 128
#: Rows scored per matrix product in ``decision_function`` (bounds the temporaries).
_SCORE_ROWS = 8192


def _normalise(
    x: torch.Tensor, norm: str, mean: torch.Tensor | None, scale: torch.Tensor | None
) -> torch.Tensor:
    """θ(x): ``l2`` row normalisation, ``std`` standardisation with the training images' ``mean``
    and ``scale``, or ``none``."""
    if norm == "l2":
        return torch.nn.functional.normalize(x, dim=1)
    if norm == "std":
        return (x - mean) / scale
    return x


@contextmanager
def _one_thread_on_cpu(device: torch.device) -> Iterator[None]:
    """Run the SGD loop with one intra-op thread on the CPU, restoring the setting after.

    Every torch op in the loop is small (products of at most ``_BLOCK`` rows), where intra-op
    threading costs more than it gains: on a shared 2-core machine, 5 epochs of the toy data took
    0.9 s with one thread and 13 s with two (OpenMP workers waiting for cores).
    """
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def rank_weights(
    n_classes: int, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """``l_k = Σ_{i≤k} 1/i`` for ``k = 0 .. n_classes`` (``l_0 = 0``): ALE's rank weights
    (Akata et al. TPAMI 2016, eq. 8, with α_i = 1/i, "more weight to the top of the list")."""
    k = torch.arange(1, n_classes + 1, dtype=torch.float64, device="cpu")
    out = torch.cat([torch.zeros(1, dtype=torch.float64, device="cpu"), torch.cumsum(1.0 / k, 0)])
    return out.to(dtype=dtype, device=device)


def _violations(scores: torch.Tensor, y: torch.Tensor, margin: float) -> torch.Tensor:
    """``v[i, j] = margin + F_ij - F_i,y_i`` for j != y_i, and ``-inf`` at the true class (a true
    class never violates)."""
    v = margin + scores - scores.gather(1, y[:, None])
    return v.scatter(1, y[:, None], float("-inf"))


def ranking_loss(
    scores: torch.Tensor,
    y: torch.Tensor,
    loss: str,
    margin: float = 1.0,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-image loss (B,) of ``scores`` (B, C) with true columns ``y`` (B,): ALE's WAR loss,
    DeViSE's hinge rank loss or SJE's structured SVM loss (module docstring). Differentiable
    (autograd gives the same gradient as :func:`score_grad`); ALE's weight ``l_r / r`` is
    piecewise constant in the scores and carries no gradient."""
    v = _violations(scores, y, margin)
    hinge = v.clamp(min=0.0)
    if loss == "sje":
        return v.max(dim=1).values.clamp(min=0.0)
    total = hinge.sum(dim=1)
    if loss == "devise":
        return total
    if loss == "ale":
        r = (v > 0).sum(dim=1)
        if weights is None:
            weights = rank_weights(scores.shape[1], scores.dtype, scores.device)
        return total * (weights[r] / r.clamp(min=1)).detach()
    raise ValueError(f"unknown loss {loss!r}; one of {', '.join(LOSSES)}")


def score_grad(
    scores: np.ndarray, y: int, loss: str, margin: float = 1.0, weights: np.ndarray | None = None
) -> np.ndarray | None:
    """``d loss / d scores`` (C,) of one image's :func:`ranking_loss`, or None when it has no
    margin violation (its SGD step is then zero).

    NumPy on one (C,) row, not torch: the trainer calls it once per image, where NumPy's per-call
    overhead is several times smaller than torch's. It puts a weight ``w_j >= 0`` on every violating
    class j and ``-Σ_j w_j`` on the true class: w_j = 1 (DeViSE), ``l_r / r`` (ALE), 1 on the most
    violating class only (SJE).
    """
    v = scores - (scores[y] - margin)
    v[y] = -np.inf
    if loss == "sje":
        top = int(v.argmax())
        if not v[top] > 0:
            return None
        c = np.zeros_like(scores)
        c[top], c[y] = 1.0, -1.0
        return c
    mask = v > 0
    r = int(np.count_nonzero(mask))
    if r == 0:
        return None
    if loss == "ale":
        w = float((rank_weights(len(scores)).numpy() if weights is None else weights)[r]) / r
    elif loss == "devise":
        w = 1.0
    else:
        raise ValueError(f"unknown loss {loss!r}; one of {', '.join(LOSSES)}")
    c = mask.astype(scores.dtype)
    c *= w
    c[y] = -w * r
    return c


def sgd_epoch(
    W: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    phi: torch.Tensor,
    order: torch.Tensor,
    lr: float,
    loss: str,
    margin: float,
    batch_size: int = 1,
    block: int = _BLOCK,
) -> None:
    """One epoch of SGD on ``W`` (d, a) in place: images ``X[order]`` (labels ``y``, indices into
    the rows of ``phi`` (C, a), the training classes' semantics) in that order, ``batch_size`` at a
    time, each step ``W -= lr Σ_batch θ(x) (φᵀ c)ᵀ`` with ``c = score_grad`` at the step's W.

    Exact block formulation (module docstring): per block of B images, on the device,
    ``S = X_B W φᵀ`` and ``G = X_B X_Bᵀ``; then on the host, step by step, the step's scores are
    the current rows of S, its class-space step ``-lr c`` is stored, and the later rows of S move
    by ``G[later, step] (-lr c) φ φᵀ``; after the block, on the device,
    ``W += X_Bᵀ (-lr C_B) φ``. Only (B, C) and (B, B) matrices cross to the host, once per block.
    """
    gram_phi = (phi @ phi.T).cpu().numpy()
    weights = rank_weights(phi.shape[0]).numpy() if loss == "ale" else None
    block = max(block // batch_size, 1) * batch_size
    order_host = order.cpu().numpy()
    y_host = y.cpu().numpy()
    for start in range(0, len(order_host), block):
        rows = order_host[start : start + block]
        idx = torch.as_tensor(rows, device=X.device)
        xb = X[idx]
        yb = y_host[rows]
        scores = ((xb @ W) @ phi.T).cpu().numpy()
        gram = (xb @ xb.T).cpu().numpy()
        step_c = np.zeros_like(scores)  # -lr * c of every image of the block
        moved = False
        for s in range(0, len(rows), batch_size):
            e = s + batch_size
            hit = False
            for t in range(s, min(e, len(rows))):
                c = score_grad(scores[t], int(yb[t]), loss, margin, weights)
                if c is not None:
                    step_c[t] = c
                    step_c[t] *= -lr
                    hit = True
            if hit:
                moved = True
                if e < len(rows):
                    scores[e:] += gram[e:, s:e] @ (step_c[s:e] @ gram_phi)
        if moved:
            W.addmm_(xb.T, torch.as_tensor(step_c, device=W.device) @ phi)


class CompatModel(StagedModel):
    """Bilinear compatibility ``F(x, y) = θ(x)ᵀ W φ(y)`` trained by SGD on a ranking loss.

    One class for the three losses (``loss``): the papers differ only in the loss, and one trainer,
    one normalisation path and one scorer keep ALE, DeViSE and SJE comparable by construction.

    Parameters (sources in brackets):

    * ``loss``: ``"ale"``, ``"devise"`` or ``"sje"`` (module docstring).
    * ``lr`` (0.1) and ``epochs`` (25): searched over ``lr_grid`` (``LR_GRID`` when None)
      and ``epochs_grid`` (``EPOCHS_GRID`` when None) on the leak-free validation split [GBU Sec.
      5: learning rate and epochs tuned on validation]; the defaults are used only when the search
      is switched off by fixing both.
    * ``margin`` (1.0): Δ(y_n, y) for y != y_n [GBU eqs. 3-5, the 0/1 loss; mvp18 ``ale_gzsl.py``
      ``update_W``: "acc. to original paper, margin shd always be 1"; mvp18 ``-mr`` default 1].
      Without regularisation a margin m with learning rate lr is the margin-1 problem with lr/m
      and W's initialisation scaled by 1/m, so the lr search mostly covers it.
    * ``batch_size`` (1): images per SGD step [mvp18 ``update_W``: one image per step].
    * ``norm`` (``"l2"``): θ(x) = x / ||x|| (``l2``), x standardised per dimension with the training
      images' mean and standard deviation (``std``, sklearn's StandardScaler), or x (``none``)
      [mvp18 ``--norm_type``; its README reports L2 chosen on validation for ALE on all five
      datasets, and for DeViSE/SJE on two each]. φ(y) is used as given: xlsa17's ``att`` is
      already l2-normalised per class (xlsa17 README), and mvp18 uses it as is.
    * ``random_state``, ``device``: injected by the harness. W starts uniform in [0, 1) with
      unit-norm columns [mvp18 ``fit_train``: ``np.random.rand(d, a)``, ``normalizeFeature(W.T).T``].

    Fitted state: ``W_`` (d, a) float32, ``classes_``, ``seen_mask_``, ``class_semantics_``,
    ``mean_``/``scale_`` (``std`` only), ``loss_history_`` (mean training loss per epoch, at the
    end of each epoch), ``random_state_``.
    """

    name = "compat"
    search_strategy: ClassVar[str] = "grid"

    def __init__(
        self,
        loss: str = "ale",
        lr: float = 0.1,
        epochs: int = 25,
        margin: float = 1.0,
        batch_size: int = 1,
        norm: str = "l2",
        lr_grid: tuple[float, ...] | None = None,
        epochs_grid: tuple[int, ...] | None = None,
        random_state: int | None = None,
        device: str = "cpu",
    ) -> None:
        self.loss = loss
        self.lr = lr
        self.epochs = epochs
        self.margin = margin
        self.batch_size = batch_size
        self.norm = norm
        self.lr_grid = lr_grid
        self.epochs_grid = epochs_grid
        self.random_state = random_state
        self.device = device

    @property
    def search_space(self) -> dict[str, tuple[Any, ...]]:  # type: ignore[override]
        """Learning rate (outer) x epochs (inner, increasing, so that fits warm-start)."""
        lrs = LR_GRID if self.lr_grid is None else self.lr_grid
        epochs = EPOCHS_GRID if self.epochs_grid is None else self.epochs_grid
        return {"lr": tuple(lrs), "epochs": tuple(sorted(epochs))}

    def check_params(self) -> None:
        who = "compat"
        hp.choice(who, "loss", self.loss, LOSSES)
        hp.real(who, "lr", self.lr)
        hp.integer(who, "epochs", self.epochs, 0)
        hp.real(who, "margin", self.margin, allow_low=True)
        hp.integer(who, "batch_size", self.batch_size, 1)
        hp.choice(who, "norm", self.norm, NORMS)
        if self.lr_grid is not None:
            hp.reals(who, "lr_grid", self.lr_grid)
        if self.epochs_grid is not None:
            hp.reals(who, "epochs_grid", self.epochs_grid, allow_low=True)  # a non-empty list
            for e in self.epochs_grid:
                hp.integer(who, "epochs_grid", e, 0)
        hp.seed(who, self.random_state)
        hp.torch_device(who, self.device)

    # -- fitting ------------------------------------------------------------------------------
    stages: ClassVar[tuple[Stage, ...]] = (
        # the training tensors, the initial W and the seeded random stream
        Stage("compat_prepare", reads=("norm",)),
        # SGD; a refit with more epochs continues the cached one (module docstring)
        Stage(
            "compat_sgd",
            reads=("loss", "lr", "margin", "batch_size", "epochs"),
            after=("compat_prepare",),
            resumes="epochs",
        ),
    )

    def begin_fit(self, inputs: Any) -> tuple[Any, torch.device]:
        return inputs, hp.torch_device("compat", self.device)

    def fit_compat_prepare(self, context: tuple[Any, torch.device]) -> dict[str, Any]:
        """Training tensors on the device, the initial W and the seeded generator."""
        inp, device = context
        seed = (
            int(self.random_state)
            if self.random_state is not None
            else int(np.random.SeedSequence().entropy % (2**63))
        )
        generator = torch.Generator().manual_seed(seed)
        x = torch.tensor(np.asarray(inp.features, dtype=np.float32), device=device)
        state: dict[str, Any] = {"seed": seed, "mean": None, "scale": None}
        if self.norm == "std":
            mean = x.mean(dim=0, keepdim=True)
            scale = x.std(dim=0, unbiased=False, keepdim=True)
            scale = torch.where(scale > 0, scale, torch.ones_like(scale))
            state["mean"], state["scale"] = mean, scale
        state["X"] = _normalise(x, self.norm, state["mean"], state["scale"])
        # label -> index among the seen classes (columns of phi)
        seen_cols = inp.seen_columns
        state["y"] = torch.as_tensor(np.searchsorted(seen_cols, inp.y), device=device)
        state["phi"] = torch.as_tensor(
            inp.class_semantics[seen_cols], dtype=torch.float32, device=device
        )
        d, a = x.shape[1], inp.class_semantics.shape[1]
        w0 = torch.rand(d, a, generator=generator, dtype=torch.float32, device="cpu")
        state["W"] = (w0 / w0.norm(dim=0, keepdim=True).clamp(min=1e-12)).to(device)
        state["generator"] = generator.get_state()
        return state

    def fit_compat_sgd(
        self,
        context: tuple[Any, torch.device],
        compat_prepare: dict[str, Any],
        resume: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``epochs`` epochs of SGD from the initial W, or from ``resume`` (the state after
        fewer epochs, left unmodified): the same iterates either way, as the random stream's
        state travels with W."""
        _, device = context
        start = (
            resume
            if resume is not None
            else {
                "W": compat_prepare["W"],
                "generator": compat_prepare["generator"],
                "epochs": 0,
                "history": [],
            }
        )
        W = start["W"].clone()
        generator = torch.Generator().set_state(start["generator"])
        X, y, phi = compat_prepare["X"], compat_prepare["y"], compat_prepare["phi"]
        epochs = int(self.epochs)
        weights = rank_weights(phi.shape[0], X.dtype, device) if self.loss == "ale" else None
        history = list(start["history"])
        with steps("epochs", epochs) as step, _one_thread_on_cpu(device):
            if start["epochs"]:
                step(start["epochs"])
            for _ in range(start["epochs"], epochs):
                order = torch.randperm(len(y), generator=generator, device="cpu")
                sgd_epoch(
                    W,
                    X,
                    y,
                    phi,
                    order,
                    float(self.lr),
                    self.loss,
                    float(self.margin),
                    int(self.batch_size),
                )
                history.append(self._mean_loss(W, X, y, phi, weights))
                step()
        return {"W": W, "generator": generator.get_state(), "epochs": epochs, "history": history}

    def end_fit(self, context: tuple[Any, torch.device], outputs: Mapping[str, Any]) -> None:
        inp, _ = context
        prep, sgd = outputs["compat_prepare"], outputs["compat_sgd"]
        self.mean_, self.scale_ = prep["mean"], prep["scale"]
        self.W_ = sgd["W"].cpu().numpy().copy()  # a copy: the cached W stays untouched
        self.classes_ = inp.classes
        self.seen_mask_ = inp.seen_mask
        self.class_semantics_ = inp.class_semantics.astype(np.float32)
        history = sgd["history"]
        self.loss_history_ = torch.stack(history).cpu().numpy() if history else np.zeros(0)
        self.random_state_ = prep["seed"]

    def _mean_loss(
        self,
        W: torch.Tensor,
        X: torch.Tensor,
        y: torch.Tensor,
        phi: torch.Tensor,
        weights: torch.Tensor | None,
    ) -> torch.Tensor:
        """Mean training loss at W (stays on the device: no sync per epoch on a GPU)."""
        total = torch.zeros((), dtype=W.dtype, device=W.device)
        proj = W @ phi.T
        for start in range(0, len(y), _SCORE_ROWS):
            s = X[start : start + _SCORE_ROWS] @ proj
            total += ranking_loss(
                s, y[start : start + _SCORE_ROWS], self.loss, float(self.margin), weights
            ).sum()
        return total / max(len(y), 1)

    # -- scoring ------------------------------------------------------------------------------
    def decision_function(self, features: np.ndarray) -> np.ndarray:
        """``θ(x)ᵀ W φ(y)`` for every class of ``classes_`` (float64, images x classes)."""
        if not hasattr(self, "W_"):
            raise RuntimeError("CompatModel.decision_function called before fit")
        device = hp.torch_device("compat", self.device)
        proj = (
            torch.as_tensor(self.W_, device=device)
            @ torch.as_tensor(self.class_semantics_, device=device).T
        )
        out = np.empty((len(features), proj.shape[1]), dtype=np.float64)
        for start in range(0, len(features), _SCORE_ROWS):
            x = torch.tensor(
                np.asarray(features[start : start + _SCORE_ROWS], dtype=np.float32), device=device
            )
            out[start : start + _SCORE_ROWS] = (
                (_normalise(x, self.norm, self.mean_, self.scale_) @ proj).cpu().numpy()
            )
        return out


_CITATIONS = {
    "ale": "Akata, Perronnin, Harchaoui, Schmid. Label-Embedding for Image Classification. "
    "TPAMI 2016",
    "devise": "Frome, Corrado, Shlens, Bengio, Dean, Ranzato, Mikolov. DeViSE: A Deep "
    "Visual-Semantic Embedding Model. NeurIPS 2013",
    "sje": "Akata, Reed, Walter, Lee, Schiele. Evaluation of Output Embeddings for Fine-Grained "
    "Image Classification. CVPR 2015",
}
_GBU = (
    "; as evaluated in Xian, Lampert, Schiele, Akata. Zero-Shot Learning - A Comprehensive "
    "Evaluation of the Good, the Bad and the Ugly. TPAMI 2019"
)
_DESCRIPTIONS = {
    "ale": "Bilinear compatibility, weighted approximate ranking loss (Akata et al. 2016)",
    "devise": "Bilinear compatibility, hinge rank loss summed over classes (Frome et al. 2013)",
    "sje": "Bilinear compatibility, structured SVM loss (Akata et al. 2015)",
}

METHODS = [
    MethodSpec(
        loss,
        model="compat",
        preprocessor="none",
        params={"model": {"loss": loss}},
        description=_DESCRIPTIONS[loss],
        paper_name=loss.upper() if loss != "devise" else "DEVISE",
        citation=_CITATIONS[loss] + _GBU,
    )
    for loss in LOSSES
]


@hookimpl
def zslbench_models() -> list[type[Model]]:
    return [CompatModel]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return list(METHODS)
