"""CNZSL (plugins/cnzsl.py): its layers against their definitions, the contract, the CLI."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch

from tests.cli_helpers import run_cli
from zslbench.errors import ConfigError
from zslbench.testing import check_model, toy_problem
from zslbench_plugins.cnzsl import (
    CN_EPS,
    CN_MOMENTUM,
    CNZSLModel,
    _AttributeNet,
    _ClassNorm,
    cosine_logits,
    normalize_attributes,
)

#: Small and quick, but enough steps to learn the toy problem.
FAST = {"hid_dim": 64, "epochs": 30, "batch_size": 32}


def _toy_fit(seed: int = 0, **params) -> tuple[CNZSLModel, dict]:
    p = toy_problem(0)
    m = CNZSLModel(**{**FAST, **params}, random_state=seed)
    tr = p["train"]
    m.fit(p["features"][tr], p["labels"][tr], p["attributes"], p["classes"])
    return m, p


# -- class normalization ------------------------------------------------------------------------


def _cn_by_hand(h: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per hidden unit (column), over the classes (rows): mean, unbiased variance, and
    (h - mean) / (var + eps) (the official code) or / sqrt(var + eps) (the paper's standardization),
    by explicit loops."""
    c, u = h.shape
    mean = np.array([sum(h[i, j] for i in range(c)) / c for j in range(u)])
    var = np.array([sum((h[i, j] - mean[j]) ** 2 for i in range(c)) / (c - 1) for j in range(u)])
    den = var + CN_EPS if mode == "var" else np.sqrt(var + CN_EPS)
    out = np.array([[(h[i, j] - mean[j]) / den[j] for j in range(u)] for i in range(c)])
    return out, mean, var


@pytest.mark.parametrize("mode", ["var", "std"])
def test_class_norm_standardises_each_unit_over_the_classes(mode):
    rng = np.random.default_rng(1)
    h = rng.normal(2.0, 3.0, size=(7, 5))
    layer = _ClassNorm(5, mode, torch.device("cpu")).double().train()
    out = layer(torch.from_numpy(h)).numpy()
    expected, mean, var = _cn_by_hand(h, mode)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    if mode == "std":  # the definition: zero mean and unit (unbiased) std over the classes
        np.testing.assert_allclose(out.mean(axis=0), 0, atol=1e-12)
        np.testing.assert_allclose(
            out.std(axis=0, ddof=1), np.sqrt(var / (var + CN_EPS)), rtol=1e-12
        )
    # running averages: momentum 0.1 from (0, 1)
    np.testing.assert_allclose(layer.running_mean.numpy(), CN_MOMENTUM * mean, rtol=1e-12)
    np.testing.assert_allclose(
        layer.running_var.numpy(), (1 - CN_MOMENTUM) + CN_MOMENTUM * var, rtol=1e-12
    )


def test_class_norm_uses_the_running_statistics_in_eval_so_classes_do_not_interact():
    rng = np.random.default_rng(2)
    layer = _ClassNorm(4, "var", torch.device("cpu")).double().train()
    for _ in range(3):
        layer(torch.from_numpy(rng.normal(size=(6, 4))))
    mean, var = layer.running_mean.numpy().copy(), layer.running_var.numpy().copy()
    layer.eval()
    h = rng.normal(size=(5, 4))
    out = layer(torch.from_numpy(h)).numpy()
    np.testing.assert_allclose(out, (h - mean) / (var + CN_EPS), rtol=1e-12)
    one = layer(torch.from_numpy(h[:1])).numpy()  # a class alone scores the same
    np.testing.assert_allclose(one, out[:1], rtol=1e-12)
    np.testing.assert_array_equal(layer.running_mean.numpy(), mean)  # eval updates nothing


def test_attribute_net_is_the_official_architecture():
    """Linear-ReLU-Linear-CN-ReLU-CN-Linear-ReLU (nb:90-101), recomputed in numpy."""
    g = torch.Generator().manual_seed(0)
    net = _AttributeNet(6, 8, 10, "var", True, g, torch.device("cpu")).double().train()
    a = np.random.default_rng(3).random((5, 6))
    out = net(torch.from_numpy(a)).detach().numpy()
    w = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    relu = lambda z: np.maximum(z, 0)  # noqa: E731
    h = relu(a @ w["fc1.weight"].T + w["fc1.bias"])
    h = relu(_cn_by_hand(h @ w["fc2.weight"].T + w["fc2.bias"], "var")[0])
    h = _cn_by_hand(h, "var")[0]
    np.testing.assert_allclose(out, relu(h @ w["fc3.weight"].T + w["fc3.bias"]), rtol=1e-10)


