"""Statistics that say whether a difference between methods is real.

Results of one configuration over seeds are a small sample (often 3 runs), so every claim the
leaderboard makes is a test on that sample, named where it is shown:

* **a cell**: the mean, the sample standard deviation and a two-sided 95% *t* interval for the
  mean (:func:`t_interval`);
* **two methods on one dataset**: a two-sided *t* test of the difference of their means
  (:func:`compare_runs`). Runs are *paired by seed* when both methods ran the same seeds (the
  runner derives seeds without the method, so at a given repetition every method sees the same
  seed); a paired test removes the seed-to-seed variation both share. When the seeds do not pair
  up, the runs are independent samples and Welch's unequal-variance *t* test applies. A partly
  shared set of seeds uses the shared seeds when there are at least two of them;
* **one column of a table**: each method against the one with the best mean, the *p*-values
  Holm-corrected over the column (:func:`not_worse_than_best`);
* **across datasets**: average ranks, Friedman's test and the Nemenyi critical difference of the
  ranks (:func:`friedman`, :func:`nemenyi_cd`), as Demšar (JMLR 7, 2006) recommends for comparing
  several methods over several data sets.

Everything is a pure function of numbers, tested against closed forms and published tables
(``tests/test_stats.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats as _st

#: The significance level of every test the leaderboard shows, and the interval's coverage.
ALPHA = 0.05
CONFIDENCE = 0.95

PAIRED = "paired t-test"
WELCH = "Welch's t-test"


@dataclass(frozen=True)
class Interval:
    """A sample's mean with its sample standard deviation and a two-sided *t* interval.

    With one value the spread and the interval are undefined (NaN), never 0.
    """

    mean: float
    std: float
    low: float
    high: float
    n: int


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Mean ± t_{(1+c)/2, n-1} · s / √n over ``values`` (NaN dropped)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = int(x.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, math.nan, 0)
    mean = float(x.mean())
    if n == 1:
        return Interval(mean, math.nan, math.nan, math.nan, 1)
    std = float(x.std(ddof=1))
    half = float(_st.t.ppf((1 + confidence) / 2, n - 1)) * std / math.sqrt(n)
    return Interval(mean, std, mean - half, mean + half, n)


def mean_of_means(parts: Sequence[Interval], confidence: float = CONFIDENCE) -> Interval:
    """The mean of independent means (a method's mean H over datasets, each over its own seeds),
    with a *t* interval: standard error √(Σ s_d²/n_d) / D and Welch–Satterthwaite degrees of
    freedom. ``std`` is NaN (there is no one sample); the interval is NaN when a part has fewer
    than two values, and everything is NaN without parts."""
    if not parts or any(not math.isfinite(p.mean) for p in parts):
        return Interval(math.nan, math.nan, math.nan, math.nan, len(parts))
    d = len(parts)
    mean = float(sum(p.mean for p in parts) / d)
    if any(p.n < 2 or not math.isfinite(p.std) for p in parts):
        return Interval(mean, math.nan, math.nan, math.nan, d)
    v = [p.std**2 / p.n for p in parts]
    if sum(v) == 0:
        return Interval(mean, math.nan, mean, mean, d)
    df = sum(v) ** 2 / sum(x**2 / (p.n - 1) for x, p in zip(v, parts, strict=True))
    half = float(_st.t.ppf((1 + confidence) / 2, df)) * math.sqrt(sum(v)) / d
    return Interval(mean, math.nan, mean - half, mean + half, d)


@dataclass(frozen=True)
class Difference:
    """``a - b``: the difference of means, its interval and the two-sided *p*-value of the test
    named in ``test``. ``pairs`` is the number of seeds paired (0 for Welch's test); ``note`` says
    how the seeds did (or did not) pair up."""

    mean: float
    low: float
    high: float
    p: float
    test: str
    pairs: int
    n_a: int
    n_b: int
    note: str

    @property
    def paired(self) -> bool:
        return self.test == PAIRED


def _finite_map(values: Mapping[int, float]) -> dict[int, float]:
    return {int(k): float(v) for k, v in values.items() if v is not None and math.isfinite(v)}


def pairing(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[list[int], str]:
    """The seeds to pair on (empty: do not pair) and a sentence saying why."""
    shared = sorted(set(a) & set(b))
    if set(a) == set(b):
        return shared, f"paired by seed ({len(shared)} seeds)"
    if len(shared) >= 2:
        return shared, (
            f"paired on the {len(shared)} seeds both ran ({len(a)} and {len(b)} runs; the "
            "others are left out)"
        )
    if not shared:
        return [], "the seeds do not pair up (no seed in common): independent runs"
    return [], "the seeds do not pair up (one seed in common): treated as independent runs"


def compared_values(
    a: Mapping[int, float], b: Mapping[int, float]
) -> tuple[list[float], list[float]]:
    """The values of ``a`` and ``b`` that :func:`compare_runs` tests: those of the paired seeds
    when the runs pair up, else all (finite) values; their means' difference is the test's."""
    a, b = _finite_map(a), _finite_map(b)
    seeds, _ = pairing(a, b)
    if seeds:
        return [a[s] for s in seeds], [b[s] for s in seeds]
    return list(a.values()), list(b.values())


def compare_runs(
    a: Mapping[int, float], b: Mapping[int, float], confidence: float = CONFIDENCE
) -> Difference | None:
    """Test ``mean(a) - mean(b)`` for runs keyed by seed; None when no test is possible (fewer
    than two pairs, or fewer than two runs on either side when unpaired)."""
    a, b = _finite_map(a), _finite_map(b)
    seeds, note = pairing(a, b)
    level = (1 + confidence) / 2
    if seeds:
        if len(seeds) < 2:
            return None
        d = np.array([a[s] - b[s] for s in seeds])
        n = d.size
        mean, sd = float(d.mean()), float(d.std(ddof=1))
        se = sd / math.sqrt(n)
        t_crit = float(_st.t.ppf(level, n - 1))
        p = _two_sided_p(mean, se, n - 1)
        return Difference(
            mean, mean - t_crit * se, mean + t_crit * se, p, PAIRED, n, len(a), len(b), note
        )
    xa, xb = np.array(list(a.values())), np.array(list(b.values()))
    if xa.size < 2 or xb.size < 2:
        return None
    va, vb = float(xa.var(ddof=1)) / xa.size, float(xb.var(ddof=1)) / xb.size
    mean = float(xa.mean() - xb.mean())
    se = math.sqrt(va + vb)
    # Welch–Satterthwaite degrees of freedom (undefined when both spreads are 0: then any df
    # gives the same verdict, p = 1 for equal means and 0 otherwise).
    df = (
        (va + vb) ** 2 / (va**2 / (xa.size - 1) + vb**2 / (xb.size - 1))
        if se > 0
        else float(xa.size + xb.size - 2)
    )
    t_crit = float(_st.t.ppf(level, df))
    p = _two_sided_p(mean, se, df)
    return Difference(
        mean, mean - t_crit * se, mean + t_crit * se, p, WELCH, 0, xa.size, xb.size, note
    )


def _two_sided_p(mean: float, se: float, df: float) -> float:
    if se == 0:
        return 1.0 if mean == 0 else 0.0
    return float(2 * _st.t.sf(abs(mean) / se, df))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted *p*-values (family-wise error over the sequence), in input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class Verdict:
    """Where one sample stands against the best of its column.

    ``status``: "best" (the highest mean), "tied" (not significantly worse), "worse"
    (significantly worse) or "untested" (no test possible: too few runs or seeds). ``p`` is the
    Holm-adjusted *p*-value against the best (NaN for the best and the untested).
    """

    status: str
    p: float = math.nan
    test: str = ""
    note: str = ""

    @property
    def bold(self) -> bool:
        return self.status in ("best", "tied")


def not_worse_than_best(
    samples: Sequence[Mapping[int, float]], *, higher_better: bool = True, alpha: float = ALPHA
) -> list[Verdict]:
    """For samples keyed by seed (one per method), which are the best or not significantly worse
    than it. The best has the highest mean (lowest with ``higher_better=False``); every other is
    tested against it (:func:`compare_runs`), Holm-corrected over the comparisons. Nothing is
    marked when fewer than two samples have values, or when the best cannot be tested (one run)."""
    clean = [_finite_map(s) for s in samples]
    present = [i for i, s in enumerate(clean) if s]
    out = [Verdict("untested") for _ in clean]
    if len(present) < 2:
        return out
    sign = 1.0 if higher_better else -1.0
    means = {i: float(np.mean(list(clean[i].values()))) for i in present}
    best = max(present, key=lambda i: (sign * means[i], -i))
    if len(clean[best]) < 2:
        return out
    tests = {i: compare_runs(clean[best], clean[i]) for i in present if i != best}
    tested = {i: d for i, d in tests.items() if d is not None}
    adjusted = dict(zip(tested, holm([d.p for d in tested.values()]), strict=True))
    out[best] = Verdict("best")
    for i, diff in tests.items():
        if diff is None:
            out[i] = Verdict("untested", note="too few runs to test")
            continue
        worse = adjusted[i] < alpha and sign * diff.mean > 0
        out[i] = Verdict("worse" if worse else "tied", adjusted[i], diff.test, diff.note)
    return out


# -- across datasets --------------------------------------------------------------------------


@dataclass(frozen=True)
class Friedman:
    """Friedman's test over ``n`` datasets (blocks) and ``k`` methods, as Demšar (2006) gives it:
    ``chi2`` = χ²_F with k−1 degrees of freedom, ``f`` = Iman and Davenport's F_F with (k−1,
    (k−1)(n−1)) degrees of freedom (less conservative), and their *p*-values; ``ranks`` are the
    average ranks (1 = best), in the order of the columns given."""

    ranks: tuple[float, ...]
    n: int
    k: int
    chi2: float
    p_chi2: float
    f: float
    p_f: float


def average_ranks(scores: np.ndarray, *, higher_better: bool = True) -> np.ndarray:
    """Rank methods (columns) within each dataset (row), 1 = best, ties sharing the mean rank;
    return the average rank of each method."""
    scores = np.asarray(scores, dtype=float)
    ranks = np.vstack([_st.rankdata(-row if higher_better else row) for row in scores])
    return ranks.mean(axis=0)


def friedman_from_ranks(ranks: Sequence[float] | np.ndarray, n: int) -> tuple[float, float]:
    """χ²_F = 12n / (k(k+1)) · (Σ R_j² − k(k+1)²/4) and F_F = (n−1) χ²_F / (n(k−1) − χ²_F)."""
    r = np.asarray(ranks, dtype=float)
    k = r.size
    chi2 = 12.0 * n / (k * (k + 1)) * (float((r**2).sum()) - k * (k + 1) ** 2 / 4.0)
    denominator = n * (k - 1) - chi2
    f = (n - 1) * chi2 / denominator if denominator > 0 else math.inf
    return chi2, f


def friedman(scores: np.ndarray, *, higher_better: bool = True) -> Friedman:
    """Friedman's test on an ``n × k`` matrix (datasets × methods); needs n ≥ 2 and k ≥ 2."""
    scores = np.asarray(scores, dtype=float)
    n, k = scores.shape
    if n < 2 or k < 2 or not np.isfinite(scores).all():
        raise ValueError(
            "Friedman's test needs a complete table of at least 2 datasets x 2 methods"
        )
    ranks = average_ranks(scores, higher_better=higher_better)
    chi2, f = friedman_from_ranks(ranks, n)
    p_chi2 = float(_st.chi2.sf(chi2, k - 1))
    p_f = float(_st.f.sf(f, k - 1, (k - 1) * (n - 1))) if math.isfinite(f) else 0.0
    return Friedman(tuple(float(x) for x in ranks), n, k, chi2, p_chi2, f, p_f)


@lru_cache(maxsize=64)
def nemenyi_q(k: int, alpha: float = ALPHA) -> float:
    """The Nemenyi test's critical value q_α for k methods: the studentized range statistic's
    upper α quantile (infinite degrees of freedom) divided by √2 (Demšar 2006, Table 5)."""
    return float(_st.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)


def nemenyi_cd(k: int, n: int, alpha: float = ALPHA) -> float:
    """Critical difference of average ranks: CD = q_α · √(k(k+1) / (6n)). Two methods whose
    average ranks differ by less are not significantly different (Nemenyi post-hoc test)."""
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n))


def cliques(ranks: Sequence[float], cd: float) -> list[tuple[int, int]]:
    """Groups of methods not significantly different, for a critical-difference diagram: maximal
    runs ``(first, last)`` of positions in rank order whose ranks span less than ``cd``. Each is
    given as indices into ``sorted(range(k), key=ranks)``; runs of one method are left out."""
    order = sorted(range(len(ranks)), key=lambda i: (ranks[i], i))
    r = [ranks[i] for i in order]
    out: list[tuple[int, int]] = []
    for first in range(len(r)):
        last = first
        while last + 1 < len(r) and r[last + 1] - r[first] < cd:
            last += 1
        if last > first and not any(a <= first and last <= b for a, b in out):
            out.append((first, last))
    return out
