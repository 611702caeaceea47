"""The paper's two triplet losses as pure, vectorised torch functions.

* :func:`balanced_triplet_loss` is L_BT (paper eq. 3): a class-balanced batch, each sample of class
  i compared with its own batch mean x̄ⁱ and, for every other class j, with the sample of class j
  closest to x̄ⁱ.
* :func:`triplet_loss` is L_T (paper eq. 2): every (anchor l, positive m ≠ l, negative n) triplet
  of a mini-batch.

Both are sums of hinges ``max(0, Δ + a − b)`` over all pairs of two sets of distances that share a
row (an anchor class for L_BT, an anchor image for L_T). Materialising every term costs L²·n_CB
(L_BT) or B³ (L_T) memory; instead :func:`pairwise_hinge_sum` sorts the short side of each row — a
class's n_CB intra-class distances for L_BT, an anchor's few positives for L_T — and, for every entry
of the long side, counts with ``searchsorted`` how many sorted entries make its hinge positive and
sums them with a prefix sum. That is exact — the same hinges, the same sub-gradient (0 where a
hinge is exactly 0, as ``torch.relu``) — in O(R·P·log Q) time and O(R·(P + Q)) memory, and autograd
differentiates it.

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

#: ``_NearestSampleSqDist`` switches to its sparse backward when at most this share of the L² class
#: pairs has a gradient. Measured at SUN shape on the 2-core CPU (one thread, forward + backward):
#: sparse 11 ms vs dense 25 ms at 1 % active, 15 vs 25 at 3 %, 33 vs 25 at 10 %; even near 7 %.
SPARSE_BACKWARD_FRACTION = 0.05

#: The dense backward of ``_NearestSampleSqDist`` builds its (n_CB, L, L) gradient in one pass
#: (a few operations; fewer kernel launches on a GPU) up to this many elements, and one (L, L)
#: block at a time, while it is in cache, above. Measured on the 2-core Xeon (one thread): equal
#: at L = 150 (180 000 elements), the blockwise loop ~20 % faster at L = 645 (3.3 million).
DENSE_WHOLE_ELEMENTS = 2**20


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


class _NearestSampleSqDist(torch.autograd.Function):
    """``out[j, i] = min_s ‖samples[s·L + j] − means[i]‖²``: for every class mean i and class j, the
    squared distance to the closest of class j's samples. Inputs: ``samples`` (n_CB·L, k)
    sample-major, ``means`` (L, k).

    A hand-written autograd function because the generic path is 3–5× slower at SUN shape
    (L = 645): ``min(dim)`` with indices and ``amin``'s backward both make several passes over the
    (n_CB, L, L) distance tensor. Here the forward is one GEMM on augmented matrices
    ([x, ‖x‖², 1]·[−2m, 1, ‖m‖²]ᵀ gives the squared distances directly) and one ``amin``; the
    backward finds the minimisers block by block (exact ties — the same image drawn twice — give the
    whole gradient to the first, as ``torch.min`` does) and applies the chain rule with two more
    GEMMs per block, again on augmented matrices so that the row and column sums come for free.

    Once training has separated most classes, few (class, mean) pairs still have an active hinge
    (with the default sum reduction: under 5 % after ~150 of 500 episodes on synth-sun), and only
    those carry a gradient. Then the backward visits just those pairs
    (``_nearest_backward_sparse``) instead of the dense blocks: the same gradient, summed in a
    different order.
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        samples: torch.Tensor,
        means: torch.Tensor,
        n_cb: int,
        workspace: torch.Tensor | None,
    ) -> torch.Tensor:
        n_cls = means.shape[0]
        ones_s = samples.new_ones(samples.shape[0], 1)
        ones_m = means.new_ones(n_cls, 1)
        aug_s = torch.cat([samples, (samples * samples).sum(1, keepdim=True), ones_s], dim=1)
        aug_m = torch.cat([-2.0 * means, ones_m, (means * means).sum(1, keepdim=True)], dim=1)
        aug_m_t = aug_m.T.contiguous()  # MKL is ~2x slower on the transposed view here
        size = n_cb * n_cls * n_cls
        if workspace is not None and workspace.numel() >= size and workspace.dtype == samples.dtype:
            dists = torch.mm(aug_s, aug_m_t, out=workspace[:size].view(n_cb * n_cls, n_cls))
        else:
            dists = aug_s @ aug_m_t
        dists = dists.view(n_cb, n_cls, n_cls)  # [s, j, i]
        nearest = dists.amin(dim=0)  # [j, i]
        ctx.save_for_backward(samples, means, dists, nearest)
        return nearest

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, None, None]:
        samples, means, dists, nearest = ctx.saved_tensors
        n_cb, n_cls, _ = dists.shape
        grad = grad.contiguous()
        active = grad.view(-1).nonzero().squeeze(1)  # the pairs whose hinge is active somewhere
        if len(active) <= SPARSE_BACKWARD_FRACTION * n_cls * n_cls:
            return (*_nearest_backward_sparse(samples, means, dists, grad, active), None, None)
        # dists[r, i] = ‖x_r‖² − 2 x_r·m_i + ‖m_i‖² and only the minimiser r of each (class j, mean i)
        # carries the gradient g[j, i], so with G the (n_CB·L, L) gradient of ``dists``:
        #   d/dx_r = 2 (Σ_i G[r, i]) x_r − 2 (G m)_r,   d/dm_i = 2 (Σ_r G[r, i]) m_i − 2 (Gᵀ x)_i.
        # G goes into GEMMs against [m | 1] and [x | 1], whose last columns are the sums; Gᵀ x is
        # accumulated one sample slot s (an (L, L) block) at a time on both paths below, so the
        # summation order, and the result, is the same whichever path runs.
        means_1 = torch.cat([means, means.new_ones(n_cls, 1)], dim=1)
        samples_1 = torch.cat([samples, samples.new_ones(samples.shape[0], 1)], dim=1)
        g_by_mean = means.new_zeros(n_cls, samples_1.shape[1])
        if n_cb * n_cls * n_cls <= DENSE_WHOLE_ELEMENTS:
            # G for all slots at once: 1 where the minimum is, times g. Exact ties (the same
            # image drawn twice) must give the whole gradient to the first minimiser, as
            # ``torch.min`` does: they go to the slot-by-slot path.
            block = torch.eq(dists, nearest, out=torch.empty_like(dists))
            if not bool((block.sum(dim=0) > 1).any()):
                block.mul_(grad)
                g_by_sample = block.view(n_cb * n_cls, n_cls) @ means_1
                for block_t, rows in zip(
                    block.mT.unbind(0), samples_1.view(n_cb, n_cls, -1).unbind(0), strict=True
                ):
                    g_by_mean.addmm_(block_t, rows)
                return (*_nearest_gradients(samples, means, g_by_sample, g_by_mean), None, None)
        # Slot by slot, each (L, L) block built and used while it is in cache; the first
        # minimiser takes all of g[j, i] and the others get 0. Float masks, not bool: on the CPU
        # a bool→float multiply costs twice a float one.
        g_by_sample = samples.new_empty(samples.shape[0], means_1.shape[1])
        remaining = grad.clone()  # the gradient of the (j, i) whose minimiser is not found yet
        hit = torch.empty_like(grad)
        block = torch.empty_like(grad)
        for s in range(n_cb):
            torch.eq(dists[s], nearest, out=hit)
            torch.mul(remaining, hit, out=block)
            remaining -= block
            rows = slice(s * n_cls, (s + 1) * n_cls)
            torch.mm(block, means_1, out=g_by_sample[rows])
            g_by_mean.addmm_(block.T, samples_1[rows])
        return (*_nearest_gradients(samples, means, g_by_sample, g_by_mean), None, None)


