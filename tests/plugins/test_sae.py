"""SAE (plugins/sae.py): the Sylvester solution, both directions' scores, the shared decomposition
across refits, the model contract and parameter checks.

What is pinned down: ``W_`` solves ``S S^T W + W (lam X X^T) = (1 + lam) S X^T`` (relative residual
~1e-15) and equals scipy's ``solve_sylvester`` and a brute-force solve of the Kronecker form
``(I (x) A + B^T (x) I) vec(W) = vec(C)``, the minimum-norm solution when the equation is singular;
the scores are the official code's cosine similarities, recomputed here with explicit loops; a refit
of one instance (as the harness's search does) equals a fresh fit.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from zslbench.errors import ConfigError
from zslbench.testing import check_model
from zslbench_plugins.sae import LAMBDA_GRID, SAE, zslbench_methods


def _problem(
    seed: int = 0, n: int = 40, d: int = 6, a: int = 4, n_seen: int = 5, n_unseen: int = 2
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    classes = rng.permutation(np.arange(100, 100 + n_seen + n_unseen)).astype(np.int64)
    seen = np.sort(classes[:n_seen])
    labels = np.concatenate([seen, rng.choice(seen, size=n - n_seen)]).astype(np.int64)
    return {
        "features": np.abs(rng.standard_normal((n, d))).astype(np.float32),
        "labels": labels,
        "semantics": np.abs(rng.standard_normal((len(classes), a))),
        "classes": classes,
        "test": np.abs(rng.standard_normal((9, d))).astype(np.float32),
    }


def _fit(p: dict[str, np.ndarray], **params) -> SAE:
    return SAE(**params).fit(p["features"], p["labels"], p["semantics"], p["classes"])


def _sylvester_terms(p: dict[str, np.ndarray], lam: float, normalize: str):
    """A, B, C of the official SAE.m, from the training data normalised as awa_demo.m line 26
    (each feature dimension) or sae_gzsl.py line 120 (each image)."""
    x = p["features"].astype(np.float64)
    x = x / np.linalg.norm(x, axis=0 if normalize == "dimension" else 1, keepdims=True)
    x = x.T  # d x n
    s = np.stack([p["semantics"][list(p["classes"]).index(c)] for c in p["labels"]], axis=1)
    return s @ s.T, lam * x @ x.T, (1 + lam) * s @ x.T


def _kronecker_solve(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Brute force: vec(A W + W B) = (I (x) A + B^T (x) I) vec(W), column-major vec; the
    minimum-norm solution (lstsq) when the system is singular."""
    k = np.kron(np.eye(b.shape[0]), a) + np.kron(b.T, np.eye(a.shape[0]))
    vec = np.linalg.lstsq(k, c.reshape(-1, order="F"), rcond=None)[0]
    return vec.reshape(c.shape, order="F")


@pytest.mark.parametrize("normalize", ["dimension", "image"])
@pytest.mark.parametrize("lam", [1e-2, 0.7, 50.0, 5e5])
def test_w_solves_the_sylvester_equation(normalize, lam):
    p = _problem()
    w = _fit(p, lam=lam, normalize=normalize).W_
    a, b, c = _sylvester_terms(p, lam, normalize)
    residual = np.linalg.norm(a @ w + w @ b - c) / np.linalg.norm(c)
    assert residual < 1e-10
    for reference in (_kronecker_solve(a, b, c), scipy.linalg.solve_sylvester(a, b, c)):
        assert np.abs(w - reference).max() <= 1e-8 * np.abs(reference).max()


def test_singular_equation_gives_the_minimum_norm_solution():
    """Fewer images than dimensions (X X^T singular) and more attributes than seen classes
    (S S^T singular): the equation has many solutions; the fit returns the minimum-norm one."""
    p = _problem(seed=3, n=5, d=8, a=6, n_seen=3)
    w = _fit(p, lam=2.0).W_
    a, b, c = _sylvester_terms(p, 2.0, "dimension")
    assert np.linalg.norm(a @ w + w @ b - c) / np.linalg.norm(c) < 1e-10
    reference = _kronecker_solve(a, b, c)
    assert np.abs(w - reference).max() <= 1e-8 * np.abs(reference).max()


def _cos(u: np.ndarray, v: np.ndarray) -> float:
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


@pytest.mark.parametrize("direction", ["v2s", "s2v"])
def test_scores_are_the_official_cosine_similarities(direction):
    """v2s: cos(W~ x, s~_c); s2v: cos(x, column-normalised (s~_c W~)), where W~ has unit rows and
    s~ unit attribute columns over the candidate classes (awa_demo.m 41/47, zsl_el.m 12); the
    images scored are not normalised (awa_demo.m 41/48)."""
    p = _problem(1)
    model = _fit(p, lam=3.0, direction=direction)
    w = model.W_ / np.linalg.norm(model.W_, axis=1, keepdims=True)
    sem = p["semantics"] / np.linalg.norm(p["semantics"], axis=0, keepdims=True)
    protos = sem @ w
    protos = protos / np.linalg.norm(protos, axis=0, keepdims=True)
    x = p["test"].astype(np.float64)
    expected = np.empty((len(x), len(p["classes"])))
    for i in range(len(x)):
        for j in range(len(p["classes"])):
            expected[i, j] = _cos(w @ x[i], sem[j]) if direction == "v2s" else _cos(x[i], protos[j])
    assert np.abs(model.decision_function(p["test"]) - expected).max() < 1e-12
    assert model.classes_.tolist() == p["classes"].tolist()


