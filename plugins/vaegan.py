"""TF-VAEGAN (Narayan, Gupta, Khan, Snoek, Shao, "Latent Embedding Feedback and Discriminative
Features for Zero-Shot Classification", ECCV 2020) and FREE (Chen, Wang, Xia, Peng, You, Zheng,
Shao, "FREE: Feature Refinement for Generalized Zero-Shot Learning", ICCV 2021): two generator
components (kind ``generator``) on the generative family's shared model (``plugins/generative.py``).

Both are a conditional VAE-GAN: an encoder ``E(x, a)`` gives the noise of a generator ``G(z, a)``
that is at once the VAE's decoder and the WGAN-GP's generator, against a critic ``D(x, a)``. They
add a module on the image features:

* TF-VAEGAN: a semantic embedding decoder ``Dec(x)`` that reconstructs the (L2-normalised)
  attributes, trained on real and synthetic features, and a feedback module ``F`` that feeds
  ``Dec``'s hidden layer back into ``G``'s hidden layer during the second of two passes over each
  epoch and at synthesis;
* FREE: a feature refinement module ``FR(x)`` whose latent mean is pulled to class centres by a
  self-adaptive margin centre loss and which reconstructs the attributes from a reparameterised
  sample; no feedback.

The GZSL classifier (shared model) trains on ``[x, Dec(x), Dec.hidden(x)]`` (TF-VAEGAN,
``classifiers/classifier_images.py:206-220``) or ``[x, FR.hidden(x), sigmoid(FR sample)]``
(FREE, ``classifier.py:217-233``).

Sources (file:line at the commits fetched on 2026-11-25): TF-VAEGAN github.com/akshitac8/tfvaegan
@a0de81c (``train_images.py``, ``networks/TFVAEGAN_model.py``, ``config_images.py``,
``scripts/run_cub_tfvaegan.py``); FREE github.com/shiming-chen/FREE @35769e5 (``train_free.py``,
``model.py``, ``center_loss.py``, ``config.py``, ``image-scripts/run_cub.py``). Defaults are the
CUB scripts' (the dataset the argparse defaults are shaped for), as for f-CLSWGAN.

Kept from the official code, because the published numbers come from it:

* the WGAN-GP weight ``lambda1`` adapts during training: after each generator step's critic
  iterations, ``lambda1`` is multiplied by 1.1 when the mean squared gradient-norm deviation
  exceeds 1.05, and divided by 1.1 when it is below 1.001 (``train_images.py:193-197``,
  ``train_free.py:272-276``);
* the encoder's Adam uses PyTorch's default betas (0.9, 0.999), every other optimiser
  ``(beta1, 0.999)`` (``train_images.py:109-113``, ``train_free.py:134-138``);
* ``WeightedL1`` weights each absolute error by its squared error over the row's error norm, and
  the weight is not detached (``train_images.py:74-78``);
* FREE's centre-loss optimiser steps on a gradient that is never zeroed, so it accumulates over
  the whole training (``train_free.py:138,245``: no ``zero_grad`` for ``center_criterion``);
* FREE's ``TripCenterLoss_margin`` draws the "other" class as ``label + randint(n_seen)`` modulo
  ``n_seen``, which can be the label itself (``center_loss.py:9-13``).

Differences, by protocol or necessity:

* the official codes train a GZSL classifier after *every* generator epoch and report the best
  test H over generator epochs and classifier epochs (``train_images.py:273-276``,
  ``train_free.py:343-347``); here the generator trains its epochs, the classifier is trained once
  on validation-chosen settings, and the selection audit records what the best classifier epoch
  on test would have added (not the generator epochs: that would need a classifier per epoch);
* FREE's classifier features of a *test* image contain a random sample (``model.py:113,121``), so
  its official scores are random; here an image is scored with the sample's mean,
  ``sigmoid(mu)``, so that scores are a function of the image (training uses the noisy sample, as
  the official code);
* randomness comes from seeded ``torch.Generator`` s, not the global RNG;
* FREE with ``freeze_dec`` (the AWA scripts) steps the frozen FR's Adam with zero gradients, as
  PyTorch 1.x's ``zero_grad()`` left zero tensors (momentum keeps moving it); that is kept.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from zslbench import hyperparams as hp
from zslbench.errors import ConfigError, DataError
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.progress import steps
from zslbench_plugins.fclswgan import Critic, critic_terms
from zslbench_plugins.generative import FeatureGenerator, adam, seeded_linear

#: LeakyReLU slope of every network here (``nn.LeakyReLU(0.2, True)`` throughout both codes).
SLOPE = 0.2

# --------------------------------------------------------------------------------------------
# Losses (public: tests check them against the official formulas)
# --------------------------------------------------------------------------------------------


def weighted_l1(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The official ``WeightedL1`` (``train_images.py:74-78``): each row's absolute errors
    weighted by ``e^2 / ||e||_2``, summed, divided by the batch size."""
    err = pred - target
    wt = err.pow(2)
    wt = wt / wt.sum(1).sqrt().unsqueeze(1)
    return (wt * err.abs()).sum() / err.shape[0]


