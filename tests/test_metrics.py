"""Metrics against brute force: per-class accuracy, H, A_T/A_U/A_S, the exact curve and AUSUC."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zslbench.metrics import (
    Curve,
    ausuc,
    gzsl_evaluate,
    harmonic_mean,
    per_class_accuracy,
    seen_unseen_curve,
    thin_curve,
)

# ---------------------------------------------------------------- brute-force references


def bf_predict(s: np.ndarray, mask: np.ndarray, gamma: float, cols=None) -> list[int]:
    """Eq. 10 literally, looping; ``cols`` restricts the candidates (A_T uses the unseen ones)."""
    cols = range(s.shape[1]) if cols is None else cols
    out = []
    for i in range(s.shape[0]):
        best_c, best_v = -1, -math.inf
        for c in cols:
            v = s[i, c] - (gamma if mask[c] else 0.0)
            if v > best_v:
                best_c, best_v = c, v
        out.append(best_c)
    return out


def bf_per_class(y_true, y_pred) -> tuple[float, dict[int, float]]:
    hits: dict[int, int] = defaultdict(int)
    total: dict[int, int] = defaultdict(int)
    for t, p in zip(y_true, y_pred, strict=True):
        total[int(t)] += 1
        hits[int(t)] += int(t == p)
    acc = {c: 100.0 * hits[c] / total[c] for c in sorted(total)}
    return sum(acc.values()) / len(acc), acc


def bf_accuracies(s, y, mask, gamma) -> tuple[float, float]:
    """(A_U, A_S) at gamma, by looping over samples of each group."""
    pred = bf_predict(s, mask, gamma)
    u = [(t, p) for t, p in zip(y, pred, strict=True) if not mask[t]]
    se = [(t, p) for t, p in zip(y, pred, strict=True) if mask[t]]
    return bf_per_class(*zip(*u, strict=True))[0], bf_per_class(*zip(*se, strict=True))[0]


def bf_per_image_accuracies(s, y, mask, gamma) -> tuple[float, float]:
    """(A_U, A_S) at gamma with accuracies over images (CNZSL's convention), by looping."""
    pred = bf_predict(s, mask, gamma)
    u = [t == p for t, p in zip(y, pred, strict=True) if not mask[t]]
    se = [t == p for t, p in zip(y, pred, strict=True) if mask[t]]
    return 100.0 * sum(u) / len(u), 100.0 * sum(se) / len(se)


def bf_breakpoints(s, mask) -> list[float]:
    seen = [c for c in range(s.shape[1]) if mask[c]]
    unseen = [c for c in range(s.shape[1]) if not mask[c]]
    return sorted(
        {max(s[i, c] for c in seen) - max(s[i, c] for c in unseen) for i in range(s.shape[0])}
    )


def bf_trapezoid(points) -> float:
    """AUSUC (percent) of (A_U, A_S) points taken in increasing gamma."""
    area = 0.0
    for (u0, s0), (u1, s1) in zip(points, points[1:], strict=False):
        area += (u1 - u0) * (s0 + s1) / 2
    return area / 100.0


def bf_ausuc_breakpoint_grid(s, y, mask) -> float:
    """A sweep over every breakpoint +- eps (eps below the smallest gap) and beyond both ends."""
    b = bf_breakpoints(s, mask)
    gaps = [hi - lo for lo, hi in zip(b, b[1:], strict=False)]
    eps = min(gaps) / 4 if gaps else 0.5
    grid = [b[0] - 1.0] + [x for t in b for x in (t - eps, t + eps)] + [b[-1] + 1.0]
    return bf_trapezoid([bf_accuracies(s, y, mask, g) for g in grid])


@st.composite
def problems(draw, max_classes: int = 6, max_n: int = 24):
    """Small integer score matrices (many ties) with both seen- and unseen-class samples."""
    c = draw(st.integers(2, max_classes))
    n_seen = draw(st.integers(1, c - 1))
    order = draw(st.permutations(range(c)))
    mask = np.zeros(c, dtype=bool)
    mask[list(order[:n_seen])] = True
    seen_cols, unseen_cols = list(order[:n_seen]), list(order[n_seen:])
    n = draw(st.integers(2, max_n))
    y = [draw(st.sampled_from(seen_cols)), draw(st.sampled_from(unseen_cols))]
    y += draw(st.lists(st.integers(0, c - 1), min_size=n - 2, max_size=n - 2))
    flat = draw(st.lists(st.integers(-4, 4), min_size=n * c, max_size=n * c))
    s = np.array(flat, dtype=np.float64).reshape(n, c)
    return s, np.array(y, dtype=np.int64), mask


def random_problem(seed: int, n: int = 120, c: int = 9, n_seen: int = 6):
    rng = np.random.default_rng(seed)
    mask = np.zeros(c, dtype=bool)
    mask[rng.choice(c, n_seen, replace=False)] = True
    y = rng.integers(0, c, n)
    y[0], y[1] = np.flatnonzero(mask)[0], np.flatnonzero(~mask)[0]
    s = rng.normal(size=(n, c))
    s[np.arange(n), y] += 1.0  # informative enough that the curve is not trivial
    return s, y, mask


# ---------------------------------------------------------------- per-class accuracy and H


def test_per_class_accuracy_weighs_classes_not_images():
    y_true = np.array([0] * 98 + [1, 1])
    y_pred = np.array([0] * 98 + [0, 0])
    mean, per_class = per_class_accuracy(y_true, y_pred)
    assert mean == 50.0  # 98 % of images right, but one of two classes entirely wrong
    np.testing.assert_array_equal(per_class, [100.0, 0.0])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=40), st.randoms()
)
def test_per_class_accuracy_matches_brute_force_and_ignores_sample_order(pairs, rnd):
    y_true, y_pred = (np.array(v) for v in zip(*pairs, strict=True))
    mean, per_class = per_class_accuracy(y_true, y_pred)
    bf_mean, bf_acc = bf_per_class(y_true, y_pred)
    assert mean == pytest.approx(bf_mean, abs=1e-12)
    np.testing.assert_allclose(per_class, list(bf_acc.values()), atol=1e-12)
    perm = list(range(len(pairs)))
    rnd.shuffle(perm)
    mean_p, per_class_p = per_class_accuracy(y_true[perm], y_pred[perm])
    assert mean_p == mean
    np.testing.assert_array_equal(per_class_p, per_class)