def test_the_two_directions_differ():
    p = _problem(2)
    assert not np.allclose(
        _fit(p, direction="v2s").decision_function(p["test"]),
        _fit(p, direction="s2v").decision_function(p["test"]),
    )


def test_refit_of_one_instance_equals_a_fresh_fit():
    """The search refits one instance on the same arrays with another lambda (reusing the
    decomposition); other arrays or another normalisation must not reuse it."""
    p, q = _problem(4), _problem(5)
    model = _fit(p, lam=1.0)
    model.set_params(lam=30.0).fit(p["features"], p["labels"], p["semantics"], p["classes"])
    assert np.allclose(model.W_, _fit(p, lam=30.0).W_, rtol=1e-12, atol=0)
    model.fit(q["features"], q["labels"], q["semantics"], q["classes"])
    assert np.array_equal(model.W_, _fit(q, lam=30.0).W_)
    model.set_params(normalize="image").fit(
        q["features"], q["labels"], q["semantics"], q["classes"]
    )
    assert np.array_equal(model.W_, _fit(q, lam=30.0, normalize="image").W_)


@pytest.mark.parametrize(
    "params",
    [
        {"lam": 1.0},
        {"lam": 1.0, "direction": "s2v"},
        {"lam": 10.0, "normalize": "image"},
        {"lam": 1.0, "direction": "s2v", "normalize": "image"},
    ],
)
def test_check_model(params):
    check_model(SAE(**params))


def test_fits_are_repeatable_bit_for_bit():
    p = _problem(6)
    a, b = _fit(p, lam=5.0), _fit(p, lam=5.0)
    assert np.array_equal(a.W_, b.W_)
    assert np.array_equal(a.decision_function(p["test"]), b.decision_function(p["test"]))


def test_search_space_and_methods():
    assert SAE().search_space == {"lam": LAMBDA_GRID}
    assert SAE(lam_grid=(1.0, 2.0)).search_space == {"lam": (1.0, 2.0)}
    assert list(LAMBDA_GRID) == sorted(LAMBDA_GRID)
    specs = {m.name: m for m in zslbench_methods()}
    assert {n: s.params["model"]["direction"] for n, s in specs.items()} == {
        "sae": "v2s",
        "sae-s2v": "s2v",
    }
    assert all(s.model == "sae" and s.preprocessor == "none" for s in specs.values())


@pytest.mark.parametrize(
    "bad",
    [
        {"lam": -1.0},
        {"lam": 0.0},
        {"lam": float("nan")},
        {"lam": "banana"},
        {"lam": True},
        {"direction": "x2y"},
        {"direction": None},
        {"normalize": "l2"},
        {"lam_grid": "abc"},
        {"lam_grid": ()},
        {"lam_grid": (1.0, -1.0)},
    ],
)
def test_bad_hyperparameters_are_one_line_config_errors(bad):
    (param,) = bad
    with pytest.raises(ConfigError) as err:
        SAE(**bad).check_params()
    assert f"sae.{param}" in str(err.value) and "\n" not in str(err.value)
    p = _problem()
    with pytest.raises(ConfigError):
        _fit(p, **bad)


def test_the_search_reuses_the_decomposition_through_the_harness_stages_not_an_id_cache(
    monkeypatch,
):
    """Issue 27: a fit cache keyed on ``id()``, one of them the id of a string (``normalize``)."""
    from zslbench.stages import StagedModel

    assert issubclass(SAE, StagedModel)
    assert [(s.name, s.reads) for s in SAE.stages] == [
        ("eigendecomposition", ("normalize",)),
        ("sylvester_solve", ("lam",)),
        ("class_targets", ("direction",)),
    ]
    calls = []
    real = SAE.fit_eigendecomposition
    monkeypatch.setattr(
        SAE, "fit_eigendecomposition", lambda self, inp: calls.append(1) or real(self, inp)
    )
    p = _problem(4)
    model = _fit(p, lam=1.0)
    model.set_params(lam=30.0).fit(p["features"], p["labels"], p["semantics"], p["classes"])
    assert len(calls) == 1
    # an equal string that is another object is the same normalisation: still reused
    model.set_params(normalize="".join(["dimen", "sion"])).fit(
        p["features"], p["labels"], p["semantics"], p["classes"]
    )
    assert len(calls) == 1
    model.set_params(normalize="image").fit(
        p["features"], p["labels"], p["semantics"], p["classes"]
    )
    assert len(calls) == 2
    assert not hasattr(model, "_arrays") and not hasattr(model, "_decomposition")
