"""ALE, DeViSE and SJE (plugins/compat.py): losses and gradients against brute-force loops, the
block SGD against the naive per-image loop, the model contract, parameter checks, and a CLI run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from zslbench.errors import ConfigError
from zslbench.testing import check_model, toy_problem
from zslbench_plugins.compat import (
    LOSSES,
    CompatModel,
    rank_weights,
    ranking_loss,
    score_grad,
    sgd_epoch,
)


# -- brute-force references: plain Python loops over images and classes ----------------------
def loop_loss(scores: np.ndarray, y: np.ndarray, loss: str, margin: float) -> np.ndarray:
    """The papers' per-image losses (GBU eqs. 3-5), one class at a time."""
    out = []
    for i in range(len(y)):
        true = scores[i, y[i]]
        hinges = [
            max(0.0, margin + scores[i, j] - true) for j in range(scores.shape[1]) if j != y[i]
        ]
        if loss == "devise":
            out.append(sum(hinges))
        elif loss == "sje":
            out.append(max([0.0, *hinges]))
        else:
            r = sum(h > 0 for h in hinges)
            l_r = sum(1.0 / k for k in range(1, r + 1))
            out.append(l_r / r * sum(hinges) if r else 0.0)
    return np.array(out)


def loop_loss_of_w(
    w: np.ndarray, x: np.ndarray, y: np.ndarray, phi: np.ndarray, loss: str, margin: float
) -> float:
    scores = np.array(
        [
            [
                sum(
                    x[i, p] * w[p, q] * phi[j, q]
                    for p in range(w.shape[0])
                    for q in range(w.shape[1])
                )
                for j in range(len(phi))
            ]
            for i in range(len(x))
        ]
    )
    return float(loop_loss(scores, y, loss, margin).sum())


def tiny(seed: int = 0, n: int = 6, d: int = 4, a: int = 3, c: int = 5):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((n, d)),
        rng.integers(0, c, n),
        rng.standard_normal((c, a)),
        rng.standard_normal((d, a)),
    )


def test_rank_weights_are_harmonic_numbers() -> None:
    w = rank_weights(4).numpy()
    assert np.allclose(w, [0.0, 1.0, 1.5, 1.5 + 1 / 3, 1.5 + 1 / 3 + 0.25])


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("margin", [1.0, 0.3])
def test_loss_value_matches_loop(loss: str, margin: float) -> None:
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((12, 7))
    y = rng.integers(0, 7, 12)
    scores[np.arange(0, 12, 3), y[::3]] += 6.0  # every third image: no margin violation
    got = ranking_loss(torch.as_tensor(scores), torch.as_tensor(y), loss, margin).numpy()
    want = loop_loss(scores, y, loss, margin)
    assert (want > 0).any() and (want == 0).any()
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_gradient_in_w_matches_finite_differences_of_the_loop(loss: str) -> None:
    x, y, phi, w = tiny()
    wt = torch.tensor(w, requires_grad=True)
    scores = torch.as_tensor(x) @ wt @ torch.as_tensor(phi).T
    total = ranking_loss(scores, torch.as_tensor(y), loss, 1.0).sum()
    total.backward()
    assert abs(total.item() - loop_loss_of_w(w, x, y, phi, loss, 1.0)) < 1e-10
    eps = 1e-6
    fd = np.zeros_like(w)
    for p in range(w.shape[0]):
        for q in range(w.shape[1]):
            up, down = w.copy(), w.copy()
            up[p, q] += eps
            down[p, q] -= eps
            fd[p, q] = (
                loop_loss_of_w(up, x, y, phi, loss, 1.0)
                - loop_loss_of_w(down, x, y, phi, loss, 1.0)
            ) / (2 * eps)
    assert np.abs(fd).max() > 0.1
    assert np.allclose(wt.grad.numpy(), fd, atol=1e-6)


@pytest.mark.parametrize("loss", LOSSES)
def test_score_grad_matches_autograd(loss: str) -> None:
    rng = np.random.default_rng(2)
    scores = rng.standard_normal((20, 6))
    y = rng.integers(0, 6, 20)
    s = torch.tensor(scores, requires_grad=True)
    ranking_loss(s, torch.as_tensor(y), loss, 1.0).sum().backward()
    none_seen = False
    for i in range(len(y)):
        c = score_grad(scores[i].copy(), int(y[i]), loss, 1.0)
        if c is None:
            none_seen = True
            assert not s.grad[i].any()
        else:
            assert np.allclose(c, s.grad[i].numpy(), atol=1e-12)
    far = np.zeros(6)
    far[0] = 10.0  # the true class far above every other: no violation
    assert score_grad(far, 0, loss, 1.0) is None or none_seen


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("batch_size", [1, 3])
def test_block_sgd_matches_the_naive_loop(loss: str, batch_size: int) -> None:
    """The block formulation gives the iterates of the naive loop (one W update per step, the
    step's gradient from the loop loss above, by finite differences of the scores)."""
    rng = np.random.default_rng(3)
    n, d, a, c = 23, 5, 4, 6
    x, y, phi = rng.random((n, d)), rng.integers(0, c, n), rng.random((c, a))
    w0 = rng.random((d, a))
    order = rng.permutation(n)
    lr = 0.4
    w = torch.tensor(w0)
    sgd_epoch(
        w,
        torch.as_tensor(x),
        torch.as_tensor(y),
        torch.as_tensor(phi),
        torch.as_tensor(order),
        lr,
        loss,
        1.0,
        batch_size,
        block=6,
    )

    ref = w0.copy()
    for start in range(0, n, batch_size):
        rows = order[start : start + batch_size]
        scores = x[rows] @ ref @ phi.T
        grad_s = np.zeros_like(scores)  # d loss / d scores, by central differences of the loop
        for i in range(len(rows)):
            for j in range(c):
                up, down = scores[i : i + 1].copy(), scores[i : i + 1].copy()
                up[0, j] += 1e-7
                down[0, j] -= 1e-7
                grad_s[i, j] = (
                    loop_loss(up, y[rows[i : i + 1]], loss, 1.0)[0]
                    - loop_loss(down, y[rows[i : i + 1]], loss, 1.0)[0]
                ) / 2e-7
        ref -= lr * x[rows].T @ grad_s @ phi
    assert np.abs(ref - w0).max() > 0.1
    assert np.allclose(w.numpy(), ref, atol=1e-6)


