"""SDGZSL (Chen, Luo, Qiu, Huang, Li, Zhang, "Semantics Disentangling for Generalized
Zero-Shot Learning", ICCV 2021): a generator component (kind ``generator``) on the generative
family's shared model (``plugins/generative.py``).

Official code: github.com/uqzhichen/SDGZSL @ b9dba96 (``train.py``, ``models.py``, ``utils.py``,
``dataset_GBU.py``, ``classifier.py``, ``scripts/cub.sh``; file:line below are at that commit).

A conditional VAE ``G(z, a)`` (``models.py:6-81``) generates image features from attributes; an
auto-encoder's encoder splits every feature into a semantic part ``h_s`` (``S_dim``) and a
non-semantic part ``h_n`` (``NS_dim``) (``models.py:94-117``). Every iteration
(``train.py:129-209``) on a batch of real features ``x`` and their classes' attributes ``a``:

* VAE loss: ``(||G(z, a) - x||^2 + beta(t) KL) / B`` with ``z`` sampled from the encoder's
  Gaussian, whose variance is a softplus (``utils.py:24-49``);
* for both the generated and the real features, the auto-encoder reconstructs the input
  (mean squared error against the real ``x``), and a relation network (``models.py:120-135``)
  scores ``h_s`` against the attributes of every class present in the batch, regressed by mean
  squared error on the one-hot labels, weighted ``ga``;
* total correlation: a discriminator (``Linear(2 S_dim, 2)``-sigmoid) tells ``[h_s; h_n]`` from
  the same with ``h_s`` and ``h_n`` shuffled independently over the batch. One iteration in
  ``dis_step + 1`` updates it (cross-entropy weighted ``dis``; its outputs, already sigmoids,
  go through the cross-entropy as logits, as in the official code); on the others the VAE and
  the auto-encoder minimise ``beta * gamma(t)`` times its score difference;
* warm-ups: ``beta(t) = min(kl_warmup * e, 1)`` and ``gamma(t) = min(tc_warmup * e, 1)``, with
  ``e`` the iteration count over ``ceil(n / batch_size)``, updated when that is a whole number
  (``train.py:131-133``).

Batches are consecutive slices of a random permutation of the training images, a new
permutation when the next slice would reach the end (``dataset_GBU.py:214-253``), for
``floor(n / batch_size) * nepoch + 1`` iterations (``train.py:99,129``).

The GZSL classifier (shared model) is a softmax on ``h_s``: of every real training image, and of
``syn_num`` features generated per unseen class with ``z ~ N(0, I)``, both with the networks in
evaluation mode (no dropout; BatchNorm on its running statistics; ``train.py:216-241``,
``utils.py:110-121``), trained by Adam (beta1 0.5) in batches of ``syn_num`` from a permutation
stream (``classifier.py:85-146``).

Defaults: ``scripts/cub.sh:4-6`` (CUB, GZSL, without fine-tuning: ``ga`` 5, ``beta`` 0.003,
``dis`` 0.3, ``syn_num`` (``nSample``) 1000, ``S_dim`` = ``NS_dim`` = 2048, ``lr`` 1e-4,
``classifier_lr`` 0.002, ``nepoch`` 600, ``kl_warmup`` 0.001, ``tc_warmup`` 0.0001,
``weight_decay`` 1e-8, dropout 0.1 in the VAE's encoder and decoder, 0 in the auto-encoder,
``dis_step`` 3), the rest from the argparse defaults (``train.py:17-56``: ``batch_size`` 64,
``latent_dim`` 20, the encoder's output 128, ``classifier_epochs`` (``classifier_steps``) 50).
Hidden widths 2048 and the variance head's dropout 0.2 are fixed in ``models.py``. Adam with
PyTorch's default betas and L2 ``weight_decay`` for all four networks (``train.py:116-119``);
PyTorch's default initialisation (no ``weights_init`` is applied, ``train.py:104-107``).
BatchNorm layers of the decoder have ``eps`` 0.8 (``nn.BatchNorm1d(2048, 0.8)``,
``models.py:42,45``: the second argument is ``eps``), kept. Features: min-max scaled over the
training images (``dataset_GBU.py:183-196``; the extra division by the scaled maximum is a
division by 1); attributes as given.

Differences, by protocol or necessity:

* the official code trains a GZSL classifier every ``evl_interval`` (400) iterations and reports
  the best test H over those and over each classifier's epochs (``train.py:216-248``,
  ``classifier.py:85-111``); here the generator trains its iterations, one classifier is trained
  on validation-chosen settings, and the selection audit records what the best classifier epoch
  on test would have added;
* the GZSL classifier's weights start from N(0, 0.02) (the generative base's ``normal``) instead
  of Xavier-normal (``classifier.py:9-13``; std ``sqrt(2 / (S_dim + classes))``, 0.031 at CUB's
  shapes);
* dropout masks, noise, batches and shuffles come from seeded ``torch.Generator`` s;
* the discriminator's update reads the auto-encoder's codes detached (the official code lets its
  loss reach the other networks' gradients, then zeroes them before they are used: the same
  update).

Side by side with the official code (patched only to read the same files, log, and evaluate once
at the end), on the real APY split files with generated 128-d features, hidden 256, S = NS = 64,
30 epochs with the warm-ups 20 times faster, the CUB script's other values, 3 seeds each: the
per-epoch means of every loss term agree within a few percent from epoch 2 on (epoch 29: total
1.78 / relation 0.437 / reconstruction 0.015 official, 1.78 / 0.442 / 0.015 here); final
uncalibrated H 72.2 ± 1.5 official, 69.8 ± 4.5 here; CPU time 85 s official, 55 s here (the
table: CHANGES.md).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from zslbench import hyperparams as hp
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.progress import steps
from zslbench_plugins.generative import FeatureGenerator, adam, init_and_train_generators

SLOPE = 0.2
#: ``nn.BatchNorm1d(2048, 0.8)`` (``models.py:42,45``): eps 0.8.
BN_EPS = 0.8


def default_linear(n_in: int, n_out: int, gen: torch.Generator) -> nn.Linear:
    """``nn.Linear`` with PyTorch's default initialisation (weights and biases ~
    U(-1/sqrt(n_in), 1/sqrt(n_in)): ``kaiming_uniform_(a=sqrt(5))``), drawn from ``gen`` on the
    CPU."""
    layer = nn.utils.skip_init(nn.Linear, n_in, n_out)
    bound = 1.0 / math.sqrt(n_in)
    with torch.no_grad():
        layer.weight.uniform_(-bound, bound, generator=gen)
        layer.bias.uniform_(-bound, bound, generator=gen)
    return layer


def dropout(x: torch.Tensor, p: float, gen: torch.Generator | None) -> torch.Tensor:
    """Inverted dropout with a seeded mask (``gen`` None: evaluation, the identity)."""
    if gen is None or p == 0.0:
        return x
    keep = torch.rand(x.shape, generator=gen, device=x.device, dtype=x.dtype) >= p
    return x * keep / (1.0 - p)


# --------------------------------------------------------------------------------------------
# Losses (public: the tests check them against the official formulas)
# --------------------------------------------------------------------------------------------


def vae_loss(
    recon: torch.Tensor, x: torch.Tensor, mu: torch.Tensor, var: torch.Tensor, beta: float
) -> torch.Tensor:
    """``(sum (recon - x)^2 + beta * KL) / B`` with the Gaussian's variance ``var``
    (``multinomial_loss_function``, ``utils.py:24-49``)."""
    kl = -0.5 * torch.sum(1 + var.log() - mu.pow(2) - var)
    return (F.mse_loss(recon, x, reduction="sum") + beta * kl) / x.shape[0]


def relation_scores(relation: RelationNet, s: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``sigmoid(fc2(ReLU(fc1([s_i; c_j]))))`` for every row ``i`` and class ``j``, as a
    (rows, classes) matrix (``models.py:120-135``). The first layer is linear, so it is split
    into a product per row and one per class, added pairwise: the same function as the official
    ``(rows x classes)`` concatenation, with fewer multiply-adds."""
    w = relation.fc1.weight
    d = s.shape[1]
    pairs = (s @ w[:, :d].T)[:, None, :] + (c @ w[:, d:].T + relation.fc1.bias)[None, :, :]
    return torch.sigmoid(F.relu(pairs) @ relation.fc2.weight[0] + relation.fc2.bias)


