"""f-CLSWGAN (Xian, Lorenz, Schiele, Akata, "Feature Generating Networks for Zero-Shot Learning",
CVPR 2018): a conditional WGAN-GP synthesises image features of the unseen classes from their
attributes, and a softmax classifier trained on real seen plus synthetic unseen features scores
every image against every class.

``fit`` (paper, Sec. 3.1-3.2; official code ``clswgan.py``):

1. pre-train a softmax classifier on the real seen features (the frozen ``theta`` of eq. 4);
2. train the generator ``G(z, a)`` and the critic ``D(x, a)`` (one-hidden-layer MLPs with
   LeakyReLU 0.2) with the WGAN-GP loss (eq. 2, gradient penalty ``lambda1``) and, for the
   generator, ``cls_weight`` times the pre-trained classifier's NLL of its fake features (eq. 4),
   ``critic_iter`` critic updates per generator update;
3. synthesise ``syn_num`` features per unseen class and train a softmax classifier over *all*
   candidate classes on the real seen features plus the synthetic ones (the GZSL classifier of
   the official ``classifier2.py``).

Step 3 and the scores are the generative family's shared model (``plugins/generative.py``, model
``generative``): this module is the generator component ``f-clswgan`` (steps 1-2), with the
official GZSL classifier's settings (``classifier_defaults``). The scores are that classifier's
log-probabilities (the official model's ``LogSoftmax`` output); the harness adds the calibrated
seen-class penalty.

Source of every default: the authors' PyTorch release (the ``cvpr18xian`` code from
mpi-inf.mpg.de), as mirrored verbatim (README by the authors) in github.com/myaghmaei/f-CLSWGAN at
commit 3ccae2e, with two patches for PyTorch >= 0.4 recorded in that repository ("one/mone" as
0-d tensors, ``.data`` in a print). File:line references below are to that commit. The paper has
no aPY experiment; dataset-dependent values come from ``script/reproduce_gzsl_cub.sh`` (the
dataset the argparse defaults of ``clswgan.py`` are shaped for: ``--nz 312``, ``--nclass_all 200``).

What differs from the official code, by protocol (see ``README``/report):

* the official GZSL classifier (``classifier2.py:81-109``) keeps the best of its 25 epochs *by
  test H*, and the published per-dataset GAN epochs were chosen the same way; here the classifier
  trains its epochs and stops, and ``syn_num`` and ``classifier_epochs`` are chosen by the
  harness on the leak-free validation split (``search_space``);
* features are min-max scaled by the ``minmax`` preprocessor (``plugins/preprocessors.py``),
  fitted on the training images of each fit (official ``util.py:132-150``, ``--preprocessing``
  in every script).

Speed (same arithmetic as the official code, less work around it): the critic scores real and fake
features in one batched forward, its input gradient for the penalty is computed in closed form
instead of by double backward, Adam uses the fused kernel, fake features for the critic are
generated without an autograd graph, the generator step does not build the critic's parameter
gradients, synthesis is one batched pass instead of a loop over classes, and minibatch indices come
from one permutation stream per classifier run (``generative.train_softmax``). All randomness comes from ``torch.Generator``
objects seeded from ``random_state``; the global RNGs are never touched (modules are built with
``skip_init``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch import nn

from zslbench import hyperparams as hp
from zslbench.errors import ConfigError, DataError
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.progress import steps
from zslbench_plugins.generative import FeatureGenerator, adam, seeded_linear, train_softmax

WHO = "f-clswgan"

#: LeakyReLU slope of G and D (official ``model.py:215`` and ``model.py:107``: ``LeakyReLU(0.2)``).
LEAKY_SLOPE = 0.2


# --------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------


class Generator(nn.Module):
    """``G(z, a) = ReLU(W2 LeakyReLU(W1 [z; a]))`` (official ``MLP_G``, ``model.py:210-225``): the
    output ReLU matches the non-negative ResNet features; input is noise then attributes."""

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
        h = nn.functional.leaky_relu(self.fc1(torch.cat((noise, att), 1)), LEAKY_SLOPE)
        return torch.relu(self.fc2(h))


class Critic(nn.Module):
    """``D(x, a) = w2 . LeakyReLU(W1 [x; a])`` (official ``MLP_CRITIC``, ``model.py:101-115``), one
    unbounded score per row (no sigmoid: a WGAN critic); output shape (n, 1)."""

    def __init__(
        self, in_dim: int, att_dim: int, hidden: int, device: torch.device, gen: torch.Generator
    ) -> None:
        super().__init__()
        self.fc1 = seeded_linear(in_dim + att_dim, hidden, device, gen)
        self.fc2 = seeded_linear(hidden, 1, device, gen)

    def forward(self, x: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
        h = nn.functional.leaky_relu(self.fc1(torch.cat((x, att), 1)), LEAKY_SLOPE)
        return self.fc2(h)

    def input_gradient(self, x: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
        """``d D(x_i, a_i) / d x_i`` for every row, in closed form: ``(s_i * w2) W1x`` with
        ``s_i`` the LeakyReLU slopes (1 where the pre-activation is > 0, else 0.2, as autograd's
        ``leaky_relu_backward``) and ``W1x`` the feature columns of ``fc1``.

        Differentiable in the critic's parameters (the slopes are piecewise constant, so their
        derivative is 0, as in autograd's double backward): the same penalty and parameter
        gradients as ``autograd.grad(..., create_graph=True)``, without the double-backward
        graph (~25% less CPU per critic step at 2048 x 4096).
        """
        with torch.no_grad():
            pre = self.fc1(torch.cat((x, att), 1))
            slope = torch.where(pre > 0, torch.ones_like(pre), torch.full_like(pre, LEAKY_SLOPE))
        return (slope * self.fc2.weight) @ self.fc1.weight[:, : x.shape[1]]


def gradient_penalty(
    critic: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    real: torch.Tensor,
    fake: torch.Tensor,
    att: torch.Tensor,
    alpha: torch.Tensor,
    lambda1: float,
) -> torch.Tensor:
    """WGAN-GP penalty ``lambda1 * mean_i (||grad_x D(x_i, a_i)||_2 - 1)^2`` at the interpolates
    ``x_i = alpha_i real_i + (1 - alpha_i) fake_i`` (Gulrajani et al. 2017; official
    ``calc_gradient_penalty``, ``clswgan.py:148-173``).

    The gradient is taken with respect to the feature part only (the attributes condition the
    critic and are not interpolated), differentiably, so that the penalty can be back-propagated
    into the critic's parameters: by the critic's closed-form ``input_gradient`` when it has one
    (:class:`Critic`), else by ``autograd.grad(..., create_graph=True)`` as the official code.
    ``real`` and ``fake`` are treated as constants (the official passes ``fake.data``).
    ``alpha`` has shape (n, 1).
    """
    interp = alpha * real.detach() + (1.0 - alpha) * fake.detach()
    closed_form = getattr(critic, "input_gradient", None)
    if closed_form is not None:
        grad = closed_form(interp, att)
    else:
        interp.requires_grad_(True)
        (grad,) = torch.autograd.grad(critic(interp, att).sum(), interp, create_graph=True)
    return lambda1 * ((grad.norm(2, dim=1) - 1.0) ** 2).mean()


def critic_terms(
    critic: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    real: torch.Tensor,
    fake: torch.Tensor,
    att: torch.Tensor,
    lambda1: float,
    gen: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The two terms of a WGAN-GP critic loss on one batch: ``mean D(fake) - mean D(real)``
    (real and fake scored in one pass) and :func:`gradient_penalty` at interpolates whose
    ``alpha ~ U(0, 1)`` per row is drawn from ``gen`` here. Shared by f-CLSWGAN and its
    descendants (TF-VAEGAN and FREE scale both by ``gammaD``; CE-GZSL adds its contrastive
    terms), which draw ``alpha`` after the fake batch, as here."""
    bs = len(real)
    alpha = torch.rand(bs, 1, generator=gen, device=real.device)
    scores = critic(torch.cat((real, fake)), torch.cat((att, att)))
    return (
        scores[bs:].mean() - scores[:bs].mean(),
        gradient_penalty(critic, real, fake, att, alpha, lambda1),
    )