def test_proper_init_draws_the_output_weights_with_variance_one_over_hid_dim_times_d():
    g = torch.Generator().manual_seed(0)
    net = _AttributeNet(4, 256, 512, "var", True, g, torch.device("cpu"))
    w = net.fc3.weight.detach().numpy()
    bound = math.sqrt(3 / (256 * 512))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert w.var() == pytest.approx(1 / (256 * 512), rel=0.02)
    default = _AttributeNet(4, 256, 512, "var", False, g, torch.device("cpu"))
    assert np.abs(default.fc3.weight.detach().numpy()).max() > 10 * bound  # U(+-1/sqrt(256))


def test_attributes_are_rescaled_to_norm_sqrt_k_row_by_row():
    a = np.random.default_rng(4).random((5, 9))
    out = normalize_attributes(a)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 3.0, rtol=1e-6)
    np.testing.assert_allclose(
        out / np.linalg.norm(out, axis=1, keepdims=True),
        a / np.linalg.norm(a, axis=1, keepdims=True),
        rtol=1e-6,
    )


# -- the cosine head ----------------------------------------------------------------------------


def test_cosine_logits_are_scaled_cosines():
    rng = np.random.default_rng(5)
    x, p = rng.normal(size=(4, 7)), rng.normal(size=(3, 7))
    out = cosine_logits(torch.from_numpy(x), torch.from_numpy(p), 5.0).numpy()
    for i in range(4):
        for j in range(3):
            cos = x[i] @ p[j] / (np.linalg.norm(x[i]) * np.linalg.norm(p[j]))
            assert out[i, j] == pytest.approx(25.0 * cos, rel=1e-12)


def test_decision_function_scores_every_class_by_its_scaled_cosine():
    m, p = _toy_fit(scale=3.0)
    x = p["features"][p["test"]][:10].astype(np.float64)
    s = m.decision_function(p["features"][p["test"]][:10])
    protos = m.prototypes_.astype(np.float64)
    for i in range(10):
        cos = protos @ x[i] / (np.linalg.norm(protos, axis=1) * np.linalg.norm(x[i]))
        np.testing.assert_allclose(s[i], 9.0 * cos, rtol=1e-5, atol=1e-6)


# -- the contract ---------------------------------------------------------------------------------


def test_check_model():
    check_model(CNZSLModel(**FAST))


@pytest.mark.parametrize("class_norm", ["std", "none"])
def test_check_model_other_class_norms(class_norm):
    check_model(CNZSLModel(**FAST, class_norm=class_norm))


def test_more_epochs_continue_exactly(monkeypatch):
    """The search's epochs grid walks up (10, 25, 50): a refit with more epochs continues the
    cached training (``Stage(resumes="epochs")``), so 2 then 4 then 7 epochs run 7 epochs in all,
    not 13, and each refit equals a fresh fit bit for bit: the learning rate steps inside the
    resumed stretch (``lr_step=3``), so the schedule, Adam's moments, the random stream and the
    CN running statistics must all carry over. Fewer epochs, or another lr, start over."""
    p = toy_problem(1)
    x, y = p["features"][p["train"]], p["labels"][p["train"]]
    sem, cls = p["attributes"], p["classes"]
    kw = dict(hid_dim=32, batch_size=16, lr_step=3, random_state=3)
    ran: list[int] = []
    real = torch.randperm  # one draw per epoch run
    monkeypatch.setattr(torch, "randperm", lambda *a, **k: (ran.append(1), real(*a, **k))[1])
    walked = CNZSLModel(**kw, epochs=2).fit(x, y, sem, cls)
    fits = {}
    for epochs in (4, 7, 5):
        walked.set_params(epochs=epochs).fit(x, y, sem, cls)
        fits[epochs] = (walked.prototypes_.copy(), walked.loss_history_.copy())
    assert len(ran) == 7 + 5  # 2 -> 4 -> 7 resumed; 5 (fewer) from scratch
    ran.clear()
    for epochs, (protos, history) in fits.items():
        fresh = CNZSLModel(**kw, epochs=epochs).fit(x, y, sem, cls)
        np.testing.assert_array_equal(protos, fresh.prototypes_)
        np.testing.assert_array_equal(history, fresh.loss_history_)
        assert history.shape == (epochs,)
    walked.set_params(lr=1e-3, epochs=7).fit(x, y, sem, cls)  # another lr: starts over
    other = CNZSLModel(**{**kw, "lr": 1e-3}, epochs=7).fit(x, y, sem, cls)
    np.testing.assert_array_equal(walked.prototypes_, other.prototypes_)