def vae_loss(
    recon: torch.Tensor, x: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor
) -> torch.Tensor:
    """Summed binary cross-entropy of the reconstruction plus the KL divergence to N(0, I), each
    divided by the batch size (``train_images.py:63-67``)."""
    bce = F.binary_cross_entropy(recon + 1e-12, x.detach(), reduction="sum") / x.shape[0]
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.shape[0]
    return bce + kld


def center_loss(
    mu: torch.Tensor,
    labels: torch.Tensor,
    centers: torch.Tensor,
    margin: float,
    incenter_weight: float,
    kind: str,
    gen: torch.Generator,
) -> torch.Tensor:
    """FREE's self-adaptive margin centre loss (``center_loss.py``):
    ``sum_i max(margin + w d(i, y_i) - (1 - w) d(i, o_i), 0) / n`` with ``d`` the squared distance
    to a class centre and ``o_i`` a random other class (``kind="margin"``, CUB/SUN/FLO: ``y_i +
    randint(n)`` mod ``n``, which may be ``y_i``) or the nearest other centre (``"min_margin"``,
    AWA/APY)."""
    n_cls = centers.shape[0]
    dist = (
        mu.pow(2).sum(1, keepdim=True) + centers.pow(2).sum(1).unsqueeze(0) - 2.0 * mu @ centers.T
    )
    own = dist.gather(1, labels[:, None])[:, 0]
    if kind == "margin":
        other = (
            labels + torch.randint(n_cls, labels.shape, generator=gen, device=labels.device)
        ) % n_cls
        other_d = dist.gather(1, other[:, None])[:, 0]
    else:
        masked = dist.masked_fill(F.one_hot(labels, n_cls).bool(), float("inf"))
        other_d = masked.min(1).values
    return (
        torch.clamp(margin + incenter_weight * own - (1 - incenter_weight) * other_d, min=0.0).sum()
        / mu.shape[0]
    )


# --------------------------------------------------------------------------------------------
# Networks (official ``weights_init``: N(0, 0.02) weights, zero biases)
# --------------------------------------------------------------------------------------------


class Encoder(nn.Module):
    """``E(x, a)``: Linear-LReLU to ``hidden``, Linear-LReLU to ``2 latent``, then the mean and
    log-variance heads (``TFVAEGAN_model.py:16-37``, FREE ``model.py:18-39``)."""

    def __init__(
        self,
        x_dim: int,
        att_dim: int,
        hidden: int,
        latent: int,
        device: torch.device,
        gen: torch.Generator,
    ) -> None:
        super().__init__()
        self.fc1 = seeded_linear(x_dim + att_dim, hidden, device, gen)
        self.fc3 = seeded_linear(hidden, 2 * latent, device, gen)
        self.mean = seeded_linear(2 * latent, latent, device, gen)
        self.log_var = seeded_linear(2 * latent, latent, device, gen)

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.leaky_relu(self.fc1(torch.cat((x, a), 1)), SLOPE)
        h = F.leaky_relu(self.fc3(h), SLOPE)
        return self.mean(h), self.log_var(h)


class VAEGANGenerator(nn.Module):
    """``G(z, a) = sigmoid(W2 (LReLU(W1 [z; a]) + a1 * feedback))`` (``TFVAEGAN_model.py:40-70``;
    FREE has no feedback)."""

    def __init__(
        self,
        latent: int,
        att_dim: int,
        hidden: int,
        out_dim: int,
        device: torch.device,
        gen: torch.Generator,
    ) -> None:
        super().__init__()
        self.fc1 = seeded_linear(latent + att_dim, hidden, device, gen)
        self.fc3 = seeded_linear(hidden, out_dim, device, gen)

    def forward(
        self,
        z: torch.Tensor,
        a: torch.Tensor,
        feedback: torch.Tensor | None = None,
        weight: float = 0.0,
    ) -> torch.Tensor:
        h = F.leaky_relu(self.fc1(torch.cat((z, a), 1)), SLOPE)
        if feedback is not None:
            h = h + weight * feedback
        return torch.sigmoid(self.fc3(h))