def test_per_class_accuracy_follows_the_given_classes_and_refuses_absent_ones():
    y_true = np.array([3, 3, 7, 9])
    y_pred = np.array([3, 0, 7, 1])
    mean, per_class = per_class_accuracy(y_true, y_pred, classes=np.array([9, 3]))
    np.testing.assert_array_equal(per_class, [0.0, 50.0])
    assert mean == 25.0
    with pytest.raises(ValueError, match=r"\[5\]"):
        per_class_accuracy(y_true, y_pred, classes=np.array([3, 5]))
    with pytest.raises(ValueError, match=r"\[99\]"):
        per_class_accuracy(y_true, y_pred, classes=np.array([99]))


def test_harmonic_mean_closed_form_and_zero_case():
    assert harmonic_mean(60.0, 40.0) == pytest.approx(48.0)
    assert harmonic_mean(0.0, 0.0) == 0.0
    assert harmonic_mean(0.0, 80.0) == 0.0
    np.testing.assert_allclose(
        harmonic_mean(np.array([0.0, 50.0]), np.array([0.0, 50.0])), [0.0, 50.0]
    )


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 100), st.floats(0, 100))
def test_harmonic_mean_is_symmetric_and_between_min_and_max(a, b):
    h = harmonic_mean(a, b)
    assert h == harmonic_mean(b, a)
    if a + b > 0:
        assert h == pytest.approx(2 * a * b / (a + b), rel=1e-12, abs=1e-300)
    assert min(a, b) - 1e-9 <= h <= max(a, b) + 1e-9


# ---------------------------------------------------------------- the exact curve and AUSUC