def test_a_resumed_refit_leaves_the_cached_training_untouched():
    """Resuming must not write into the state it resumes from (the stage contract,
    ``zslbench.stages``): the weights, CN running statistics and Adam moments of the 3-epoch
    output are unchanged after a refit continues it to 6 epochs."""
    p = toy_problem(1)
    x, y = p["features"][p["train"]], p["labels"][p["train"]]
    m = CNZSLModel(hid_dim=32, batch_size=16, epochs=3, random_state=0)
    m.fit(x, y, p["attributes"], p["classes"])
    cached = m._stage_cache["cnzsl_train"][3]
    before = copy.deepcopy((cached["net"].state_dict(), cached["optimiser"]["state"]))
    m.set_params(epochs=6).fit(x, y, p["attributes"], p["classes"])
    assert m._stage_cache["cnzsl_train"][3]["epochs"] == 6  # it did resume
    after = (cached["net"].state_dict(), cached["optimiser"]["state"])
    for name, value in before[0].items():
        assert torch.equal(after[0][name], value), name
    for i, state in before[1].items():
        for key, value in state.items():
            assert torch.equal(after[1][i][key], value), (i, key)


def test_same_seed_same_model_other_seed_other_model():
    a, _ = _toy_fit(seed=7)
    b, _ = _toy_fit(seed=7)
    c, _ = _toy_fit(seed=8)
    np.testing.assert_array_equal(a.prototypes_, b.prototypes_)
    np.testing.assert_array_equal(a.loss_history_, b.loss_history_)
    assert not np.allclose(a.prototypes_, c.prototypes_)


def test_unseen_classes_never_enter_training():
    """CN statistics and the loss use the seen classes only: other unseen candidates change no
    seen prototype."""
    p = toy_problem(0)
    tr, n_seen = p["train"], int(p["n_seen"])
    fits = []
    for att_unseen in (p["attributes"][n_seen:], np.random.default_rng(9).random((5, 12))):
        att = np.vstack([p["attributes"][:n_seen], att_unseen])
        cls = np.arange(len(att))
        m = CNZSLModel(**FAST, random_state=0).fit(p["features"][tr], p["labels"][tr], att, cls)
        fits.append(m.prototypes_[:n_seen])
    np.testing.assert_array_equal(fits[0], fits[1])


def test_training_lowers_the_loss_and_transfers_to_unseen_classes():
    """On a toy problem with enough seen classes for an MLP to generalise from (24; with 6 the
    unseen accuracy swings between chance and 90% with the seed), ZSL accuracy is far above
    chance (1/6); a model that ignored the attributes would sit at chance."""
    p = toy_problem(0, n_seen=24, n_unseen=6)
    tr, test, n_seen = p["train"], p["test"], 24
    m = CNZSLModel(**FAST, random_state=0).fit(
        p["features"][tr], p["labels"][tr], p["attributes"], p["classes"]
    )
    assert m.loss_history_[-1] < 0.5 * m.loss_history_[0]
    unseen = p["labels"][test] >= n_seen
    s = m.decision_function(p["features"][test][unseen])[:, n_seen:]
    acc = (s.argmax(1) + n_seen == p["labels"][test][unseen]).mean()
    assert acc > 0.5


@pytest.mark.parametrize(
    "param, value",
    [
        ("hid_dim", 0),
        ("hid_dim", 2.5),
        ("epochs", 0),
        ("batch_size", 0),
        ("lr", 0.0),
        ("lr", float("nan")),
        ("weight_decay", -1e-4),
        ("lr_step", 0),
        ("lr_decay", 0.0),
        ("lr_decay", 1.5),
        ("scale", 0.0),
        ("scale", -5.0),
        ("class_norm", "batch"),
        ("proper_init", 1),
        ("random_state", -1),
        ("random_state", "a"),
        ("device", "tpu"),
        ("device", "banana"),
    ],
)
def test_check_params_refuses(param, value):
    with pytest.raises(ConfigError, match=param):
        CNZSLModel(**{param: value}).check_params()


def test_defaults_pass_check_params():
    CNZSLModel().check_params()
    CNZSLModel(weight_decay=0.0, lr_decay=1.0, class_norm="std", proper_init=False).check_params()


def test_cli_run_on_toy(tmp_path):
    proc = run_cli(
        "run",
        "--method",
        "cnzsl",
        "--dataset",
        "toy",
        "--results-dir",
        str(tmp_path),
        "--set",
        "model.epochs=3",
        "--set",
        "model.hid_dim=32",
    )
    assert proc.returncode == 0, proc.stderr
    (rec_path,) = tmp_path.glob("*.json")
    rec = json.loads(rec_path.read_text())
    assert rec["method"] == "cnzsl"
    assert all(math.isfinite(v) for v in rec["metrics"].values())
    assert rec["config"]["components"]["model"]["params"]["epochs"] == 3