class AttributeDecoder(nn.Module):
    """TF-VAEGAN's semantic embedding decoder: Linear-LReLU (the hidden layer the feedback and the
    classifier read), Linear, rows L2-normalised (``TFVAEGAN_model.py:101-128``)."""

    def __init__(
        self, x_dim: int, hidden: int, att_dim: int, device: torch.device, gen: torch.Generator
    ) -> None:
        super().__init__()
        self.fc1 = seeded_linear(x_dim, hidden, device, gen)
        self.fc3 = seeded_linear(hidden, att_dim, device, gen)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = F.leaky_relu(self.fc1(x), SLOPE)
        out = self.fc3(hidden)
        return out / out.pow(2).sum(1).sqrt().unsqueeze(1), hidden


class Feedback(nn.Module):
    """TF-VAEGAN's feedback module: two Linear-LReLU layers on the decoder's hidden layer
    (``TFVAEGAN_model.py:88-98``)."""

    def __init__(self, hidden: int, device: torch.device, gen: torch.Generator) -> None:
        super().__init__()
        self.fc1 = seeded_linear(hidden, hidden, device, gen)
        self.fc2 = seeded_linear(hidden, hidden, device, gen)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(self.fc2(F.leaky_relu(self.fc1(h), SLOPE)), SLOPE)


