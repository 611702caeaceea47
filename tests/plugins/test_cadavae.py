"""CADA-VAE (plugins/cadavae.py): loss terms against closed forms, the warm-up against its
definition, the model contract, determinism, parameter checks, a CLI run, and the minmax
preprocessor against scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg
import torch
from torch.distributions import Normal, kl_divergence

from tests.cli_helpers import run_cli
from zslbench.errors import ConfigError
from zslbench.testing import check_model, toy_problem
from zslbench_plugins.cadavae import (
    Decoder,
    VAEGenerator,
    cross_reconstruction_loss,
    gaussian_kl,
    sample_latent,
    vae_loss,
    warmup_factor,
    wasserstein_distance,
)
from zslbench_plugins.generative import GenerativeModel
from zslbench_plugins.preprocessors import MinMaxScale


def CadaVAE(**params) -> GenerativeModel:  # noqa: N802 - reads as the model it builds
    """CADA-VAE as the method builds it: the shared model with the aligned VAEs."""
    return GenerativeModel.with_generator(VAEGenerator, **params)


#: Small networks and a compressed schedule (warm-ups scaled to 8 epochs) for fast fits.
TINY = dict(
    latent_size=8,
    image_encoder_hidden=48,
    image_decoder_hidden=48,
    attribute_encoder_hidden=24,
    attribute_decoder_hidden=24,
    epochs=8,
    batch_size=24,
    beta_end=7,
    cross_reconstruction_start=2,
    cross_reconstruction_end=6,
    distance_start=0,
    distance_end=2,
    seen_num=40,
    syn_num=80,
    classifier_epochs=3,
)


#: Tiny tensors: one thread avoids OpenMP barriers on a shared machine (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_thread")


def _gaussians(seed: int, n: int = 4, k: int = 3) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, k, generator=g, dtype=torch.float64).requires_grad_() for _ in range(4)]


# ---------------------------------------------------------------- loss terms


def test_kl_matches_the_closed_form_in_value_and_gradient() -> None:
    mu, logvar, _, _ = _gaussians(0)
    kl = gaussian_kl(mu, logvar)
    ref = kl_divergence(Normal(mu, torch.exp(0.5 * logvar)), Normal(0.0, 1.0)).sum()
    torch.testing.assert_close(kl, ref)
    g_mu, g_lv = torch.autograd.grad(kl, (mu, logvar))
    # d/dmu = mu, d/dlogvar = (exp(logvar) - 1) / 2
    torch.testing.assert_close(g_mu, mu.detach())
    torch.testing.assert_close(g_lv, 0.5 * (logvar.detach().exp() - 1.0))


def test_wasserstein_matches_the_general_gaussian_formula_in_value_and_gradient() -> None:
    mu1, lv1, mu2, lv2 = _gaussians(1)
    w = wasserstein_distance(mu1, lv1, mu2, lv2)
    # W2(N1, N2)^2 = |m1 - m2|^2 + tr(S1 + S2 - 2 (S2^1/2 S1 S2^1/2)^1/2), per row, full matrices.
    ref = 0.0
    for i in range(mu1.shape[0]):
        s1 = np.diag(lv1[i].detach().exp().numpy())
        s2 = np.diag(lv2[i].detach().exp().numpy())
        r2 = scipy.linalg.sqrtm(s2)
        cross = scipy.linalg.sqrtm(r2 @ s1 @ r2)
        d2 = float(((mu1[i] - mu2[i]).detach() ** 2).sum()) + float(
            np.trace(s1 + s2 - 2 * cross).real
        )
        ref += np.sqrt(d2)
    assert w.item() == pytest.approx(ref, rel=1e-10)
    # gradient: d/dmu1 = (mu1 - mu2) / W_i, d/dlogvar1 = (s1 - s2) s1 / (2 W_i), per row
    g_mu1, g_lv1 = torch.autograd.grad(w, (mu1, lv1))
    s1, s2 = (0.5 * lv1.detach()).exp(), (0.5 * lv2.detach()).exp()
    per_row = torch.sqrt(((mu1 - mu2).detach() ** 2).sum(1) + ((s1 - s2) ** 2).sum(1))[:, None]
    torch.testing.assert_close(g_mu1, (mu1 - mu2).detach() / per_row)
    torch.testing.assert_close(g_lv1, (s1 - s2) * s1 / (2 * per_row))
    assert torch.autograd.gradcheck(wasserstein_distance, (mu1, lv1, mu2, lv2))


def test_cross_reconstruction_is_the_summed_l1_of_both_directions() -> None:
    x, a, xa, ax = _gaussians(2)
    loss = cross_reconstruction_loss(x, a, xa, ax)
    ref = sum(
        abs((xa[i, j] - x[i, j]).item()) + abs((ax[i, j] - a[i, j]).item())
        for i in range(x.shape[0])
        for j in range(x.shape[1])
    )
    assert loss.item() == pytest.approx(ref, rel=1e-12)
    g_xa, g_x = torch.autograd.grad(loss, (xa, x))
    torch.testing.assert_close(g_xa, torch.sign(xa - x).detach())
    torch.testing.assert_close(g_x, -torch.sign(xa - x).detach())


@pytest.mark.parametrize("cross,dist,beta", [(0.0, 0.0, 0.0), (2.37, 8.13, 0.25), (1.0, 0.0, 0.1)])
def test_batch_loss_equals_the_official_four_decoder_calls(
    cross: float, dist: float, beta: float
) -> None:
    g = torch.Generator().manual_seed(3)
    dec_x = Decoder(3, 5, 6, g).double()
    dec_a = Decoder(3, 4, 2, g).double()
    img = torch.rand(4, 6, generator=g, dtype=torch.float64)
    att = torch.rand(4, 2, generator=g, dtype=torch.float64)
    mu_x, lv_x, mu_a, lv_a = _gaussians(4)
    z_x, z_a = mu_x + 0.3 * lv_x.exp(), mu_a - 0.2 * lv_a.exp()  # noisy samples, fixed noise
    loss = vae_loss(img, att, (mu_x, lv_x, z_x), (mu_a, lv_a, z_a), dec_x, dec_a, beta, cross, dist)
    l1 = lambda u, v: (u - v).abs().sum()  # noqa: E731
    ref = (
        l1(dec_x(z_x), img)
        + l1(dec_a(z_a), att)
        + cross * (l1(dec_x(z_a), img) + l1(dec_a(z_x), att))
        - beta
        * 0.5
        * ((1 + lv_x - mu_x**2 - lv_x.exp()).sum() + (1 + lv_a - mu_a**2 - lv_a.exp()).sum())
        + dist
        * torch.sqrt(
            ((mu_x - mu_a) ** 2).sum(1) + ((lv_x.exp().sqrt() - lv_a.exp().sqrt()) ** 2).sum(1)
        ).sum()
    )
    torch.testing.assert_close(loss, ref)
    params = [mu_x, lv_x, mu_a, lv_a, *dec_x.parameters(), *dec_a.parameters()]
    for got, want in zip(
        torch.autograd.grad(loss, params, retain_graph=True),
        torch.autograd.grad(ref, params),
        strict=True,
    ):
        torch.testing.assert_close(got, want)


def test_official_noise_is_one_draw_per_row_scaled_by_the_variance() -> None:
    mu, logvar, _, _ = (t.detach() for t in _gaussians(5, n=6, k=4))
    z = sample_latent(mu, logvar, torch.Generator().manual_seed(0), "official")
    eps = (z - mu) / logvar.exp()
    torch.testing.assert_close(eps, eps[:, :1].expand_as(eps))
    assert eps[:, 0].unique().numel() == 6
    z = sample_latent(mu, logvar, torch.Generator().manual_seed(0), "standard")
    eps = (z - mu) / (0.5 * logvar).exp()
    assert eps.unique().numel() == eps.numel()


# ---------------------------------------------------------------- warm-up


@pytest.mark.parametrize("factor,start,end", [(0.25, 0, 93), (2.37, 21, 75), (8.13, 6, 22)])
def test_warmup_is_zero_then_linear_then_constant(factor: float, start: int, end: int) -> None:
    for epoch in range(0, 100):
        if epoch <= start:
            want = 0.0
        elif epoch >= end:
            want = factor
        else:
            want = factor * (epoch - start) / (end - start)
        assert warmup_factor(epoch, factor, start, end) == pytest.approx(want, rel=1e-12)
    mid = (start + end) / 2
    if mid == int(mid):
        assert warmup_factor(int(mid), factor, start, end) == pytest.approx(factor / 2)


# ---------------------------------------------------------------- the model


def test_follows_the_model_contract() -> None:
    # The refit check (a fit per changed hyperparameter, twice) runs on this model, with these
    # settings, in tests/test_refit.py; here the rest of the contract.
    check_model(CadaVAE(**TINY), refit=False)


def test_same_seed_same_scores_other_seed_other_scores_and_vae_reuse_is_exact() -> None:
    p = toy_problem(1)
    tr, te = p["train"], p["test"]
    x, y = p["features"][tr], p["labels"][tr]
    args = (x, y, p["attributes"], p["classes"])

    def scores(m: GenerativeModel) -> np.ndarray:
        return m.fit(*args).decision_function(p["features"][te])

    a = scores(CadaVAE(**TINY, random_state=3))
    np.testing.assert_array_equal(a, scores(CadaVAE(**TINY, random_state=3)))
    assert not np.allclose(a, scores(CadaVAE(**TINY, random_state=4)))
    # A classifier-only change on the same arrays reuses the fitted VAE: same numbers as a refit.
    walker = CadaVAE(**TINY, random_state=3)
    walker.fit(*args)
    vae = walker.generator_
    walker.set_params(classifier_epochs=5).fit(*args)
    assert walker.generator_ is vae
    fresh = CadaVAE(**{**TINY, "classifier_epochs": 5}, random_state=3)
    np.testing.assert_array_equal(walker.decision_function(p["features"][te]), scores(fresh))
    # A VAE change refits it.
    walker.set_search_params(**{"generator.lr": 0.001}).fit(*args)
    assert walker.generator_ is not vae


def test_classifier_samples_per_class_follow_the_official_counts() -> None:
    p = toy_problem(2)
    tr = p["train"]
    m = CadaVAE(**TINY, random_state=0).fit(
        p["features"][tr], p["labels"][tr], p["attributes"], p["classes"]
    )
    inputs = m.check_fit_inputs(p["features"][tr], p["labels"][tr], p["attributes"], p["classes"])
    ctx = m.begin_fit(inputs)
    z, t = m._training_set(ctx, m.generator_, ctx.settings, torch.Generator().manual_seed(0))
    counts = np.bincount(t.numpy(), minlength=len(p["classes"]))
    assert (counts[m.seen_mask_] == TINY["seen_num"]).all()
    assert (counts[~m.seen_mask_] == TINY["syn_num"]).all()
    assert z.shape == (counts.sum(), TINY["latent_size"])


@pytest.mark.parametrize(
    "param,value",
    [
        ("latent_size", 0),
        ("epochs", 2.5),
        ("batch_size", True),
        ("lr", 0.0),
        ("lr", float("nan")),
        ("beta_factor", -1.0),
        ("cross_reconstruction_end", 21),
        ("distance_start", -1),
        ("seen_num", 0),
        ("classifier_epochs", "23"),
        ("classifier_lr", -0.1),
        ("noise", "gaussian"),
        ("random_state", -1),
        ("device", "tpu"),
    ],
)
def test_check_params_refuses_bad_values(param: str, value: object) -> None:
    model = CadaVAE(**{param: value})
    with pytest.raises(ConfigError) as info:
        model.check_params()
    assert param in str(info.value)
    CadaVAE().check_params()  # the defaults pass


# ---------------------------------------------------------------- minmax preprocessor


def test_minmax_matches_scikit_learn() -> None:
    from sklearn.preprocessing import MinMaxScaler

    rng = np.random.default_rng(0)
    train = rng.gamma(1.0, 2.0, size=(40, 7)).astype(np.float32)
    train[:, 3] = 1.5  # a constant column: scikit-learn maps it to 0
    test = rng.gamma(1.0, 3.0, size=(9, 7)).astype(np.float32)
    train.setflags(write=False)
    ours = MinMaxScale().fit(train)
    ref = MinMaxScaler().fit(train)
    for f in (train, test):
        out = ours.transform(f)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, ref.transform(f), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- the command line


def test_cli_run_on_toy_exits_zero(tmp_path) -> None:
    # The search over classifier_epochs runs (the default space); the rest is tiny and short.
    cli = {
        **TINY,
        "epochs": 4,
        "batch_size": 64,
        "beta_end": 3,
        "cross_reconstruction_start": 1,
        "cross_reconstruction_end": 3,
        "distance_start": 0,
        "distance_end": 1,
        "seen_num": 20,
        "syn_num": 40,
    }
    own = set(VAEGenerator._param_names())
    sets = [
        f"{'generator' if k in own else 'model'}.{k}={v}"
        for k, v in cli.items()
        if k != "classifier_epochs"
    ]
    args = ["run", "--method", "cada-vae", "--dataset", "toy", "--results-dir", str(tmp_path)]
    for s in sets:
        args += ["--set", s]
    proc = run_cli(*args, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    (record,) = tmp_path.glob("*.json")
    rec = json.loads(record.read_text())
    assert rec["method"] == "cada-vae"
    assert {"generator", "classifier"} <= set(rec["timings"])
    assert rec["search"]["chosen"]["classifier_epochs"] in (21, 23, 29, 33)
    assert set(rec["metrics"]) == {"A_T", "A_U", "A_S", "H", "AUSUC", "AUSUC_per_image"}
