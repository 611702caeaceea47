"""Hot paths of evaluation: the exact seen-unseen curve / AUSUC and the exact gamma search.

Run with ``pytest benchmarks --benchmark-only`` (the default options skip benchmarks).
Shape: 10,000 images x 50 classes (40 seen, 10 unseen), about the size of an AWA2 test set.
"""

from __future__ import annotations

import numpy as np
import pytest

from zslbench.metrics import ausuc, gzsl_evaluate, seen_unseen_curve
from zslbench_plugins.calibrators import GammaCalibrator

N_IMAGES, N_CLASSES, N_SEEN = 10_000, 50, 40


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    mask = np.arange(N_CLASSES) < N_SEEN
    y = rng.integers(0, N_CLASSES, N_IMAGES)
    s = rng.normal(size=(N_IMAGES, N_CLASSES))
    s[np.arange(N_IMAGES), y] += 2.0
    s[:, mask] += 0.5
    return s, y, mask


def test_bench_exact_ausuc_10k_x_50(benchmark, problem):
    s, y, mask = problem
    value = benchmark(lambda: ausuc(seen_unseen_curve(s, y, mask)))
    assert 0.0 < value < 100.0


def test_bench_gamma_calibration_10k_x_50(benchmark, problem):
    s, y, mask = problem
    cal = benchmark(lambda: GammaCalibrator().fit(s, y, mask))
    assert cal.H_ > 0.0


def test_bench_gzsl_evaluate_10k_x_50(benchmark, problem):
    s, y, mask = problem
    se, u = mask[y], ~mask[y]
    r = benchmark(lambda: gzsl_evaluate(s[se], y[se], s[u], y[u], mask, 0.5))
    assert 0.0 < r["AUSUC"] < 100.0
