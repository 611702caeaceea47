"""f-CLSWGAN: the WGAN-GP penalty, the networks' conditioning, the contract, determinism, reuse of
the GAN across a classifier search, parameter checks, the min-max preprocessor and a CLI run.

References are exact: the penalty against a per-sample autograd loop and against a linear critic
whose input gradient is its weight vector.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.cli_helpers import run_cli
from zslbench.errors import ConfigError
from zslbench.testing import check_model, toy_problem
from zslbench_plugins.fclswgan import (
    Critic,
    Generator,
    WGANGenerator,
    critic_terms,
    gradient_penalty,
)
from zslbench_plugins.generative import CLASSIFIER_PARAMS, GenerativeModel, permutation_stream


def FCLSWGAN(**params) -> GenerativeModel:  # noqa: N802 - reads as the model it builds
    """f-CLSWGAN as the method builds it: the shared model with the WGAN generator."""
    return GenerativeModel.with_generator(WGANGenerator, **params)


#: Small enough to fit in about a second on one core, large enough for the generator to learn
#: something of the unseen classes on ``toy_problem`` (``check_model`` asks for it).
TINY = dict(
    ngh=32,
    ndh=32,
    nepoch=5,
    lr=1e-2,
    batch_size=16,
    critic_iter=1,
    pretrain_epochs=3,
    syn_num=20,
    classifier_epochs=5,
)


#: Tiny tensors: one thread avoids OpenMP barriers on a shared machine (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_thread")


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _fit(model: GenerativeModel, p: dict) -> GenerativeModel:
    tr = p["train"]
    return model.fit(p["features"][tr], p["labels"][tr], p["attributes"], p["classes"])


# -- gradient penalty ----------------------------------------------------------------------------


def test_gradient_penalty_matches_a_per_sample_autograd_loop():
    g = _gen(1)
    critic = Critic(5, 3, 7, torch.device("cpu"), g).double()
    real, fake = torch.rand(4, 5, generator=g).double(), torch.rand(4, 5, generator=g).double()
    att, alpha = torch.rand(4, 3, generator=g).double(), torch.rand(4, 1, generator=g).double()
    gp = gradient_penalty(critic, real, fake, att, alpha, 10.0)

    terms = []
    for i in range(4):  # one image at a time: no batching can hide a mistake in the reduction
        xi = (alpha[i] * real[i] + (1 - alpha[i]) * fake[i]).reshape(1, 5).requires_grad_(True)
        (grad,) = torch.autograd.grad(critic(xi, att[i : i + 1]).sum(), xi, create_graph=True)
        terms.append((torch.sqrt((grad**2).sum()) - 1) ** 2)
    expected = 10.0 * torch.stack(terms).mean()
    assert gp.item() == pytest.approx(expected.item(), rel=1e-12)
    # the generic autograd path (a critic without ``input_gradient``) gives the same value
    generic = gradient_penalty(lambda x, a: critic(x, a), real, fake, att, alpha, 10.0)
    assert generic.item() == pytest.approx(expected.item(), rel=1e-12)

    # and its gradient with respect to the critic's parameters (what the critic step uses)
    params = list(critic.parameters())

    # (biases get no gradient from the penalty: None in one graph, zeros in the other)
    def grads(loss):
        out = torch.autograd.grad(loss, params, allow_unused=True)
        return [torch.zeros_like(p) if g is None else g for p, g in zip(params, out, strict=True)]

    for a, b in zip(grads(gp), grads(expected), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_critic_input_gradient_is_autograds():
    g = _gen(5)
    critic = Critic(6, 2, 9, torch.device("cpu"), g).double()
    x = torch.randn(8, 6, generator=g).double().requires_grad_(True)
    att = torch.rand(8, 2, generator=g).double()
    (want,) = torch.autograd.grad(critic(x, att).sum(), x)
    torch.testing.assert_close(critic.input_gradient(x.detach(), att), want, rtol=1e-12, atol=1e-14)


def test_gradient_penalty_of_a_linear_critic_is_closed_form():
    # D(x, a) = w.x + v.a + b has input gradient w everywhere: penalty lambda (||w|| - 1)^2.
    w = torch.tensor([3.0, 4.0], dtype=torch.float64)  # ||w|| = 5
    v = torch.tensor([0.7], dtype=torch.float64)

    def critic(x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        return (x @ w + a @ v + 2.0).unsqueeze(1)

    g = _gen(2)
    real, fake = torch.randn(6, 2, generator=g).double(), torch.randn(6, 2, generator=g).double()
    att, alpha = torch.randn(6, 1, generator=g).double(), torch.rand(6, 1, generator=g).double()
    assert gradient_penalty(critic, real, fake, att, alpha, 10.0).item() == pytest.approx(160.0)
    assert gradient_penalty(critic, real, fake, att, alpha, 0.5).item() == pytest.approx(8.0)


# -- networks ------------------------------------------------------------------------------------


def test_critic_terms_are_the_wasserstein_estimate_and_the_penalty_at_alpha_from_gen():
    """The shared critic step (f-CLSWGAN, TF-VAEGAN, FREE, CE-GZSL): mean D(fake) - mean D(real)
    scored separately, and the penalty at the alpha the next draw of ``gen`` gives."""
    g = _gen(3)
    critic = Critic(5, 3, 7, torch.device("cpu"), g).double()
    real, fake = torch.rand(6, 5, generator=g).double(), torch.rand(6, 5, generator=g).double()
    att = torch.rand(6, 3, generator=g).double()
    w, gp = critic_terms(critic, real, fake, att, 10.0, _gen(11))
    alpha = torch.rand(6, 1, generator=_gen(11)).double()
    want_w = critic(fake, att).mean() - critic(real, att).mean()
    assert w.item() == pytest.approx(want_w.item(), rel=1e-12)
    assert gp.item() == pytest.approx(
        gradient_penalty(critic, real, fake, att, alpha, 10.0).item(), rel=1e-12
    )
    # and it consumed exactly one (6, 1) draw: the caller's stream continues as the official's
    after = _gen(11)
    torch.rand(6, 1, generator=after)
    nxt = _gen(11)
    critic_terms(critic, real, fake, att, 10.0, nxt)
    assert torch.equal(torch.rand(3, generator=nxt), torch.rand(3, generator=after))


def test_generator_conditions_on_noise_then_attributes():
    g = _gen(3)
    gen = Generator(4, 6, 16, 10, torch.device("cpu"), g)
    assert gen.fc1.in_features == 4 + 6 and gen.fc2.out_features == 10
    noise, att = torch.randn(5, 4, generator=g), torch.rand(5, 6, generator=g)
    out = gen(noise, att)
    assert out.shape == (5, 10) and (out >= 0).all()  # ReLU output, like ResNet features
    # the layer sees [noise; attributes] in that order
    w = gen.fc1.weight
    h = torch.nn.functional.leaky_relu(noise @ w[:, :4].T + att @ w[:, 4:].T + gen.fc1.bias, 0.2)
    torch.testing.assert_close(out, torch.relu(gen.fc2(h)))
    # another class's attributes, same noise: another feature
    assert not torch.allclose(gen(noise, att.flip(0)), out)
    critic = Critic(10, 6, 16, torch.device("cpu"), g)
    assert critic(out, att).shape == (5, 1)


def test_noise_size_defaults_to_the_attribute_size():
    p = toy_problem(0)
    m = _fit(FCLSWGAN(random_state=0, **TINY), p)
    att_dim = p["attributes"].shape[1]
    assert m.generator_.netG_.fc1.in_features == 2 * att_dim
    m = _fit(FCLSWGAN(random_state=0, nz=3, **TINY), p)
    assert m.generator_.netG_.fc1.in_features == 3 + att_dim
    assert m.classifier_.out_features == len(p["classes"])


# -- contract, determinism, reuse ----------------------------------------------------------------


def test_check_model():
    # The refit check (a fit per changed hyperparameter, twice) runs on this model, with these
    # settings, in tests/test_refit.py; here the rest of the contract.
    check_model(FCLSWGAN(**TINY), refit=False)


def test_seeded_fits_are_identical_and_leave_the_global_rng_alone():
    p = toy_problem(1)
    test = p["features"][p["test"]]
    state, np_state = torch.get_rng_state(), np.random.get_state()[1].copy()
    a = _fit(FCLSWGAN(random_state=5, **TINY), p).decision_function(test)
    assert torch.equal(torch.get_rng_state(), state)
    assert np.array_equal(np.random.get_state()[1], np_state)
    b = _fit(FCLSWGAN(random_state=5, **TINY), p).decision_function(test)
    c = _fit(FCLSWGAN(random_state=6, **TINY), p).decision_function(test)
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)
    # log-probabilities: each row sums to one in probability
    np.testing.assert_allclose(np.exp(a).sum(axis=1), 1.0, rtol=1e-5)


def test_classifier_search_reuses_the_gan_with_the_numbers_of_a_full_refit():
    p = toy_problem(2)
    tr = p["train"]
    x, y = p["features"][tr], p["labels"][tr]
    test = p["features"][p["test"]]
    m = FCLSWGAN(random_state=3, **TINY).fit(x, y, p["attributes"], p["classes"])
    gan = m.generator_
    m.set_params(syn_num=7, classifier_epochs=2).fit(x, y, p["attributes"], p["classes"])
    assert m.generator_ is gan  # reused, not retrained
    fresh = FCLSWGAN(random_state=3, **{**TINY, "syn_num": 7, "classifier_epochs": 2})
    fresh.fit(x, y, p["attributes"], p["classes"])
    assert np.array_equal(m.decision_function(test), fresh.decision_function(test))
    m.set_search_params(**{"generator.nepoch": 1}).fit(x, y, p["attributes"], p["classes"])
    assert m.generator_ is not gan  # a GAN hyperparameter changed: retrained


def test_permutation_stream_is_consecutive_permutations():
    idx = permutation_stream(7, 3, 9, _gen(4), torch.device("cpu")).flatten()
    assert idx.shape == (27,)
    for k in range(3):  # each run of 7 is a permutation: every image once per epoch
        assert sorted(idx[7 * k : 7 * (k + 1)].tolist()) == list(range(7))


# -- parameters ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "param, value",
    [
        ("nz", 0),
        ("ngh", 0),
        ("ndh", 2.5),
        ("batch_size", True),
        ("critic_iter", 0),
        ("nepoch", -1),
        ("syn_num", 0),
        ("classifier_epochs", 0),
        ("classifier_batch_size", 0),
        ("pretrain_epochs", 0),
        ("lr", 0.0),
        ("lr", float("nan")),
        ("classifier_lr", -1.0),
        ("pretrain_lr", "fast"),
        ("beta1", 1.0),
        ("beta1", -0.1),
        ("lambda1", -1.0),
        ("cls_weight", float("inf")),
        ("random_state", -3),
        ("device", "tpu"),
    ],
)
def test_check_params_refuses_bad_values(param, value):
    with pytest.raises(ConfigError, match=param):
        FCLSWGAN(**{param: value}).check_params()


def test_check_params_accepts_the_defaults_and_edge_values():
    FCLSWGAN().check_params()
    FCLSWGAN(nz=1, beta1=0.0, lambda1=0.0, cls_weight=0.0, classifier_batch_size=1).check_params()


# -- CLI ------------------------------------------------------------------------------------------


def test_cli_run_on_toy(tmp_path):
    # as few optimiser steps as possible: the point is the harness around the model
    fixed = dict(
        ngh=16,
        ndh=16,
        nepoch=2,
        batch_size=64,
        critic_iter=1,
        pretrain_epochs=1,
        syn_num=10,
        classifier_batch_size=512,
    )
    own = set(WGANGenerator._param_names())
    sets = [f"{'generator' if k in own else 'model'}.{k}={v}" for k, v in fixed.items()]
    args = ["run", "--method", "f-clswgan", "--dataset", "toy", "--results-dir", str(tmp_path)]
    for s in sets:
        args += ["--set", s]
    res = run_cli(*args, env={"OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stderr + res.stdout
    (record,) = tmp_path.glob("*.json")
    rec = json.loads(record.read_text())
    assert rec["method"] == "f-clswgan"
    assert set(rec["metrics"]) >= {"A_T", "A_U", "A_S", "H", "AUSUC"}
    assert {"generator", "classifier"} <= set(rec["timings"])
    # only classifier_epochs is left to search (the rest was fixed with --set)
    assert [t["params"] for t in rec["search"]["tried"]] == [
        {"classifier_epochs": 10},
        {"classifier_epochs": 25},
    ]


def test_a_batch_larger_than_the_training_set_is_the_whole_set():
    """``batch_size`` above the number of training images used to crash (noise drawn for the
    batch size, images for the whole set); now a batch is at most the whole set."""
    p = toy_problem(0)
    n = len(p["train"])
    m = _fit(FCLSWGAN(random_state=0, **{**TINY, "batch_size": 4 * n}), p)
    assert np.isfinite(m.decision_function(p["features"][p["test"]])).all()


def test_a_record_holds_every_classifier_setting_that_ran(tmp_path):
    """Issue 27: a record said ``syn_num: null, classifier_lr: null``, resolved from the generator
    at fit time; it holds the values that ran, the search's choice included."""
    import json

    from tests.cli_helpers import invoke_main

    res = tmp_path / "res"
    out = invoke_main(
        "run",
        "--method",
        "f-clswgan",
        "--dataset",
        "toy",
        "--results-dir",
        str(res),
        "--set",
        "f-clswgan.nepoch=1",
        "--set",
        "f-clswgan.pretrain_epochs=1",
        "--set",
        "f-clswgan.ngh=32",
        "--set",
        "f-clswgan.ndh=32",
        "--set",
        "model.classifier_epochs=2",
    )
    assert out.exit_code == 0, out.output
    (path,) = res.glob("*.json")
    rec = json.loads(path.read_text())
    model = rec["config"]["components"]["model"]
    assert model["params"]["syn_num"] is None and model["params"]["classifier_epochs"] == 2
    chosen = rec["search"]["chosen"]["syn_num"]
    assert chosen in WGANGenerator.classifier_search["syn_num"]
    assert model["resolved"] == {
        **WGANGenerator.classifier_defaults,
        "syn_num": chosen,
        "classifier_epochs": 2,
        "classifier_batch_size": chosen,
    }
    assert all(model["resolved"][p] is not None for p in CLASSIFIER_PARAMS if p != "seen_num")
