"""SDGZSL (``plugins/sdgzsl.py``): its losses against the official formulation (the relation
network on explicitly concatenated (row, class) pairs, the VAE loss written out), the shuffles of
the total-correlation term, dropout and the official initialisation, synthesis in evaluation mode,
the model contract on the shared generative model, parameter checks and the selection audit."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from zslbench.errors import ConfigError
from zslbench.prepare import prepare_method
from zslbench.protocol import run_protocol
from zslbench.registry import load_registry
from zslbench.request import parse_overrides
from zslbench.testing import check_model, toy_problem
from zslbench_plugins.generative import GenerativeModel
from zslbench_plugins.sdgzsl import (
    RelationNet,
    SDGZSLGenerator,
    default_linear,
    dropout,
    permute_dims,
    relation_scores,
    vae_loss,
)

pytestmark = pytest.mark.usefixtures("one_thread")

#: Small networks, warm-ups fast enough that the KL and total-correlation terms are on.
TINY = dict(
    latent_dim=4,
    encoder_out=16,
    hidden=32,
    s_dim=16,
    ns_dim=16,
    nepoch=4,
    batch_size=32,
    kl_warmup=0.2,
    tc_warmup=0.2,
    syn_num=40,
    classifier_epochs=3,
)


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_relation_scores_equal_the_official_pairwise_concatenation_in_value_and_gradient():
    g = _g(0)
    rel = RelationNet(5, 3, 8, g).double()
    s = torch.randn(6, 5, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(4, 3, generator=g, dtype=torch.float64)
    # models.py:126-135 as written there
    c_ext = c.unsqueeze(0).repeat(s.shape[0], 1, 1)
    s_ext = torch.transpose(s.unsqueeze(0).repeat(4, 1, 1), 0, 1)
    pairs = torch.cat((s_ext, c_ext), 2).view(-1, 8)
    ref = torch.sigmoid(rel.fc2(torch.relu(rel.fc1(pairs)))).view(-1, 4)
    ours = relation_scores(rel, s, c)
    torch.testing.assert_close(ours, ref)
    wrt = [s, *rel.parameters()]
    for a, b in zip(
        torch.autograd.grad(ours.sum(), wrt), torch.autograd.grad(ref.sum(), wrt), strict=True
    ):
        torch.testing.assert_close(a, b)


def test_vae_loss_is_the_summed_squared_error_plus_beta_kl_over_the_batch():
    g = _g(1)
    x, r = (
        torch.rand(4, 6, generator=g, dtype=torch.float64),
        torch.rand(4, 6, generator=g, dtype=torch.float64),
    )
    mu = torch.randn(4, 3, generator=g, dtype=torch.float64)
    var = torch.rand(4, 3, generator=g, dtype=torch.float64) + 0.1
    kl = sum(
        0.5 * (mu[i, j] ** 2 + var[i, j] - math.log(var[i, j]) - 1)
        for i in range(4)
        for j in range(3)
    )
    want = (((r - x) ** 2).sum() + 0.3 * kl) / 4
    assert vae_loss(r, x, mu, var, 0.3).item() == pytest.approx(float(want), rel=1e-12)


def test_permute_dims_shuffles_each_part_on_its_own():
    hs = torch.arange(8.0).view(8, 1).repeat(1, 2)
    hn = 100 + torch.arange(8.0).view(8, 1)
    out = permute_dims(hs, hn, _g(3))
    assert sorted(out[:, 0].tolist()) == list(range(8)) and (out[:, 0] == out[:, 1]).all()
    assert sorted(out[:, 2].tolist()) == [100.0 + i for i in range(8)]
    assert not torch.equal(out[:, 0] + 100, out[:, 2])  # two different permutations


def test_dropout_and_initialisation_follow_pytorch():
    x = torch.ones(2000, 10)
    out = dropout(x, 0.25, _g(4))
    assert out.unique().tolist() == [0.0, pytest.approx(1 / 0.75)]
    assert (out == 0).float().mean().item() == pytest.approx(0.25, abs=0.01)
    assert torch.equal(dropout(x, 0.25, None), x) and torch.equal(dropout(x, 0.0, _g(4)), x)
    layer = default_linear(400, 300, _g(5))
    bound = 1 / math.sqrt(400)
    for t in (layer.weight, layer.bias):
        assert t.abs().max().item() <= bound and t.abs().max().item() > 0.95 * bound


def test_check_model():
    # the features as the method's minmax preprocessor gives them (fitted on the training rows)
    p = toy_problem(0)
    train = p["features"][p["train"]]
    lo, hi = train.min(0), train.max(0)
    p["features"] = ((p["features"] - lo) / np.where(hi > lo, hi - lo, 1)).astype(np.float32)
    # The refit check (a fit per changed hyperparameter, twice) runs on this model, with these
    # settings, in tests/test_refit.py; here the rest of the contract.
    check_model(GenerativeModel.with_generator(SDGZSLGenerator, **TINY), problem=p, refit=False)


def test_synthesis_runs_in_evaluation_mode_and_every_term_is_recorded():
    p = toy_problem(0)
    tr = p["train"]
    m = GenerativeModel.with_generator(SDGZSLGenerator, **TINY, random_state=0).fit(
        p["features"][tr], p["labels"][tr], p["attributes"], p["classes"]
    )
    gen = m.generator_
    assert not gen.vae_.training and not gen.ae_.training
    assert gen.vae_.bn2.eps == 0.8 and gen.vae_.bn2.num_batches_tracked > 0
    # BatchNorm on running statistics: a row's synthetic feature does not depend on the others
    att = torch.tensor(p["attributes"][:3], dtype=torch.float32)
    both = gen.synthesise(att, _g(7))
    z = torch.randn(3, TINY["latent_dim"], generator=_g(7))
    alone = gen.embed(gen.vae_.decode(z[:1], att[:1], None))
    torch.testing.assert_close(both[:1], alone)
    assert set(gen.history_) == {"loss", "relation", "reconstruction", "discriminator"}
    assert all(np.isfinite(v).all() for v in gen.history_.values())
    assert gen.history_["discriminator"].max() > 0


@pytest.mark.parametrize(
    "param, value",
    [
        ("latent_dim", 0),
        ("batch_size", 1),
        ("lr", 0.0),
        ("ga", -1.0),
        ("vae_dec_drop", 1.0),
        ("dis_step", -1),
        ("s_dim", 2.5),
    ],
)
def test_refuses_bad_values(param, value):
    with pytest.raises(ConfigError, match=param):
        SDGZSLGenerator(**{param: value}).check_params()
    SDGZSLGenerator().check_params()


def test_the_run_has_a_selection_audit():
    reg = load_registry()
    data = reg.get("dataset", "toy").obj.load(None)
    own = set(SDGZSLGenerator._param_names())
    sets = [f"{'generator' if k in own else 'model'}.{k}={v}" for k, v in TINY.items()]
    method = prepare_method(reg, "sdgzsl", parse_overrides(sets)).instantiate(seed=0, device="cpu")
    res = run_protocol(data, method, seed=0)
    audit = res.selection_audit
    assert audit is not None and "train.py" in audit["rule"]
    assert len(audit["H_by_epoch"]) == TINY["classifier_epochs"]
    assert audit["clean_H"] == res.evaluation["H"] == audit["H_by_epoch"][-1]
