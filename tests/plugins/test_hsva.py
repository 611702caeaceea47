"""HSVA (``plugins/hsva.py``): its loss terms against brute-force definitions (the sliced
Wasserstein discrepancy as the best matching of the two batches per projection, CORAL from
numpy's covariance), the official noise, the classifier settings, the model contract on the
shared generative model, parameter checks and the selection audit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from zslbench.errors import ConfigError
from zslbench.prepare import prepare_method
from zslbench.protocol import run_protocol
from zslbench.registry import load_registry
from zslbench.request import parse_overrides
from zslbench.testing import check_model
from zslbench_plugins.generative import GenerativeModel
from zslbench_plugins.hsva import (
    HSVAGenerator,
    coral_loss,
    random_projections,
    sample_latent,
    sliced_wasserstein_discrepancy,
)

pytestmark = pytest.mark.usefixtures("one_thread")

#: Small networks, warm-ups compressed into 4 epochs: every loss term is on by the end.
TINY = dict(
    latent_size=6,
    coarse_size=16,
    encoder_hidden=24,
    latent_hidden=16,
    decoder_hidden=24,
    classifier_hidden=12,
    projections=4,
    epochs=4,
    batch_size=64,
    beta_end=3,
    cross_reconstruction_start=1,
    cross_reconstruction_end=3,
    distance_end=2,
    seen_num=20,
    syn_num=40,
    classifier_epochs=3,
)


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_swd_is_the_mean_best_matching_cost_per_projection_in_value_and_gradient():
    g = _g(0)
    l1 = torch.randn(5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    l2 = torch.randn(5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    proj = random_projections(4, 3, g, torch.device("cpu")).double()
    torch.testing.assert_close(proj.norm(dim=0), torch.ones(3, dtype=torch.float64))
    ours = sliced_wasserstein_discrepancy(l1, l2, proj)
    # brute force: per projection, the cheapest one-to-one matching of the two batches
    a, b = torch.softmax(l1, 1) @ proj, torch.softmax(l2, 1) @ proj
    ref = 0.0
    for j in range(3):
        costs = [
            sum((a[i, j] - b[p[i], j]) ** 2 for i in range(5))
            for p in itertools.permutations(range(5))
        ]
        ref = ref + min(costs, key=lambda c: float(c)) / 5
    ref = ref / 3
    torch.testing.assert_close(ours, ref)
    for got, want in zip(
        torch.autograd.grad(ours, (l1, l2)), torch.autograd.grad(ref, (l1, l2)), strict=True
    ):
        torch.testing.assert_close(got, want)


def test_coral_is_the_mean_squared_difference_of_numpy_covariances():
    g = _g(1)
    s = torch.randn(7, 3, generator=g, dtype=torch.float64)
    t = torch.randn(7, 3, generator=g, dtype=torch.float64) * 2.0
    ref = np.mean((np.cov(s.numpy(), rowvar=False) - np.cov(t.numpy(), rowvar=False)) ** 2)
    assert coral_loss(s, t).item() == pytest.approx(ref, rel=1e-12)


def test_noise_is_one_draw_per_row_scaled_by_exp_of_a_tenth_of_logvar():
    g = _g(2)
    mu, lv = torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)
    eps = (sample_latent(mu, lv, _g(0)) - mu) / torch.exp(0.1 * lv)
    torch.testing.assert_close(eps, eps[:, :1].expand_as(eps))
    assert eps[:, 0].unique().numel() == 6


def test_classifier_settings_are_the_official_ones_plus_the_constructor_epoch():
    d = HSVAGenerator.classifier_defaults
    assert (
        d["seen_num"],
        d["syn_num"],
        d["classifier_batch_size"],
        d["classifier_lr"],
        d["classifier_beta1"],
        d["classifier_init"],
        d["classifier_batches"],
    ) == (200, 400, 32, 0.001, 0.5, "xavier", "reshuffle")
    # cls_train_steps + 1 (the CLASSIFIER constructor trains one epoch first)
    assert d["classifier_epochs"] == 23 + 1
    assert HSVAGenerator.classifier_search == {"classifier_epochs": (22, 24, 34, 51)}


def test_check_model():
    # The refit check (a fit per changed hyperparameter, twice) runs on this model, with these
    # settings, in tests/test_refit.py; here the rest of the contract.
    check_model(GenerativeModel.with_generator(HSVAGenerator, **TINY), refit=False)


def test_every_loss_term_moves_and_the_scores_depend_on_the_seed():
    from zslbench.testing import toy_problem

    p = toy_problem(0)
    tr = p["train"]
    args = (p["features"][tr], p["labels"][tr], p["attributes"], p["classes"])
    a = GenerativeModel.with_generator(HSVAGenerator, **TINY, random_state=1).fit(*args)
    h = a.generator_.history_
    assert set(h) == {"classification", "vae", "distance"}
    assert all(len(v) == TINY["epochs"] and np.isfinite(v).all() for v in h.values())
    assert h["classification"][-1] < h["classification"][0]  # the classifiers learn
    b = GenerativeModel.with_generator(HSVAGenerator, **TINY, random_state=2).fit(*args)
    te = p["features"][p["test"]]
    assert not np.allclose(a.decision_function(te), b.decision_function(te))


@pytest.mark.parametrize(
    "param, value",
    [
        ("latent_size", 0),
        ("batch_size", 1),
        ("lr", 0.0),
        ("alignment_lr", -1.0),
        ("distance_end", 0),
        ("beta_factor", -0.1),
        ("projections", 2.5),
    ],
)
def test_refuses_bad_values(param, value):
    with pytest.raises(ConfigError, match=param):
        HSVAGenerator(**{param: value}).check_params()
    HSVAGenerator().check_params()


def test_the_run_has_a_selection_audit():
    reg = load_registry()
    data = reg.get("dataset", "toy").obj.load(None)
    own = set(HSVAGenerator._param_names())
    sets = [f"{'generator' if k in own else 'model'}.{k}={v}" for k, v in TINY.items()]
    method = prepare_method(reg, "hsva", parse_overrides(sets)).instantiate(seed=0, device="cpu")
    res = run_protocol(data, method, seed=0)
    audit = res.selection_audit
    assert audit is not None and "HSVA.py" in audit["rule"]
    assert len(audit["H_by_epoch"]) == TINY["classifier_epochs"]
    assert audit["clean_H"] == res.evaluation["H"] == audit["H_by_epoch"][-1]
