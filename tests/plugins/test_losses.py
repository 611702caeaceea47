"""L_BT (eq. 3) and L_T (eq. 2) against plain Python loops, value and gradient, in float64.

The loops below are the paper's formulas written term by term, with no vectorisation to get
wrong; the vectorised losses must agree with them to rounding, for the loss and for autograd's
gradient with respect to every latent vector.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import zslbench_plugins.losses as losses
from zslbench_plugins.losses import (
    EXCLUDED,
    balanced_triplet_loss,
    pairwise_hinge_sum,
    triplet_loss,
)


def _sq(u: torch.Tensor) -> torch.Tensor:
    return (u * u).sum()


def bt_loop(x: torch.Tensor, margin: float) -> torch.Tensor:
    """Σ_{i≠j} Σ_l max(0, Δ + ‖x_lⁱ − x̄ⁱ‖² − min_n ‖x_nʲ − x̄ⁱ‖²), one term at a time."""
    n_cls, n_cb, _ = x.shape
    total = x.new_zeros(())
    for i in range(n_cls):
        mean = sum(x[i, s] for s in range(n_cb)) / n_cb
        for j in range(n_cls):
            if j == i:
                continue
            nearest = min((_sq(x[j, s] - mean) for s in range(n_cb)), key=lambda v: v.item())
            for ell in range(n_cb):
                total = total + torch.clamp(margin + _sq(x[i, ell] - mean) - nearest, min=0.0)
    return total


def t_loop(x: torch.Tensor, labels: list[int], margin: float) -> tuple[torch.Tensor, int]:
    """Σ over anchors l, positives m ≠ l, negatives n of max(0, Δ + ‖x_l − x_m‖² − ‖x_l − x_n‖²)."""
    total = x.new_zeros(())
    count = 0
    size = len(labels)
    for ell, m, n in itertools.product(range(size), repeat=3):
        if m == ell or labels[m] != labels[ell] or labels[n] == labels[ell]:
            continue
        total = total + torch.clamp(margin + _sq(x[ell] - x[m]) - _sq(x[ell] - x[n]), min=0.0)
        count += 1
    return total, count


@pytest.fixture(params=["dense", "sparse"])
def backward_path(request, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test through each path of the nearest-negative gradient: dense (one weight tensor
    for two GEMMs) and sparse (the active pairs only)."""
    monkeypatch.setattr(
        losses, "SPARSE_GRADIENT_FRACTION", 2.0 if request.param == "sparse" else -1.0
    )
    monkeypatch.setattr(losses, "SPARSE_MIN_PAIRS", 0)
    return request.param


def _value_and_grad(fn, x: torch.Tensor) -> tuple[float, torch.Tensor]:
    x = x.detach().clone().requires_grad_(True)
    value = fn(x)
    (grad,) = torch.autograd.grad(value, x)
    return value.item(), grad


