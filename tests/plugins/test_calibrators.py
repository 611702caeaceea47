"""The gamma calibrators: exact H maximisation against brute force, tie rules, registration."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pluggy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zslbench import hookspecs
from zslbench.components import Calibrator
from zslbench_plugins import calibrators
from zslbench_plugins.calibrators import GammaCalibrator, NoCalibrator


def bf_h(s: np.ndarray, y: np.ndarray, mask: np.ndarray, gamma: float) -> float:
    """H at gamma by eq. 10 applied literally and per-class accuracies counted in loops."""
    hits: dict[int, int] = defaultdict(int)
    total: dict[int, int] = defaultdict(int)
    for i in range(s.shape[0]):
        best_c, best_v = -1, -math.inf
        for c in range(s.shape[1]):
            v = s[i, c] - (gamma if mask[c] else 0.0)
            if v > best_v:
                best_c, best_v = c, v
        total[int(y[i])] += 1
        hits[int(y[i])] += int(best_c == y[i])
    acc_u = [100.0 * hits[c] / total[c] for c in total if not mask[c]]
    acc_s = [100.0 * hits[c] / total[c] for c in total if mask[c]]
    a_u, a_s = sum(acc_u) / len(acc_u), sum(acc_s) / len(acc_s)
    return 0.0 if a_u + a_s == 0 else 2 * a_u * a_s / (a_u + a_s)


def bf_breakpoints(s: np.ndarray, mask: np.ndarray) -> list[float]:
    return sorted({float(s[i, mask].max() - s[i, ~mask].max()) for i in range(s.shape[0])})


def bf_best_h(s, y, mask) -> float:
    """Max of H over a grid of every breakpoint midpoint plus a point beyond each end."""
    b = bf_breakpoints(s, mask)
    grid = [b[0] - 1.0, b[-1] + 1.0] + [(lo + hi) / 2 for lo, hi in zip(b, b[1:], strict=False)]
    return max(bf_h(s, y, mask, g) for g in grid)


@st.composite
def problems(draw):
    c = draw(st.integers(2, 6))
    n_seen = draw(st.integers(1, c - 1))
    order = draw(st.permutations(range(c)))
    mask = np.zeros(c, dtype=bool)
    mask[list(order[:n_seen])] = True
    n = draw(st.integers(2, 20))
    y = [draw(st.sampled_from(order[:n_seen])), draw(st.sampled_from(order[n_seen:]))]
    y += draw(st.lists(st.integers(0, c - 1), min_size=n - 2, max_size=n - 2))
    flat = draw(st.lists(st.integers(-4, 4), min_size=n * c, max_size=n * c))
    return np.array(flat, dtype=np.float64).reshape(n, c), np.array(y), mask


def random_problem(seed: int, n: int = 150, c: int = 10, n_seen: int = 7):
    rng = np.random.default_rng(seed)
    mask = np.zeros(c, dtype=bool)
    mask[rng.choice(c, n_seen, replace=False)] = True
    y = rng.integers(0, c, n)
    y[0], y[1] = np.flatnonzero(mask)[0], np.flatnonzero(~mask)[0]
    s = rng.normal(size=(n, c))
    s[np.arange(n), y] += 1.0
    s[:, mask] += 0.8  # a seen-class bias, as in real GZSL, so the best gamma is far from 0
    return s, y, mask


@settings(max_examples=80, deadline=None)
@given(problems())
def test_gamma_reaches_the_brute_force_best_h_on_tied_integer_scores(problem):
    s, y, mask = problem
    cal = GammaCalibrator().fit(s, y, mask)
    best = bf_best_h(s, y, mask)
    assert cal.H_ == pytest.approx(best, abs=1e-9)
    assert bf_h(s, y, mask, cal.gamma_) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_gamma_reaches_the_brute_force_best_h_and_sits_mid_interval(seed):
    s, y, mask = random_problem(seed)
    cal = GammaCalibrator().fit(s, y, mask)
    best = bf_best_h(s, y, mask)
    assert cal.H_ == pytest.approx(best, abs=1e-9)
    assert bf_h(s, y, mask, cal.gamma_) == pytest.approx(best, abs=1e-9)
    assert cal.gamma_ > 0.1  # the seen bias is corrected, not ignored
    # gamma_ is the midpoint of two consecutive breakpoints among those where a prediction
    # becomes right or wrong (the others cannot change H).
    seen_best = np.where(mask, s, -np.inf).argmax(1)
    unseen_best = np.where(~mask, s, -np.inf).argmax(1)
    effective = np.where(mask[y], seen_best == y, unseen_best == y)
    b = np.unique(s[effective][:, mask].max(1) - s[effective][:, ~mask].max(1))
    j = np.searchsorted(b, cal.gamma_)
    assert 0 < j < b.size and b[j - 1] < cal.gamma_ < b[j]
    assert cal.gamma_ == pytest.approx((b[j - 1] + b[j]) / 2, rel=1e-12)


def test_gamma_beats_every_point_of_a_fine_grid():
    s, y, mask = random_problem(9, n=200)
    cal = GammaCalibrator().fit(s, y, mask)
    grid = np.linspace(-3, 5, 401)
    assert cal.H_ >= max(bf_h(s, y, mask, g) for g in grid) - 1e-9


def two_tied_peaks(shift: float):
    """Seen samples flip at 2 and 6, unseen at 0 and 4 (+ shift): H = 66.7 on (0, 2) and (4, 6)."""
    t_seen, t_unseen = np.array([2.0, 6.0]) + shift, np.array([0.0, 4.0]) + shift
    s = np.zeros((4, 2))
    s[:, 0] = np.concatenate([t_seen, t_unseen])  # column 0 seen, column 1 unseen (score 0)
    return s, np.array([0, 0, 1, 1]), np.array([True, False])


@pytest.mark.parametrize("shift, expected", [(0.0, 1.0), (-6.0, -1.0), (-3.0, -2.0)])
def test_ties_go_to_the_smallest_absolute_gamma(shift, expected):
    s, y, mask = two_tied_peaks(shift)
    cal = GammaCalibrator().fit(s, y, mask)
    assert cal.H_ == pytest.approx(200 / 3)
    assert cal.gamma_ == expected  # shift -3: peaks at -2 and +2, equal |gamma|: the smaller


def test_when_h_is_zero_everywhere_gamma_is_finite_and_closest_to_zero():
    # No unseen-class sample is ever right (its best unseen column is 2, not 1), so A_U = 0 and
    # H = 0 for every gamma. Seen-class samples flip at -1 and 5: interval gammas -4, 2, 8.
    s = np.array([[0.0, 0.0, 1.0], [6.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    y = np.array([0, 0, 1])
    mask = np.array([True, False, False])
    cal = GammaCalibrator().fit(s, y, mask)
    assert cal.H_ == 0.0
    assert cal.gamma_ == 2.0  # the midpoint of -1 and 5, the interval gamma nearest 0


def test_an_end_interval_is_chosen_just_beyond_the_extreme_breakpoint():
    # As above with seen-class breakpoints 2 and 3: the interval gammas are 1.5, 2.5, 3.5, and
    # the one nearest 0 lies in the unbounded interval below the lowest breakpoint.
    s = np.array([[3.0, 0.0, 1.0], [4.0, 0.0, 1.0], [9.0, 0.0, 1.0]])
    y = np.array([0, 0, 1])
    mask = np.array([True, False, False])
    cal = GammaCalibrator().fit(s, y, mask)
    assert cal.H_ == 0.0
    assert cal.gamma_ == 1.5  # 2 minus half the mean breakpoint spacing: finite, just beyond


def test_gamma_refuses_validation_without_unseen_class_samples():
    with pytest.raises(ValueError, match="both seen and unseen"):
        GammaCalibrator().fit(np.zeros((2, 2)), np.array([0, 0]), np.array([True, False]))


def test_none_calibrator_sets_gamma_zero_and_returns_self():
    s, y, mask = random_problem(1)
    cal = NoCalibrator()
    assert cal.fit(s, y, mask) is cal
    assert cal.gamma_ == 0.0


def test_calibrators_follow_the_component_contract():
    for cls in (GammaCalibrator, NoCalibrator):
        est = cls()
        assert isinstance(est, Calibrator)
        assert est.get_params() == {}
        assert not hasattr(est, "gamma_")
        assert type(est.clone()) is cls
    s, y, mask = random_problem(2)
    cal = GammaCalibrator()
    assert cal.fit(s, y, mask) is cal and isinstance(cal.gamma_, float)


def test_calibrators_register_under_their_names_through_the_hook():
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(calibrators, name="calibrators")
    provided = [cls for batch in pm.hook.zslbench_calibrators() for cls in batch]
    assert {cls.name: cls for cls in provided} == {"gamma": GammaCalibrator, "none": NoCalibrator}
