"""zslbench.stats against closed forms, brute force and published tables."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as st

from zslbench import stats

#: The t(2) quantile in closed form: t_p = (2p - 1) / sqrt(2 p (1 - p)), at p = 0.975 (4.303).
T975_DF2 = 0.95 / math.sqrt(2 * 0.975 * 0.025)


def test_t_interval_matches_the_hand_computation() -> None:
    # mean 52, s = sqrt(((-12)^2 + (-2)^2 + 14^2) / 2) = sqrt(172); t_{0.975, 2} = 4.303.
    iv = stats.t_interval([40.0, 50.0, 66.0])
    half = T975_DF2 * math.sqrt(172.0) / math.sqrt(3.0)
    assert (iv.mean, iv.n) == (52.0, 3)
    assert iv.std == pytest.approx(math.sqrt(172.0), abs=1e-12)
    assert (iv.low, iv.high) == pytest.approx((52.0 - half, 52.0 + half), abs=1e-9)
    assert round(half, 2) == 32.58


def test_t_interval_of_one_value_has_no_spread() -> None:
    iv = stats.t_interval([7.0])
    assert iv.mean == 7.0 and iv.n == 1 and all(math.isnan(x) for x in (iv.std, iv.low, iv.high))
    assert stats.t_interval([]).n == 0


def test_t_interval_covers_the_mean_at_its_nominal_rate() -> None:
    """Brute force: over many normal samples of 3, the 95% interval holds the true mean ~95% of the time."""
    rng = np.random.default_rng(0)
    hits = 0
    trials = 4000
    for _ in range(trials):
        iv = stats.t_interval(list(rng.normal(10.0, 2.0, size=3)))
        hits += iv.low <= 10.0 <= iv.high
    assert abs(hits / trials - 0.95) < 0.012


def test_paired_test_matches_its_closed_form() -> None:
    # d = (1, 2, 3): mean 2, sd 1, t = 2 / (1 / sqrt 3) = sqrt 12, df = 2. The t(2) CDF is
    # 1/2 + t / (2 sqrt(2 + t^2)), so the two-sided p = 1 - t / sqrt(2 + t^2).
    a = {1: 11.0, 2: 22.0, 3: 33.0}
    b = {1: 10.0, 2: 20.0, 3: 30.0}
    d = stats.compare_runs(a, b)
    t = math.sqrt(12.0)
    assert d.test == stats.PAIRED and d.pairs == 3 and d.paired
    assert d.mean == pytest.approx(2.0)
    assert d.p == pytest.approx(1 - t / math.sqrt(2 + t * t), abs=1e-12)
    half = T975_DF2 / math.sqrt(3.0)
    assert (d.low, d.high) == pytest.approx((2.0 - half, 2.0 + half), abs=1e-9)
    assert d.p == pytest.approx(st.ttest_rel([11, 22, 33], [10, 20, 30]).pvalue, abs=1e-12)


def test_seeds_that_do_not_pair_use_welch() -> None:
    a = {1: 50.0, 2: 52.0, 3: 57.0}
    b = {7: 40.0, 8: 41.0, 9: 46.0, 10: 44.0}
    d = stats.compare_runs(a, b)
    assert d.test == stats.WELCH and not d.paired and "do not pair up" in d.note
    ref = st.ttest_ind(list(a.values()), list(b.values()), equal_var=False)
    assert d.p == pytest.approx(ref.pvalue, abs=1e-12)
    # The Welch–Satterthwaite degrees of freedom and interval by hand.
    va, vb = np.var([50, 52, 57], ddof=1) / 3, np.var([40, 41, 46, 44], ddof=1) / 4
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    half = st.t.ppf(0.975, df) * math.sqrt(va + vb)
    assert (d.low, d.high) == pytest.approx((d.mean - half, d.mean + half))


def test_partly_shared_seeds_pair_on_the_shared_ones() -> None:
    d = stats.compare_runs({1: 5.0, 2: 7.0, 3: 9.0, 4: 1.0}, {2: 6.0, 3: 7.0, 4: 0.0})
    assert d.test == stats.PAIRED and d.pairs == 3 and "left out" in d.note
    assert stats.compare_runs({1: 5.0}, {1: 4.0}) is None  # one pair: no test
    assert stats.compare_runs({1: 5.0}, {2: 4.0, 3: 1.0}) is None  # one run: no test


def test_holm_by_hand() -> None:
    # Sorted p: 0.01, 0.02, 0.04 -> 3 * 0.01, max(.03, 2 * .02), max(.04, 1 * .04).
    assert stats.holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_best_and_the_methods_not_significantly_worse_are_marked() -> None:
    seeds = (1, 2, 3)
    best = dict(zip(seeds, (60.0, 61.0, 62.0), strict=True))
    close = dict(zip(seeds, (59.0, 61.5, 61.0), strict=True))  # within noise
    far = dict(zip(seeds, (30.0, 31.2, 32.1), strict=True))  # far below, consistently
    verdicts = stats.not_worse_than_best([close, best, far])
    assert [v.status for v in verdicts] == ["tied", "best", "worse"]
    assert [v.bold for v in verdicts] == [True, True, False]
    assert verdicts[2].p < stats.ALPHA <= verdicts[0].p
    # Lower is better (times): the fastest is the best.
    assert [v.status for v in stats.not_worse_than_best([far, best], higher_better=False)] == [
        "best",
        "worse",
    ]


def test_no_marks_with_one_method_or_a_single_run_best() -> None:
    assert [v.bold for v in stats.not_worse_than_best([{1: 50.0, 2: 51.0}])] == [False]
    only_one_run = stats.not_worse_than_best([{1: 90.0}, {1: 50.0, 2: 51.0}])
    assert [v.status for v in only_one_run] == ["untested", "untested"]
    with_single = stats.not_worse_than_best([{1: 90.0, 2: 91.0}, {5: 10.0}])
    assert [v.status for v in with_single] == ["best", "untested"]


# -- across datasets: Demšar (2006) -----------------------------------------------------------


def test_friedman_statistic_of_demsars_example() -> None:
    """Demšar (2006), Section 3.2.4: four C4.5 variants on 14 data sets with average ranks 3.143,
    2.000, 2.893 and 1.964 give χ²_F = 9.28 and F_F = 3.69, and the Nemenyi CD is 1.25."""
    chi2, f = stats.friedman_from_ranks([3.143, 2.000, 2.893, 1.964], n=14)
    assert round(chi2, 2) == 9.28 and round(f, 2) == 3.69
    assert round(stats.nemenyi_cd(4, 14), 2) == 1.25


# Demšar (2006), Table 5(a): critical values q_0.05 and q_0.10 of the two-tailed Nemenyi test.
Q_05 = {2: 1.960, 3: 2.343, 4: 2.569, 5: 2.728, 6: 2.850, 7: 2.949, 8: 3.031, 9: 3.102, 10: 3.164}
Q_10 = {2: 1.645, 3: 2.052, 4: 2.291, 5: 2.459, 6: 2.589, 7: 2.693, 8: 2.780, 9: 2.855, 10: 2.920}


@pytest.mark.parametrize("k", sorted(Q_05))
def test_nemenyi_critical_values_match_the_published_table(k: int) -> None:
    assert stats.nemenyi_q(k, 0.05) == pytest.approx(Q_05[k], abs=1.5e-3)
    assert stats.nemenyi_q(k, 0.10) == pytest.approx(Q_10[k], abs=1.5e-3)


def test_friedman_by_hand_and_against_scipy_without_ties() -> None:
    # 3 datasets x 3 methods; ranks (1 = best): method 0 always first, 1 and 2 swap once.
    scores = np.array([[0.9, 0.5, 0.4], [0.8, 0.3, 0.6], [0.7, 0.6, 0.2]])
    result = stats.friedman(scores)
    assert result.ranks == pytest.approx((1.0, 7 / 3, 8 / 3))
    # chi2 = 12 * 3 / (3 * 4) * (1 + 49/9 + 64/9 - 3 * 16 / 4) = 3 * (122/9 - 12 + 1) ... by hand:
    expected = 12 * 3 / 12 * (1.0 + (7 / 3) ** 2 + (8 / 3) ** 2 - 12.0)
    assert result.chi2 == pytest.approx(expected)
    assert result.chi2 == pytest.approx(st.friedmanchisquare(*scores.T).statistic)
    assert result.p_chi2 == pytest.approx(st.friedmanchisquare(*scores.T).pvalue)


def test_average_ranks_share_ties_and_follow_the_direction() -> None:
    assert list(stats.average_ranks(np.array([[3.0, 3.0, 1.0]]))) == [1.5, 1.5, 3.0]
    assert list(stats.average_ranks(np.array([[3.0, 2.0, 1.0]]), higher_better=False)) == [
        3.0,
        2.0,
        1.0,
    ]


def test_cliques_are_the_maximal_groups_within_the_critical_difference() -> None:
    ranks = [1.0, 1.5, 2.9, 3.2, 5.0]
    groups = stats.cliques(ranks, cd=1.0)
    assert groups == [(0, 1), (2, 3)]
    # Brute force: every pair inside a clique is within cd; no clique extends.
    for first, last in groups:
        span = ranks[first : last + 1]
        assert all(abs(x - y) < 1.0 for x, y in itertools.combinations(span, 2))
    assert stats.cliques([1.0, 2.0, 3.0], cd=5.0) == [(0, 2)]
