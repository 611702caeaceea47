"""ESZSL (plugins/eszsl.py): the closed form, the model contract, parameter checks, and a CLI run
in which the harness searches the paper's grid.

What is pinned down: ``V_`` equals ``(X X^T + gamma I)^-1 X Y S^T (S S^T + lambda I)^-1`` computed
independently with explicit inverses (``Y`` one-hot, or +-1 with ``negative_label=-1``), the scores
are ``x^T V s_c`` with columns in the order of ``classes``, ``check_model`` passes, fits are
bit-for-bit repeatable, and bad hyperparameters are one-line ``ConfigError``s.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from zslbench.cli import main
from zslbench.errors import ConfigError
from zslbench.testing import check_model
from zslbench_plugins.eszsl import ESZSL, GRID


def _problem(seed: int = 0) -> dict[str, np.ndarray]:
    """Random data with unsorted class ids, unseen classes in between the seen ones, d < n."""
    rng = np.random.default_rng(seed)
    classes = np.array([7, 2, 9, 4, 1, 5], dtype=np.int64)
    seen_ids = np.array([2, 4, 1, 7])  # 9 and 5 have no image: unseen
    labels = rng.choice(seen_ids, size=60).astype(np.int64)
    labels[: len(seen_ids)] = seen_ids  # every seen class has an image
    return {
        "features": rng.standard_normal((60, 9)).astype(np.float32),
        "labels": labels,
        "semantics": rng.standard_normal((len(classes), 5)),
        "classes": classes,
        "test": rng.standard_normal((11, 9)).astype(np.float32),
    }


def _reference_v(p: dict[str, np.ndarray], gamma: float, lam: float, negative: float) -> np.ndarray:
    """The paper's closed form with explicit inverses; Y's columns in sorted class-id order."""
    x = p["features"].astype(np.float64).T
    seen = np.unique(p["labels"])
    y = np.where(p["labels"][:, None] == seen[None, :], 1.0, negative)
    s = np.stack([p["semantics"][list(p["classes"]).index(c)] for c in seen], axis=1)
    return (
        np.linalg.inv(x @ x.T + gamma * np.eye(x.shape[0]))
        @ x
        @ y
        @ s.T
        @ np.linalg.inv(s @ s.T + lam * np.eye(s.shape[0]))
    )


def _fit(p: dict[str, np.ndarray], **params) -> ESZSL:
    return ESZSL(**params).fit(p["features"], p["labels"], p["semantics"], p["classes"])


@pytest.mark.parametrize(
    "gamma, lam, negative",
    [(1e-3, 1e3, 0.0), (1.0, 1.0, -1.0), (1e3, 1e-3, 0.0), (10.0, 0.1, -1.0)],
)
def test_v_and_scores_are_the_closed_form(gamma, lam, negative):
    p = _problem()
    model = _fit(p, gamma=gamma, lam=lam, negative_label=negative)
    v = _reference_v(p, gamma, lam, negative)
    assert np.abs(model.V_ - v).max() <= 1e-8 * np.abs(v).max()
    scores = model.decision_function(p["test"])
    expected = p["test"].astype(np.float64) @ v @ p["semantics"].T  # columns follow `classes`
    assert scores.shape == (len(p["test"]), len(p["classes"]))
    assert np.abs(scores - expected).max() <= 1e-8 * np.abs(expected).max()


def test_negative_label_changes_the_model():
    """The paper's +-1 targets and the authors' one-hot targets are different models."""
    p = _problem(1)
    assert not np.allclose(_fit(p).V_, _fit(p, negative_label=-1.0).V_)


def test_refit_of_one_instance_equals_a_fresh_fit():
    """The search refits one instance on the same arrays with other gamma and lam (reusing
    X X^T and X Y); other arrays or another negative_label must not reuse them."""
    p, q = _problem(3), _problem(4)
    model = _fit(p)
    model.set_params(gamma=1e2, lam=1e-2).fit(
        p["features"], p["labels"], p["semantics"], p["classes"]
    )
    assert np.array_equal(model.V_, _fit(p, gamma=1e2, lam=1e-2).V_)
    model.fit(q["features"], q["labels"], q["semantics"], q["classes"])
    assert np.array_equal(model.V_, _fit(q, gamma=1e2, lam=1e-2).V_)
    model.set_params(negative_label=-1.0).fit(
        q["features"], q["labels"], q["semantics"], q["classes"]
    )
    assert np.array_equal(model.V_, _fit(q, gamma=1e2, lam=1e-2, negative_label=-1.0).V_)
    model.fit(q["features"], q["labels"], p["semantics"], q["classes"])  # semantics: not cached
    assert np.array_equal(
        model.V_,
        ESZSL(gamma=1e2, lam=1e-2, negative_label=-1.0)
        .fit(q["features"], q["labels"], p["semantics"], q["classes"])
        .V_,
    )


@pytest.mark.parametrize("params", [{}, {"negative_label": -1.0}, {"gamma": 1e3, "lam": 1e-3}])
def test_check_model(params):
    check_model(ESZSL(**params))


def test_fits_are_repeatable_bit_for_bit():
    p = _problem(2)
    a, b = _fit(p, gamma=0.1, lam=10.0), _fit(p, gamma=0.1, lam=10.0)
    assert np.array_equal(a.V_, b.V_)
    assert np.array_equal(a.decision_function(p["test"]), b.decision_function(p["test"]))


def test_search_space_is_the_papers_ordered_grid():
    assert GRID == tuple(10.0**e for e in range(-3, 4))
    assert ESZSL.search_space == {"gamma": GRID, "lam": GRID}
    assert ESZSL.search_strategy == "refine"


@pytest.mark.parametrize(
    "bad",
    [
        {"gamma": -1.0},
        {"gamma": 0.0},
        {"gamma": float("nan")},
        {"lam": float("inf")},
        {"lam": "banana"},
        {"gamma": True},
        {"lam": None},
        {"negative_label": 0.5},
        {"negative_label": "-1"},
        {"negative_label": -2.0},
    ],
)
def test_bad_hyperparameters_are_one_line_config_errors(bad):
    (param,) = bad
    with pytest.raises(ConfigError) as err:
        ESZSL(**bad).check_params()
    assert f"eszsl.{param}=" in str(err.value) and "\n" not in str(err.value)
    p = _problem()
    with pytest.raises(ConfigError):  # fit checks too, before any work
        _fit(p, **bad)


def test_cli_run_records_what_the_search_chose(tmp_path):
    """``zslbench run --method eszsl,sae --dataset toy``: exit 0, one record per method, and each
    record's ``search`` holds the declared space, every candidate tried and the best one."""
    out = tmp_path / "res"
    main(["run", "--method", "eszsl,sae", "--dataset", "toy", "--results-dir", str(out)])
    records = {r["method"]: r for r in (json.loads(f.read_text()) for f in out.glob("*.json"))}
    assert set(records) == {"eszsl", "sae"}
    spaces = {
        "eszsl": {"gamma": list(GRID), "lam": list(GRID)},
        "sae": {"lam": [float(v) for v in records["sae"]["search"]["space"]["lam"]]},
    }
    for method, record in records.items():
        search = record["search"]
        assert search["strategy"] == "refine"
        assert search["space"] == spaces[method]
        best = max(search["tried"], key=lambda t: t["H"])  # max keeps the first of equal H
        assert search["chosen"] == best["params"]
        assert search["best_H"] == best["H"]
        for name, value in search["chosen"].items():
            assert value in search["space"][name]
        assert np.isfinite(record["metrics"]["H"]) and record["timings"]["train"] > 0
    assert len(spaces["sae"]["lam"]) > 1


