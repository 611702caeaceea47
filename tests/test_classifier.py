"""The calibrated nearest-prototype classifier (paper eq. 9-10) against explicit loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zslbench.classifier import group_best, predict
from zslbench_plugins.distances import scores


def loop_scores(latent: np.ndarray, prototypes: np.ndarray) -> np.ndarray:
    """-||x - mu||^2 by the definition, one (i, c) pair at a time, in float64."""
    x = latent.astype(np.float64)
    mu = prototypes.astype(np.float64)
    out = np.empty((x.shape[0], mu.shape[0]))
    for i in range(x.shape[0]):
        for c in range(mu.shape[0]):
            out[i, c] = -float(np.sum((x[i] - mu[c]) ** 2))
    return out


def loop_predict(s: np.ndarray, seen_mask: np.ndarray, gamma: float) -> np.ndarray:
    """Eq. 10 element-wise: argmax_c [s_ic - gamma 1{c seen}], the first maximum winning."""
    out = np.empty(s.shape[0], dtype=np.int64)
    for i in range(s.shape[0]):
        best_c, best_v = -1, -math.inf
        for c in range(s.shape[1]):
            v = s[i, c] - (gamma if seen_mask[c] else 0.0)
            if v > best_v:
                best_c, best_v = c, v
        out[i] = best_c
    return out


def test_scores_equal_the_definition_even_far_from_the_origin():
    rng = np.random.default_rng(0)
    k = 64
    # Prototypes and latents at 1e4 from the origin, close to each other: the plain expansion
    # ||x||^2 + ||mu||^2 - 2 x.mu cancels ~8 digits here.
    mu = (1e4 + rng.normal(size=(10, k))).astype(np.float32)
    x = (mu[rng.integers(0, 10, 200)] + 0.1 * rng.normal(size=(200, k))).astype(np.float32)
    ref = loop_scores(x, mu)
    got = scores(x, mu)
    assert got.dtype == np.float64 and got.shape == (200, 10)
    rel = np.max(np.abs(got - ref) / np.abs(ref))
    assert rel < 1e-10
    # The tolerance has teeth: the naive expansion misses it by orders of magnitude.
    xd, md = x.astype(np.float64), mu.astype(np.float64)
    naive = -((xd**2).sum(1)[:, None] + (md**2).sum(1)[None] - 2 * xd @ md.T)
    assert np.max(np.abs(naive - ref) / np.abs(ref)) > 1e-8


def test_scores_of_a_prototype_against_itself_are_exactly_zero_and_never_positive():
    rng = np.random.default_rng(1)
    mu = rng.normal(size=(5, 3))
    s = scores(mu, mu)
    assert np.all(s <= 0)
    np.testing.assert_allclose(np.diag(s), 0.0, atol=1e-12)


def test_scores_reject_mismatched_latent_dimensions():
    with pytest.raises(ValueError, match="latent dimension"):
        scores(np.zeros((3, 4)), np.zeros((2, 5)))


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_predict_equals_eq10_elementwise_with_ties(data):
    # Small integer scores and half-integer gammas make exact ties between classes, between
    # groups, and between a margin and gamma common, so the tie rule is exercised, not assumed.
    c = data.draw(st.integers(2, 6), label="n_classes")
    n = data.draw(st.integers(1, 12), label="n")
    n_seen = data.draw(st.integers(1, c - 1), label="n_seen")
    order = data.draw(st.permutations(range(c)), label="order")
    mask = np.zeros(c, dtype=bool)
    mask[list(order[:n_seen])] = True
    flat = data.draw(st.lists(st.integers(-4, 4), min_size=n * c, max_size=n * c), label="scores")
    s = np.array(flat, dtype=np.float64).reshape(n, c)
    gamma = data.draw(st.integers(-10, 10), label="2gamma") / 2
    np.testing.assert_array_equal(predict(s, mask, gamma), loop_predict(s, mask, gamma))


def test_predict_equals_eq10_on_real_valued_scores():
    rng = np.random.default_rng(2)
    s = scores(rng.normal(size=(300, 8)), rng.normal(size=(20, 8)))
    mask = rng.random(20) < 0.7
    mask[0], mask[1] = True, False
    for gamma in (-3.0, -0.25, 0.0, 0.4, 1.7, 12.0):
        np.testing.assert_array_equal(predict(s, mask, gamma), loop_predict(s, mask, gamma))


def test_tie_rule_lowest_index_wins():
    mask = np.array([False, True, True, False])  # columns 1, 2 seen; 0, 3 unseen
    s = np.array(
        [
            [0.0, 1.0, 1.0, 0.0],  # gamma=1: all four tie at 0 -> column 0
            [-5.0, 1.0, 1.0, 0.0],  # gamma=1: seen 1, 2 tie with unseen 3 -> column 1
            [-5.0, 0.5, 1.0, 0.0],  # gamma=1: seen 2 ties with unseen 3 -> column 2
            [-5.0, 0.5, 0.5, 0.0],  # gamma=1: unseen 3 is the only maximum
        ]
    )
    np.testing.assert_array_equal(predict(s, mask, 1.0), [0, 1, 2, 3])
    np.testing.assert_array_equal(predict(s, mask, 1.0), loop_predict(s, mask, 1.0))


def test_predict_keeps_the_true_best_seen_class_under_a_large_gamma():
    # Literally, 1e-17 - 1 and 0 - 1 both round to -1 and np.argmax would return column 0;
    # the margin form keeps the real argmax (column 1), as eq. 10 in exact arithmetic does.
    s = np.array([[0.0, 1e-17, -5.0]])
    mask = np.array([True, True, False])
    assert predict(s, mask, 1.0)[0] == 1


def test_gamma_trades_seen_for_unseen_predictions_monotonically():
    rng = np.random.default_rng(3)
    s = rng.normal(size=(500, 10))
    mask = np.arange(10) < 6
    seen_share = [np.mean(mask[predict(s, mask, g)]) for g in np.linspace(-4, 4, 17)]
    assert seen_share[0] == 1.0 and seen_share[-1] == 0.0
    assert all(a >= b for a, b in zip(seen_share, seen_share[1:], strict=False))


def test_group_best_margin_is_best_seen_minus_best_unseen():
    rng = np.random.default_rng(4)
    s = rng.normal(size=(50, 7))
    mask = np.array([1, 0, 1, 1, 0, 0, 1], dtype=bool)
    best = group_best(s, mask)
    for i in range(50):
        seen_cols = [c for c in range(7) if mask[c]]
        unseen_cols = [c for c in range(7) if not mask[c]]
        bs = max(seen_cols, key=lambda c: s[i, c])
        bu = max(unseen_cols, key=lambda c: s[i, c])
        assert (best.seen_idx[i], best.unseen_idx[i]) == (bs, bu)
        assert best.margin[i] == s[i, bs] - s[i, bu]


@pytest.mark.parametrize(
    "mask, scores_, match",
    [
        (np.ones(3, dtype=bool), np.zeros((2, 3)), "at least one seen and one unseen"),
        (np.array([1, 0, 1]), np.zeros((2, 3)), "boolean"),
        (np.array([True, False]), np.zeros((2, 3)), "columns"),
        (np.array([True, False, True]), np.array([[0.0, np.nan, 1.0]]), "non-finite"),
    ],
)
def test_predict_refuses_malformed_input(mask, scores_, match):
    with pytest.raises(ValueError, match=match):
        predict(scores_, mask, 0.0)


def test_predict_refuses_a_non_finite_gamma():
    with pytest.raises(ValueError, match="finite"):
        predict(np.zeros((1, 2)), np.array([True, False]), math.inf)
