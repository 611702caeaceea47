"""The ``krr`` regressor: closed form, median-heuristic width, and the validation grid search.

What is pinned down: ``fit``/``predict`` equal ``K(S*, S) (K + alpha I)^-1 Y`` computed with an
explicit ``np.linalg.solve``; ``width`` is in units of the median pairwise distance; the grids are
the declared search space (the harness searches it, ``tests/test_search.py``); bad inputs and bad
hyperparameters are one-line errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from zslbench.errors import ConfigError, DataError
from zslbench.registry import load_registry
from zslbench_plugins.krr import ALPHA_GRID, WIDTH_GRID, KRRRegressor
from zslbench_plugins.regression_problems import make_shaped


def _median_distance(s: np.ndarray) -> float:
    d = np.sqrt(((s[:, None, :] - s[None, :, :]) ** 2).sum(-1))
    return float(np.median(d[np.triu_indices(len(s), 1)]))


def _explicit(s, y, s_new, alpha, lengthscale):
    """The textbook closed form with an explicit solve and exact pairwise differences."""
    sq = lambda a, b: ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)  # noqa: E731
    gram = np.exp(-0.5 * sq(s, s) / lengthscale**2)
    coef = np.linalg.solve(gram + alpha * np.eye(len(s)), y)
    return np.exp(-0.5 * sq(s_new, s) / lengthscale**2) @ coef


@pytest.mark.parametrize("alpha, width", [(1e-3, 0.5), (0.1, 1.0), (3.0, 4.0)])
def test_fit_predict_is_the_closed_form(alpha, width):
    p = make_shaped("AWA2", 6, seed=1)
    reg = KRRRegressor(alpha=alpha, width=width).fit(p.seen_semantics, p.seen_prototypes)
    med = _median_distance(p.seen_semantics)
    assert reg.median_distance_ == pytest.approx(med, rel=1e-12)
    assert reg.lengthscale_ == pytest.approx(width * med, rel=1e-12)
    expected = _explicit(
        p.seen_semantics, p.seen_prototypes, p.unseen_semantics, alpha, width * med
    )
    pred = reg.predict(p.unseen_semantics)
    assert pred.dtype == np.float32 and pred.shape == expected.shape
    np.testing.assert_allclose(pred, expected, rtol=1e-5, atol=1e-5)  # float32 output
    gram = np.exp(
        -0.5
        * ((p.seen_semantics[:, None] - p.seen_semantics[None]) ** 2).sum(-1)
        / (width * med) ** 2
    )
    np.testing.assert_allclose(
        (gram + alpha * np.eye(len(gram))) @ reg.coef_, p.seen_prototypes, rtol=1e-8, atol=1e-8
    )


def test_the_declared_search_space_is_the_grids():
    reg = KRRRegressor(alpha_grid=(0.5,), width_grid=(2.0, 3.0))
    assert reg.search_space == {"alpha": (0.5,), "width": (2.0, 3.0)}
    assert KRRRegressor().search_space == {"alpha": ALPHA_GRID, "width": WIDTH_GRID}


def test_grids_are_the_documented_ones():
    assert len(ALPHA_GRID) == 17 and ALPHA_GRID[0] == pytest.approx(1e-6)
    assert ALPHA_GRID[-1] == pytest.approx(1e2)
    assert len(WIDTH_GRID) == 13 and WIDTH_GRID[0] == pytest.approx(0.125)
    assert WIDTH_GRID[6] == 1.0 and WIDTH_GRID[-1] == pytest.approx(8.0)


def test_registered_as_krr_with_documented_defaults():
    assert load_registry().get("regressor", "krr").obj is KRRRegressor
    params = KRRRegressor().get_params()
    assert params == {
        "alpha": 0.1,
        "width": 1.0,
        "alpha_grid": ALPHA_GRID,
        "width_grid": WIDTH_GRID,
    }
    assert KRRRegressor().clone().get_params() == params


@pytest.mark.parametrize("params", [{"alpha": 0.0}, {"alpha": float("nan")}, {"width": -1.0}])
def test_bad_hyperparameters_are_config_errors(params):
    p = make_shaped("APY", 2)
    with pytest.raises(ConfigError, match=r"^krr\."):
        KRRRegressor(**params).fit(p.seen_semantics, p.seen_prototypes)


@pytest.mark.parametrize("grid", [(), (0.1, -1.0), "abc", ("banana",)])
def test_bad_grids_are_config_errors(grid):
    with pytest.raises(ConfigError, match="alpha_grid"):
        KRRRegressor(alpha_grid=grid).check_params()


@pytest.mark.parametrize("params", [{"alpha": "banana"}, {"width": -3}, {"alpha": float("nan")}])
def test_check_params_refuses_what_the_fuzzer_found(params):
    with pytest.raises(ConfigError, match=r"^krr\."):
        KRRRegressor(**params).check_params()


def test_bad_inputs_are_data_errors():
    p = make_shaped("APY", 2)
    with pytest.raises(DataError, match="rows"):
        KRRRegressor().fit(p.seen_semantics[:-1], p.seen_prototypes)
    reg = KRRRegressor()
    with pytest.raises(RuntimeError, match="before fit"):
        reg.predict(p.unseen_semantics)
    reg.fit(p.seen_semantics, p.seen_prototypes)
    with pytest.raises(DataError, match="columns"):
        reg.predict(p.unseen_semantics[:, 1:])