@pytest.mark.parametrize("loss", LOSSES)
def test_check_model(loss: str) -> None:
    check_model(CompatModel(loss=loss, lr=0.1, epochs=3))


def test_check_model_std_norm_minibatch() -> None:
    check_model(CompatModel(loss="ale", lr=0.01, epochs=3, norm="std", batch_size=4))


def _fit(model: CompatModel, p: dict) -> CompatModel:
    return model.fit(
        p["features"][p["train"]], p["labels"][p["train"]], p["attributes"], p["classes"]
    )


def test_determinism_under_a_seed() -> None:
    p = toy_problem(0)
    a = _fit(CompatModel(loss="sje", epochs=2, random_state=5), p)
    b = _fit(CompatModel(loss="sje", epochs=2, random_state=5), p)
    c = _fit(CompatModel(loss="sje", epochs=2, random_state=6), p)
    assert np.array_equal(a.W_, b.W_)
    assert not np.array_equal(a.W_, c.W_)
    assert a.loss_history_.shape == (2,)


@pytest.mark.parametrize("loss", LOSSES)
def test_more_epochs_continue_exactly(loss: str, monkeypatch) -> None:
    """A search's next epoch count continues from the stored state (the SGD stage resumes
    ``epochs``, ``zslbench.stages``): 2 then 3 more epochs run, not 2 then 5, and W is a fresh
    fit's."""
    import zslbench_plugins.compat as compat

    ran: list[int] = []
    real = compat.sgd_epoch
    monkeypatch.setattr(compat, "sgd_epoch", lambda *a, **k: (ran.append(1), real(*a, **k)))
    p = toy_problem(1)
    x, y = p["features"][p["train"]], p["labels"][p["train"]]
    sem, cls = p["attributes"], p["classes"]
    walked = CompatModel(loss=loss, lr=0.1, epochs=2, random_state=3).fit(x, y, sem, cls)
    walked.set_params(epochs=5).fit(x, y, sem, cls)
    assert len(ran) == 5
    fresh = CompatModel(loss=loss, lr=0.1, epochs=5, random_state=3).fit(x, y, sem, cls)
    assert np.array_equal(walked.W_, fresh.W_)
    assert np.array_equal(walked.loss_history_, fresh.loss_history_)
    walked.set_params(lr=0.01, epochs=5).fit(x, y, sem, cls)  # another lr: starts over
    other = CompatModel(loss=loss, lr=0.01, epochs=5, random_state=3).fit(x, y, sem, cls)
    assert np.array_equal(walked.W_, other.W_)


def test_search_space_is_lr_by_increasing_epochs() -> None:
    space = CompatModel(loss="devise", epochs_grid=(9, 2)).search_space
    assert list(space) == ["lr", "epochs"] and space["epochs"] == (2, 9)


@pytest.mark.parametrize(
    "params",
    [
        {"loss": "warp"},
        {"lr": 0.0},
        {"lr": -1.0},
        {"lr": "0.1"},
        {"epochs": -1},
        {"epochs": 1.5},
        {"margin": -1.0},
        {"batch_size": 0},
        {"norm": "l1"},
        {"lr_grid": ()},
        {"lr_grid": (0.1, -1.0)},
        {"epochs_grid": (2, 1.5)},
        {"epochs_grid": ()},
        {"random_state": -3},
        {"device": "tpu"},
    ],
)
def test_check_params_refuses_bad_values(params: dict) -> None:
    with pytest.raises(ConfigError):
        CompatModel(**params).check_params()


def test_cli_runs_the_three_methods_on_toy(tmp_path) -> None:
    from zslbench.cli import main

    try:
        main(
            [
                "run",
                "--method",
                "ale,devise,sje",
                "--dataset",
                "toy",
                "--results-dir",
                str(tmp_path),
                "--set",
                "model.lr_grid=[0.1]",
                "--set",
                "model.epochs_grid=[1]",
            ]
        )
    except SystemExit as exc:
        assert exc.code in (0, None)
    records = [json.loads(f.read_text()) for f in tmp_path.glob("*.json")]
    assert sorted(r["method"] for r in records) == ["ale", "devise", "sje"]
    for r in records:
        assert 0 <= r["metrics"]["H"] <= 100
        assert r["search"]["chosen"]["lr"] == 0.1
