"""CE-GZSL (Han, Fu, Chen, Yang, "Contrastive Embedding for Generalized Zero-Shot Learning",
CVPR 2021): a generator component (kind ``generator``) on the generative family's shared model
(``plugins/generative.py``).

A WGAN-GP generator ``G(z, a)`` (f-CLSWGAN's networks) is trained jointly with an embedding
network ``Map(x) = (h, z)``, ``h = ReLU(W1 x)`` and ``z = normalize(W2 h)``, and a comparator
``F_ha([h; a])``:

* the critic's side (``CE_GZSL.py:219-251``) minimises the WGAN-GP loss plus, on real features,
  the instance-level supervised contrastive loss on ``z`` (temperature ``ins_temp``) and the
  class-level loss: a softmax over the seen classes of ``F_ha([h; a_c]) / cls_temp``. ``D``,
  ``Map`` and ``F_ha`` share one Adam;
* the generator (``CE_GZSL.py:262-283``) minimises ``-D(fake) + ins_weight * contrastive(fake
  among fake and real) + cls_weight * class-level(fake)``.

The GZSL classifier is a softmax on ``h = ReLU(W1 x)`` of real seen and synthetic unseen features
(``classifier_embed_contras.py``).

Source of every default: github.com/Hanzy1996/CE-GZSL@7bf5358 (``CE_GZSL.py`` argparse defaults,
lines 19-59, and the README's CUB command). The README's command uses CUB's 1024-d sentence
embeddings; here every dataset uses its class attributes (CUB's 312-d), so that every
method on the board sees the same class semantics, and
``nz`` defaults to the attribute size (the README sets ``--nz`` equal to ``--attSize``).

Kept from the official code: ``F_ha``'s gradient is zeroed once per epoch (``CE_GZSL.py:285``),
so within an epoch the shared Adam steps it on the sum of that epoch's critic-step gradients; the
learning rates decay by ``lr_dec_rate`` every ``lr_decay_epoch`` epochs (lines 286-290);
instances with no positive in the batch are left out of the contrastive loss
(``losses.py:49-92``, ``SupConLoss_clear``).

Differences: the official code evaluates on test after every epoch and keeps the best test H of
its classifier's 25 epochs (``classifier_embed_contras.py:76-104``); here the classifier is
trained on validation-chosen settings and the selection audit records what the best epoch on test
would have added. Randomness comes from seeded ``torch.Generator`` s.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from zslbench import hyperparams as hp
from zslbench.errors import ConfigError
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.progress import steps
from zslbench_plugins.fclswgan import Critic, critic_terms
from zslbench_plugins.generative import FeatureGenerator, adam, seeded_linear

SLOPE = 0.2


def supcon_loss(z: torch.Tensor, labels: torch.Tensor, temperature: float) -> torch.Tensor:
    """The official ``SupConLoss_clear`` (``losses.py:49-92``): for each anchor, minus the mean
    log-probability of its positives (same label, not itself) under a softmax over every other
    instance of ``z z^T / temperature``; anchors without a positive are left out."""
    n = z.shape[0]
    logits = z @ z.T / temperature
    logits = logits - logits.max(1, keepdim=True).values.detach()
    not_self = ~torch.eye(n, dtype=torch.bool, device=z.device)
    pos = (labels[:, None] == labels[None, :]) & not_self
    log_prob = logits - torch.log((torch.exp(logits) * not_self).sum(1, keepdim=True))
    n_pos = pos.sum(1)
    single = (n_pos == 0).to(z.dtype)
    if bool(single.all()):  # no anchor has a positive: the official divides 0 by 0 (NaN)
        return logits.sum() * 0.0
    mean_pos = (pos * log_prob).sum(1) / (n_pos + single)
    return -(mean_pos * (1 - single)).sum() / (n - single.sum())


#: Rows of ``h`` per block in :func:`class_level_loss`: bounds the (rows x classes x nhF)
#: activations of one block to ~256 MB at 150 classes and nhF 2048.
_PAIR_ROWS = 128


def class_level_loss(
    h: torch.Tensor,
    labels: torch.Tensor,
    att_seen: torch.Tensor,
    comparator: Comparator,
    temperature: float,
) -> torch.Tensor:
    """The class-level loss (``CE_GZSL.py:174-201``): cross-entropy of the softmax over seen
    classes ``c`` of ``F_ha([h; a_c]) / temperature``.

    The official code runs ``F_ha`` on every (image, class) pair, ``n c (d_h + d_a) nhF`` multiply-
    adds for the first layer. That layer is linear, so here it is split: ``W [h; a] + b = W_h h +
    (W_a a + b)``, one product per image and one per class, added pairwise (``n d_h nhF + c d_a
    nhF``; ~100x fewer FLOPs on CUB). The pairwise part runs in blocks of rows under activation
    checkpointing, so that memory stays bounded for SUN's 645 classes. Same function, same
    gradient (``tests/plugins/test_cegzsl.py`` compares with the official loop)."""
    w = comparator.fc1.weight
    d = h.shape[1]
    per_image = h @ w[:, :d].T  # (n, nhF)
    per_class = att_seen @ w[:, d:].T + comparator.fc1.bias  # (c, nhF)
    w2, b2 = comparator.fc2.weight[0], comparator.fc2.bias

    def block_scores(
        a: torch.Tensor, c: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor
    ) -> torch.Tensor:
        return F.leaky_relu(a[:, None, :] + c[None, :, :], SLOPE) @ w2 + b2

    blocks = []
    for s in range(0, len(h), _PAIR_ROWS):
        a = per_image[s : s + _PAIR_ROWS]
        if torch.is_grad_enabled() and (a.requires_grad or per_class.requires_grad):
            blocks.append(checkpoint(block_scores, a, per_class, w2, b2, use_reentrant=False))
        else:
            blocks.append(block_scores(a, per_class, w2, b2))
    return F.cross_entropy(torch.cat(blocks) / temperature, labels)


class EmbeddingNet(nn.Module):
    """``Map(x) = (h, z)``: ``h = ReLU(W1 x)``, ``z = normalize(W2 h)`` (``model.py:17-30``)."""

    def __init__(
        self, x_dim: int, embed: int, outz: int, device: torch.device, gen: torch.Generator
    ) -> None:
        super().__init__()
        self.fc1 = seeded_linear(x_dim, embed, device, gen)
        self.fc2 = seeded_linear(embed, outz, device, gen)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.relu(self.fc1(x))
        return h, F.normalize(self.fc2(h), dim=1)


class Comparator(nn.Module):
    """``F_ha``: Linear-LReLU-Linear on ``[h; a]`` (``model.py:67-79``)."""

    def __init__(
        self, in_dim: int, hidden: int, device: torch.device, gen: torch.Generator
    ) -> None:
        super().__init__()
        self.fc1 = seeded_linear(in_dim, hidden, device, gen)
        self.fc2 = seeded_linear(hidden, 1, device, gen)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.leaky_relu(self.fc1(x), SLOPE))


class CEGenerator(nn.Module):
    """``G(z, a) = ReLU(W2 LReLU(W1 [z; a]))`` (``model.py:33-48``, as f-CLSWGAN's)."""

    def __init__(
        self,
        nz: int,
        att_dim: int,
        hidden: int,
        out_dim: int,
        device: torch.device,
        gen: torch.Generator,
    ) -> None:
        super().__init__()
        self.fc1 = seeded_linear(nz + att_dim, hidden, device, gen)
        self.fc2 = seeded_linear(hidden, out_dim, device, gen)

    def forward(self, noise: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
        return F.relu(self.fc2(F.leaky_relu(self.fc1(torch.cat((noise, att), 1)), SLOPE)))


class CEGZSLGenerator(FeatureGenerator):
    """CE-GZSL's generator stage (module docstring). Parameters (``CE_GZSL.py`` argparse, lines
    31-59, and the README's CUB command):

    * ``nz`` None (= attribute size; the README: ``--nz`` = ``--attSize``), ``ngh`` 4096,
      ``ndh`` 4096, ``embed_size`` 2048, ``outz_size`` 512, ``nhF`` 2048;
    * ``ins_weight`` 0.001, ``cls_weight`` 0.001, ``ins_temp`` 0.1, ``cls_temp`` 0.1;
    * ``nepoch`` 2000, ``critic_iter`` 5, ``batch_size`` 2048, ``lr`` 1e-4, ``beta1`` 0.5,
      ``lambda1`` 10, ``lr_decay_epoch`` 100, ``lr_dec_rate`` 0.99.

    The GZSL classifier (``CE_GZSL.py:310-312``): ``syn_num`` 100 (README), ``classifier_lr``
    1e-3, beta1 0.5, 25 epochs, batches of ``syn_num``; searched: ``syn_num`` over 100 and 300
    and ``classifier_epochs`` over 10 and 25.

    Fitted state: ``netG_``, ``map_`` (eval mode), ``nz_``.
    """

    name = "ce-gzsl"
    classifier_defaults: ClassVar[dict[str, Any]] = {
        "syn_num": 100,
        "seen_num": None,
        "classifier_lr": 1e-3,
        "classifier_beta1": 0.5,
        "classifier_epochs": 25,
        "classifier_batch_size": None,
        "classifier_init": "normal",
        "classifier_batches": "stream",
    }
    classifier_search: ClassVar[dict[str, tuple[Any, ...]]] = {
        "syn_num": (100, 300),
        "classifier_epochs": (10, 25),
    }
    official_selection: ClassVar[str | None] = (
        "best test H over the final classifier's epochs (official: the best test H of 25 "
        "classifier epochs after every generator epoch, classifier_embed_contras.py:76-104)"
    )

    def __init__(
        self,
        nz: int | None = None,
        ngh: int = 4096,
        ndh: int = 4096,
        embed_size: int = 2048,
        outz_size: int = 512,
        nhF: int = 2048,  # noqa: N803
        ins_weight: float = 0.001,
        cls_weight: float = 0.001,
        ins_temp: float = 0.1,
        cls_temp: float = 0.1,
        nepoch: int = 2000,
        critic_iter: int = 5,
        batch_size: int = 2048,
        lr: float = 1e-4,
        beta1: float = 0.5,
        lambda1: float = 10.0,
        lr_decay_epoch: int = 100,
        lr_dec_rate: float = 0.99,
    ) -> None:
        self.nz = nz
        self.ngh = ngh
        self.ndh = ndh
        self.embed_size = embed_size
        self.outz_size = outz_size
        self.nhF = nhF
        self.ins_weight = ins_weight
        self.cls_weight = cls_weight
        self.ins_temp = ins_temp
        self.cls_temp = cls_temp
        self.nepoch = nepoch
        self.critic_iter = critic_iter
        self.batch_size = batch_size
        self.lr = lr
        self.beta1 = beta1
        self.lambda1 = lambda1
        self.lr_decay_epoch = lr_decay_epoch
        self.lr_dec_rate = lr_dec_rate

    def check_params(self) -> None:
        who = self.name
        if self.nz is not None:
            hp.integer(who, "nz", self.nz, 1)
        for p in (
            "ngh",
            "ndh",
            "embed_size",
            "outz_size",
            "nhF",
            "nepoch",
            "critic_iter",
            "batch_size",
            "lr_decay_epoch",
        ):
            hp.integer(who, p, getattr(self, p), 1)
        for p in ("lr", "ins_temp", "cls_temp", "lr_dec_rate"):
            hp.real(who, p, getattr(self, p))
        for p in ("ins_weight", "cls_weight", "lambda1"):
            hp.real(who, p, getattr(self, p), low=0.0, allow_low=True)
        beta1 = hp.real(who, "beta1", self.beta1, low=0.0, allow_low=True, high=1.0)
        if beta1 >= 1.0:
            raise ConfigError(
                f"{who}.beta1={self.beta1!r} must be < 1 (Adam's first-moment decay)",
                hint=f"--set {who}.beta1=0.5 (official)",
            )

    def fit(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        att: torch.Tensor,
        seen_columns: torch.Tensor,
        seed: int,
    ) -> CEGZSLGenerator:
        device = x.device
        gen = torch.Generator(device=device).manual_seed(seed)
        n, dim = x.shape
        k = att.shape[1]
        nz = int(self.nz) if self.nz is not None else k
        bs = min(int(self.batch_size), n)
        seen_pos = torch.full((att.shape[0],), -1, dtype=torch.long, device=device)
        seen_pos[seen_columns] = torch.arange(len(seen_columns), device=device)
        y_seen = seen_pos[y]
        att_seen = att[seen_columns]
        G = CEGenerator(nz, k, self.ngh, dim, device, gen)
        emb = EmbeddingNet(dim, self.embed_size, self.outz_size, device, gen)
        D = Critic(dim, k, self.ndh, device, gen)
        comp = Comparator(self.embed_size + k, self.nhF, device, gen)
        # CE_GZSL.py:149-151: one Adam for D, Map and F_ha; one for G
        opt_d = adam([*D.parameters(), *emb.parameters(), *comp.parameters()], self.lr, self.beta1)
        opt_g = adam(G.parameters(), self.lr, self.beta1)
        critics = (D, emb, comp)
        g_steps = -(-n // int(self.batch_size))
        with steps("ce-gzsl epochs", int(self.nepoch)) as step:
            for epoch in range(int(self.nepoch)):
                for _ in range(g_steps):
                    for m in critics:
                        m.requires_grad_(True)
                    for _ in range(int(self.critic_iter)):
                        idx = torch.randperm(n, generator=gen, device=device)[:bs]
                        xb, ab, lab = x[idx], att[y[idx]], y_seen[idx]
                        for m in (D, emb):  # F_ha is zeroed once per epoch (official)
                            for p in m.parameters():
                                p.grad = None
                        h_real, z_real = emb(xb)
                        noise = torch.randn(bs, nz, generator=gen, device=device)
                        with torch.no_grad():
                            fake = G(noise, ab)
                        wasserstein, gp = critic_terms(D, xb, fake, ab, self.lambda1, gen)
                        cost = (
                            wasserstein
                            + gp
                            + supcon_loss(z_real, lab, self.ins_temp)
                            + class_level_loss(h_real, lab, att_seen, comp, self.cls_temp)
                        )
                        cost.backward()
                        opt_d.step()
                    for m in critics:
                        m.requires_grad_(False)
                    noise = torch.randn(bs, nz, generator=gen, device=device)
                    fake = G(noise, ab)
                    h_fake, z_fake = emb(fake)
                    with torch.no_grad():
                        _, z_real = emb(xb)
                    err = (
                        -D(fake, ab).mean()
                        + self.ins_weight
                        * supcon_loss(
                            torch.cat((z_fake, z_real)), torch.cat((lab, lab)), self.ins_temp
                        )
                        + self.cls_weight
                        * class_level_loss(h_fake, lab, att_seen, comp, self.cls_temp)
                    )
                    opt_g.zero_grad(set_to_none=True)
                    err.backward()
                    opt_g.step()
                for p in comp.parameters():
                    p.grad = None
                if (epoch + 1) % int(self.lr_decay_epoch) == 0:
                    for o in (opt_d, opt_g):
                        for group in o.param_groups:
                            group["lr"] *= self.lr_dec_rate
                step()
        G.eval()
        emb.eval()
        self.netG_, self.map_, self.nz_ = G, emb, nz
        return self

    def synthesise(self, att_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``h`` of ``G(z, a)`` (``CE_GZSL.py:124-143``; the classifier embeds every input)."""
        noise = torch.randn(len(att_rows), self.nz_, generator=gen, device=att_rows.device)
        return self.embed(self.netG_(noise, att_rows))

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """``h = ReLU(W1 x)`` (``classifier_embed_contras.py:87``)."""
        return self.map_(x)[0]


@hookimpl
def zslbench_generators() -> list[type[FeatureGenerator]]:
    return [CEGZSLGenerator]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [
        MethodSpec(
            "ce-gzsl",
            model="generative",
            components={"generator": "ce-gzsl"},
            preprocessor="minmax",
            paper_name="CE-GZSL",
            description="WGAN-GP feature generator with a contrastive embedding (instance- and "
            "class-level); softmax on the embedding (Han et al. 2021)",
            citation="Z. Han, Z. Fu, S. Chen, J. Yang. Contrastive Embedding for Generalized "
            "Zero-Shot Learning. CVPR 2021. Defaults: github.com/Hanzy1996/CE-GZSL@7bf5358, "
            "CE_GZSL.py argparse and README (CUB).",
        )
    ]


__all__ = ["CEGZSLGenerator", "class_level_loss", "supcon_loss"]