@pytest.mark.parametrize("n_cls,n_cb", [(2, 1), (2, 3), (3, 2), (4, 4), (6, 3)])
@pytest.mark.parametrize("scale", [0.3, 1.5, 4.0])  # from all hinges active to only a few
def test_balanced_triplet_loss_equals_triple_loop(
    n_cls: int, n_cb: int, scale: float, backward_path: str
) -> None:
    gen = torch.Generator().manual_seed(n_cls * 100 + n_cb * 10 + int(scale * 10))
    x = torch.randn(n_cls, n_cb, 5, generator=gen, dtype=torch.float64) * scale
    x = x + torch.randn(n_cls, 1, 5, generator=gen, dtype=torch.float64) * scale  # class offsets
    margin = 4.0
    want, want_grad = _value_and_grad(lambda v: bt_loop(v, margin), x)
    got, got_grad = _value_and_grad(lambda v: balanced_triplet_loss(v, margin, "sum"), x)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    torch.testing.assert_close(got_grad, want_grad, rtol=1e-10, atol=1e-10)
    mean, mean_grad = _value_and_grad(lambda v: balanced_triplet_loss(v, margin, "mean"), x)
    terms = n_cls * (n_cls - 1) * n_cb
    assert mean == pytest.approx(want / terms, rel=1e-12, abs=1e-14)
    torch.testing.assert_close(mean_grad, want_grad / terms, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_cls,n_cb,scale", [(3, 2, 1.5), (4, 4, 1.5), (6, 3, 4.0)])
def test_loop_comparison_data_mixes_active_and_inactive_hinges(
    n_cls: int, n_cb: int, scale: float
) -> None:
    """The loop comparison only pins down the hinge if some terms are 0 and some are not."""
    gen = torch.Generator().manual_seed(n_cls * 100 + n_cb * 10 + int(scale * 10))
    x = torch.randn(n_cls, n_cb, 5, generator=gen, dtype=torch.float64) * scale
    x = x + torch.randn(n_cls, 1, 5, generator=gen, dtype=torch.float64) * scale
    means = x.mean(1)
    intra = ((x - means[:, None]) ** 2).sum(-1)
    inter = ((x[None] - means[:, None, None]) ** 2).sum(-1).min(dim=2).values
    active = (4.0 + intra[:, None, :] - inter[:, :, None] > 0) & ~torch.eye(
        n_cls, dtype=torch.bool
    )[:, :, None]
    assert 0 < int(active.sum()) < n_cls * (n_cls - 1) * n_cb


def test_balanced_triplet_loss_duplicate_negative_counts_once(backward_path: str) -> None:
    """An image drawn twice (sampling with replacement) is an exact tie for the min: the gradient
    must reach the pair once — the loop's min picks one copy, so the *sum* over the two copies
    must equal the loop's, and the loss must not double."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(3, 3, 4, generator=gen, dtype=torch.float64)
    x[1, 2] = x[1, 0]  # class 1 holds the same image twice
    x[2, 1] = x[2, 0]
    want, want_grad = _value_and_grad(lambda v: bt_loop(v, 4.0), x)
    got, got_grad = _value_and_grad(lambda v: balanced_triplet_loss(v, 4.0, "sum"), x)
    assert got == pytest.approx(want, rel=1e-12)
    torch.testing.assert_close(got_grad[1, 0] + got_grad[1, 2], want_grad[1, 0] + want_grad[1, 2])
    torch.testing.assert_close(got_grad[2, 0] + got_grad[2, 1], want_grad[2, 0] + want_grad[2, 1])
    torch.testing.assert_close(got_grad.sum(), want_grad.sum())


@pytest.mark.parametrize("duplicates", [False, True])
def test_dense_and_sparse_gradients_agree(
    monkeypatch: pytest.MonkeyPatch, duplicates: bool
) -> None:
    """The two paths of the nearest-negative gradient give the same gradient up to float summation
    order; with an image drawn twice, the same gradient summed over its copies (the update of a
    linear map: both copies are the same features)."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(30, 6, 8, generator=gen, dtype=torch.float64)
    if duplicates:
        x[3, 4] = x[3, 1]  # an exact tie for the minimum
    monkeypatch.setattr(losses, "SPARSE_MIN_PAIRS", 0)
    grads = []
    for fraction in (-1.0, 2.0):
        monkeypatch.setattr(losses, "SPARSE_GRADIENT_FRACTION", fraction)
        grads.append(_value_and_grad(lambda v: balanced_triplet_loss(v, 4.0, "sum"), x)[1])
    if duplicates:
        for g in grads:
            g[3, 1] += g[3, 4]
            g[3, 4] = 0.0
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-12)
    assert bool(grads[0].abs().sum() > 0)


