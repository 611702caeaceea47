"""The paper's two triplet losses as pure, vectorised torch functions.

* :func:`balanced_triplet_loss` is L_BT (paper eq. 3): a class-balanced batch, each sample of class
  i compared with its own batch mean x̄ⁱ and, for every other class j, with the sample of class j
  closest to x̄ⁱ.
* :func:`triplet_loss` is L_T (paper eq. 2): every (anchor l, positive m ≠ l, negative n) triplet
  of a mini-batch.

Both are sums of hinges ``max(0, Δ + a − b)`` over all pairs of two sets of distances that share a
row (an anchor class for L_BT, an anchor image for L_T). L_T has B³ terms, too many to
materialise: :func:`pairwise_hinge_sum` sorts the short side of each row (an anchor's few
positives) and, for every entry of the long side, counts with ``searchsorted`` how many sorted
entries make its hinge positive and sums them with a prefix sum. That is exact (the same hinges,
the same sub-gradient: 0 where a hinge is exactly 0, as ``torch.relu``) in O(R·P·log Q) time and
O(R·(P + Q)) memory, and L_T goes through autograd. L_BT has L²·n_CB terms, as many as its
distance matrix has entries (n_CB is small): its training loop, which needs only the value and
the gradient, writes one float indicator of the active hinges, sums it both ways, and writes the
gradient in closed form (:func:`balanced_triplet_loss_and_grad`).

Why distances come from ``‖u‖² + ‖v‖² − 2u·v`` after centring: the expansion turns the all-pairs
distances into one matrix product (the expensive part, done by BLAS), and centring the batch first
keeps the norms, and therefore the float32 cancellation error, small. Distances are translation
invariant, so the centring changes neither the loss nor its gradient mathematically.
"""

from __future__ import annotations

from typing import Literal

import torch

Reduction = Literal["sum", "mean"]
REDUCTIONS: tuple[str, ...] = ("sum", "mean")


#: Added to (subtracted from) a distance to take it out of a hinge sum. Finite, unlike ``inf``, so
#: that ``0 · excluded`` stays 0 instead of NaN; no squared distance of a float32 latent space that
#: still trains comes near it.
EXCLUDED = 1e30

#: The gradient of the nearest-negative distances visits only the (mean class, sample class)
#: pairs with an active hinge (``_inter_gradient_sparse``) when at most this share of the L² pairs
#: has one, and builds the whole (n_CB, L, L) weight tensor for two GEMMs otherwise. Once training
#: has separated most classes few pairs are active (with the default sum reduction: under 5 %
#: after ~150 of 500 episodes on synth-sun). Measured at SUN shape on the 2-core CPU (one
#: thread): sparse 11 ms vs dense 25 ms at 1 % active, 15 vs 25 at 3 %, 33 vs 25 at 10 %.
SPARSE_GRADIENT_FRACTION = 0.05
#: Below this many class pairs (L²) the dense path always runs, without counting the active pairs
#: (a read-back from the device): at APY and AWA shapes (L = 20, 40) its GEMMs are tiny.
SPARSE_MIN_PAIRS = 4096


def pairwise_hinge_sum(a: torch.Tensor, b: torch.Tensor, margin: float) -> torch.Tensor:
    """``Σ_r Σ_p Σ_q max(0, margin + a[r, p] − b[r, q])`` without the (R, P, Q) tensor.

    ``a`` is (R, P), ``b`` is (R, Q); ``b`` is the side that gets sorted, so pass the shorter one
    there. To leave an entry out, pass it as ``−EXCLUDED`` in ``a`` or ``+EXCLUDED`` in ``b``: its
    hinges are then all 0. Returns a 0-d tensor. The gradient is the hinge's: +1 per active term on
    the ``a`` side and −1 on the ``b`` side, "active" meaning strictly positive, exactly like ``relu``.
    """
    sorted_b, _ = torch.sort(b, dim=1)
    shifted = a + margin
    # How many b lie strictly below margin + a: the active hinges of that entry of a.
    count = torch.searchsorted(sorted_b.detach(), shifted.detach().contiguous(), side="left")
    # Σ_{q active} (shifted − b_q) = count · shifted − (sum of the ``count`` smallest b).
    # Excluded b sort last and are never among them; excluded a have count 0.
    prefix = torch.cat([sorted_b.new_zeros(sorted_b.shape[0], 1), sorted_b.cumsum(dim=1)], dim=1)
    below = prefix.gather(1, count)
    return (count.to(a.dtype) * shifted - below).sum()


