"""Embedders: ``identity`` and the paper's linear map x = W f + b trained with L_BT (``bt``) or L_T (``t``).

Paper settings ("Implementation Detail"): Adam, learning rate 0.002, weight decay 0.1, 500
episodes, margin Δ = 4. The paper does not define an *episode*; we read it as one optimiser step on
one freshly sampled batch (a class-balanced batch for ``bt``, a uniform mini-batch for ``t``), which
is what "500 episodes on each ZSL dataset" needs to mean for a schedule that does not depend on the
dataset's size.

Our choices, where the paper is silent (each is a constructor argument):

* ``latent_dim=64``. The GP regressor fits one GP per latent dimension, so its cost is linear in
  it, and so is an L_BT episode's. 64 already exceeds the L−1 dimensions that L class means can
  span on APY (20 seen classes), AWA1 and AWA2 (40), and is of the order of the attribute
  dimensions (64–312) that the GP maps from. On the synthetic stand-ins 128 gained 1–2 points of
  H (synth-awa2 66 → 68, synth-cub 49 → 51, synth-apy 61.5 → 62) for 1.3–1.5× the train time.
* ``n_cb=8`` images per class per episode (L_BT). The class mean x̄ⁱ of 8 images has a standard
  error of σ/√8 ≈ 0.35σ, and the hardest of 8 negatives is a meaningful hard negative. SUN has 16
  trainval images per class (13 on the validation split), so 8 draws a different half of each class
  every episode, and an episode at SUN shape (645 classes → 5 160 images) costs half what 16 would:
  SUN is where the embedder, not the GP, dominates the train time. On the stand-ins n_cb = 4 lost
  8–10 points of H, 16 gained 0–2.5 (synth-sun 47.6 → 49.9) at 1.8× the SUN train time.
* ``batch_size=1024`` (L_T). Large enough that an anchor has a positive in the batch even on SUN
  (16 of 10 320 images per class: ≈ 1.5 positives per anchor), and of the same order as a ``bt``
  batch (320–5 160 images), so the ablation compares losses and sampling, not batch sizes.
* ``reduction="sum"``, the paper's formula as written — a choice with a consequence worth
  knowing. With Adam the loss *scale* only matters through PyTorch's coupled weight decay
  (gradient + 0.1·W, then Adam's normalisation). Under a sum the hinge gradients grow with the
  number of terms — L(L−1)n_CB, from 3 040 (APY) to 3.3 million (SUN) — and dwarf 0.1·W, so the
  paper's weight decay is nearly inert: on synth-awa2 it changes the trained W by 5 %. Under a mean
  it is a strong regulariser (|W| shrinks 2.7×), and on the synthetic stand-ins that cost the
  full bt-gp pipeline 9–16 points of H (synth-awa2 H 66 → 50, synth-apy 61 → 52, same data and
  seeds); "mean" with weight decay 0 matches "sum" to within a point, as the argument predicts.
  ``--set bt.reduction=mean`` gives the other reading.
  We have no real ResNet features to confirm this on the benchmarks themselves.

Every random draw (initialisation and sampling) comes from a ``torch.Generator`` seeded with
``random_state``: the global RNG is never touched, and on the CPU a fixed seed gives a bit-identical W.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from zslbench import hyperparams as hp
from zslbench.errors import DataError
from zslbench.hookspecs import hookimpl
from zslbench.progress import steps
from zslbench_plugins.losses import REDUCTIONS, balanced_triplet_loss_and_grad, triplet_loss
from zslbench_plugins.prototype_kinds import Embedder

#: Map the whole training set in every episode (one GEMM over all n images, then pick the batch's
#: rows of the result) instead of gathering the batch first, when a batch is expected to touch at
#: least this share of the images. Gathering a 2048-d row costs ~0.3 of that row's GEMM work
#: (forward + backward; 7 vs 25 ms for 5 160 rows on one core), so the full pass wins above
#: ~1/1.3 of the images: on SUN with n_cb ≥ 16, or on tiny training sets.
FULL_PASS_FRACTION = 0.75


class IdentityEmbedder(Embedder):
    """No projection: the latent space is the (preprocessed) feature space.

    The paper's "GP" and "KRR" ablation rows regress prototypes directly in feature space.
    ``transform`` returns the features as a float32 array; when they already are a float32 array the
    result shares their memory (no 300 MB copy of AWA2), so callers must not write into it.
    """

    name = "identity"

    def __init__(self) -> None:
        pass

    def fit(self, features: np.ndarray, labels: np.ndarray) -> IdentityEmbedder:
        features = _check_features(features)
        _check_labels(labels, len(features))
        self.n_features_in_ = int(features.shape[1])
        return self

    def transform(self, features: np.ndarray) -> np.ndarray:
        features = _check_features(features)
        _check_fitted_width(self, features)
        return np.asarray(features, dtype=np.float32)


class _LinearTripletEmbedder(Embedder):
    """A linear map x = W f + b trained with Adam on a triplet loss.

    Subclasses say how an episode's batch is drawn, and compute its loss and the gradients of W
    and b. ``fit`` puts the training features on ``device`` once; each episode draws indices on the
    CPU (so the draws do not depend on the device), forms the batch's latent vectors, and takes one
    Adam step. W is kept as (k, d), row-major: the weight gradient Gᵀ·F is then a contiguous
    (k, d) product, which MKL computes ~17 % faster than the (d, k) product Fᵀ·G (CUB's shape, 2
    threads), and a contiguous gradient keeps ``torch._fused_adam_`` on its vectorised path (3x
    slower on a transposed one). The forward product F·Wᵀ passes Wᵀ as a transposed view, which
    BLAS reads without a copy. The layout is not expected to move a number: on an Intel host
    (MKL), (k, d) and (d, k) training gave the same W and losses bit for bit at the APY, AWA1,
    CUB and SUN stand-in shapes. Another BLAS may round the two products differently.

    Fitted state: ``W_`` (k, d) and ``b_`` (k,) float32, ``classes_`` (the label values seen),
    ``n_features_in_``, ``loss_history_`` (the loss of each episode, before its step).
    """

    def check_params(self) -> None:
        hp.integer(self.name, "latent_dim", self.latent_dim, 1)
        hp.integer(self.name, "episodes", self.episodes, 0)
        hp.real(self.name, "lr", self.lr)
        hp.real(self.name, "weight_decay", self.weight_decay, allow_low=True)
        hp.real(self.name, "margin", self.margin, allow_low=True)
        hp.choice(self.name, "reduction", self.reduction, tuple(REDUCTIONS))
        hp.seed(self.name, self.random_state)
        hp.torch_device(self.name, self.device)

    # -- hooks for the subclasses -------------------------------------------------------------
    def _prepare(
        self, y: np.ndarray, n_classes: int, generator: torch.Generator, features: torch.Tensor
    ) -> Any:
        raise NotImplementedError

    def _episode(self, state: Any, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """Draw a batch; set ``weight.grad`` and ``bias.grad``; return the loss."""
        raise NotImplementedError

    # -- the shared training loop -----------------------------------------------------------------
    def trainer(self, features: np.ndarray, labels: np.ndarray) -> EpisodeTrainer:
        """Check everything, put the data on the device, initialise W, b and Adam: the state
        ``fit`` then advances one episode at a time (and that benchmarks time)."""
        self.check_params()
        features = _check_features(features)
        labels = _check_labels(labels, len(features))
        classes, y = np.unique(labels, return_inverse=True)
        if len(classes) < 2:
            raise DataError(
                f"{self.name} embedder: the training labels hold {len(classes)} class; "
                "a triplet loss needs at least two",
                hint="check the split: every training set has two or more seen classes",
            )
        device = hp.torch_device(self.name, self.device)
        seed = (
            int(self.random_state)
            if self.random_state is not None
            else int(np.random.SeedSequence().entropy % (2**63))
        )
        generator = torch.Generator().manual_seed(seed)
        f = _to_tensor(features, device)
        if not bool(torch.isfinite(f).all()):
            raise DataError(
                f"{self.name} embedder: the training features contain NaN or inf",
                hint="fix the feature file, or preprocess with the clip preprocessor",
            )
        weight, bias = _init_linear(f.shape[1], int(self.latent_dim), generator, device)
        optimiser = EpisodeAdam(
            [weight, bias], lr=float(self.lr), weight_decay=float(self.weight_decay)
        )
        state = self._prepare(y, len(classes), generator, f)
        return EpisodeTrainer(self, weight, bias, optimiser, state, classes, seed)

    def fit(self, features: np.ndarray, labels: np.ndarray) -> _LinearTripletEmbedder:
        run = self.trainer(features, labels)
        history = torch.empty(int(self.episodes), dtype=torch.float32, device=run.bias.device)
        with steps("episodes", int(self.episodes)) as step:
            for episode in range(int(self.episodes)):
                history[episode] = run.step()  # stays on the device: no sync per episode on a GPU
                step()
        self.W_ = run.weight.detach().cpu().numpy().copy()
        self.b_ = run.bias.detach().cpu().numpy().copy()
        self.classes_ = run.classes
        self.n_features_in_ = int(self.W_.shape[1])
        self.loss_history_ = history.cpu().numpy()
        self.random_state_ = run.seed
        return self

    def transform(self, features: np.ndarray) -> np.ndarray:
        """Latent vectors ``features @ W_.T + b_`` as float32 (the map learnt by ``fit``)."""
        if not hasattr(self, "W_"):
            raise RuntimeError(f"{type(self).__name__}.transform called before fit")
        features = _check_features(features)
        _check_fitted_width(self, features)
        out = np.asarray(features, dtype=np.float32) @ self.W_.T
        out += self.b_
        return out


class BalancedTripletEmbedder(_LinearTripletEmbedder):
    """The paper's embedder: a linear map trained with the class-balanced triplet loss L_BT (eq. 3).

    Each episode draws ``n_cb`` images from every one of the L training classes — without
    replacement from a class with at least ``n_cb`` images, with replacement from a smaller one —
    and takes one Adam step on L_BT of that batch.

    Parameters (paper = stated in the paper; ours = see the module docstring for why):
    latent_dim (64, ours), n_cb (8, ours), episodes (500, paper), lr (0.002, paper),
    weight_decay (0.1, paper; PyTorch's coupled L2), margin (Δ = 4, paper),
    reduction ("sum", the paper's eq. 3 as written; see the module docstring for what it implies
    for the weight decay), random_state, device (injected).
    """

    name = "bt"

    def __init__(
        self,
        latent_dim: int = 64,
        n_cb: int = 8,
        episodes: int = 500,
        lr: float = 0.002,
        weight_decay: float = 0.1,
        margin: float = 4.0,
        reduction: str = "sum",
        random_state: int | None = None,
        device: str = "cpu",
    ) -> None:
        self.latent_dim = latent_dim
        self.n_cb = n_cb
        self.episodes = episodes
        self.lr = lr
        self.weight_decay = weight_decay
        self.margin = margin
        self.reduction = reduction
        self.random_state = random_state
        self.device = device

    def check_params(self) -> None:
        super().check_params()
        hp.integer(self.name, "n_cb", self.n_cb, 1)

    def _prepare(
        self, y: np.ndarray, n_classes: int, generator: torch.Generator, features: torch.Tensor
    ) -> Any:
        sampler = ClassBalancedSampler(y, n_classes, int(self.n_cb))
        state = _batch_state(features, sampler, generator, sampler.expected_distinct())
        state.workspace = torch.empty(  # the loss's distances and active hinges
            2, n_classes * int(self.n_cb), n_classes, dtype=features.dtype, device=features.device
        )
        state.zero_bias_grad = features.new_zeros(int(self.latent_dim))
        return state

    @torch.no_grad()
    def _episode(self, state: Any, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        idx = state.sampler.sample_slots(state.generator)  # (n_cb, L) image indices, CPU
        n_cb, n_cls = idx.shape
        rows = idx.view(-1)  # sample-major: row s·L + j is sample s of class j
        batch = _Batch(state, rows)
        latent = batch.latent(weight, bias)
        loss, grad = balanced_triplet_loss_and_grad(
            latent.view(n_cb, n_cls, -1),
            float(self.margin),
            self.reduction,
            workspace=state.workspace,
        )
        weight.grad = batch.weight_gradient(grad.view(len(rows), -1))
        # L_BT depends on distances only, so it does not change when b moves every x: its gradient
        # with respect to b is exactly 0 (the sum of the rows of ``grad``, up to rounding).
        bias.grad = state.zero_bias_grad
        return loss


def _batch_state(
    features: torch.Tensor, sampler: Any, generator: torch.Generator, expected_rows: float
) -> _BatchState:
    """Map every image per episode when a batch touches most of them, else gather into a buffer."""
    full = expected_rows >= FULL_PASS_FRACTION * features.shape[0]
    buffer = (
        None
        if full
        else torch.empty(
            sampler.batch_size, features.shape[1], dtype=features.dtype, device=features.device
        )
    )
    return _BatchState(features, sampler, generator, full, buffer)


class TripletEmbedder(_LinearTripletEmbedder):
    """Ablation: the same linear map trained with the plain triplet loss L_T (eq. 2).

    Each episode draws ``batch_size`` images uniformly without replacement (all of them when there
    are fewer) and takes one Adam step on L_T over every triplet of that batch.

    Parameters: as ``bt``, with batch_size (1024, ours) instead of n_cb.
    """

    name = "t"

    def __init__(
        self,
        latent_dim: int = 64,
        batch_size: int = 1024,
        episodes: int = 500,
        lr: float = 0.002,
        weight_decay: float = 0.1,
        margin: float = 4.0,
        reduction: str = "sum",
        random_state: int | None = None,
        device: str = "cpu",
    ) -> None:
        self.latent_dim = latent_dim
        self.batch_size = batch_size
        self.episodes = episodes
        self.lr = lr
        self.weight_decay = weight_decay
        self.margin = margin
        self.reduction = reduction
        self.random_state = random_state
        self.device = device

    def check_params(self) -> None:
        super().check_params()
        hp.integer(self.name, "batch_size", self.batch_size, 2)

    def _prepare(
        self, y: np.ndarray, n_classes: int, generator: torch.Generator, features: torch.Tensor
    ) -> Any:
        sampler = UniformSampler(len(y), int(self.batch_size))
        state = _batch_state(features, sampler, generator, sampler.batch_size)
        state.labels = torch.as_tensor(y, dtype=torch.int64, device="cpu")
        return state

    def _episode(self, state: Any, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        idx = state.sampler.sample(state.generator)
        latent = _Batch(state, idx).latent(weight, bias)  # autograd records it
        labels = state.labels[idx].to(latent.device)
        loss = triplet_loss(latent, labels, float(self.margin), self.reduction)
        weight.grad, bias.grad = torch.autograd.grad(loss, (weight, bias))
        return loss


class EpisodeTrainer:
    """A linear triplet embedder in training: W (k, d) and b, Adam, and the batch state."""

    def __init__(
        self,
        model: _LinearTripletEmbedder,
        weight: torch.Tensor,
        bias: torch.Tensor,
        optimiser: EpisodeAdam,
        state: _BatchState,
        classes: np.ndarray,
        seed: int,
    ) -> None:
        self.model = model
        self.weight = weight
        self.bias = bias
        self.optimiser = optimiser
        self.state = state
        self.classes = classes
        self.seed = seed

    def step(self) -> torch.Tensor:
        """One episode: draw a batch, one Adam step on its loss; returns the loss (before the step)."""
        loss = self.model._episode(self.state, self.weight, self.bias)
        self.optimiser.step()
        return loss.detach()


class EpisodeAdam:
    """``torch.optim.Adam(params, lr, weight_decay=..., fused=True)`` (betas 0.9, 0.999, eps 1e-8,
    PyTorch's coupled L2 weight decay), reduced to the case an episode needs: the same fused
    kernel, so the weights are bit-identical to ``torch.optim.Adam``'s fused implementation (tested).

    Why not ``torch.optim.Adam`` itself: its ``step`` spends ~1 ms of Python per call (parameter
    grouping, state checks, profiler markers), as much as a whole small episode's matrix products
    (APY shape). Why the fused kernel: one pass over W and its two moments instead of eight
    (the multi-tensor implementation's eight operations, each a kernel launch on a GPU). Both
    parameters share one step counter, a tensor on their device, so nothing is read back.
    """

    def __init__(
        self,
        params: list[torch.Tensor],
        lr: float,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params = list(params)
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.exp_avgs = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sqs = [torch.zeros_like(p) for p in self.params]
        step = torch.zeros((), dtype=torch.float32, device=self.params[0].device)
        self.state_steps = [step] * len(self.params)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.state_steps[0].add_(1)  # one counter for all parameters
        torch._fused_adam_(
            self.params,
            [p.grad for p in self.params],
            self.exp_avgs,
            self.exp_avg_sqs,
            [],
            self.state_steps,
            amsgrad=False,
            lr=self.lr,
            beta1=self.betas[0],
            beta2=self.betas[1],
            weight_decay=self.weight_decay,
            eps=self.eps,
            maximize=False,
        )


class ClassBalancedSampler:
    """Draws ``n_cb`` image indices from each of L classes (an L_BT episode's batch).

    A class with at least ``n_cb`` images gives ``n_cb`` distinct ones (uniformly random subset);
    a smaller class gives ``n_cb`` draws with replacement. Returns (L, n_cb) int64 indices into the
    training set, class i in row i. Vectorised over classes: one ``rand`` + ``topk`` per episode.
    """

    def __init__(self, y: np.ndarray, n_classes: int, n_cb: int) -> None:
        y = np.asarray(y, dtype=np.int64)
        order = np.argsort(y, kind="stable")
        counts = np.bincount(y, minlength=n_classes)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        width = int(counts.max())
        # table[i, :counts[i]] are the images of class i; the rest is padding (never drawn).
        pos = np.arange(width)[None, :]
        table = np.where(
            pos < counts[:, None], order[np.minimum(starts[:, None] + pos, len(y) - 1)], -1
        )
        self.n_cb = n_cb
        self.counts = torch.as_tensor(counts, device="cpu")
        # (width, L): members_t[:counts[i], i] are the images of class i, gathered along dim 0.
        self.members_t = torch.as_tensor(np.ascontiguousarray(table.T), device="cpu")
        self.big = torch.as_tensor(np.flatnonzero(counts >= n_cb), device="cpu")
        self.small = torch.as_tensor(np.flatnonzero(counts < n_cb), device="cpu")
        self.padding = torch.as_tensor(pos >= counts[self.big.numpy(), None], device="cpu")
        self.batch_size = n_classes * n_cb
        #: Whether a batch can hold an image twice (a class smaller than n_cb).
        self.may_repeat = bool(len(self.small))

    def expected_distinct(self) -> float:
        """Expected number of distinct images in one batch (duplicates come from small classes)."""
        counts = self.counts.numpy().astype(float)
        small = counts < self.n_cb
        distinct = np.where(small, counts * (1.0 - (1.0 - 1.0 / counts) ** self.n_cb), self.n_cb)
        return float(distinct.sum())

    def sample(self, generator: torch.Generator) -> torch.Tensor:
        """(L, n_cb) image indices, class i in row i."""
        return self.sample_slots(generator).T

    def sample_slots(self, generator: torch.Generator) -> torch.Tensor:
        """The same draw laid out (n_cb, L), contiguous: row s holds every class's s-th image
        (the loss's sample-major layout, without a transposing copy)."""
        members = self.members_t
        if len(self.big):
            keys = torch.rand(self.padding.shape, generator=generator, device="cpu")
            keys.masked_fill_(
                self.padding, 2.0
            )  # padding sorts last, never among the n_cb smallest
            picked = keys.T.topk(self.n_cb, dim=0, largest=False, sorted=False).indices
            if not len(self.small):  # every class is big (the usual case): no scatter needed
                return members.gather(0, picked)
        cols = torch.empty(self.n_cb, len(self.counts), dtype=torch.int64, device="cpu")
        if len(self.big):
            cols[:, self.big] = picked
        if len(self.small):
            u = torch.rand(
                len(self.small), self.n_cb, generator=generator, dtype=torch.float64, device="cpu"
            )
            cols[:, self.small] = (u * self.counts[self.small, None]).long().T
        return members.gather(0, cols)


class UniformSampler:
    """Draws ``batch_size`` distinct image indices uniformly (all ``n`` when ``n <= batch_size``)."""

    def __init__(self, n: int, batch_size: int) -> None:
        self.n = n
        self.batch_size = min(batch_size, n)
        self.may_repeat = False

    def sample(self, generator: torch.Generator) -> torch.Tensor:
        return torch.randperm(self.n, generator=generator, device="cpu")[: self.batch_size]


class _BatchState:
    """What an episode needs: device features, sampler, RNG, and how to form the batch."""

    def __init__(
        self,
        features: torch.Tensor,
        sampler: Any,
        generator: torch.Generator,
        full: bool,
        buffer: torch.Tensor | None,
    ) -> None:
        self.features = features
        self.sampler = sampler
        self.generator = generator
        self.full = full
        self.buffer = buffer
        self.labels: torch.Tensor | None = None
        self.workspace: torch.Tensor | None = None
        self.zero_bias_grad: torch.Tensor | None = None


class _Batch:
    """An episode's images ``rows`` (CPU int64 indices into the training set, in the loss's order):
    their latent vectors under (W, b), and the gradient of W from the latent vectors' gradient.

    Either every training image is mapped and the rows picked (``state.full``), or only the batch's
    images are gathered into a preallocated buffer (a fresh 40 MB tensor per episode costs more in
    page faults than the gather itself). When the sampler can draw an image twice, each distinct
    image is gathered and mapped once.
    """

    def __init__(self, state: _BatchState, rows: torch.Tensor) -> None:
        device = state.features.device
        self.rows = rows.to(device)
        self.inverse: torch.Tensor | None = None
        if state.full:
            self.inputs = state.features
            self.inverse = self.rows
        elif not state.sampler.may_repeat:
            # The buffer is one batch long: a slice only for a shorter batch (one operation less).
            buffer = state.buffer
            self.inputs = buffer if len(buffer) == len(rows) else buffer[: len(rows)]
            torch.index_select(state.features, 0, self.rows, out=self.inputs)
        else:
            distinct, inverse = torch.unique(rows, sorted=True, return_inverse=True)
            self.inputs = state.buffer[: len(distinct)]
            torch.index_select(state.features, 0, distinct.to(device), out=self.inputs)
            self.inverse = inverse.to(device)

    def latent(self, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """F·Wᵀ + b for the batch's rows, in their order."""
        mapped = torch.addmm(bias, self.inputs, weight.T)
        return mapped if self.inverse is None else mapped.index_select(0, self.inverse)

    def weight_gradient(self, grad: torch.Tensor) -> torch.Tensor:
        """d loss / d W = Gᵀ·F, G the latent rows' gradient (summed over repeated images)."""
        if self.inverse is not None:
            grad = grad.new_zeros(len(self.inputs), grad.shape[1]).index_add_(0, self.inverse, grad)
        return grad.T @ self.inputs


def _init_linear(
    d_in: int, d_out: int, generator: torch.Generator, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """W (d_out, d_in) and b of ``nn.Linear(d_in, d_out)``'s default init, U(±1/√d_in) for both,
    drawn from ``generator`` on the CPU, so the init is the same on every device and the global
    RNG is left alone. Both require grad."""
    bound = 1.0 / math.sqrt(d_in)
    weight = torch.empty(d_out, d_in, device="cpu").uniform_(-bound, bound, generator=generator)
    bias = torch.empty(d_out, device="cpu").uniform_(-bound, bound, generator=generator)
    return weight.to(device).requires_grad_(True), bias.to(device).requires_grad_(True)


def _to_tensor(features: np.ndarray, device: torch.device) -> torch.Tensor:
    """A float32 tensor on ``device`` holding ``features``. A writable float32 C-contiguous array is
    shared, not copied (``fit`` never writes into it); a read-only one (a memmap) is copied, as
    ``torch.from_numpy`` cannot share it safely."""
    arr = np.ascontiguousarray(features, dtype=np.float32)
    if not arr.flags.writeable:
        arr = arr.copy()
    return torch.from_numpy(arr).to(device)


def _check_features(features: np.ndarray) -> np.ndarray:
    if not isinstance(features, np.ndarray) or features.ndim != 2:
        shape = getattr(features, "shape", None)
        raise DataError(
            f"features must be a 2-D array (images × features), got shape {shape}",
            hint="pass the feature matrix, one row per image",
        )
    return features


def _check_labels(labels: np.ndarray, n: int) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != n or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(
            f"labels must be {n} integer class indices (one per image), got "
            f"{labels.dtype} array of shape {labels.shape}",
            hint="pass the class index of every training image",
        )
    return labels


def _check_fitted_width(model: Embedder, features: np.ndarray) -> None:
    expected = getattr(model, "n_features_in_", None)
    if expected is None:
        raise RuntimeError(f"{type(model).__name__}.transform called before fit")
    if features.shape[1] != expected:
        raise DataError(
            f"features have {features.shape[1]} columns but the {model.name} embedder "
            f"was fitted on {expected}",
            hint="transform features of the same kind as those it was fitted on",
        )


@hookimpl
def zslbench_embedders() -> list[type[Embedder]]:
    return [IdentityEmbedder, BalancedTripletEmbedder, TripletEmbedder]
