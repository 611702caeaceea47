"""HSVA (Chen, Xie, Peng, Liu, Sun, Li, You, Shao, "HSVA: Hierarchical Semantic-Visual Adaptation
for Zero-Shot Learning", NeurIPS 2021): a generator component (kind ``generator``) on the
generative family's shared model (``plugins/generative.py``), built, as the official code is, on
CADA-VAE (``plugins/cadavae.py``).

Official code: github.com/shiming-chen/HSVA @ add15f3 (``HSVA.py``, ``models.py``,
``single_experiment.py``, ``final_classifier_v1.py``; file:line below are at that commit).

Two encoders, one per modality (``Linear(d, 4096)``-LReLU-``Linear(4096, 2048)``,
``models.py:48-59``), map image features and class attributes to a 2048-d "coarse" common space;
one shared latent encoder (``Linear(2048, 2048)``-LReLU, then mean and log-variance heads,
``models.py:21-42``) maps that space to a ``latent_size``-d Gaussian; two decoders
(``Linear(latent, 4096)``-LReLU-``Linear(4096, d)``, ``models.py:63-73``) reconstruct each
modality. Every batch (``HSVA.py:496-668``) takes four steps:

1. **Structure adaptation, classifiers** (``HSVA.py:512-531``): two seen-class classifiers ``C1``,
   ``C2`` (``Linear(2048, 512)``-BatchNorm-ReLU-``Linear(512, n_seen)``, ``models.py:123-136``)
   and both encoders minimise the cross-entropy of both classifiers on both modalities' coarse
   features.
2. **Maximise the discrepancy** (``HSVA.py:534-560``): the classifiers alone minimise that
   cross-entropy minus ``dist(e)`` times the sliced Wasserstein discrepancy (SWD) between
   ``C1``'s and ``C2``'s predictions, on each modality (:func:`sliced_wasserstein_discrepancy`:
   softmax outputs projected on 128 random unit directions, each sorted over the batch, mean
   squared difference; ``HSVA.py:230-244``).
3. **Minimise the discrepancy**, twice (``HSVA.py:562-588``): the encoders alone minimise
   ``dist(e)`` times the same SWD.
4. **Distribution adaptation** (``HSVA.py:600-663``): encoders, latent encoder and decoders
   minimise CADA-VAE's loss on the latent samples (summed L1 reconstruction ``+ beta(e) KL +
   cross(e)`` cross-reconstruction) ``+ dist(e) (W - CORAL)``: ``W`` the 2-Wasserstein distance
   between each image's and its class attributes' posteriors, and ``CORAL`` the mean squared
   difference between the covariances of the image latents and the latents of a batch of
   *unseen* class attributes (:func:`coral_loss`, ``HSVA.py:246-259``; it is subtracted, as in
   the official code).

Warm-ups as CADA-VAE's (``min(max((e - start) / (end - start) * factor, 0), factor)``,
``HSVA.py:497-507``, 0-based epoch ``e``). Latent samples are ``mu + exp(0.1 logvar) eps`` with
one ``eps`` per row (``HSVA.py:179-186``); images are scored on their posterior mean
(``HSVA.py:351-361``).

The GZSL classifier is CADA-VAE's (shared model): per seen class ``seen_num`` = 200 of its images,
per unseen class ``syn_num`` = 400 attribute encodings, each a noisy latent sample; a softmax
(Xavier-uniform, gain 0.5) trained by Adam (lr 1e-3, beta1 0.5, batches of 32 reshuffled every
epoch, last one dropped); ``HSVA.py:336-454``, ``final_classifier_v1.py:175-242``.

Defaults (``single_experiment.py:33-72`` unless said otherwise): ``latent_size`` 64 (line 67; the
comment says 128 for SUN), coarse size 2048 (line 66), ``epochs`` 500 (line 58), ``batch_size``
50 (line 51), ``lr`` 0.00015 (line 49; Adam with ``amsgrad=True`` for encoders, latent encoder and
decoders, ``HSVA.py:148-157``), the alignment classifiers' Adam lr 1e-3 (``HSVA.py:144-145``),
warm-ups beta 0.25 over epochs 0-90, cross-reconstruction 2.37 over 21-75, distance 8.0 over 0-25
(lines 39-47), L1 reconstruction (line 59), SWD (line 69), hidden sizes 4096/2048/512 and 128
projections (``models.py``, ``HSVA.py:235``). Initialisation: Xavier-uniform with gain 0.5 and
zero biases, BatchNorm scales ~ N(1, 0.02) (``models.py:7-17``). Classifier epochs: the official
runs ``cls_train_steps`` epochs *plus one* (``final_classifier_v1.py:100-103``: the
``CLASSIFIER`` constructor already trains one epoch, and ``HSVA.py:458`` then trains
``cls_train_steps`` more; CADA-VAE's ``vaemodel.py`` skips the constructor's epoch with
``if k > 0``, HSVA does not), so the default is 24 (CUB: 23 + 1, ``single_experiment.py:98``) and
the search covers the GZSL values + 1 of SUN 21, CUB/APY/FLO 23, AWA1 33 and AWA2 50 (lines
78-128).

Differences, by protocol or necessity:

* the official code trains a GZSL classifier after every VAE epoch from epoch 100 on and reports
  the best test H over those epochs and over each classifier's epochs (``HSVA.py:724-731,
  455-473``); here the VAE trains its epochs, one classifier is trained on validation-chosen
  settings (``classifier_epochs``), and the selection audit records what the best classifier epoch
  on test would have added;
* the batch of unseen-class attributes for the CORAL term is drawn, in the official code, from the
  labels of random *test* images of unseen classes (``data_loader.py:71-76``), i.e. classes in
  proportion to their test image counts; here unseen classes are drawn uniformly (the official
  file's commented alternative, ``data_loader.py:78-86``), so that no test label is read;
* the released ``models.py`` does not run as published (``super(encoder_z_v5, ...)`` and
  ``super(encoder_template_v5, ...)`` name classes that do not exist, and ``HSVA.py:108`` builds a
  ``discriminator_template`` it does not define); the modules no loss reaches (that
  discriminator, ``decoder_z``, the domain classifier and discriminator, ``cls_z``) are left out;
* randomness (batches, noise, projections) comes from seeded ``torch.Generator`` s, not the global
  RNG.

Kept from the official code: the minimise step runs, and Adam steps the encoders, even while
``dist(e)`` is 0 (zero gradients; AMSGrad's momentum still moves them), and CORAL is subtracted.

Side by side with the official code (patched only to run on a CPU, read the same files and log),
on the real APY split files with generated 128-d features, widths 256/128/16, 20 epochs with the
warm-ups scaled to them, 24 classifier epochs, 3 seeds each: per-epoch means of the step-1
cross-entropy, the step-4 loss and ``W`` agree within a few percent at every epoch (epoch 19:
0.30 / 35.3 / 0.083 official, 0.31 / 34.6 / 0.083 here); final uncalibrated H 74.1 ± 3.9
official, 73.0 ± 3.6 here; CPU time 118 s official, 79 s here (the table: CHANGES.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from zslbench import hyperparams as hp
from zslbench.errors import ConfigError
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.progress import steps
from zslbench_plugins.cadavae import gaussian_kl, loss_weights, wasserstein_distance
from zslbench_plugins.generative import (
    FeatureGenerator,
    adam,
    init_and_train_generators,
    seeded_linear,
)

#: LeakyReLU slope of every network (``nn.LeakyReLU(0.2, True)``, ``models.py``).
SLOPE = 0.2


# --------------------------------------------------------------------------------------------
# Loss terms (public: the tests check them against brute-force definitions)
# --------------------------------------------------------------------------------------------


def random_projections(
    n_dim: int, n_proj: int, gen: torch.Generator, device: torch.device
) -> torch.Tensor:
    """``n_proj`` random unit directions in ``R^n_dim`` as columns (``HSVA.py:235-236``)."""
    proj = torch.randn(n_dim, n_proj, generator=gen, device=device)
    return proj * torch.rsqrt((proj * proj).sum(0, keepdim=True))


def sliced_wasserstein_discrepancy(
    logits1: torch.Tensor, logits2: torch.Tensor, proj: torch.Tensor
) -> torch.Tensor:
    """The official ``discrepancy_slice_wasserstein`` (``HSVA.py:230-244``): both classifiers'
    softmax outputs projected on the columns of ``proj``, each projection sorted over the batch,
    the mean squared difference of the sorted values (the squared 1-D Wasserstein-2 distance
    between the two empirical distributions of each projection, averaged)."""
    p1 = torch.softmax(logits1, dim=1) @ proj
    p2 = torch.softmax(logits2, dim=1) @ proj
    s1 = torch.sort(p1, dim=0, descending=True).values
    s2 = torch.sort(p2, dim=0, descending=True).values
    return (s1 - s2).pow(2).mean()


def coral_loss(source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared difference of the two batches' unbiased covariance matrices
    (``get_CORAL_loss``, ``HSVA.py:246-259``)."""

    def cov(x: torch.Tensor) -> torch.Tensor:
        xm = x - x.mean(0, keepdim=True)
        return xm.T @ xm / (x.shape[0] - 1)

    d = cov(source) - cov(target)
    return (d * d).mean()