def _nearest_gradients(
    samples: torch.Tensor, means: torch.Tensor, g_by_sample: torch.Tensor, g_by_mean: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """d/dx and d/dm of the dense backward from G·[m | 1] and Gᵀ·[x | 1]."""
    d_samples = 2.0 * (g_by_sample[:, -1:] * samples - g_by_sample[:, :-1])
    d_means = 2.0 * (g_by_mean[:, -1:] * means - g_by_mean[:, :-1])
    return d_samples, d_means


def _nearest_backward_sparse(
    samples: torch.Tensor,
    means: torch.Tensor,
    dists: torch.Tensor,
    grad: torch.Tensor,
    active: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The backward of ``_NearestSampleSqDist`` visiting only the pairs with a non-zero gradient.

    ``active`` holds their flat indices j·L + i into the (L, L) gradient.
    """
    n_cb, n_cls, _ = dists.shape
    g = grad.view(-1)[active]
    j_idx = torch.div(active, n_cls, rounding_mode="floor")
    i_idx = active - j_idx * n_cls
    candidates = dists.view(n_cb, n_cls * n_cls).index_select(1, active)
    slot = candidates.T.contiguous().argmin(dim=1)  # the first minimiser, as in the dense path
    rows = slot * n_cls + j_idx
    # d‖x_r − m_i‖² = 2 (x_r − m_i)·(dx_r − dm_i)
    weighted = (2.0 * g)[:, None] * (samples.index_select(0, rows) - means.index_select(0, i_idx))
    d_samples = torch.zeros_like(samples).index_add_(0, rows, weighted)
    d_means = torch.zeros_like(means).index_add_(0, i_idx, weighted, alpha=-1.0)
    return d_samples, d_means


def balanced_triplet_loss(
    x: torch.Tensor,
    margin: float = 4.0,
    reduction: Reduction = "sum",
    workspace: torch.Tensor | None = None,
) -> torch.Tensor:
    """Class-balanced triplet loss L_BT (paper eq. 3) of a class-balanced batch.

    ``x`` has shape (L, n_CB, k): ``x[i, l]`` is the latent vector x_lⁱ of the l-th sample drawn from
    the i-th class. The loss is ``Σ_{i≠j} Σ_l max(0, Δ + ‖x_lⁱ − x̄ⁱ‖² − min_n ‖x_nʲ − x̄ⁱ‖²)``, with
    x̄ⁱ the batch mean of class i. ``reduction="sum"`` is the paper's formula as written;
    ``"mean"`` divides by the number of terms, L·(L−1)·n_CB (the two differ only in scale, which
    matters for an optimiser only through weight decay: see ``plugins/embedders.py``).

    ``workspace``, optional, is a float tensor of at least L²·n_CB elements on ``x``'s device that
    holds the (class mean × sample) distance matrix. A training loop passes the same one every
    episode: a fresh 13 MB tensor (SUN shape) costs more in page faults than the GEMM that fills
    it. It must not be reused before this loss's backward pass has run.
    """
    if x.dim() != 3:
        raise ValueError(f"x must be (classes, n_cb, latent_dim), got shape {tuple(x.shape)}")
    n_cls, n_cb, dim = x.shape
    if n_cls < 2:
        raise ValueError("L_BT needs at least two classes in the batch")
    x = x - x.mean(dim=(0, 1))  # centring: see the module docstring
    means = x.mean(dim=1)  # (L, k): x̄ⁱ
    intra = ((x - means[:, None, :]) ** 2).sum(-1)  # (L, n_CB): ‖x_lⁱ − x̄ⁱ‖²
    # Sample-major rows (row s·L + j is sample s of class j): the min over a class's samples then
    # runs over the *outer* axis of an (n_CB, L, L) view, which vectorises along contiguous memory.
    by_sample = x.transpose(0, 1).reshape(n_cb * n_cls, dim)
    inter = _NearestSampleSqDist.apply(by_sample, means, n_cb, workspace).T  # (L, L): [i, j]
    # j = i is no negative class: push the diagonal out of the hinge sum.
    inter = inter + torch.diag(inter.new_full((n_cls,), EXCLUDED))
    # Σ_{i≠j} Σ_l max(0, Δ + intra[i, l] − inter[i, j]) = Σ max(0, Δ + (−inter[i, j]) − (−intra[i, l])):
    # sorting the short side (n_CB values per class) and searching it with the L² inter-class
    # distances is much cheaper than sorting the L×L side when L is large (SUN: 645).
    total = pairwise_hinge_sum(-inter, -intra, margin)
    if reduction == "sum":
        return total
    if reduction == "mean":
        return total / (n_cls * (n_cls - 1) * n_cb)
    raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")


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