def test_curve_and_ausuc_on_hand_computed_examples():
    mask = np.array([True, False])
    y = np.array([0, 1])
    # Seen sample flips at t=1, unseen sample at t=2: no gamma gets both right.
    c = seen_unseen_curve(np.array([[0.0, -1.0], [0.0, -2.0]]), y, mask)
    np.testing.assert_array_equal(c.A_U, [0, 0, 100])
    np.testing.assert_array_equal(c.A_S, [100, 0, 0])
    np.testing.assert_array_equal(c.gamma, [0.5, 1.5, 2.5])
    assert ausuc(c) == 0.0
    # Swapped: every gamma in (1, 2) gets both right, so the curve fills the square.
    c = seen_unseen_curve(np.array([[0.0, -2.0], [0.0, -1.0]]), y, mask)
    np.testing.assert_array_equal(c.A_U, [0, 100, 100])
    np.testing.assert_array_equal(c.A_S, [100, 100, 0])
    assert ausuc(c) == 100.0


@settings(max_examples=60, deadline=None)
@given(problems())
def test_curve_points_equal_brute_force_at_their_gammas(problem):
    s, y, mask = problem
    c = seen_unseen_curve(s, y, mask)
    assert np.all(np.diff(c.gamma) > 0)
    assert np.all(np.diff(c.A_U) >= 0) and np.all(np.diff(c.A_S) <= 0)
    assert c.A_U[0] == 0.0 and c.A_S[-1] == 0.0
    for g, a_u, a_s in zip(c.gamma, c.A_U, c.A_S, strict=True):
        bf_u, bf_s = bf_accuracies(s, y, mask, g)
        assert a_u == pytest.approx(bf_u, abs=1e-9)
        assert a_s == pytest.approx(bf_s, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(problems())
def test_exact_ausuc_equals_a_dense_sweep_over_integer_scores(problem):
    # Integer scores: every breakpoint is an integer, so a uniform grid at spacing 1/2, offset to
    # miss the integers, visits every interval; nothing of the curve can slip between its points.
    s, y, mask = problem
    b = bf_breakpoints(s, mask)
    grid = np.arange(b[0] - 1.25, b[-1] + 1.5, 0.5)
    dense = bf_trapezoid([bf_accuracies(s, y, mask, g) for g in grid])
    assert ausuc(seen_unseen_curve(s, y, mask)) == pytest.approx(dense, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(problems())
def test_per_image_ausuc_equals_a_dense_sweep_over_integer_scores(problem):
    s, y, mask = problem
    b = bf_breakpoints(s, mask)
    grid = np.arange(b[0] - 1.25, b[-1] + 1.5, 0.5)
    dense = bf_trapezoid([bf_per_image_accuracies(s, y, mask, g) for g in grid])
    assert ausuc(seen_unseen_curve(s, y, mask, per_class=False)) == pytest.approx(dense, abs=1e-9)


def test_per_class_and_per_image_ausuc_differ_on_imbalanced_data():
    # One big unseen class that is always right, one small one that is always wrong.
    y = np.array([0] * 10 + [1] * 90 + [2] * 10)
    mask = np.array([True, False, False])
    s = np.zeros((110, 3))
    s[:10, 0] = 1.0
    s[10:100, 1] = 1.0
    s[100:, 1] = 1.0  # class-2 images look like class 1
    ev = gzsl_evaluate(s[:10], y[:10], s[10:], y[10:], mask, 0.0)
    assert ev["AUSUC"] == pytest.approx(50.0)  # A_U tops out at 50% per class
    assert ev["AUSUC_per_image"] == pytest.approx(90.0)  # and at 90% per image


@pytest.mark.parametrize("seed", range(5))
def test_exact_ausuc_equals_a_breakpoint_grid_sweep_on_real_scores(seed):
    s, y, mask = random_problem(seed, n=80)
    exact = ausuc(seen_unseen_curve(s, y, mask))
    assert 0.0 < exact < 100.0
    assert exact == pytest.approx(bf_ausuc_breakpoint_grid(s, y, mask), abs=1e-9)


def test_a_coarse_grid_misses_area_that_the_exact_curve_keeps():
    # Why the exact computation matters: a 21-point grid is visibly off on the same problem.
    s, y, mask = random_problem(0, n=80)
    exact = ausuc(seen_unseen_curve(s, y, mask))
    b = bf_breakpoints(s, mask)
    coarse = np.linspace(b[0] - 1, b[-1] + 1, 21)
    approx = bf_trapezoid([bf_accuracies(s, y, mask, g) for g in coarse])
    assert abs(approx - exact) > 1e-3


@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(-1000, 1000), st.data())
def test_ausuc_is_invariant_to_adding_constants_to_scores(problem, shift, data):
    s, y, mask = problem
    base = ausuc(seen_unseen_curve(s, y, mask))
    assert ausuc(seen_unseen_curve(s + shift / 4, y, mask)) == base
    # A per-sample constant changes no margin either.
    rows = data.draw(st.lists(st.integers(-50, 50), min_size=len(y), max_size=len(y)))
    assert ausuc(seen_unseen_curve(s + np.array(rows, float)[:, None], y, mask)) == base


def test_ausuc_is_invariant_to_a_constant_on_real_scores():
    s, y, mask = random_problem(7, n=400)
    assert ausuc(seen_unseen_curve(s + 123.456, y, mask)) == pytest.approx(
        ausuc(seen_unseen_curve(s, y, mask)), abs=1e-9
    )


@settings(max_examples=40, deadline=None)
@given(problems(), st.randoms())
def test_curve_is_invariant_to_permuting_samples(problem, rnd):
    s, y, mask = problem
    perm = list(range(len(y)))
    rnd.shuffle(perm)
    a, b = seen_unseen_curve(s, y, mask), seen_unseen_curve(s[perm], y[perm], mask)
    np.testing.assert_array_equal(a.gamma, b.gamma)
    np.testing.assert_allclose(a.A_U, b.A_U, atol=1e-9)
    np.testing.assert_allclose(a.A_S, b.A_S, atol=1e-9)


def test_curve_ends_are_the_zsl_and_seen_only_accuracies():
    s, y, mask = random_problem(3, n=300)
    c = seen_unseen_curve(s, y, mask)
    unseen_cols = [k for k in range(len(mask)) if not mask[k]]
    seen_cols = [k for k in range(len(mask)) if mask[k]]
    u, se = ~mask[y], mask[y]
    a_t = bf_per_class(y[u], bf_predict(s[u], mask, 0.0, unseen_cols))[0]
    a_ss = bf_per_class(y[se], bf_predict(s[se], mask, 0.0, seen_cols))[0]
    assert c.A_U[-1] == pytest.approx(a_t, abs=1e-9)
    assert c.A_S[0] == pytest.approx(a_ss, abs=1e-9)


def test_curve_refuses_a_missing_group_and_bad_labels():
    s = np.zeros((3, 3))
    mask = np.array([True, True, False])
    with pytest.raises(ValueError, match="both seen and unseen"):
        seen_unseen_curve(s, np.array([0, 1, 1]), mask)
    with pytest.raises(ValueError, match="column indices"):
        seen_unseen_curve(s, np.array([0, 2, 3]), mask)
    with pytest.raises(ValueError, match="3 score rows"):
        seen_unseen_curve(s, np.array([0, 2]), mask)


# ---------------------------------------------------------------- thinning


def test_thin_curve_keeps_ends_best_h_and_bounds_the_area_error():
    s, y, mask = random_problem(11, n=4000, c=30, n_seen=20)
    full = seen_unseen_curve(s, y, mask)
    assert len(full) > 1000
    thin = thin_curve(full, max_points=64)
    assert len(thin) <= 64
    kept = np.searchsorted(full.gamma, thin.gamma)
    np.testing.assert_array_equal(full.gamma[kept], thin.gamma)  # a subsequence, nothing invented
    np.testing.assert_array_equal(full.A_U[kept], thin.A_U)
    np.testing.assert_array_equal(full.A_S[kept], thin.A_S)
    assert kept[0] == 0 and kept[-1] == len(full) - 1
    assert int(np.argmax(harmonic_mean(full.A_U, full.A_S))) in kept
    # Between two kept points the monotone curve stays in their box, so the trapezoid is off by
    # at most half of each box.
    bound = np.sum(np.diff(thin.A_U) * -np.diff(thin.A_S)) / 2 / 100
    assert abs(ausuc(thin) - ausuc(full)) <= bound + 1e-12
    # Points are spread along the curve: no kept segment is much longer than the target spacing.
    seg = np.diff(thin.A_U) - np.diff(thin.A_S)
    total = full.A_U[-1] + full.A_S[0]
    max_step = np.max(np.diff(full.A_U) - np.diff(full.A_S))
    assert seg.max() <= total / (64 - 3 - 1) + max_step + 1e-9


def test_thin_curve_leaves_short_curves_alone_and_refuses_too_few_points():
    c = Curve(np.array([0.0, 1.0]), np.array([0.0, 50.0]), np.array([50.0, 0.0]))
    assert thin_curve(c, 3) is c
    with pytest.raises(ValueError, match="at least 3"):
        thin_curve(c, 2)


# ---------------------------------------------------------------- gzsl_evaluate


def test_gzsl_evaluate_matches_brute_force():
    s, y, mask = random_problem(5, n=600, c=12, n_seen=8)
    ids = np.arange(100, 112)
    se, u = mask[y], ~mask[y]
    gamma = 0.3
    r = gzsl_evaluate(s[se], y[se], s[u], y[u], mask, gamma, class_ids=ids, max_curve_points=32)

    unseen_cols = [k for k in range(12) if not mask[k]]
    a_t, acc_t = bf_per_class(y[u], bf_predict(s[u], mask, 0.0, unseen_cols))
    a_u, acc_u = bf_per_class(y[u], bf_predict(s[u], mask, gamma))
    a_s, acc_s = bf_per_class(y[se], bf_predict(s[se], mask, gamma))
    assert r["A_T"] == pytest.approx(a_t, abs=1e-9)
    assert r["A_U"] == pytest.approx(a_u, abs=1e-9)
    assert r["A_S"] == pytest.approx(a_s, abs=1e-9)
    assert r["H"] == pytest.approx(2 * a_u * a_s / (a_u + a_s), abs=1e-9)
    assert r["AUSUC"] == pytest.approx(ausuc(seen_unseen_curve(s, y, mask)), abs=1e-12)
    assert r["operating_point"] == {"gamma": gamma, "A_U": r["A_U"], "A_S": r["A_S"], "H": r["H"]}
    assert len(r["curve"]["gamma"]) <= 32 < r["curve_points"]

    for key, acc in (("seen", acc_s), ("unseen", acc_u)):
        rows = r["per_class"][key]
        assert [row["class"] for row in rows] == [int(ids[c]) for c in acc]
        assert [row["accuracy"] for row in rows] == pytest.approx(list(acc.values()), abs=1e-9)
        assert [row["n_test"] for row in rows] == [int(np.sum(y == c)) for c in acc]
    assert [row["accuracy_zsl"] for row in r["per_class"]["unseen"]] == pytest.approx(
        list(acc_t.values()), abs=1e-9
    )
    json.dumps(r, allow_nan=False)  # records are written with allow_nan=False


def test_gzsl_operating_point_lies_on_the_exact_curve():
    s, y, mask = random_problem(6, n=500)
    se, u = mask[y], ~mask[y]
    full = seen_unseen_curve(s, y, mask)
    for j in (0, len(full) // 3, len(full) // 2, len(full) - 1):
        r = gzsl_evaluate(s[se], y[se], s[u], y[u], mask, full.gamma[j])
        assert (r["A_U"], r["A_S"]) == pytest.approx((full.A_U[j], full.A_S[j]), abs=1e-9)


def test_gzsl_evaluate_refuses_labels_in_the_wrong_group():
    s, y, mask = random_problem(8, n=50)
    se, u = mask[y], ~mask[y]
    with pytest.raises(ValueError, match="y_seen_test contains labels of unseen"):
        gzsl_evaluate(s[u], y[u], s[u], y[u], mask, 0.0)
    with pytest.raises(ValueError, match="y_unseen_test contains labels of seen"):
        gzsl_evaluate(s[se], y[se], s[se], y[se], mask, 0.0)