def sample_latent(mu: torch.Tensor, logvar: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``mu + exp(0.1 logvar) eps``, one ``eps`` per row (``HSVA.py:179-186``)."""
    eps = torch.randn(mu.shape[0], 1, generator=gen, device=mu.device, dtype=mu.dtype)
    return mu + torch.exp(0.1 * logvar) * eps


# --------------------------------------------------------------------------------------------
# Networks (official ``weights_init``: Xavier-uniform gain 0.5, zero biases, BatchNorm ~ N(1, .02))
# --------------------------------------------------------------------------------------------


def _xavier(d_in: int, d_out: int, gen: torch.Generator) -> nn.Linear:
    return seeded_linear(d_in, d_out, torch.device("cpu"), gen, "xavier")


class MLP(nn.Module):
    """Linear-LReLU(0.2)-Linear: the modality encoders and decoders (``models.py:48-73``)."""

    def __init__(self, d_in: int, hidden: int, d_out: int, gen: torch.Generator) -> None:
        super().__init__()
        self.fc1 = _xavier(d_in, hidden, gen)
        self.fc2 = _xavier(hidden, d_out, gen)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.leaky_relu(self.fc1(x), SLOPE))


class LatentEncoder(nn.Module):
    """Linear-LReLU, then mean and log-variance heads (``encoder_z``, ``models.py:21-42``); the
    two heads are one layer of twice the width, each half initialised as its own layer."""

    def __init__(self, d_in: int, hidden: int, latent: int, gen: torch.Generator) -> None:
        super().__init__()
        self.fc1 = _xavier(d_in, hidden, gen)
        mu, logvar = _xavier(hidden, latent, gen), _xavier(hidden, latent, gen)
        self.heads = nn.utils.skip_init(nn.Linear, hidden, 2 * latent)
        with torch.no_grad():
            self.heads.weight.copy_(torch.cat([mu.weight, logvar.weight]))
            self.heads.bias.zero_()
        self.latent = latent

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.heads(F.leaky_relu(self.fc1(x), SLOPE))
        return out[:, : self.latent], out[:, self.latent :]


class AlignmentClassifier(nn.Module):
    """``class_cls`` (``models.py:123-136``): Linear-BatchNorm-ReLU-Linear over the seen classes,
    BatchNorm on the batch's statistics (the official module stays in training mode)."""

    def __init__(self, d_in: int, hidden: int, n_classes: int, gen: torch.Generator) -> None:
        super().__init__()
        self.fc1 = _xavier(d_in, hidden, gen)
        self.bn = nn.BatchNorm1d(hidden, track_running_stats=False, device="cpu")
        with torch.no_grad():
            self.bn.weight.normal_(1.0, 0.02, generator=gen)
            self.bn.bias.zero_()
        self.fc2 = _xavier(hidden, n_classes, gen)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.bn(self.fc1(x))))


