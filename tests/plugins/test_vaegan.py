"""TF-VAEGAN and FREE (``plugins/vaegan.py``): their losses against the official formulas written
out element by element, the model contract on the shared generative model, and the official
quirks the module keeps (adaptive lambda, the centre optimiser's accumulating gradient)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zslbench.errors import ConfigError, DataError
from zslbench.testing import check_model, toy_problem
from zslbench_plugins.generative import GenerativeModel
from zslbench_plugins.vaegan import (
    FREEGenerator,
    TFVAEGANGenerator,
    _adapt_lambda,
    center_loss,
    vae_loss,
    weighted_l1,
)

pytestmark = pytest.mark.usefixtures("one_thread")

#: Small networks, a few epochs: enough for ``check_model``'s "unseen classes are scored".
TINY = dict(
    hidden=32,
    ngh=32,
    ndh=32,
    nepoch=6,
    lr=1e-3,
    batch_size=16,
    critic_iter=1,
    syn_num=20,
    classifier_epochs=5,
)


def scaled_toy(seed: int = 0) -> dict:
    """``toy_problem`` with features min-max scaled over its training rows and clipped to [0, 1]
    (what the ``minmax`` preprocessor gives the model; the VAE's BCE needs [0, 1])."""
    p = toy_problem(seed)
    tr = p["features"][p["train"]]
    lo, hi = tr.min(0), tr.max(0)
    p["features"] = np.clip((p["features"] - lo) / np.where(hi > lo, hi - lo, 1), 0, 1).astype(
        np.float32
    )
    return p


def model(generator: type, **params) -> GenerativeModel:
    return GenerativeModel.with_generator(generator, **params)


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# -- losses against the official formulas, element by element ---------------------------------


def test_weighted_l1_is_the_official_formula_in_value_and_gradient():
    g = _g(1)
    pred = torch.rand(5, 7, generator=g, dtype=torch.float64, requires_grad=True)
    gt = torch.rand(5, 7, generator=g, dtype=torch.float64)
    ours = weighted_l1(pred, gt)
    total = 0.0
    for i in range(5):  # train_images.py:74-78, one row at a time
        e = pred[i] - gt[i]
        norm = torch.sqrt(sum(e[j] ** 2 for j in range(7)))
        total = total + sum((e[j] ** 2 / norm) * abs(e[j]) for j in range(7))
    ref = total / 5
    torch.testing.assert_close(ours, ref)
    (g1,) = torch.autograd.grad(ours, pred)
    (g2,) = torch.autograd.grad(ref, pred)
    torch.testing.assert_close(g1, g2)  # the weight is not detached, as in the official code


def test_vae_loss_is_summed_bce_plus_kl_over_the_batch():
    g = _g(2)
    x = torch.rand(4, 6, generator=g, dtype=torch.float64)
    recon = torch.rand(4, 6, generator=g, dtype=torch.float64) * 0.98 + 0.01
    mu = torch.randn(4, 3, generator=g, dtype=torch.float64)
    lv = torch.randn(4, 3, generator=g, dtype=torch.float64)
    bce = -(x * torch.log(recon + 1e-12) + (1 - x) * torch.log(1 - recon - 1e-12)).sum() / 4
    kl = (
        sum(
            0.5 * (mu[i, j] ** 2 + lv[i, j].exp() - lv[i, j] - 1)
            for i in range(4)
            for j in range(3)
        )
        / 4
    )
    torch.testing.assert_close(vae_loss(recon, x, mu, lv), bce + kl)


@pytest.mark.parametrize("kind", ["margin", "min_margin"])
def test_center_loss_matches_the_official_loops(kind):
    g = _g(3)
    mu = torch.randn(6, 4, generator=g, dtype=torch.float64)
    centers = torch.randn(5, 4, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 3, 4, 1])
    margin, w = 2.0, 0.8
    ours = center_loss(mu, labels, centers, margin, w, kind, _g(9))
    # the same "other" classes as ours drew: replay the generator
    offsets = torch.randint(5, (6,), generator=_g(9))
    total = 0.0
    for i in range(6):
        d = ((mu[i] - centers) ** 2).sum(1)
        if kind == "margin":  # center_loss.py:9-13,27-42
            o = d[(labels[i] + offsets[i]) % 5]
        else:  # center_loss.py:57-77
            o = min(d[c] for c in range(5) if c != labels[i])
        total += max(margin + w * d[labels[i]] - (1 - w) * o, 0.0)
    torch.testing.assert_close(ours, torch.as_tensor(total / 6, dtype=torch.float64))


def test_lambda_adapts_as_the_official_rule():
    """train_images.py:193-197: gp_sum (of gammaD-scaled penalties over the critic iterations)
    divided by gammaD * lambda1 * critic_iter, against 1.05 and 1.001."""

    def gp_sum(gp_mean, lambda1=10.0, gamma_d=10.0, critic_iter=5):
        return gp_mean * gamma_d * lambda1 * critic_iter

    assert _adapt_lambda(10.0, gp_sum(1.2), 10.0, 5) == pytest.approx(11.0)
    assert _adapt_lambda(10.0, gp_sum(0.5), 10.0, 5) == pytest.approx(10.0 / 1.1)
    assert _adapt_lambda(10.0, gp_sum(1.02), 10.0, 5) == 10.0
    assert _adapt_lambda(10.0, gp_sum(1.2, critic_iter=1), 10.0, 1) == pytest.approx(11.0)
    # gammaD = 0 (the official divides by zero there): the mean is taken as 1.0, below 1.001
    assert _adapt_lambda(10.0, 123.0, 0.0, 5) == pytest.approx(10.0 / 1.1)