def permute_dims(hs: torch.Tensor, hn: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``[hs[perm1]; hn[perm2]]``: both parts shuffled independently over the batch
    (``utils.py:10-21``), a sample of the product of their marginals."""
    b = hs.shape[0]
    p1 = torch.randperm(b, generator=gen, device=hs.device)
    p2 = torch.randperm(b, generator=gen, device=hs.device)
    return torch.cat((hs[p1], hn[p2]), 1)


# --------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------


class ConditionalVAE(nn.Module):
    """``models.py:6-81``: encoder ``[x; a]`` -> Linear(2048)-LReLU-Linear(2048)-Dropout-LReLU-
    Linear(out) -> mean ``Linear(out, z)`` and variance ``softplus(Dropout(0.2)(Linear(out, z)))``;
    decoder ``[z; a]`` -> Linear(2048)-Dropout-LReLU-Linear(2048)-BN-Dropout-Linear(2048)-BN-
    Dropout-LReLU-Linear(x)-LReLU."""

    def __init__(
        self,
        x_dim: int,
        c_dim: int,
        z_dim: int,
        enc_out: int,
        hidden: int,
        enc_drop: float,
        dec_drop: float,
        gen: torch.Generator,
    ) -> None:
        super().__init__()
        self.e1 = default_linear(x_dim + c_dim, hidden, gen)
        self.e2 = default_linear(hidden, hidden, gen)
        self.e3 = default_linear(hidden, enc_out, gen)
        self.mean = default_linear(enc_out, z_dim, gen)
        self.var = default_linear(enc_out, z_dim, gen)
        self.d1 = default_linear(z_dim + c_dim, hidden, gen)
        self.d2 = default_linear(hidden, hidden, gen)
        self.bn2 = nn.BatchNorm1d(hidden, eps=BN_EPS, device="cpu")
        self.d3 = default_linear(hidden, hidden, gen)
        self.bn3 = nn.BatchNorm1d(hidden, eps=BN_EPS, device="cpu")
        self.d4 = default_linear(hidden, x_dim, gen)
        self.enc_drop, self.dec_drop, self.z_dim = enc_drop, dec_drop, z_dim

    def encode(
        self, x: torch.Tensor, c: torch.Tensor, gen: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.leaky_relu(self.e1(torch.cat((x, c), 1)), SLOPE)
        h = F.leaky_relu(dropout(self.e2(h), self.enc_drop, gen), SLOPE)
        h = self.e3(h)
        return self.mean(h), F.softplus(dropout(self.var(h), 0.2, gen))

    def decode(self, z: torch.Tensor, c: torch.Tensor, gen: torch.Generator | None) -> torch.Tensor:
        """``gen`` None: evaluation mode (no dropout); BatchNorm follows ``self.training``."""
        h = F.leaky_relu(dropout(self.d1(torch.cat((z, c), 1)), self.dec_drop, gen), SLOPE)
        h = dropout(self.bn2(self.d2(h)), self.dec_drop, gen)
        h = F.leaky_relu(dropout(self.bn3(self.d3(h)), self.dec_drop, gen), SLOPE)
        return F.leaky_relu(self.d4(h), SLOPE)


class SplitAutoEncoder(nn.Module):
    """``models.py:94-117``: encoder Linear(S + NS)-LReLU-Dropout, decoder Linear(2048)-LReLU-
    Dropout-Linear(x)-LReLU-Dropout; the code's first ``S_dim`` units are ``h_s``."""

    def __init__(
        self, x_dim: int, s_dim: int, ns_dim: int, hidden: int, drop: float, gen: torch.Generator
    ) -> None:
        super().__init__()
        self.enc = default_linear(x_dim, s_dim + ns_dim, gen)
        self.dec1 = default_linear(s_dim + ns_dim, hidden, gen)
        self.dec2 = default_linear(hidden, x_dim, gen)
        self.drop, self.s_dim = drop, s_dim

    def encode(self, x: torch.Tensor, gen: torch.Generator | None) -> torch.Tensor:
        return dropout(F.leaky_relu(self.enc(x), SLOPE), self.drop, gen)

    def forward(
        self, x: torch.Tensor, gen: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(reconstruction, code)."""
        h = self.encode(x, gen)
        r = dropout(F.leaky_relu(self.dec1(h), SLOPE), self.drop, gen)
        return dropout(F.leaky_relu(self.dec2(r), SLOPE), self.drop, gen), h


class RelationNet(nn.Module):
    """``models.py:120-135``: Linear(S + C, 2048)-ReLU-Linear(1)-sigmoid on ``[h_s; a]``."""

    def __init__(self, s_dim: int, c_dim: int, hidden: int, gen: torch.Generator) -> None:
        super().__init__()
        self.fc1 = default_linear(s_dim + c_dim, hidden, gen)
        self.fc2 = default_linear(hidden, 1, gen)


# --------------------------------------------------------------------------------------------
# The generator component
# --------------------------------------------------------------------------------------------


class SDGZSLGenerator(FeatureGenerator):
    """SDGZSL's generator stage (module docstring). Its classifier space is ``h_s``.

    Parameters (``scripts/cub.sh:4-6``, else ``train.py`` argparse): ``latent_dim`` 20,
    ``encoder_out`` 128 (``q_z_nn_output_dim``), ``hidden`` 2048 (every hidden layer, fixed in
    ``models.py``), ``s_dim`` 2048, ``ns_dim`` 2048; ``nepoch`` 600, ``batch_size`` 64, ``lr``
    1e-4, ``weight_decay`` 1e-8; ``ga`` 5, ``beta`` 0.003, ``dis`` 0.3, ``dis_step`` 3,
    ``kl_warmup`` 0.001, ``tc_warmup`` 0.0001; ``vae_enc_drop`` 0.1, ``vae_dec_drop`` 0.1,
    ``ae_drop`` 0.0.

    The GZSL classifier (``classifier_defaults``): ``syn_num`` 1000 (``nSample``), all real
    training images, ``classifier_lr`` 0.002, beta1 0.5, 50 epochs (``classifier_steps``),
    batches of ``syn_num`` from a permutation stream. Searched: ``syn_num`` over the SUN and CUB
    scripts' 400 and 1000, ``classifier_epochs`` over the APY/AWA2 scripts' 20 and the default 50.

    Fitted state: ``vae_``, ``ae_`` (eval mode), ``history_`` (per warm-up epoch: the mean VAE,
    relation, reconstruction and discriminator losses).
    """

    name = "sdgzsl"
    classifier_defaults: ClassVar[dict[str, Any]] = {
        "syn_num": 1000,
        "seen_num": None,
        "classifier_lr": 0.002,
        "classifier_beta1": 0.5,
        "classifier_epochs": 50,
        "classifier_batch_size": None,
        "classifier_init": "normal",
        "classifier_batches": "stream",
    }
    classifier_search: ClassVar[dict[str, tuple[Any, ...]]] = {
        "syn_num": (400, 1000),
        "classifier_epochs": (20, 50),
    }
    official_selection: ClassVar[str | None] = (
        "best test H over the final classifier's epochs (official: best test H over classifier "
        "epochs every 400 generator iterations, train.py:216-248, classifier.py:85-111)"
    )

    def __init__(
        self,
        latent_dim: int = 20,
        encoder_out: int = 128,
        hidden: int = 2048,
        s_dim: int = 2048,
        ns_dim: int = 2048,
        nepoch: int = 600,
        batch_size: int = 64,
        lr: float = 1e-4,
        weight_decay: float = 1e-8,
        ga: float = 5.0,
        beta: float = 0.003,
        dis: float = 0.3,
        dis_step: int = 3,
        kl_warmup: float = 0.001,
        tc_warmup: float = 0.0001,
        vae_enc_drop: float = 0.1,
        vae_dec_drop: float = 0.1,
        ae_drop: float = 0.0,
    ) -> None:
        self.latent_dim = latent_dim
        self.encoder_out = encoder_out
        self.hidden = hidden
        self.s_dim = s_dim
        self.ns_dim = ns_dim
        self.nepoch = nepoch
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.ga = ga
        self.beta = beta
        self.dis = dis
        self.dis_step = dis_step
        self.kl_warmup = kl_warmup
        self.tc_warmup = tc_warmup
        self.vae_enc_drop = vae_enc_drop
        self.vae_dec_drop = vae_dec_drop
        self.ae_drop = ae_drop

    def check_params(self) -> None:
        who = self.name
        for p in ("latent_dim", "encoder_out", "hidden", "s_dim", "ns_dim", "nepoch"):
            hp.integer(who, p, getattr(self, p), 1)
        hp.integer(who, "batch_size", self.batch_size, 2)  # BatchNorm needs two rows
        hp.integer(who, "dis_step", self.dis_step, 0)
        hp.real(who, "lr", self.lr)
        for p in ("weight_decay", "ga", "beta", "dis", "kl_warmup", "tc_warmup"):
            hp.real(who, p, getattr(self, p), low=0.0, allow_low=True)
        for p in ("vae_enc_drop", "vae_dec_drop", "ae_drop"):
            hp.real(who, p, getattr(self, p), low=0.0, allow_low=True, high=0.99)

    def fit(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        att: torch.Tensor,
        seen_columns: torch.Tensor,
        seed: int,
    ) -> SDGZSLGenerator:
        """Train the networks (``train.py:75-209``); initialisation and training draw from two
        streams of ``seed``."""
        device = x.device
        g_init, g = init_and_train_generators(seed, device)
        n, dim = x.shape
        k = att.shape[1]
        hidden = int(self.hidden)
        vae = ConditionalVAE(
            dim,
            k,
            int(self.latent_dim),
            int(self.encoder_out),
            hidden,
            float(self.vae_enc_drop),
            float(self.vae_dec_drop),
            g_init,
        ).to(device)
        ae = SplitAutoEncoder(
            dim, int(self.s_dim), int(self.ns_dim), hidden, float(self.ae_drop), g_init
        ).to(device)
        rel = RelationNet(int(self.s_dim), k, hidden, g_init).to(device)
        # models.py:141: Linear(2 S_dim, 2), which assumes NS_dim = S_dim (as every script sets)
        disc = default_linear(int(self.s_dim) + int(self.ns_dim), 2, g_init).to(device)
        lr, wd = float(self.lr), float(self.weight_decay)
        opt = adam(
            [*vae.parameters(), *rel.parameters(), *ae.parameters()], lr, weight_decay=wd
        )  # train.py:116-119: three Adams, per-parameter state
        opt_d = adam(disc.parameters(), lr, weight_decay=wd)
        # the official stream needs cur + bs < n for a slice (dataset_GBU.py:242)
        bs = min(int(self.batch_size), n - 1)
        iters = -(-n // bs)  # train.py:125
        total = (n // bs) * int(self.nepoch) + 1  # train.py:99,129
        s_dim = int(self.s_dim)
        blocks = -(-total // iters)
        history = torch.zeros(4, blocks, dtype=torch.float64, device=device)
        counts = torch.zeros(2, blocks, dtype=torch.float64, device=device)
        perm = torch.randperm(n, generator=g, device=device)
        cur = 0
        coin = 0.0
        beta_w = gamma = 0.0
        vae.train()
        ae.train()
        with steps("sdgzsl iterations", total) as advance:
            for it in range(total):
                if it % iters == 0:  # train.py:131-133
                    beta_w = min(float(self.kl_warmup) * (it / iters), 1.0)
                    gamma = min(float(self.tc_warmup) * (it / iters), 1.0)
                if cur + bs >= n:  # dataset_GBU.py:240-248
                    perm = torch.randperm(n, generator=g, device=device)
                    cur = 0
                idx = perm[cur : cur + bs]
                cur += bs
                xb, lab = x[idx], y[idx]
                present, onehot_col = torch.unique(lab, sorted=True, return_inverse=True)
                cb, sample_c = att[lab], att[present]
                onehot = F.one_hot(onehot_col, len(present)).to(x.dtype)
                mu, var = vae.encode(xb, cb, g)
                z = mu + var.sqrt() * torch.randn(mu.shape, generator=g, device=device)
                x_mean = vae.decode(z, cb, g)
                loss = vae_loss(x_mean, xb, mu, var, beta_w)
                x1, h1 = ae(x_mean, g)
                x2, h2 = ae(xb, g)
                p_loss = float(self.ga) * (
                    F.mse_loss(relation_scores(rel, h1[:, :s_dim], sample_c), onehot)
                    + F.mse_loss(relation_scores(rel, h2[:, :s_dim], sample_c), onehot)
                )
                rec = F.mse_loss(x1, xb) + F.mse_loss(x2, xb)
                block = it // iters
                if coin > 0:  # train.py:174-181
                    disc.requires_grad_(False)
                    s1, s2 = torch.sigmoid(disc(h1)), torch.sigmoid(disc(h2))
                    tc = (
                        float(self.beta)
                        * gamma
                        * ((s1[:, 0] - s1[:, 1]).mean() + (s2[:, 0] - s2[:, 1]).mean())
                    )
                    disc.requires_grad_(True)
                    loss = loss + p_loss + rec + tc
                    coin -= 1
                else:  # train.py:182-200: the discriminator's update
                    tc_d = torch.zeros((), device=device)
                    for h in (h1.detach(), h2.detach()):
                        mixed = permute_dims(h[:, :s_dim], h[:, s_dim:], g)
                        real_s = torch.sigmoid(disc(h))
                        mixed_s = torch.sigmoid(disc(mixed))
                        tc_d = tc_d + float(self.dis) * (
                            F.cross_entropy(
                                real_s, torch.zeros(len(h), dtype=torch.long, device=device)
                            )
                            + F.cross_entropy(
                                mixed_s, torch.ones(len(h), dtype=torch.long, device=device)
                            )
                        )
                    opt_d.zero_grad(set_to_none=True)
                    tc_d.backward()
                    opt_d.step()
                    history[3, block] += tc_d.detach()
                    counts[1, block] += 1
                    loss = loss + p_loss + rec
                    coin += int(self.dis_step)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                history[0, block] += loss.detach()
                history[1, block] += p_loss.detach()
                history[2, block] += rec.detach()
                counts[0, block] += 1
                advance()
        history[:3] /= counts[0].clamp(min=1)
        history[3] /= counts[1].clamp(min=1)
        vae.eval().requires_grad_(False)
        ae.eval().requires_grad_(False)
        self.vae_, self.ae_ = vae, ae
        h = history.cpu().numpy()
        self.history_ = {
            "loss": h[0],
            "relation": h[1],
            "reconstruction": h[2],
            "discriminator": h[3],
        }
        return self

    def synthesise(self, att_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``h_s`` of ``G(z, a)``, ``z ~ N(0, I)``, networks in evaluation mode
        (``utils.py:110-121``)."""
        z = torch.randn(len(att_rows), int(self.latent_dim), generator=gen, device=att_rows.device)
        return self.embed(self.vae_.decode(z, att_rows, None))

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """``h_s``: the first ``s_dim`` units of the auto-encoder's code, no dropout
        (``train.py:221-223``)."""
        return self.ae_.encode(x, None)[:, : int(self.s_dim)]


@hookimpl
def zslbench_generators() -> list[type[FeatureGenerator]]:
    return [SDGZSLGenerator]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [
        MethodSpec(
            "sdgzsl",
            model="generative",
            components={"generator": "sdgzsl"},
            preprocessor="minmax",
            paper_name="SDGZSL",
            description="Conditional VAE generator with a semantic/non-semantic split of the "
            "features (relation network, total-correlation penalty); softmax on the "
            "semantic part (Chen et al. 2021)",
            citation="Z. Chen, Y. Luo, R. Qiu, Z. Huang, J. Li, Z. Zhang. Semantics "
            "Disentangling for Generalized Zero-Shot Learning. ICCV 2021. Defaults: "
            "github.com/uqzhichen/SDGZSL@b9dba96, scripts/cub.sh (CUB, GZSL).",
        )
    ]


__all__ = ["SDGZSLGenerator", "permute_dims", "relation_scores", "vae_loss"]