# --------------------------------------------------------------------------------------------
# The generator component
# --------------------------------------------------------------------------------------------


class HSVAGenerator(FeatureGenerator):
    """HSVA's generator stage (module docstring). Its classifier space is the latent space:
    ``synthesise`` is a noisy latent sample of the attributes, ``embed_train`` of an image, and
    ``embed`` (scoring) the image posterior's mean.

    Parameters: ``latent_size`` 64, ``coarse_size`` 2048, ``encoder_hidden`` 4096 (modality
    encoders), ``latent_hidden`` 2048 (latent encoder), ``decoder_hidden`` 4096,
    ``classifier_hidden`` 512 (alignment classifiers), ``projections`` 128 (SWD); ``epochs`` 500,
    ``batch_size`` 50, ``lr`` 0.00015, ``alignment_lr`` 0.001; warm-ups ``beta_factor`` 0.25 over
    ``beta_start``-``beta_end`` 0-90, ``cross_reconstruction_factor`` 2.37 over 21-75,
    ``distance_factor`` 8.0 over 0-25. Sources: the module docstring.

    The GZSL classifier (``classifier_defaults``): CADA-VAE's, with 24 epochs (CUB's 23 + the
    constructor's one); searched: ``classifier_epochs`` over 22, 24, 34 and 51 (the official
    GZSL values + 1 of SUN, CUB/APY/FLO, AWA1, AWA2).

    Fitted state: ``image_encoder_``, ``attribute_encoder_``, ``latent_encoder_`` (eval mode, on
    the device), ``history_`` (per epoch: mean step-1 classification loss per batch, mean step-4
    loss per image and mean ``W`` per image).
    """

    name = "hsva"
    classifier_defaults: ClassVar[dict[str, Any]] = {
        "syn_num": 400,
        "seen_num": 200,
        "classifier_lr": 0.001,
        "classifier_beta1": 0.5,
        "classifier_epochs": 24,
        "classifier_batch_size": 32,
        "classifier_init": "xavier",
        "classifier_batches": "reshuffle",
    }
    classifier_search: ClassVar[dict[str, tuple[Any, ...]]] = {
        "classifier_epochs": (22, 24, 34, 51)
    }
    official_selection: ClassVar[str | None] = (
        "best test H over the final classifier's epochs (official: best test H over classifier "
        "epochs after every VAE epoch from 100 on, HSVA.py:455-473,724-731)"
    )

    def __init__(
        self,
        latent_size: int = 64,
        coarse_size: int = 2048,
        encoder_hidden: int = 4096,
        latent_hidden: int = 2048,
        decoder_hidden: int = 4096,
        classifier_hidden: int = 512,
        projections: int = 128,
        epochs: int = 500,
        batch_size: int = 50,
        lr: float = 0.00015,
        alignment_lr: float = 0.001,
        beta_factor: float = 0.25,
        beta_start: int = 0,
        beta_end: int = 90,
        cross_reconstruction_factor: float = 2.37,
        cross_reconstruction_start: int = 21,
        cross_reconstruction_end: int = 75,
        distance_factor: float = 8.0,
        distance_start: int = 0,
        distance_end: int = 25,
    ) -> None:
        self.latent_size = latent_size
        self.coarse_size = coarse_size
        self.encoder_hidden = encoder_hidden
        self.latent_hidden = latent_hidden
        self.decoder_hidden = decoder_hidden
        self.classifier_hidden = classifier_hidden
        self.projections = projections
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.alignment_lr = alignment_lr
        self.beta_factor = beta_factor
        self.beta_start = beta_start
        self.beta_end = beta_end
        self.cross_reconstruction_factor = cross_reconstruction_factor
        self.cross_reconstruction_start = cross_reconstruction_start
        self.cross_reconstruction_end = cross_reconstruction_end
        self.distance_factor = distance_factor
        self.distance_start = distance_start
        self.distance_end = distance_end

    def check_params(self) -> None:
        who = self.name
        for p in (
            "latent_size",
            "coarse_size",
            "encoder_hidden",
            "latent_hidden",
            "decoder_hidden",
            "classifier_hidden",
            "projections",
            "epochs",
        ):
            hp.integer(who, p, getattr(self, p), 1)
        # BatchNorm on the batch's statistics needs two rows
        hp.integer(who, "batch_size", self.batch_size, 2)
        hp.real(who, "lr", self.lr)
        hp.real(who, "alignment_lr", self.alignment_lr)
        for term in ("beta", "cross_reconstruction", "distance"):
            hp.real(who, f"{term}_factor", getattr(self, f"{term}_factor"), allow_low=True)
            start = hp.integer(who, f"{term}_start", getattr(self, f"{term}_start"), 0)
            end = hp.integer(who, f"{term}_end", getattr(self, f"{term}_end"), 0)
            if end <= start:
                raise ConfigError(
                    f"{who}.{term}_end={end} must be greater than {who}.{term}_start={start}",
                    hint=f"the warm-up rises from {term}_start to {term}_end",
                )

    def fit(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        att: torch.Tensor,
        seen_columns: torch.Tensor,
        seed: int,
    ) -> HSVAGenerator:
        """Train the networks (``HSVA.py:671-714``); initialisation and training draw from two
        streams of ``seed``."""
        device = x.device
        g_init, g = init_and_train_generators(seed, device)
        n, dim = x.shape
        k = att.shape[1]
        seen_pos = torch.full((att.shape[0],), -1, dtype=torch.long, device=device)
        seen_pos[seen_columns] = torch.arange(len(seen_columns), device=device)
        y_seen = seen_pos[y]
        is_seen = torch.zeros(att.shape[0], dtype=torch.bool, device=device)
        is_seen[seen_columns] = True
        unseen = torch.nonzero(~is_seen).flatten()
        coarse, latent = int(self.coarse_size), int(self.latent_size)
        enc_x = MLP(dim, int(self.encoder_hidden), coarse, g_init).to(device)
        enc_a = MLP(k, int(self.encoder_hidden), coarse, g_init).to(device)
        dec_x = MLP(latent, int(self.decoder_hidden), dim, g_init).to(device)
        dec_a = MLP(latent, int(self.decoder_hidden), k, g_init).to(device)
        enc_z = LatentEncoder(coarse, int(self.latent_hidden), latent, g_init).to(device)
        c1 = AlignmentClassifier(coarse, int(self.classifier_hidden), len(seen_columns), g_init).to(
            device
        )
        c2 = AlignmentClassifier(coarse, int(self.classifier_hidden), len(seen_columns), g_init).to(
            device
        )
        encoders = [*enc_x.parameters(), *enc_a.parameters()]
        classifiers = [*c1.parameters(), *c2.parameters()]
        # HSVA.py:144-157: AMSGrad for the VAE's parts, plain Adam for the two classifiers (one
        # optimiser per group here: Adam's state is per parameter, so merging is exact)
        opt_enc = adam(encoders, float(self.lr), 0.9, amsgrad=True)
        opt_vae = adam(
            [*enc_z.parameters(), *dec_x.parameters(), *dec_a.parameters()],
            float(self.lr),
            0.9,
            amsgrad=True,
        )
        opt_cls = adam(classifiers, float(self.alignment_lr), 0.9)
        all_params = [*encoders, *classifiers, *opt_vae.param_groups[0]["params"]]
        n_proj = int(self.projections)
        n_seen = len(seen_columns)

        def zero() -> None:
            for p in all_params:
                p.grad = None

        def predictions(cx: torch.Tensor, ca: torch.Tensor) -> list[torch.Tensor]:
            return [c1(cx), c2(cx), c1(ca), c2(ca)]

        def cross_entropy(preds: list[torch.Tensor], lab: torch.Tensor) -> torch.Tensor:
            return sum((F.cross_entropy(p, lab) for p in preds), torch.zeros((), device=device))

        def discrepancy(preds: list[torch.Tensor]) -> torch.Tensor:
            s1, s2, t1, t2 = preds
            return sliced_wasserstein_discrepancy(
                s1, s2, random_projections(n_seen, n_proj, g, device)
            ) + sliced_wasserstein_discrepancy(
                t1, t2, random_projections(n_seen, n_proj, g, device)
            )

        bs = min(int(self.batch_size), n)
        per_epoch = -(-n // int(self.batch_size))  # HSVA.py:691: range(0, ntrain, batch_size)
        epochs = int(self.epochs)
        history = torch.zeros(3, epochs, dtype=torch.float64, device=device)
        with steps("hsva epochs", epochs) as advance:
            for epoch in range(epochs):
                beta, cross, dist = loss_weights(self, epoch)
                for _ in range(per_epoch):
                    idx = torch.randperm(n, generator=g, device=device)[:bs]
                    img, a, lab = x[idx], att[y[idx]], y_seen[idx]
                    if len(unseen):
                        ua = att[
                            unseen[torch.randint(len(unseen), (bs,), generator=g, device=device)]
                        ]
                    # 1. classifiers and encoders on the seen-class cross-entropy
                    zero()
                    loss_cls = cross_entropy(predictions(enc_x(img), enc_a(a)), lab)
                    loss_cls.backward()
                    opt_cls.step()
                    opt_enc.step()
                    # 2. classifiers alone: maximise the discrepancy
                    zero()
                    with torch.no_grad():
                        cx, ca = enc_x(img), enc_a(a)
                    preds = predictions(cx, ca)
                    (cross_entropy(preds, lab) - dist * discrepancy(preds)).backward()
                    opt_cls.step()
                    # 3. encoders alone, twice: minimise it (stepped even while dist is 0)
                    for p in classifiers:
                        p.requires_grad_(False)
                    for _ in range(2):
                        zero()
                        (dist * discrepancy(predictions(enc_x(img), enc_a(a)))).backward()
                        opt_enc.step()
                    for p in classifiers:
                        p.requires_grad_(True)
                    # 4. distribution adaptation
                    zero()
                    mu_x, lv_x = enc_z(enc_x(img))
                    mu_a, lv_a = enc_z(enc_a(a))
                    z_x, z_a = sample_latent(mu_x, lv_x, g), sample_latent(mu_a, lv_a, g)
                    b = img.shape[0]
                    out_x = dec_x(torch.cat([z_x, z_a]))
                    out_a = dec_a(torch.cat([z_a, z_x]))
                    loss = (
                        F.l1_loss(out_x[:b], img, reduction="sum")
                        + F.l1_loss(out_a[:b], a, reduction="sum")
                        + beta * (gaussian_kl(mu_x, lv_x) + gaussian_kl(mu_a, lv_a))
                        + cross
                        * (
                            F.l1_loss(out_x[b:], img, reduction="sum")
                            + F.l1_loss(out_a[b:], a, reduction="sum")
                        )
                    )
                    w = wasserstein_distance(mu_x, lv_x, mu_a, lv_a)
                    if dist > 0:
                        term = w
                        if len(unseen):
                            mu_u, lv_u = enc_z(enc_a(ua))
                            term = term - coral_loss(z_x, sample_latent(mu_u, lv_u, g))
                        loss = loss + dist * term
                    loss.backward()
                    opt_vae.step()
                    opt_enc.step()
                    history[0, epoch] += loss_cls.detach()
                    history[1, epoch] += loss.detach() / b
                    history[2, epoch] += w.detach() / b
                history[:, epoch] /= per_epoch
                advance()
        zero()
        for m in (enc_x, enc_a, enc_z):
            m.eval().requires_grad_(False)
        self.image_encoder_, self.attribute_encoder_, self.latent_encoder_ = enc_x, enc_a, enc_z
        h = history.cpu().numpy()
        self.history_ = {"classification": h[0], "vae": h[1], "distance": h[2]}
        return self

    def synthesise(self, att_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """A noisy latent sample of each attribute row (``HSVA.py:414-435``)."""
        mu, lv = self.latent_encoder_(self.attribute_encoder_(att_rows))
        return sample_latent(mu, lv, gen)

    def embed_train(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """A noisy latent sample of each image (``HSVA.py:408-432``)."""
        mu, lv = self.latent_encoder_(self.image_encoder_(x))
        return sample_latent(mu, lv, gen)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The image posterior's mean (``HSVA.py:351-361``: no noise at test time)."""
        return self.latent_encoder_(self.image_encoder_(x))[0]


@hookimpl
def zslbench_generators() -> list[type[FeatureGenerator]]:
    return [HSVAGenerator]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [
        MethodSpec(
            "hsva",
            model="generative",
            components={"generator": "hsva"},
            preprocessor="minmax",
            paper_name="HSVA",
            description="Hierarchical semantic-visual adaptation: structure (two-classifier sliced "
            "Wasserstein) then distribution (aligned VAEs) alignment; softmax on the "
            "latent space (Chen et al. 2021)",
            citation="S. Chen, G.-S. Xie, Q. Peng, Y. Liu, B. Sun, H. Li, X. You, L. Shao. HSVA: "
            "Hierarchical Semantic-Visual Adaptation for Zero-Shot Learning. NeurIPS 2021. "
            "Defaults: github.com/shiming-chen/HSVA@add15f3, single_experiment.py (CUB).",
        )
    ]


__all__ = [
    "HSVAGenerator",
    "coral_loss",
    "random_projections",
    "sample_latent",
    "sliced_wasserstein_discrepancy",
]