def test_the_search_reuses_statistics_through_the_harness_stages_not_an_id_cache(monkeypatch):
    """Issue 27: a fit cache keyed on ``id()`` of the arrays; the stages key on what they read."""
    from zslbench.stages import StagedModel

    assert issubclass(ESZSL, StagedModel)
    assert [(s.name, s.reads) for s in ESZSL.stages] == [
        ("statistics", ("negative_label",)),
        ("closed_form", ("gamma", "lam")),
    ]
    calls = []
    real = ESZSL.fit_statistics
    monkeypatch.setattr(
        ESZSL, "fit_statistics", lambda self, inp: calls.append(1) or real(self, inp)
    )
    p = _problem(3)
    model = _fit(p)
    model.set_params(gamma=1e2, lam=1e-2).fit(
        p["features"], p["labels"], p["semantics"], p["classes"]
    )
    assert len(calls) == 1  # another gamma and lam: X X^T and X Y reused
    model.set_params(negative_label=-1.0).fit(
        p["features"], p["labels"], p["semantics"], p["classes"]
    )
    assert len(calls) == 2
    model.fit(p["features"].copy(), p["labels"], p["semantics"], p["classes"])  # other arrays
    assert len(calls) == 3
    assert not hasattr(model, "_arrays") and not hasattr(model, "_statistics")