# --------------------------------------------------------------------------------------------
# The generator component
# --------------------------------------------------------------------------------------------


class WGANGenerator(FeatureGenerator):
    """f-CLSWGAN's generator stage: a conditional WGAN-GP with a classification loss (steps 1-2 of
    the module docstring); ``synthesise`` draws ``G(z, a)``.

    Parameters (defaults: official code, file:line at myaghmaei/f-CLSWGAN@3ccae2e):

    * ``nz`` (None = attribute dimension): noise size; every official script sets
      ``--nz`` equal to ``--attSize`` (``script/*.sh``).
    * ``ngh`` 4096, ``ndh`` 4096: hidden units of G and D (every script: ``--ngh 4096 --ndh 4096``;
      the paper's implementation details: one hidden layer of 4096 units).
    * ``lr`` 1e-4: Adam learning rate of G and D (``clswgan.py:40``; CUB script ``--lr 0.0001``).
    * ``beta1`` 0.5: Adam beta1 of G, D (``clswgan.py:42``) and of the pre-trained classifier
      (``clswgan.py:177``).
    * ``batch_size`` 64 (``clswgan.py:30``, every script).
    * ``critic_iter`` 5: critic updates per generator update (``clswgan.py:37``, every script).
    * ``lambda1`` 10: gradient-penalty weight (``clswgan.py:38``, every script; the paper
      follows WGAN-GP's lambda = 10).
    * ``cls_weight`` 0.01: weight ``beta`` of the classification loss (CUB, AWA and SUN scripts
      ``--cls_weight 0.01``; FLO uses 0.1).
    * ``nepoch`` 56: GAN epochs, each ``ceil(n / batch_size)`` generator updates
      (``clswgan.py:183-187``; CUB GZSL script ``--nepoch 56``; AWA 30, SUN 40, FLO 80).
    * ``pretrain_lr`` 1e-3, ``pretrain_epochs`` 50, ``pretrain_batch_size`` 100: the classifier of
      eq. 4 (``clswgan.py:177``); skipped when ``cls_weight`` is 0.

    The GZSL classifier (``classifier_defaults``): ``syn_num`` 300 (CUB GZSL script; SUN 400,
    FLO 1200, AWA 1800), ``classifier_lr`` 1e-3 (``clswgan.py:41``), ``classifier_beta1`` 0.5
    (``clswgan.py:258`` passes ``opt.beta1``), ``classifier_epochs`` 25 (``clswgan.py:258``),
    ``classifier_batch_size`` None = ``syn_num`` (``clswgan.py:258`` passes ``opt.syn_num``),
    N(0, 0.02) initialisation and a permutation stream of batches (``classifier2.py``).
    Searched on validation (``classifier_search``): ``syn_num`` over the official scripts'
    values (CUB 300, FLO 1200, AWA 1800; SUN's 400 is within a factor 1.3 of 300) and
    ``classifier_epochs`` over the official 25 or an early stop at 10 (the official picks its best
    classifier epoch by *test* H; here validation chooses). Six candidates, but each after the
    first only refits the final classifier: the generator stage reads neither.

    Fitted state: ``netG_`` (eval mode, on the device).
    """

    name = "f-clswgan"
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
        "syn_num": (300, 1200, 1800),
        "classifier_epochs": (10, 25),
    }
    official_selection: ClassVar[str | None] = (
        "best test H over the final classifier's epochs (official classifier2.py:81-109 keeps "
        "the epoch of best test H; its GAN epochs per dataset were also chosen on test)"
    )

    def __init__(
        self,
        nz: int | None = None,
        ngh: int = 4096,
        ndh: int = 4096,
        lr: float = 1e-4,
        beta1: float = 0.5,
        batch_size: int = 64,
        critic_iter: int = 5,
        lambda1: float = 10.0,
        cls_weight: float = 0.01,
        nepoch: int = 56,
        pretrain_lr: float = 1e-3,
        pretrain_epochs: int = 50,
        pretrain_batch_size: int = 100,
    ) -> None:
        self.nz = nz
        self.ngh = ngh
        self.ndh = ndh
        self.lr = lr
        self.beta1 = beta1
        self.batch_size = batch_size
        self.critic_iter = critic_iter
        self.lambda1 = lambda1
        self.cls_weight = cls_weight
        self.nepoch = nepoch
        self.pretrain_lr = pretrain_lr
        self.pretrain_epochs = pretrain_epochs
        self.pretrain_batch_size = pretrain_batch_size

    def check_params(self) -> None:
        if self.nz is not None:
            hp.integer(WHO, "nz", self.nz, 1)
        for name in (
            "ngh",
            "ndh",
            "batch_size",
            "critic_iter",
            "nepoch",
            "pretrain_epochs",
            "pretrain_batch_size",
        ):
            hp.integer(WHO, name, getattr(self, name), 1)
        for name in ("lr", "pretrain_lr"):
            hp.real(WHO, name, getattr(self, name))
        beta1 = hp.real(WHO, "beta1", self.beta1, low=0.0, allow_low=True, high=1.0)
        if beta1 >= 1.0:
            raise ConfigError(
                f"{WHO}.beta1={self.beta1!r} must be < 1 (Adam's first-moment decay)",
                hint=f"--set {WHO}.beta1=0.5 (official)",
            )
        hp.real(WHO, "lambda1", self.lambda1, low=0.0, allow_low=True)
        hp.real(WHO, "cls_weight", self.cls_weight, low=0.0, allow_low=True)

    def fit(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        att: torch.Tensor,
        seen_columns: torch.Tensor,
        seed: int,
    ) -> WGANGenerator:
        """Steps 1-2 of the module docstring."""
        if len(seen_columns) == len(att):
            raise DataError(
                f"{WHO}: every candidate class has training images; the method "
                "synthesises features of unseen classes only",
                hint="pass the unseen classes (without images) in classes",
            )
        device = x.device
        gen = torch.Generator(device=device).manual_seed(seed)
        n, dim = x.shape
        nz = self.nz if self.nz is not None else att.shape[1]
        bs = min(self.batch_size, n)
        # Position of each image's class among the seen classes (the pre-trained classifier's
        # outputs), as the official ``util.map_label(..., data.seenclasses)``.
        seen_pos = torch.full((att.shape[0],), -1, dtype=torch.long, device=device)
        seen_pos[seen_columns] = torch.arange(len(seen_columns), device=device)
        y_seen = seen_pos[y]

        pre = None
        if self.cls_weight > 0:
            pre = train_softmax(
                x,
                y_seen,
                len(seen_columns),
                lr=self.pretrain_lr,
                beta1=self.beta1,
                epochs=self.pretrain_epochs,
                batch_size=self.pretrain_batch_size,
                gen=gen,
                label="pretrain epochs",
            )

        netG = Generator(nz, att.shape[1], self.ngh, dim, device, gen)
        netD = Critic(dim, att.shape[1], self.ndh, device, gen)
        optD = adam(netD.parameters(), self.lr, self.beta1)
        optG = adam(netG.parameters(), self.lr, self.beta1)
        g_steps = -(-n // self.batch_size)  # official: for i in range(0, ntrain, batch_size)
        with steps("gan epochs", self.nepoch) as step:
            for _ in range(self.nepoch):
                for _ in range(g_steps):
                    netD.requires_grad_(True)
                    for _ in range(self.critic_iter):
                        # official util.next_batch: a fresh random subset for every critic step
                        idx = torch.randperm(n, generator=gen, device=device)[:bs]
                        real, a, lab = x[idx], att[y[idx]], y_seen[idx]
                        noise = torch.randn(bs, nz, generator=gen, device=device)
                        with torch.no_grad():
                            fake = netG(noise, a)
                        wasserstein, gp = critic_terms(netD, real, fake, a, self.lambda1, gen)
                        optD.zero_grad(set_to_none=True)
                        (wasserstein + gp).backward()
                        optD.step()
                    # generator update on the last critic batch's classes (official: no new
                    # sample() before the G step, clswgan.py:231-243)
                    netD.requires_grad_(False)
                    noise = torch.randn(bs, nz, generator=gen, device=device)
                    fake = netG(noise, a)
                    loss_g = -netD(fake, a).mean()
                    if pre is not None:
                        loss_g = loss_g + self.cls_weight * nn.functional.cross_entropy(
                            pre(fake), lab
                        )
                    optG.zero_grad(set_to_none=True)
                    loss_g.backward()
                    optG.step()
                step()
        netG.eval().requires_grad_(False)
        self.netG_ = netG
        return self

    def synthesise(self, att_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``G(z, a)`` for each row (official ``generate_syn_feature``, ``clswgan.py:122-141``)."""
        nz = self.netG_.fc1.in_features - att_rows.shape[1]
        noise = torch.randn(len(att_rows), nz, generator=gen, device=att_rows.device)
        return self.netG_(noise, att_rows)


@hookimpl
def zslbench_generators() -> list[type[FeatureGenerator]]:
    return [WGANGenerator]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [
        MethodSpec(
            "f-clswgan",
            model="generative",
            components={"generator": "f-clswgan"},
            preprocessor="minmax",
            paper_name="f-CLSWGAN",
            description="Conditional WGAN-GP feature generator + softmax on real seen and synthetic "
            "unseen features (Xian et al. 2018)",
            citation="Y. Xian, T. Lorenz, B. Schiele, Z. Akata. Feature Generating Networks for "
            "Zero-Shot Learning. CVPR 2018. Defaults: the authors' PyTorch code "
            "(github.com/myaghmaei/f-CLSWGAN@3ccae2e mirror), CUB GZSL script.",
        )
    ]


__all__ = ["Critic", "Generator", "WGANGenerator", "critic_terms", "gradient_penalty"]