# -- the model ----------------------------------------------------------------------------------


@pytest.mark.parametrize("generator", [TFVAEGANGenerator, FREEGenerator])
def test_check_model(generator):
    # The refit check (a fit per changed hyperparameter, twice) runs on this model, with these
    # settings, in tests/test_refit.py; here the rest of the contract.
    check_model(model(generator, **TINY), problem=scaled_toy(0), refit=False)


def test_unscaled_features_are_refused_with_one_line():
    p = toy_problem(0)
    with pytest.raises(DataError, match="minmax"):
        _fit(model(TFVAEGANGenerator, **TINY), p)


def _fit(m: GenerativeModel, p: dict) -> GenerativeModel:
    tr = p["train"]
    return m.fit(p["features"][tr], p["labels"][tr], p["attributes"], p["classes"])


def test_tfvaegan_classifier_space_is_features_decoder_output_and_hidden():
    p = scaled_toy(0)
    m = _fit(model(TFVAEGANGenerator, **TINY, random_state=1), p)
    x = torch.as_tensor(p["features"][:3])
    z = m.generator_.embed(x)
    assert z.shape == (3, x.shape[1] + p["attributes"].shape[1] + TINY["ngh"])
    torch.testing.assert_close(z[:, : x.shape[1]], x)
    # the decoder's attribute reconstruction has unit rows
    att = z[:, x.shape[1] : x.shape[1] + p["attributes"].shape[1]]
    torch.testing.assert_close(att.norm(dim=1), torch.ones(3))
    assert m.generator_.lambda1_ != TINY.get("lambda1", 10.0)  # it adapted


def test_free_scores_are_a_function_of_the_image_but_training_features_are_noisy():
    p = scaled_toy(1)
    m = _fit(model(FREEGenerator, **TINY, random_state=2), p)
    x = torch.as_tensor(p["features"][:4])
    torch.testing.assert_close(m.generator_.embed(x), m.generator_.embed(x))
    a = m.generator_.embed_train(x, _g(0))
    b = m.generator_.embed_train(x, _g(1))
    assert not torch.allclose(a, b)
    torch.testing.assert_close(a[:, : -p["attributes"].shape[1]], b[:, : -p["attributes"].shape[1]])


def test_free_centre_gradient_accumulates_as_in_the_official_code(monkeypatch):
    """The official centre optimiser is never zeroed (``train_free.py:138,245``): at its k-th
    step it sees the sum of the first k centre-loss gradients. Each fresh gradient is recorded
    where the loss is made, and every step's gradient must be the running sum."""
    import zslbench_plugins.vaegan as vaegan

    fresh: list[torch.Tensor] = []
    stepped: list[torch.Tensor] = []
    real_loss, real_step = vaegan.center_loss, torch.optim.Adam.step

    def recording_loss(mu, labels, centers, *a, **k):
        out = real_loss(mu, labels, centers, *a, **k)
        weight = FREEGenerator().center_weight
        fresh.append(weight * torch.autograd.grad(out, centers, retain_graph=True)[0])
        return out

    def spy(self, *a, **k):
        (first, *rest) = self.param_groups[0]["params"]
        if not rest and first.dim() == 2 and first.shape == (6, 12):  # the centres
            stepped.append(first.grad.clone())
        return real_step(self, *a, **k)

    monkeypatch.setattr(vaegan, "center_loss", recording_loss)
    monkeypatch.setattr(torch.optim.Adam, "step", spy)
    p = scaled_toy(2)
    _fit(
        model(
            FREEGenerator,
            **{**TINY, "nepoch": 1, "loops": 1, "critic_iter": 3, "batch_size": 64},
            random_state=0,
        ),
        p,
    )
    assert len(stepped) == len(fresh) >= 3
    for k in range(len(stepped)):
        torch.testing.assert_close(stepped[k], sum(fresh[: k + 1]))


@pytest.mark.parametrize(
    "param, value",
    [
        ("hidden", 0),
        ("nepoch", -1),
        ("lr", 0.0),
        ("beta1", 1.0),
        ("gammaD", -1.0),
        ("freeze_dec", "yes"),
        ("a1", float("nan")),
        ("encoded_noise", 1),
    ],
)
def test_tfvaegan_refuses_bad_values(param, value):
    with pytest.raises(ConfigError, match=param):
        TFVAEGANGenerator(**{param: value}).check_params()


def test_tfvaegan_feedback_needs_matching_widths():
    with pytest.raises(ConfigError, match="ngh"):
        TFVAEGANGenerator(hidden=64, ngh=32).check_params()
    TFVAEGANGenerator(hidden=64, ngh=32, loops=1).check_params()


@pytest.mark.parametrize(
    "param, value",
    [("center_loss", "hinge"), ("incenter_weight", 1.5), ("center_margin", -1.0), ("loops", 0)],
)
def test_free_refuses_bad_values(param, value):
    with pytest.raises(ConfigError, match=param):
        FREEGenerator(**{param: value}).check_params()
    FREEGenerator().check_params()