class Refiner(nn.Module):
    """FREE's feature refinement module (``model.py:86-131``): Linear-LReLU (``hidden``), Linear
    to ``[mu; s]`` with ``sigma = sigmoid(s)``; the attribute reconstruction is
    ``sigmoid(mu + sigma * eps)``. (The official module's unused critic and classifier heads,
    which no loss reaches, are left out.)"""

    def __init__(
        self, x_dim: int, hidden: int, att_dim: int, device: torch.device, gen: torch.Generator
    ) -> None:
        super().__init__()
        self.fc1 = seeded_linear(x_dim, hidden, device, gen)
        self.fc3 = seeded_linear(hidden, 2 * att_dim, device, gen)
        self.att_dim = att_dim

    def forward(
        self, x: torch.Tensor, gen: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(mu, hidden, reconstruction)``; ``gen=None`` reconstructs from the mean (scoring)."""
        hidden = F.leaky_relu(self.fc1(x), SLOPE)
        latent = self.fc3(hidden)
        mu, sigma = latent[:, : self.att_dim], torch.sigmoid(latent[:, self.att_dim :])
        if gen is None:
            return mu, hidden, torch.sigmoid(mu)
        eps = torch.randn(mu.shape, generator=gen, device=mu.device)
        return mu, hidden, torch.sigmoid(mu + sigma * eps)


def _normalise_rows(att: torch.Tensor) -> torch.Tensor:
    """Attributes with unit L2 rows, as both data loaders do (``image_util.py:42``, FREE
    ``util.py:50``)."""
    return att / att.pow(2).sum(1, keepdim=True).sqrt()


def _adapt_lambda(lambda1: float, gp_sum: float, gamma_d: float, critic_iter: int) -> float:
    """The official adaptive WGAN-GP weight (``train_images.py:193-197``; FREE
    ``train_free.py:274-278``): ``gp_sum`` is the sum over the critic iterations of
    ``gamma_d * penalty``, so ``gp_mean`` is the mean of ``mean_i (||grad||_2 - 1)^2``; ``lambda1``
    grows by 1.1 above 1.05 and shrinks by 1.1 below 1.001."""
    gp_mean = gp_sum / (gamma_d * lambda1 * critic_iter) if gamma_d * lambda1 > 0 else 1.0
    if gp_mean > 1.05:
        return lambda1 * 1.1
    if gp_mean < 1.001:
        return lambda1 / 1.1
    return lambda1


# --------------------------------------------------------------------------------------------
# Shared parameters
# --------------------------------------------------------------------------------------------


class _VAEGANBase(FeatureGenerator):
    """Validation and the VAE-GAN pieces both methods share."""

    def _check_common(self) -> None:
        who = self.name
        for p in ("hidden", "ngh", "ndh", "batch_size", "critic_iter", "nepoch", "loops"):
            hp.integer(who, p, getattr(self, p), 1)
        for p in ("lr", "dec_lr"):
            hp.real(who, p, getattr(self, p))
        for p in ("gammaD", "gammaG", "lambda1", "recons_weight"):
            hp.real(who, p, getattr(self, p), low=0.0, allow_low=True)
        beta1 = hp.real(who, "beta1", self.beta1, low=0.0, allow_low=True, high=1.0)
        if beta1 >= 1.0:
            raise ConfigError(
                f"{who}.beta1={self.beta1!r} must be < 1 (Adam's first-moment decay)",
                hint=f"--set {who}.beta1=0.5 (official)",
            )
        hp.boolean(who, "freeze_dec", self.freeze_dec)

    def _check_range(self, x: torch.Tensor) -> None:
        """The VAE's reconstruction loss is a binary cross-entropy: features must lie in [0, 1]."""
        if bool((x < 0).any()) or bool((x > 1).any()):
            raise DataError(
                f"{self.name}: training features outside [0, 1] (min "
                f"{float(x.min()):.3g}, max {float(x.max()):.3g}); the VAE's "
                "reconstruction loss is a binary cross-entropy",
                hint="use the minmax preprocessor (--set preprocessor=minmax), as "
                "the official code does",
            )

    def _critic_step(
        self,
        D: Critic,
        opt_d: torch.optim.Optimizer,
        xb: torch.Tensor,
        fake: torch.Tensor,
        ab: torch.Tensor,
        lambda1: float,
        gen: torch.Generator,
    ) -> float:
        """One critic update on ``gammaD * (Wasserstein estimate + penalty)`` (TF-VAEGAN
        ``train_images.py:159-191``, FREE ``train_free.py:251-266``); returns the scaled penalty,
        which the adaptive ``lambda1`` sums over the critic iterations."""
        wasserstein, gp = critic_terms(D, xb, fake, ab, lambda1, gen)
        gp = self.gammaD * gp
        opt_d.zero_grad(set_to_none=True)
        (self.gammaD * wasserstein + gp).backward()
        opt_d.step()
        return float(gp.detach())

    @staticmethod
    def _batches(n: int, bs: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
        """A fresh random subset of ``bs`` training rows (official ``next_seen_batch``)."""
        return torch.randperm(n, generator=gen, device=device)[:bs]


# --------------------------------------------------------------------------------------------
# TF-VAEGAN
# --------------------------------------------------------------------------------------------


class TFVAEGANGenerator(_VAEGANBase):
    """TF-VAEGAN's generator stage (module docstring). Parameters, each the CUB script's value
    (``scripts/run_cub_tfvaegan.py``) unless said otherwise:

    * ``hidden`` 4096: E's and G's hidden units (``config_images.py:34-35``, fixed lists);
      ``ngh`` 4096: the decoder's hidden units and the feedback's width (they add to G's hidden
      layer, so ``ngh`` must equal ``hidden``); ``ndh`` 4096: the critic's;
    * ``lr`` 1e-4 (E, G, D), ``beta1`` 0.5, ``dec_lr`` 1e-4, ``feed_lr`` 1e-5;
    * ``batch_size`` 64, ``critic_iter`` 5, ``lambda1`` 10 (initial; it adapts), ``gammaD`` 10,
      ``gammaG`` 10 (weights of the critic's and the generator's WGAN terms);
    * ``nepoch`` 300; ``loops`` 2 passes per epoch (``--feedback_loop 2``), the second with
      feedback; ``a1`` 1 (feedback weight in training), ``a2`` 1 (at synthesis);
    * ``recons_weight`` 0.01 (attribute reconstruction), ``freeze_dec`` False (AWA: True);
    * ``encoded_noise`` True: the critic's fakes come from ``E``'s noise (``--encoded_noise``).

    The latent size is the attribute size (``config_images.py:55``). The GZSL classifier
    (``train_images.py:273-274``): ``syn_num`` 300, ``classifier_lr`` 1e-3, beta1 0.5, 25
    epochs, batches of ``syn_num``; searched: ``syn_num`` over the CUB and AWA scripts' 300 and
    1800, ``classifier_epochs`` over 10 and the official 25.

    Fitted state: ``netG_``, ``dec_``, ``feedback_`` (eval mode), ``lambda1_`` (the adapted
    weight at the end), ``att_dim_``.
    """

    name = "tf-vaegan"
    classifier_defaults: ClassVar[dict[str, Any]] = {
        "syn_num": 300,
        "seen_num": None,
        "classifier_lr": 1e-3,
        "classifier_beta1": 0.5,
        "classifier_epochs": 25,
        "classifier_batch_size": None,
        "classifier_init": "normal",
        "classifier_batches": "stream",
    }
    classifier_search: ClassVar[dict[str, tuple[Any, ...]]] = {
        "syn_num": (300, 1800),
        "classifier_epochs": (10, 25),
    }
    official_selection: ClassVar[str | None] = (
        "best test H over the final classifier's epochs (official: best test H over every "
        "generator epoch x 25 classifier epochs, train_images.py:273-276, "
        "classifier_images.py:94-116)"
    )

    def __init__(
        self,
        hidden: int = 4096,
        ngh: int = 4096,
        ndh: int = 4096,
        lr: float = 1e-4,
        beta1: float = 0.5,
        dec_lr: float = 1e-4,
        feed_lr: float = 1e-5,
        batch_size: int = 64,
        critic_iter: int = 5,
        lambda1: float = 10.0,
        gammaD: float = 10.0,
        gammaG: float = 10.0,
        nepoch: int = 300,  # noqa: N803
        loops: int = 2,
        a1: float = 1.0,
        a2: float = 1.0,
        recons_weight: float = 0.01,
        freeze_dec: bool = False,
        encoded_noise: bool = True,
    ) -> None:
        self.hidden = hidden
        self.ngh = ngh
        self.ndh = ndh
        self.lr = lr
        self.beta1 = beta1
        self.dec_lr = dec_lr
        self.feed_lr = feed_lr
        self.batch_size = batch_size
        self.critic_iter = critic_iter
        self.lambda1 = lambda1
        self.gammaD = gammaD
        self.gammaG = gammaG
        self.nepoch = nepoch
        self.loops = loops
        self.a1 = a1
        self.a2 = a2
        self.recons_weight = recons_weight
        self.freeze_dec = freeze_dec
        self.encoded_noise = encoded_noise

    def check_params(self) -> None:
        self._check_common()
        hp.real(self.name, "feed_lr", self.feed_lr)
        hp.real(self.name, "a1", self.a1, low=None)
        hp.real(self.name, "a2", self.a2, low=None)
        hp.boolean(self.name, "encoded_noise", self.encoded_noise)
        if self.loops > 1 and self.ngh != self.hidden:
            raise ConfigError(
                f"tf-vaegan: ngh={self.ngh} must equal hidden={self.hidden}: the "
                "feedback is added to the generator's hidden layer",
                hint="set both, or --set generator.loops=1 (no feedback)",
            )

    def _fake(
        self,
        netG: VAEGANGenerator,
        dec: AttributeDecoder,
        fb: Feedback,
        z: torch.Tensor,
        a: torch.Tensor,
        feedback: bool,
        weight: float,
    ) -> torch.Tensor:
        """``G(z, a)``, and with feedback: ``G(z, a)`` again with ``F(Dec.hidden(G(z, a)))``
        (detached) added to its hidden layer (``train_images.py:172-177``)."""
        fake = netG(z, a)
        if not feedback:
            return fake
        _, hidden = dec(fake)
        return netG(z, a, fb(hidden.detach()), weight)

    def fit(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        att: torch.Tensor,
        seen_columns: torch.Tensor,
        seed: int,
    ) -> TFVAEGANGenerator:
        self._check_range(x)
        device = x.device
        gen = torch.Generator(device=device).manual_seed(seed)
        att = _normalise_rows(att)
        n, dim = x.shape
        k = att.shape[1]
        bs = min(int(self.batch_size), n)
        E = Encoder(dim, k, self.hidden, k, device, gen)
        G = VAEGANGenerator(k, k, self.hidden, dim, device, gen)
        D = Critic(dim, k, self.ndh, device, gen)
        fb = Feedback(self.ngh, device, gen)
        dec = AttributeDecoder(dim, self.ngh, k, device, gen)
        opt_e = adam(E.parameters(), self.lr)  # PyTorch's default betas (train_images.py:109)
        opt_d = adam(D.parameters(), self.lr, self.beta1)
        opt_g = adam(G.parameters(), self.lr, self.beta1)
        opt_f = adam(fb.parameters(), self.feed_lr, self.beta1)
        opt_dec = adam(dec.parameters(), self.dec_lr, self.beta1)
        lambda1 = float(self.lambda1)
        g_steps = -(-n // int(self.batch_size))

        def noise_for(xb: torch.Tensor, ab: torch.Tensor) -> torch.Tensor:
            if self.encoded_noise:
                mu, lv = E(xb, ab)
                eps = torch.randn(mu.shape, generator=gen, device=device)
                return eps * torch.exp(0.5 * lv) + mu
            return torch.randn(len(xb), k, generator=gen, device=device)

        with steps("tf-vaegan epochs", int(self.nepoch)) as step:
            for _ in range(int(self.nepoch)):
                for loop in range(int(self.loops)):
                    feedback = loop == 1
                    for _ in range(g_steps):
                        D.requires_grad_(True)
                        dec.requires_grad_(True)
                        gp_sum = 0.0
                        for _ in range(int(self.critic_iter)):
                            idx = self._batches(n, bs, gen, device)
                            xb, ab = x[idx], att[y[idx]]
                            # the decoder learns to reconstruct the attributes of real features
                            opt_dec.zero_grad(set_to_none=True)
                            (self.recons_weight * weighted_l1(dec(xb)[0], ab)).backward()
                            opt_dec.step()
                            with torch.no_grad():
                                fake = self._fake(
                                    G, dec, fb, noise_for(xb, ab), ab, feedback, self.a1
                                )
                            gp_sum += self._critic_step(D, opt_d, xb, fake, ab, lambda1, gen)
                        lambda1 = _adapt_lambda(lambda1, gp_sum, self.gammaD, int(self.critic_iter))
                        # encoder, generator, feedback (and decoder) on the last critic batch
                        D.requires_grad_(False)
                        frozen = self.recons_weight > 0 and self.freeze_dec
                        dec.requires_grad_(not frozen)
                        mu, lv = E(xb, ab)
                        eps = torch.randn(mu.shape, generator=gen, device=device)
                        z = eps * torch.exp(0.5 * lv) + mu
                        recon = self._fake(G, dec, fb, z, ab, feedback, self.a1)
                        err = vae_loss(recon, xb, mu, lv)
                        if self.encoded_noise:
                            fake = recon
                        else:  # official: the feedback then reads Dec(recon), train_images.py:237
                            noise = torch.randn(bs, k, generator=gen, device=device)
                            fake = G(noise, ab)
                            if feedback:
                                fake = G(noise, ab, fb(dec(recon)[1].detach()), self.a1)
                        err = err - self.gammaG * D(fake, ab).mean()
                        err = err + self.recons_weight * weighted_l1(dec(fake)[0], ab)
                        for o in (opt_e, opt_g, opt_f, opt_dec):
                            o.zero_grad(set_to_none=True)
                        err.backward()
                        opt_e.step()
                        opt_g.step()
                        if feedback:
                            opt_f.step()
                        if self.recons_weight > 0 and not self.freeze_dec:
                            opt_dec.step()
                step()
        for m in (G, dec, fb):
            m.eval().requires_grad_(False)
        self.netG_, self.dec_, self.feedback_ = G, dec, fb
        self.lambda1_ = lambda1
        self.att_dim_ = k
        return self

    def synthesise(self, att_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``G`` with feedback weight ``a2`` (``train_images.py:80-106``), in classifier space."""
        a = _normalise_rows(att_rows)
        z = torch.randn(len(a), self.att_dim_, generator=gen, device=a.device)
        fake = self._fake(self.netG_, self.dec_, self.feedback_, z, a, int(self.loops) > 1, self.a2)
        return self.embed(fake)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """``[x, Dec(x), Dec.hidden(x)]`` (``classifier_images.py:206-220``)."""
        out, hidden = self.dec_(x)
        return torch.cat((x, out, hidden), 1)


# --------------------------------------------------------------------------------------------
# FREE
# --------------------------------------------------------------------------------------------

CENTER_KINDS = ("margin", "min_margin")


class FREEGenerator(_VAEGANBase):
    """FREE's generator stage (module docstring). Parameters, each the CUB script's value
    (``image-scripts/run_cub.py``) unless said otherwise:

    * ``hidden`` 4096 (E, G; ``config.py:38-39``), ``ngh`` 4096 (FR's hidden), ``ndh`` 4096;
    * ``lr`` 1e-4 (E, G, D and the class centres), ``beta1`` 0.5, ``dec_lr`` 1e-4 (FR);
    * ``batch_size`` 64, ``critic_iter`` 1, ``lambda1`` 10 (adapts), ``gammaD`` 10, ``gammaG`` 10;
    * ``nepoch`` 501, ``loops`` 2 (``--loop 2``: each epoch is two passes);
    * ``recons_weight`` 0.001, ``center_margin`` 200, ``center_weight`` 0.5,
      ``incenter_weight`` 0.8, ``center_loss`` ``"margin"`` (CUB, SUN, FLO; AWA and APY use
      ``"min_margin"``, ``train_free.py:45-50``), ``freeze_dec`` False (AWA: True).

    The GZSL classifier (``train_free.py:343``): ``syn_num`` 700, ``classifier_lr`` 1e-3,
    beta1 0.5, 25 epochs, batches of ``syn_num``; searched: ``syn_num`` over the CUB and AWA2
    scripts' 700 and 4600, ``classifier_epochs`` over 10 and 25.

    Fitted state: ``netG_``, ``fr_`` (eval mode), ``centers_``, ``lambda1_``, ``att_dim_``.
    """

    name = "free"
    classifier_defaults: ClassVar[dict[str, Any]] = {
        "syn_num": 700,
        "seen_num": None,
        "classifier_lr": 1e-3,
        "classifier_beta1": 0.5,
        "classifier_epochs": 25,
        "classifier_batch_size": None,
        "classifier_init": "normal",
        "classifier_batches": "stream",
    }
    classifier_search: ClassVar[dict[str, tuple[Any, ...]]] = {
        "syn_num": (700, 4600),
        "classifier_epochs": (10, 25),
    }
    official_selection: ClassVar[str | None] = (
        "best test H over the final classifier's epochs (official: best test H over every "
        "generator epoch x 25 classifier epochs, train_free.py:343-347, classifier.py:102-123)"
    )

    def __init__(
        self,
        hidden: int = 4096,
        ngh: int = 4096,
        ndh: int = 4096,
        lr: float = 1e-4,
        beta1: float = 0.5,
        dec_lr: float = 1e-4,
        batch_size: int = 64,
        critic_iter: int = 1,
        lambda1: float = 10.0,
        gammaD: float = 10.0,  # noqa: N803
        gammaG: float = 10.0,
        nepoch: int = 501,
        loops: int = 2,  # noqa: N803
        recons_weight: float = 0.001,
        center_margin: float = 200.0,
        center_weight: float = 0.5,
        incenter_weight: float = 0.8,
        center_loss: str = "margin",
        freeze_dec: bool = False,
    ) -> None:
        self.hidden = hidden
        self.ngh = ngh
        self.ndh = ndh
        self.lr = lr
        self.beta1 = beta1
        self.dec_lr = dec_lr
        self.batch_size = batch_size
        self.critic_iter = critic_iter
        self.lambda1 = lambda1
        self.gammaD = gammaD
        self.gammaG = gammaG
        self.nepoch = nepoch
        self.loops = loops
        self.recons_weight = recons_weight
        self.center_margin = center_margin
        self.center_weight = center_weight
        self.incenter_weight = incenter_weight
        self.center_loss = center_loss
        self.freeze_dec = freeze_dec

    def check_params(self) -> None:
        self._check_common()
        hp.real(self.name, "center_margin", self.center_margin, low=0.0, allow_low=True)
        hp.real(self.name, "center_weight", self.center_weight, low=0.0, allow_low=True)
        hp.real(
            self.name, "incenter_weight", self.incenter_weight, low=0.0, allow_low=True, high=1.0
        )
        hp.choice(self.name, "center_loss", self.center_loss, CENTER_KINDS)

    def fit(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        att: torch.Tensor,
        seen_columns: torch.Tensor,
        seed: int,
    ) -> FREEGenerator:
        self._check_range(x)
        device = x.device
        gen = torch.Generator(device=device).manual_seed(seed)
        att = _normalise_rows(att)
        n, dim = x.shape
        k = att.shape[1]
        bs = min(int(self.batch_size), n)
        seen_pos = torch.full((att.shape[0],), -1, dtype=torch.long, device=device)
        seen_pos[seen_columns] = torch.arange(len(seen_columns), device=device)
        y_seen = seen_pos[y]
        E = Encoder(dim, k, self.hidden, k, device, gen)
        G = VAEGANGenerator(k, k, self.hidden, dim, device, gen)
        D = Critic(dim, k, self.ndh, device, gen)
        fr = Refiner(dim, self.ngh, k, device, gen)
        # center_loss.py:26: torch.randn(num_classes, feat_dim)
        centers = nn.Parameter(torch.randn(len(seen_columns), k, generator=gen, device=device))
        opt_e = adam(E.parameters(), self.lr)  # PyTorch's default betas (train_free.py:134)
        opt_d = adam(D.parameters(), self.lr, self.beta1)
        opt_g = adam(G.parameters(), self.lr, self.beta1)
        opt_fr = adam(fr.parameters(), self.dec_lr, self.beta1)
        opt_c = adam([centers], self.lr, self.beta1)
        lambda1 = float(self.lambda1)
        g_steps = -(-n // int(self.batch_size))
        with steps("free epochs", int(self.nepoch)) as step:
            for _ in range(int(self.nepoch)):
                for _ in range(int(self.loops)):
                    for _ in range(g_steps):
                        D.requires_grad_(True)
                        fr.requires_grad_(True)
                        gp_sum = 0.0
                        for _ in range(int(self.critic_iter)):
                            idx = self._batches(n, bs, gen, device)
                            xb, ab, lab = x[idx], att[y[idx]], y_seen[idx]
                            with torch.no_grad():
                                mu, lv = E(xb, ab)
                                eps = torch.randn(mu.shape, generator=gen, device=device)
                                fake = G(eps * torch.exp(0.5 * lv) + mu, ab)
                            # FR: centre loss on real features' means + attribute reconstruction
                            mu_r, _, recon_r = fr(xb, gen)
                            cost = self.center_weight * center_loss(
                                mu_r,
                                lab,
                                centers,
                                self.center_margin,
                                self.incenter_weight,
                                self.center_loss,
                                gen,
                            ) + self.recons_weight * weighted_l1(recon_r, ab)
                            opt_fr.zero_grad(set_to_none=True)
                            cost.backward()  # the centres' gradient is never zeroed (official)
                            opt_fr.step()
                            opt_c.step()
                            gp_sum += self._critic_step(D, opt_d, xb, fake, ab, lambda1, gen)
                        lambda1 = _adapt_lambda(lambda1, gp_sum, self.gammaD, int(self.critic_iter))
                        D.requires_grad_(False)
                        frozen = self.recons_weight > 0 and self.freeze_dec
                        fr.requires_grad_(not frozen)
                        mu, lv = E(xb, ab)
                        eps = torch.randn(mu.shape, generator=gen, device=device)
                        recon = G(eps * torch.exp(0.5 * lv) + mu, ab)
                        err = vae_loss(recon, xb, mu, lv) - self.gammaG * D(recon, ab).mean()
                        err = err + self.recons_weight * weighted_l1(fr(recon, gen)[2], ab)
                        for o in (opt_e, opt_g, opt_fr):
                            o.zero_grad(set_to_none=True)
                        err.backward()
                        opt_e.step()
                        opt_g.step()
                        if frozen:  # PyTorch 1.x zero_grad(): zero tensors, and Adam steps
                            for p in fr.parameters():
                                p.grad = torch.zeros_like(p)
                        opt_fr.step()
                step()
        for m in (G, fr):
            m.eval().requires_grad_(False)
        self.netG_, self.fr_ = G, fr
        self.centers_ = centers.detach()
        self.lambda1_ = lambda1
        self.att_dim_ = k
        return self

    def synthesise(self, att_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``G(z, a)`` (``train_free.py:109-131``), embedded for the classifier with the FR
        sample's noise (as training features are)."""
        a = _normalise_rows(att_rows)
        z = torch.randn(len(a), self.att_dim_, generator=gen, device=a.device)
        return self.embed_train(self.netG_(z, a), gen)

    def embed_train(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``[x, FR.hidden(x), sigmoid(mu + sigma eps)]`` (``classifier.py:217-233``)."""
        _, hidden, recon = self.fr_(x, gen)
        return torch.cat((x, hidden, recon), 1)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """As ``embed_train`` with the sample replaced by its mean (module docstring)."""
        _, hidden, recon = self.fr_(x, None)
        return torch.cat((x, hidden, recon), 1)


@hookimpl
def zslbench_generators() -> list[type[FeatureGenerator]]:
    return [TFVAEGANGenerator, FREEGenerator]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [
        MethodSpec(
            "tf-vaegan",
            model="generative",
            components={"generator": "tf-vaegan"},
            preprocessor="minmax",
            paper_name="TF-VAEGAN",
            description="VAE-GAN feature generator with a semantic embedding decoder and "
            "feedback; softmax on [x, Dec(x), Dec hidden] (Narayan et al. 2020)",
            citation="S. Narayan, A. Gupta, F. S. Khan, C. G. M. Snoek, L. Shao. Latent "
            "Embedding Feedback and Discriminative Features for Zero-Shot "
            "Classification. ECCV 2020. Defaults: github.com/akshitac8/tfvaegan@a0de81c, "
            "scripts/run_cub_tfvaegan.py.",
        ),
        MethodSpec(
            "free",
            model="generative",
            components={"generator": "free"},
            preprocessor="minmax",
            paper_name="FREE",
            description="VAE-GAN feature generator with a feature refinement module and a "
            "self-adaptive margin centre loss (Chen et al. 2021)",
            citation="S. Chen, W. Wang, B. Xia, Q. Peng, X. You, F. Zheng, L. Shao. FREE: "
            "Feature Refinement for Generalized Zero-Shot Learning. ICCV 2021. "
            "Defaults: github.com/shiming-chen/FREE@35769e5, image-scripts/run_cub.py.",
        ),
    ]


__all__ = ["FREEGenerator", "TFVAEGANGenerator", "center_loss", "vae_loss", "weighted_l1"]