def _run_offsets(lengths: torch.Tensor) -> torch.Tensor:
    """``[0, 1, …, lengths[0]−1, 0, 1, …, lengths[1]−1, …]``: positions within consecutive runs."""
    run_starts = torch.cumsum(lengths, 0) - lengths
    total = int(lengths.sum())
    return torch.arange(total, device=lengths.device) - torch.repeat_interleave(
        run_starts, lengths, output_size=total
    )


def _centred_sq_dists(rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between the rows of ``rows`` and of ``cols`` (one GEMM)."""
    return (rows * rows).sum(1, keepdim=True) + (cols * cols).sum(1) - 2.0 * (rows @ cols.T)


def balanced_triplet_loss_and_grad(
    x: torch.Tensor,
    margin: float = 4.0,
    reduction: Reduction = "sum",
    workspace: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """L_BT (paper eq. 3) of a class-balanced batch and its gradient, in closed form.

    ``x`` is **sample-major**, (n_CB, L, k): ``x[l, i]`` is x_lⁱ, the l-th sample of class i (the
    layout in which the minimum over a class's samples runs over the outer axis, along contiguous
    memory). Returns ``(loss, grad)``, a 0-d tensor and d loss / d x of ``x``'s shape; nothing is
    recorded for autograd.

    Why by hand: a training episode needs the value and the gradient, nothing else. Autograd's
    version of this computation is 2–3× the tensor operations (each one a kernel launch on a
    GPU, and ~10 µs of Python on a CPU, as much as the arithmetic at APY's shape), and it keeps
    every intermediate alive. The gradient is the hinges' (sub-)gradient, 0 where a hinge is exactly
    0, as ``torch.relu``'s; a minimum attained by several samples (the same image drawn twice) splits
    its gradient equally among them, a valid sub-gradient that gives the linear map the same update
    as crediting one copy. With C[i, j] the number of samples l of class i whose hinge against
    class j is active, and A[i, l] the number of classes j against which sample l's is:

    * d/d‖x_lⁱ − x̄ⁱ‖² = A[i, l] and d/d min_s ‖x_sʲ − x̄ⁱ‖² = −C[i, j];
    * the chain rule through x̄ⁱ spreads a class mean's gradient evenly over its n_CB samples.

    C and A are the two sums of one (L, n_CB, L) indicator of the active hinges (n_CB is small, so
    the indicator is no larger than the distance matrix). ``workspace`` is as for
    :func:`balanced_triplet_loss`.
    """
    if x.dim() != 3:
        raise ValueError(f"x must be (n_cb, classes, latent_dim), got shape {tuple(x.shape)}")
    n_cb, n_cls, dim = x.shape
    if n_cls < 2:
        raise ValueError("L_BT needs at least two classes in the batch")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    x = x - x.mean(dim=(0, 1))  # centring: see the module docstring
    means = x.mean(dim=0)  # (L, k): x̄ⁱ
    diff = x - means  # (n_CB, L, k): x_lⁱ − x̄ⁱ
    intra = (diff * diff).sum(-1).T.contiguous()  # (L, n_CB): ‖x_lⁱ − x̄ⁱ‖²
    flat = x.view(n_cb * n_cls, dim)  # row s·L + j is sample s of class j
    # [x, ‖x‖², 1]·[−2m, 1, ‖m‖²]ᵀ = ‖x − m‖²: every sample against every mean in one GEMM.
    aug_s = torch.cat([flat, (flat * flat).sum(1, keepdim=True), flat.new_ones(len(flat), 1)], 1)
    neg2_means = -2.0 * means
    aug_m = torch.cat([neg2_means, means.new_ones(n_cls, 1), (means * means).sum(1, True)], 1)
    aug_m_t = aug_m.T.contiguous()  # MKL is ~2x slower on the transposed view here
    dist_space, hinge_space = _workspace_views(workspace, x, n_cb, n_cls)
    dists = torch.mm(aug_s, aug_m_t, out=dist_space).view(n_cb, n_cls, n_cls)  # [s, j, i]
    nearest = dists.amin(dim=0)  # [j, i]: min_s ‖x_sʲ − x̄ⁱ‖²
    # shifted[i, j] = Δ − inter[i, j]; j = i is no negative class: out of every hinge.
    shifted = torch.sub(margin, nearest.T).contiguous()
    shifted.diagonal().fill_(-EXCLUDED)
    # active[i, l, j] = 1 where the hinge Δ + intra[i, l] − inter[i, j] is positive, i.e.
    # −intra[i, l] < shifted[i, j]; then C = Σ_l active and A = Σ_j active (exact: counts < 2^24).
    # Written as floats into the workspace: at CUB's shape a bool result, or the sort and
    # ``searchsorted`` that this replaces, took 6x as long as the whole float comparison.
    active = torch.lt(intra.neg().unsqueeze(2), shifted.unsqueeze(1), out=hinge_space)
    count_f = active.sum(1)  # C[i, j]
    per_sample = active.sum(2)  # A[i, l]
    # Σ over active (i, j, l) of Δ − inter[i, j] + intra[i, l]
    loss = (count_f * shifted).sum() + (per_sample * intra).sum()
    # Half the gradient (every term below carries a factor 2, applied once at the end).
    grad = diff * per_sample.T[:, :, None]  # d/dx_lⁱ through ‖x_lⁱ − x̄ⁱ‖²
    minus_grad_means = grad.sum(0)  # ... and through x̄ⁱ in it, negated
    grad_flat = grad.view(n_cb * n_cls, dim)
    if n_cls * n_cls >= SPARSE_MIN_PAIRS and int(
        torch.count_nonzero(count_f)
    ) <= SPARSE_GRADIENT_FRACTION * (n_cls * n_cls):
        _inter_gradient_sparse(dists, flat, means, count_f, grad_flat, minus_grad_means)
    else:
        augmented = (aug_s, aug_m, flat, neg2_means)
        _inter_gradient_dense(dists, nearest, count_f, augmented, grad_flat, minus_grad_means)
    grad.sub_(minus_grad_means, alpha=1.0 / n_cb)  # a mean's gradient reaches each of its samples
    scale = 2.0 if reduction == "sum" else 2.0 / (n_cls * (n_cls - 1) * n_cb)
    return (loss if reduction == "sum" else loss * (scale / 2.0)), grad.mul_(scale)


def _workspace_views(
    workspace: torch.Tensor | None, like: torch.Tensor, n_cb: int, n_cls: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two blocks of n_CB·L² elements of ``workspace``: the distances (n_CB·L, L) and the active
    hinges (L, n_CB, L). A block that does not fit (or a workspace of another dtype or device) is
    a new tensor."""
    size = n_cb * n_cls * n_cls
    if workspace is None or workspace.dtype != like.dtype or workspace.device != like.device:
        return like.new_empty(n_cb * n_cls, n_cls), like.new_empty(n_cls, n_cb, n_cls)
    if workspace.shape == (2, n_cb * n_cls, n_cls):  # the trainer's: fewer view operations
        return workspace[0], workspace[1].view(n_cls, n_cb, n_cls)
    flat = workspace.view(-1)
    dist_space = (
        flat[:size].view(n_cb * n_cls, n_cls)
        if len(flat) >= size
        else like.new_empty(n_cb * n_cls, n_cls)
    )
    hinge_space = (
        flat[size : 2 * size].view(n_cls, n_cb, n_cls)
        if len(flat) >= 2 * size
        else like.new_empty(n_cls, n_cb, n_cls)
    )
    return dist_space, hinge_space


def _inter_gradient_dense(
    dists: torch.Tensor,
    nearest: torch.Tensor,
    count_f: torch.Tensor,
    augmented: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    half_grad: torch.Tensor,
    minus_half_grad_means: torch.Tensor,
) -> None:
    """Add half the gradient of −Σ C[i, j]·min_s ‖x_sʲ − x̄ⁱ‖² to ``half_grad`` (the samples) and
    subtract half its gradient for the means from ``minus_half_grad_means``.

    G[s·L + j, i] = C[i, j] / (number of minimisers) where sample s of class j attains the
    minimum, else 0, built in place of ``dists``. Since ‖x_r − m_i‖² has gradient 2 (x_r − m_i) for
    x_r and −2 (x_r − m_i) for m_i, the halves are −(Σ_i G[r, i]) x_r + (G m)_r for x_r and
    (Σ_r G[r, i]) m_i − (Gᵀ x)_i for m_i: two GEMMs on the augmented matrices, whose extra columns
    give the sums. ``augmented`` is ``(aug_s, aug_m, x, −2 m)``: the augmented matrices and their
    first k columns, passed as tensors of their own (a slice is one more operation per use).
    """
    aug_s, aug_m, flat, neg2_means = augmented
    n_cb, n_cls, _ = dists.shape
    dim = half_grad.shape[1]
    weights = torch.eq(dists, nearest, out=dists)  # 1 at the minimisers (in place: dists is spent)
    # C / (number of minimisers), written over the (contiguous) count of minimisers: a transposed
    # result would make the broadcast product below strided, 2x slower at SUN's shape.
    ties = weights.sum(0)
    weights.mul_(torch.div(count_f.T, ties, out=ties))
    g = weights.view(n_cb * n_cls, n_cls)
    by_sample = g @ aug_m[:, : dim + 1]  # [−2 G m | Σ_i G]
    by_mean = g.T @ aug_s  # [Gᵀ x | Gᵀ ‖x‖² | Σ_r G]
    half_grad.sub_(by_sample[:, dim:] * flat).sub_(by_sample[:, :dim], alpha=0.5)
    minus_half_grad_means.add_(by_mean[:, dim + 1 :] * neg2_means, alpha=-0.5).sub_(
        by_mean[:, :dim]
    )


def _inter_gradient_sparse(
    dists: torch.Tensor,
    flat: torch.Tensor,
    means: torch.Tensor,
    count_f: torch.Tensor,
    half_grad: torch.Tensor,
    minus_half_grad_means: torch.Tensor,
) -> None:
    """``_inter_gradient_dense``'s result, visiting only the pairs (i, j) with C[i, j] > 0.

    Each pair credits its first minimiser; the dense path splits ties evenly. Both are the same
    update of a linear map when the tied samples are one image drawn twice.
    """
    n_cb, n_cls, _ = dists.shape
    # The active pairs in row-major order (the order of ``index_add_``'s sums), as two index rows.
    i_idx, j_idx = count_f.nonzero().T.contiguous().unbind()
    candidates = dists.view(n_cb, n_cls * n_cls).index_select(
        1, torch.add(i_idx, j_idx, alpha=n_cls)
    )
    # The argmin runs along contiguous rows of the transposed copy: an argmin over the outer axis
    # took 3-4x as long as the copy and the row-wise argmin together (CUB and SUN shapes). Both
    # give the first minimiser.
    nearest_sample = candidates.T.contiguous().argmin(dim=1)
    rows = torch.add(j_idx, nearest_sample, alpha=n_cls)  # sample s of class j: s·L + j
    # d‖x_r − m_i‖² = 2 (x_r − m_i)·(dx_r − dm_i), times d loss / d inter = −C[i, j]; halved
    weighted = count_f[i_idx, j_idx][:, None] * (
        flat.index_select(0, rows) - means.index_select(0, i_idx)
    )
    half_grad.index_add_(0, rows, weighted, alpha=-1.0)
    minus_half_grad_means.index_add_(0, i_idx, weighted, alpha=-1.0)


class _BalancedTriplet(torch.autograd.Function):
    """:func:`balanced_triplet_loss_and_grad` as an autograd function: the gradient is computed in
    the forward pass and scaled by the incoming one in the backward."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        x: torch.Tensor,
        margin: float,
        reduction: Reduction,
        workspace: torch.Tensor | None,
    ) -> torch.Tensor:
        loss, grad = balanced_triplet_loss_and_grad(
            x.transpose(0, 1).contiguous(), margin, reduction, workspace
        )
        ctx.save_for_backward(grad.transpose(0, 1))
        return loss

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad_out: torch.Tensor
    ) -> tuple[torch.Tensor, None, None, None]:
        (grad,) = ctx.saved_tensors
        return grad * grad_out, None, None, None


def balanced_triplet_loss(
    x: torch.Tensor,
    margin: float = 4.0,
    reduction: Reduction = "sum",
    workspace: torch.Tensor | None = None,
) -> torch.Tensor:
    """Class-balanced triplet loss L_BT (paper eq. 3) of a class-balanced batch, differentiable.

    ``x`` has shape (L, n_CB, k): ``x[i, l]`` is the latent vector x_lⁱ of the l-th sample drawn from
    the i-th class. The loss is ``Σ_{i≠j} Σ_l max(0, Δ + ‖x_lⁱ − x̄ⁱ‖² − min_n ‖x_nʲ − x̄ⁱ‖²)``, with
    x̄ⁱ the batch mean of class i. ``reduction="sum"`` is the paper's formula as written;
    ``"mean"`` divides by the number of terms, L·(L−1)·n_CB (the two differ only in scale, which
    matters for an optimiser only through weight decay: see ``plugins/embedders.py``).

    ``workspace``, optional, is a float tensor of 2·L²·n_CB elements on ``x``'s device that holds
    the (class mean × sample) distance matrix and the indicator of the active hinges (a smaller
    one holds what fits; the rest is allocated). A training loop passes the same one every
    episode: a fresh 13 MB tensor (SUN shape) costs more in page faults than the GEMM that fills
    it. Its content is overwritten.

    The embedder's training loop calls :func:`balanced_triplet_loss_and_grad` directly; this form
    is for autograd users (and the tests that check the closed form against autograd's).
    """
    if x.dim() != 3:
        raise ValueError(f"x must be (classes, n_cb, latent_dim), got shape {tuple(x.shape)}")
    return _BalancedTriplet.apply(x, margin, reduction, workspace)


def triplet_loss(
    x: torch.Tensor, labels: torch.Tensor, margin: float = 4.0, reduction: Reduction = "sum"
) -> torch.Tensor:
    """Plain triplet loss L_T (paper eq. 2) over all triplets of a mini-batch.

    ``x`` is (B, k), ``labels`` (B,). The loss is ``Σ max(0, Δ + ‖x_l − x_m‖² − ‖x_l − x_n‖²)`` over
    every anchor l, positive m ≠ l with the label of l, and negative n with another label.
    ``"mean"`` divides by the number of such triplets in the batch (0 triplets give a loss of 0
    that is still connected to ``x``, so a backward pass is always valid).
    """
    if x.dim() != 2 or labels.shape != x.shape[:1]:
        raise ValueError(
            f"x must be (B, k) and labels (B,), got {tuple(x.shape)} and {tuple(labels.shape)}"
        )
    size = len(labels)
    # The loss is invariant to the order of the batch: sort it by class, so that the positives of
    # an anchor are one contiguous block of its row of the distance matrix.
    order = torch.argsort(labels, stable=True)
    labels = labels[order]
    x = x[order]
    x = x - x.mean(dim=0)
    dists = _centred_sq_dists(x, x)  # (B, B)
    _, block_sizes = torch.unique_consecutive(labels, return_counts=True)
    block_starts = torch.cumsum(block_sizes, 0) - block_sizes
    block = torch.repeat_interleave(torch.arange(len(block_sizes), device=x.device), block_sizes)
    start, own = block_starts[block], block_sizes[block]  # per anchor: its class block
    # Positives, compacted to (B, P) with P the largest class: few per row, cheap to sort.
    slots = torch.arange(int(block_sizes.max()), device=x.device)
    cols = (start[:, None] + slots[None, :]).clamp(max=size - 1)
    rows = torch.arange(size, device=x.device)
    is_positive = (slots[None, :] < own[:, None]) & (cols != rows[:, None])
    positives = dists.gather(1, cols)
    # Σ_{m, n} max(0, Δ + d(l, m) − d(l, n)) = Σ max(0, Δ + (−d(l, n)) − (−d(l, m))): the B² anchor-
    # negative distances search the short sorted list of each anchor's positives. Non-negatives
    # (the anchor's own class block) and padding slots are pushed out of the sum.
    same_rows = torch.repeat_interleave(rows, own)  # every (anchor, same-class column) pair
    same_cols = torch.repeat_interleave(start, own) + _run_offsets(own)
    negative_side = (-dists).index_put((same_rows, same_cols), dists.new_tensor(-EXCLUDED))
    positive_side = (~is_positive).to(dists.dtype) * EXCLUDED - positives
    total = pairwise_hinge_sum(negative_side, positive_side, margin)
    if reduction == "sum":
        return total
    if reduction == "mean":
        n_triplets = int(((own - 1) * (size - own)).sum())
        return total / n_triplets if n_triplets else total * 0.0
    raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
