"""CE-GZSL (``plugins/cegzsl.py``): its two contrastive losses against the official code's own
formulation (a per-instance loop for the class-level scores, the masked matrices of
``SupConLoss_clear`` for the instance-level loss), and the model contract."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from zslbench.errors import ConfigError
from zslbench.testing import check_model
from zslbench_plugins.cegzsl import CEGZSLGenerator, Comparator, class_level_loss, supcon_loss
from zslbench_plugins.generative import GenerativeModel

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = dict(
    ngh=32,
    ndh=32,
    embed_size=32,
    outz_size=8,
    nhF=16,
    nepoch=30,
    lr=3e-3,
    batch_size=64,
    critic_iter=1,
    syn_num=60,
    classifier_epochs=5,
)


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def official_supcon(features: torch.Tensor, labels: torch.Tensor, t: float) -> torch.Tensor:
    """``losses.py:49-92`` as written there (masks built by scatter, explicit single samples)."""
    n = features.shape[0]
    labels = labels.contiguous().view(-1, 1)
    mask = torch.eq(labels, labels.T).float()
    adc = torch.div(features @ features.T, t)
    logits = adc - adc.max(dim=1, keepdim=True)[0].detach()
    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(n).view(-1, 1), 0)
    mask = mask * logits_mask
    single = (mask.sum(1) == 0).float()
    log_prob = logits - torch.log((torch.exp(logits) * logits_mask).sum(1, keepdim=True))
    mean_pos = (mask * log_prob).sum(1) / (mask.sum(1) + single)
    loss = -mean_pos * (1 - single)
    return loss.sum() / (loss.shape[0] - single.sum())


def test_supcon_matches_the_official_in_value_and_gradient():
    z = F.normalize(torch.randn(9, 5, generator=_g(0), dtype=torch.float64), dim=1)
    z.requires_grad_(True)
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3, 4])  # 2 and 4 have no positive
    ours, ref = supcon_loss(z, labels, 0.1), official_supcon(z, labels, 0.1)
    torch.testing.assert_close(ours, ref)
    torch.testing.assert_close(torch.autograd.grad(ours, z)[0], torch.autograd.grad(ref, z)[0])


@pytest.mark.parametrize("n", [5, 300])  # 300 rows: several blocks of the split computation
def test_class_level_loss_matches_the_official_per_instance_loop(n):
    g = _g(1)
    comp = Comparator(6 + 3, 8, torch.device("cpu"), g).double()
    h = torch.randn(n, 6, generator=g, dtype=torch.float64, requires_grad=True)
    att = torch.randn(4, 3, generator=g, dtype=torch.float64)
    labels = torch.randint(4, (n,), generator=g)
    rows = []
    for i in range(n):  # CE_GZSL.py:174-186
        rows.append(comp(torch.cat((h[i].repeat(4, 1), att), 1)).squeeze() / 0.1)
    scores = torch.stack(rows)
    norm = scores - scores.max(1, keepdim=True)[0].detach()
    log_scores = norm - torch.log(torch.exp(norm).sum(1, keepdim=True))
    mask = F.one_hot(labels, 4).double()
    ref = -((mask * log_scores).sum(1) / mask.sum(1)).mean()
    ours = class_level_loss(h, labels, att, comp, 0.1)
    torch.testing.assert_close(ours, ref)
    wrt = [h, *comp.parameters()]
    for a, b in zip(torch.autograd.grad(ours, wrt), torch.autograd.grad(ref, wrt), strict=True):
        torch.testing.assert_close(a, b)


def test_check_model():
    # The refit check (a fit per changed hyperparameter, twice) runs on this model, with these
    # settings, in tests/test_refit.py; here the rest of the contract.
    check_model(GenerativeModel.with_generator(CEGZSLGenerator, **TINY), refit=False)


@pytest.mark.parametrize(
    "param, value",
    [
        ("nz", 0),
        ("embed_size", 1.5),
        ("ins_temp", 0.0),
        ("cls_weight", -1.0),
        ("beta1", 1.0),
        ("lr_decay_epoch", 0),
    ],
)
def test_refuses_bad_values(param, value):
    with pytest.raises(ConfigError, match=param):
        CEGZSLGenerator(**{param: value}).check_params()
    CEGZSLGenerator().check_params()