def test_loss_and_grad_is_the_autograd_form_in_sample_major_layout() -> None:
    """The training loop's entry point: same value and gradient as the autograd form, with the
    batch laid out sample-major (n_CB, L, k), and no autograd graph."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(12, 4, 6, generator=gen, dtype=torch.float64)
    want, want_grad = _value_and_grad(lambda v: bt_loop(v, 2.0), x)
    for reduction, scale in (("sum", 1.0), ("mean", 1.0 / (12 * 11 * 4))):
        loss, grad = losses.balanced_triplet_loss_and_grad(
            x.transpose(0, 1).contiguous(), 2.0, reduction
        )
        assert not loss.requires_grad and grad.shape == (4, 12, 6)
        assert loss.item() == pytest.approx(want * scale, rel=1e-12)
        torch.testing.assert_close(grad.transpose(0, 1), want_grad * scale, rtol=1e-10, atol=1e-13)


def _bt_broadcast(x: torch.Tensor, margin: float) -> torch.Tensor:
    """A second, independent vectorisation: the full (L, L, n_CB) hinge tensor."""
    means = x.mean(1)
    intra = ((x - means[:, None]) ** 2).sum(-1)
    to_all = ((x[None, :, :, :] - means[:, None, None, :]) ** 2).sum(-1)  # [i, j, s]
    inter = to_all.min(dim=2).values
    hinge = torch.relu(margin + intra[:, None, :] - inter[:, :, None])
    off_diagonal = ~torch.eye(x.shape[0], dtype=torch.bool)
    return (hinge * off_diagonal[:, :, None]).sum()


@pytest.mark.parametrize("n_cls,n_cb", [(40, 8), (120, 4)])
def test_balanced_triplet_loss_matches_broadcast_form_at_realistic_sizes(
    n_cls: int, n_cb: int, backward_path: str
) -> None:
    gen = torch.Generator().manual_seed(n_cls)
    x = torch.randn(n_cls, n_cb, 16, generator=gen, dtype=torch.float64)
    x = x + 1.2 * torch.randn(n_cls, 1, 16, generator=gen, dtype=torch.float64)
    want, want_grad = _value_and_grad(lambda v: _bt_broadcast(v, 4.0), x)
    got, got_grad = _value_and_grad(lambda v: balanced_triplet_loss(v, 4.0, "sum"), x)
    assert 0 < want
    assert got == pytest.approx(want, rel=1e-10)
    torch.testing.assert_close(got_grad, want_grad, rtol=1e-8, atol=1e-8)


def test_balanced_triplet_loss_float32_close_to_float64() -> None:
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(50, 8, 64, generator=gen, dtype=torch.float64) * 0.5
    x = x + torch.randn(50, 1, 64, generator=gen, dtype=torch.float64) * 0.4 + 3.0
    ref, ref_grad = _value_and_grad(lambda v: balanced_triplet_loss(v, 4.0), x)
    got, got_grad = _value_and_grad(lambda v: balanced_triplet_loss(v, 4.0), x.float())
    assert got == pytest.approx(ref, rel=1e-4)
    torch.testing.assert_close(got_grad.double(), ref_grad, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize(
    "workspace_shape",
    [(30 * 30 * 6 + 17,), (2 * 30 * 30 * 6 + 17,), (2, 6 * 30, 30)],
    ids=["distances-only", "both-blocks-flat", "trainers-shape"],
)
@pytest.mark.parametrize("backward_path_", ["dense", "sparse"])
def test_balanced_triplet_loss_workspace_gives_identical_result(
    monkeypatch: pytest.MonkeyPatch, backward_path_: str, workspace_shape: tuple[int, ...]
) -> None:
    monkeypatch.setattr(
        losses, "SPARSE_GRADIENT_FRACTION", 2.0 if backward_path_ == "sparse" else -1.0
    )
    monkeypatch.setattr(losses, "SPARSE_MIN_PAIRS", 0)
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(30, 6, 8, generator=gen)
    workspace = torch.full(workspace_shape, float("nan"))
    plain, plain_grad = _value_and_grad(lambda v: balanced_triplet_loss(v, 4.0), x)
    for _ in range(2):  # the second call finds the first's leftovers in the workspace
        with_ws, ws_grad = _value_and_grad(
            lambda v: balanced_triplet_loss(v, 4.0, workspace=workspace), x
        )
        assert with_ws == plain
        assert torch.equal(ws_grad, plain_grad)
    size = 30 * 30 * 6
    flat = workspace.view(-1)
    assert not flat[:size].isnan().any()  # the distances were written there, not elsewhere
    if len(flat) >= 2 * size:
        assert not flat[size : 2 * size].isnan().any()  # and so was the hinge indicator


def test_balanced_triplet_loss_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="two classes"):
        balanced_triplet_loss(torch.randn(1, 4, 3))
    with pytest.raises(ValueError, match="shape"):
        balanced_triplet_loss(torch.randn(4, 3))
    with pytest.raises(ValueError, match="reduction"):
        balanced_triplet_loss(torch.randn(3, 2, 2), reduction="max")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "labels",
    [
        [0, 0, 1, 1],
        [0, 1, 0, 2, 1, 0, 2, 2, 1],
        [3, 3, 3, 7, 7, 9, 1, 1, 3, 9, 9, 7],
        [0, 1, 2, 3, 0],  # most anchors have no positive
    ],
)
@pytest.mark.parametrize("scale", [0.4, 2.0])
def test_triplet_loss_equals_triple_loop(labels: list[int], scale: float) -> None:
    gen = torch.Generator().manual_seed(len(labels) + int(10 * scale))
    lab = torch.tensor(labels)
    x = torch.randn(len(labels), 3, generator=gen, dtype=torch.float64) * scale
    x = x + torch.randn(10, 3, generator=gen, dtype=torch.float64)[lab] * scale
    want, want_grad = _value_and_grad(lambda v: t_loop(v, labels, 4.0)[0], x)
    count = t_loop(x, labels, 4.0)[1]
    got, got_grad = _value_and_grad(lambda v: triplet_loss(v, lab, 4.0, "sum"), x)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    torch.testing.assert_close(got_grad, want_grad, rtol=1e-10, atol=1e-10)
    mean, mean_grad = _value_and_grad(lambda v: triplet_loss(v, lab, 4.0, "mean"), x)
    assert mean == pytest.approx(want / count, rel=1e-12)
    torch.testing.assert_close(mean_grad, want_grad / count, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("labels", [[5, 5, 5, 5], [0, 1, 2, 3]])
def test_triplet_loss_without_triplets_is_zero_and_differentiable(labels: list[int]) -> None:
    x = torch.randn(len(labels), 3, dtype=torch.float64, requires_grad=True)
    for reduction in ("sum", "mean"):
        loss = triplet_loss(x, torch.tensor(labels), 4.0, reduction)  # type: ignore[arg-type]
        (grad,) = torch.autograd.grad(loss, x)
        assert loss.item() == 0.0
        assert torch.count_nonzero(grad) == 0


def _hinge_brute(anchor: torch.Tensor, negative: torch.Tensor, margin: float) -> torch.Tensor:
    return torch.relu(margin + anchor[:, :, None] - negative[:, None, :]).sum()


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 4),
    p=st.integers(1, 6),
    q=st.integers(1, 6),
    margin=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
def test_pairwise_hinge_sum_equals_brute_force_including_exact_zero_hinges(
    rows: int, p: int, q: int, margin: int, seed: int
) -> None:
    """Small integers make many hinges exactly 0; there the sub-gradient must be relu's (0)."""
    gen = torch.Generator().manual_seed(seed)
    anchor = torch.randint(-3, 4, (rows, p), generator=gen).double()
    negative = torch.randint(-3, 4, (rows, q), generator=gen).double()
    a1, n1 = anchor.clone().requires_grad_(), negative.clone().requires_grad_()
    a2, n2 = anchor.clone().requires_grad_(), negative.clone().requires_grad_()
    want = _hinge_brute(a1, n1, float(margin))
    got = pairwise_hinge_sum(a2, n2, float(margin))
    assert got.item() == want.item()
    want.backward()
    got.backward()
    assert torch.equal(a2.grad, a1.grad)
    assert torch.equal(n2.grad, n1.grad)


def test_pairwise_hinge_sum_excluded_entries_contribute_nothing() -> None:
    anchor = torch.tensor([[1.0, -EXCLUDED, 2.0]], dtype=torch.float64, requires_grad=True)
    negative = torch.tensor([[0.5, EXCLUDED, 3.0]], dtype=torch.float64, requires_grad=True)
    total = pairwise_hinge_sum(anchor, negative, 1.0)
    # kept pairs: (1, .5) -> 1.5, (1, 3) -> 0, (2, .5) -> 2.5, (2, 3) -> 0
    assert total.item() == pytest.approx(4.0)
    total.backward()
    assert anchor.grad.tolist() == [[1.0, 0.0, 1.0]]
    assert negative.grad.tolist() == [[-2.0, 0.0, 0.0]]
