"""CADA-VAE: Schönfeld, Ebrahimi, Sinha, Darrell, Akata, "Generalized Zero- and Few-Shot Learning
via Aligned Variational Autoencoders", CVPR 2019. Official code: edgarschnfld/CADA-VAE-PyTorch
(commit 26f0085; paths below are relative to it, line numbers are those of that commit).

``fit``:

1. **Generator stage** (component ``cada-vae``, :class:`VAEGenerator`). Two VAEs, one for image features and one for class attributes,
   share a ``latent_size``-dimensional latent space. Each batch draws ``batch_size`` training images
   (``model/data_loader.py:64``: a fresh random subset for every batch, ``ceil(n / batch_size)``
   batches per epoch, ``model/vaemodel.py:211``) and pairs each with its class's attribute vector.
   The loss (``model/vaemodel.py:131-186``, all terms summed over the batch) is

       L1 reconstruction  + beta(e) * KL  + cross(e) * L1 cross-reconstruction  + dist(e) * W

   where the cross-reconstruction decodes each modality from the other's latent sample, ``KL`` is
   each VAE's KL divergence to N(0, I), and ``W`` is, per image, the 2-Wasserstein distance between
   the two diagonal Gaussian posteriors,
   ``sqrt(||mu_x - mu_a||^2 + ||sigma_x - sigma_a||^2)`` (``sigma = exp(logvar / 2)``). Each
   factor warms up linearly with the (0-based) epoch ``e``:
   ``min(max((e - start) / (end - start) * factor, 0), factor)`` (``model/vaemodel.py:163-173``).
2. **Classifier stage** (the family's shared ``generative`` model, ``plugins/generative.py``,
   with this method's official settings in ``VAEGenerator.classifier_defaults``). Latent training samples
   (``model/vaemodel.py:336-405``): for each seen class, ``seen_samples`` of its images (its images
   in the order given, repeated cyclically when it has fewer, then cut: ``features.repeat(k, 1)[:n]``)
   encoded *with* sampling noise; for each unseen class, ``unseen_samples`` noisy encodings of its
   attribute vector. A softmax classifier (one linear layer, log-softmax, NLL) is trained on them
   with Adam (``model/final_classifier.py``: betas (0.5, 0.999), batches of 32, reshuffled every
   epoch, last incomplete batch dropped).

``decision_function`` encodes images to the mean of their posterior (no noise,
``model/vaemodel.py:315``) and returns the classifier's log-probabilities over all candidate classes
(computed on ``device``). The harness then adds its calibrated seen-class penalty.

Defaults, each from ``model/single_experiment.py`` (the official settings are one set for all
datasets, ``hyperparameters``, lines 30-64; only the classifier epochs differ per dataset):

* ``latent_size=64`` (line 63); ``hidden_size_rule`` (lines 60-61): image encoder 1560, image
  decoder 1660, attribute encoder 1450, attribute decoder 665 (``model/models.py:25-26,65``: the
  encoder uses the first entry, the decoder the last);
* ``epochs=100`` (line 55), ``batch_size=50`` (line 48), ``lr=0.00015`` (line 46; Adam with
  ``amsgrad=True``, ``model/vaemodel.py:84``), L1 reconstruction (line 56);
* warm-ups (lines 36-44): beta 0.25 over epochs 0-93, cross-reconstruction 2.37 over 21-75,
  distance 8.13 over 6-22;
* ``seen_samples=200``, ``unseen_samples=400`` (line 128: ``(200, 0, 400, 0)`` for every dataset in
  GZSL, 0-shot);
* ``classifier_lr=0.001`` (line 58), ``classifier_batch_size=32`` (``model/vaemodel.py:40``);
* ``classifier_epochs=23``: the official CUB value (line 90). The official values for GZSL are 21
  (SUN, line 70), 23 (CUB), 29 (AWA2, line 100) and 33 (AWA1, line 80); there is no APY setting.
  The harness searches ``classifier_epochs`` over exactly these four values on the leak-free
  validation split (``search_space``), so the default only matters when the search is switched off
  (``--set model.classifier_epochs=N``).
* Features: the official code min-max scales every feature dimension over trainval
  (``model/data_loader.py:105-109``); the method uses the ``minmax`` preprocessor, which the harness
  fits on the training images of each fit. Attributes are used as given (the xlsa17 ``att``).
* Initialisation: Xavier-uniform with gain 0.5, zero biases, for every linear layer including the
  classifier (``model/models.py:6-11``, ``model/vaemodel.py:306``).

Two quirks of the official code are kept, because its published numbers come from them
(``noise="official"``); ``noise="standard"`` gives the textbook reparameterisation instead:

* the sampling noise is ``mu + exp(logvar) * eps`` (``model/vaemodel.py:94``), i.e. the noise scale
  is the *variance* of the posterior whose KL and Wasserstein terms treat ``exp(logvar)`` as the
  variance (standard: ``exp(logvar / 2)``);
* ``eps`` is one number per sample, shared by all latent dimensions
  (``model/vaemodel.py:95-96``: ``FloatTensor(batch, 1).normal_().expand(...)``).

Protocol differences from the official code:

* The official code picks no hyperparameter on test data in the GZSL runs it reports: it trains the
  classifier for a fixed per-dataset number of epochs ("determined on the validation split",
  ``model/single_experiment.py:66-67``) and reports the last epoch (line 172). (Its
  ``CLASSIFIER.fit`` keeps the best test H over the epochs of one call, but is called with one
  epoch at a time, ``model/vaemodel.py:414-421``, so that is inert.) Here the number of classifier
  epochs is chosen by the harness on the leak-free validation split, among the official values.
* The official code evaluates on test images after every classifier epoch; here the model never
  sees a validation or test image, and the harness calibrates a seen-class penalty on validation
  scores (the official code uses none: its H is the uncalibrated argmax).
* The official min-max scaler is fitted on trainval for the final model (same here); for the
  validation fit the harness fits it on that fit's training images only.
* Batches and noise come from seeded ``torch.Generator`` s (the official code uses the global RNG,
  unseeded); the VAE and the classifier draw from separate streams, so a search over classifier
  settings can reuse a fitted VAE and give exactly the numbers of a full refit.

Speed (same arithmetic as the official code): both decoders run once on the concatenated
within-modality and cross-modality latents, the cross terms are skipped while their warm-up factor
is 0 (the official code multiplies them by 0), Adam is PyTorch's fused implementation, and the
classifier's samples are batched by index instead of a per-sample ``DataLoader``.
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
from zslbench_plugins.generative import (
    FeatureGenerator,
    adam,
    init_and_train_generators,
    seeded_linear,
)

NOISES = ("official", "standard")


# --------------------------------------------------------------------------------------------
# Loss terms and schedule (public: the tests check them against closed forms)
# --------------------------------------------------------------------------------------------


def warmup_factor(epoch: int, factor: float, start: int, end: int) -> float:
    """A loss weight's warm-up (``model/vaemodel.py:163-173``): 0 up to epoch ``start``, rising
    linearly to ``factor`` at epoch ``end``, then constant."""
    f = (epoch - start) / (end - start) * factor
    return float(min(max(f, 0.0), factor))


def loss_weights(model: Any, epoch: int) -> tuple[float, float, float]:
    """The three warmed-up loss weights of an epoch (KL ``beta``, cross-reconstruction, distance),
    from a model's ``*_factor``, ``*_start`` and ``*_end`` hyperparameters; CADA-VAE and HSVA
    (which keeps CADA-VAE's schedule) both read them here."""
    return tuple(  # type: ignore[return-value]
        warmup_factor(
            epoch,
            float(getattr(model, f"{name}_factor")),
            int(getattr(model, f"{name}_start")),
            int(getattr(model, f"{name}_end")),
        )
        for name in ("beta", "cross_reconstruction", "distance")
    )


def gaussian_kl(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """``KL(N(mu, diag(exp(logvar))) || N(0, I))`` summed over every row and dimension
    (the official ``-KLD``, ``model/vaemodel.py:147``)."""
    return -0.5 * torch.sum(1.0 + logvar - mu.pow(2) - logvar.exp())


def wasserstein_distance(
    mu1: torch.Tensor, logvar1: torch.Tensor, mu2: torch.Tensor, logvar2: torch.Tensor
) -> torch.Tensor:
    """The 2-Wasserstein distance between diagonal Gaussians, row by row, summed over rows
    (``model/vaemodel.py:153-156``): ``sqrt(||mu1 - mu2||^2 + ||sigma1 - sigma2||^2)`` with
    ``sigma = exp(logvar / 2)`` (the Frobenius norm of the difference of the covariances' square
    roots, for diagonal covariances)."""
    d2 = (mu1 - mu2).pow(2).sum(dim=1) + (torch.exp(0.5 * logvar1) - torch.exp(0.5 * logvar2)).pow(
        2
    ).sum(dim=1)
    return torch.sqrt(d2).sum()


def cross_reconstruction_loss(
    x: torch.Tensor, a: torch.Tensor, x_from_a: torch.Tensor, a_from_x: torch.Tensor
) -> torch.Tensor:
    """Each modality decoded from the other's latent sample, summed L1 error
    (``model/vaemodel.py:137-141``)."""
    return F.l1_loss(x_from_a, x, reduction="sum") + F.l1_loss(a_from_x, a, reduction="sum")


def sample_latent(
    mu: torch.Tensor, logvar: torch.Tensor, generator: torch.Generator, noise: str
) -> torch.Tensor:
    """A noisy latent sample. ``"official"``: ``mu + exp(logvar) * eps`` with one ``eps`` per row
    (``model/vaemodel.py:92-97``); ``"standard"``: ``mu + exp(logvar / 2) * eps``, ``eps`` per
    entry."""
    if noise == "official":
        eps = torch.randn(mu.shape[0], 1, generator=generator, device=mu.device, dtype=mu.dtype)
        return mu + torch.exp(logvar) * eps
    eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
    return mu + torch.exp(0.5 * logvar) * eps


def vae_loss(
    img: torch.Tensor,
    att: torch.Tensor,
    image_posterior: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    attribute_posterior: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    image_decoder: nn.Module,
    attribute_decoder: nn.Module,
    beta: float,
    cross: float,
    distance: float,
) -> torch.Tensor:
    """The CADA-VAE loss of one batch (``model/vaemodel.py:128-186``): L1 reconstruction
    ``+ beta * KL + cross * cross-reconstruction + distance * W``. Each posterior is
    ``(mu, logvar, z)`` with ``z`` its noisy sample.

    Each decoder runs once, on its own modality's latent samples and (when ``cross > 0``) the
    other's stacked below them: the same numbers as the official four decoder calls, in two
    larger matrix products. Terms whose factor is 0 are not computed (the official code adds them
    times 0)."""
    mu_x, lv_x, z_x = image_posterior
    mu_a, lv_a, z_a = attribute_posterior
    b = img.shape[0]
    if cross > 0:
        out_x = image_decoder(torch.cat([z_x, z_a]))
        out_a = attribute_decoder(torch.cat([z_a, z_x]))
        loss = (
            F.l1_loss(out_x[:b], img, reduction="sum")
            + F.l1_loss(out_a[:b], att, reduction="sum")
            + cross * cross_reconstruction_loss(img, att, out_x[b:], out_a[b:])
        )
    else:
        loss = F.l1_loss(image_decoder(z_x), img, reduction="sum") + F.l1_loss(
            attribute_decoder(z_a), att, reduction="sum"
        )
    if beta > 0:
        loss = loss + beta * (gaussian_kl(mu_x, lv_x) + gaussian_kl(mu_a, lv_a))
    if distance > 0:
        loss = loss + distance * wasserstein_distance(mu_x, lv_x, mu_a, lv_a)
    return loss


# --------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------


def _xavier(d_in: int, d_out: int, generator: torch.Generator) -> nn.Linear:
    """The official ``weights_init`` (``model/models.py:6-11``), drawn on the CPU from
    ``generator`` so that the initialisation is the same on every device."""
    return seeded_linear(d_in, d_out, torch.device("cpu"), generator, "xavier")


class Encoder(nn.Module):
    """Linear-ReLU, then the posterior's mean and log-variance (``model/models.py:18-57``). The
    two heads are stored as one layer of twice the width (one matrix product instead of two),
    each half initialised as its own ``Linear(hidden, latent)``."""

    def __init__(self, d_in: int, hidden: int, latent: int, generator: torch.Generator) -> None:
        super().__init__()
        self.hidden = _xavier(d_in, hidden, generator)
        mu = _xavier(hidden, latent, generator)
        logvar = _xavier(hidden, latent, generator)
        self.heads = nn.utils.skip_init(nn.Linear, hidden, 2 * latent)
        with torch.no_grad():
            self.heads.weight.copy_(torch.cat([mu.weight, logvar.weight]))
            self.heads.bias.zero_()
        self.latent = latent

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.heads(F.relu(self.hidden(x)))
        return out[:, : self.latent], out[:, self.latent :]


class Decoder(nn.Module):
    """Linear-ReLU-Linear (``model/models.py:59-74``)."""

    def __init__(self, latent: int, hidden: int, d_out: int, generator: torch.Generator) -> None:
        super().__init__()
        self.hidden = _xavier(latent, hidden, generator)
        self.out = _xavier(hidden, d_out, generator)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.hidden(z)))


# --------------------------------------------------------------------------------------------
# The generator component
# --------------------------------------------------------------------------------------------


class VAEGenerator(FeatureGenerator):
    """CADA-VAE's generator stage (step 1 of the module docstring): the aligned VAEs. Its
    classifier space is the latent space: ``synthesise`` is a noisy encoding of the attributes,
    ``embed_train`` a noisy encoding of an image, and ``embed`` (for scoring) the image posterior's
    mean (``model/vaemodel.py:315``).

    Parameters: ``latent_size``; ``image_encoder_hidden``, ``image_decoder_hidden``,
    ``attribute_encoder_hidden``, ``attribute_decoder_hidden``; ``epochs``, ``batch_size``, ``lr``
    (VAE); ``beta_factor``/``beta_start``/``beta_end``, ``cross_reconstruction_factor``/``_start``/
    ``_end``, ``distance_factor``/``_start``/``_end`` (warm-ups); ``noise`` (``"official"`` or
    ``"standard"`` reparameterisation). Defaults and sources: the module docstring.

    The GZSL classifier (``classifier_defaults``, step 2): ``seen_num`` 200 and ``syn_num`` 400
    (``seen_samples``/``unseen_samples``), ``classifier_lr`` 1e-3, ``classifier_beta1`` 0.5,
    ``classifier_batch_size`` 32, Xavier initialisation, a reshuffle per epoch dropping the last
    batch, ``classifier_epochs`` 23 (CUB). Searched on validation (``classifier_search``):
    ``classifier_epochs`` over the official per-dataset GZSL values, 21 (SUN), 23 (CUB), 29
    (AWA2) and 33 (AWA1) (``model/single_experiment.py:70,90,100,80``). The official code does
    not select on test in the runs it reports (module docstring), so there is no audit.

    Fitted state: ``image_encoder_``, ``attribute_encoder_``, ``image_decoder_``,
    ``attribute_decoder_`` (eval mode, on the device), ``loss_history_`` (mean loss per image, per
    epoch).
    """

    name = "cada-vae"
    classifier_defaults: ClassVar[dict[str, Any]] = {
        "syn_num": 400,
        "seen_num": 200,
        "classifier_lr": 0.001,
        "classifier_beta1": 0.5,
        "classifier_epochs": 23,
        "classifier_batch_size": 32,
        "classifier_init": "xavier",
        "classifier_batches": "reshuffle",
    }
    classifier_search: ClassVar[dict[str, tuple[Any, ...]]] = {
        "classifier_epochs": (21, 23, 29, 33)
    }

    def __init__(
        self,
        latent_size: int = 64,
        image_encoder_hidden: int = 1560,
        image_decoder_hidden: int = 1660,
        attribute_encoder_hidden: int = 1450,
        attribute_decoder_hidden: int = 665,
        epochs: int = 100,
        batch_size: int = 50,
        lr: float = 0.00015,
        beta_factor: float = 0.25,
        beta_start: int = 0,
        beta_end: int = 93,
        cross_reconstruction_factor: float = 2.37,
        cross_reconstruction_start: int = 21,
        cross_reconstruction_end: int = 75,
        distance_factor: float = 8.13,
        distance_start: int = 6,
        distance_end: int = 22,
        noise: str = "official",
    ) -> None:
        self.latent_size = latent_size
        self.image_encoder_hidden = image_encoder_hidden
        self.image_decoder_hidden = image_decoder_hidden
        self.attribute_encoder_hidden = attribute_encoder_hidden
        self.attribute_decoder_hidden = attribute_decoder_hidden
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.beta_factor = beta_factor
        self.beta_start = beta_start
        self.beta_end = beta_end
        self.cross_reconstruction_factor = cross_reconstruction_factor
        self.cross_reconstruction_start = cross_reconstruction_start
        self.cross_reconstruction_end = cross_reconstruction_end
        self.distance_factor = distance_factor
        self.distance_start = distance_start
        self.distance_end = distance_end
        self.noise = noise

    def check_params(self) -> None:
        who = self.name
        for p in (
            "latent_size",
            "image_encoder_hidden",
            "image_decoder_hidden",
            "attribute_encoder_hidden",
            "attribute_decoder_hidden",
            "epochs",
            "batch_size",
        ):
            hp.integer(who, p, getattr(self, p), 1)
        hp.real(who, "lr", self.lr)
        for term in ("beta", "cross_reconstruction", "distance"):
            hp.real(who, f"{term}_factor", getattr(self, f"{term}_factor"), allow_low=True)
            start = hp.integer(who, f"{term}_start", getattr(self, f"{term}_start"), 0)
            end = hp.integer(who, f"{term}_end", getattr(self, f"{term}_end"), 0)
            if end <= start:
                raise ConfigError(
                    f"{who}.{term}_end={end} must be greater than {who}.{term}_start={start}",
                    hint=f"the warm-up rises from {term}_start to {term}_end",
                )
        hp.choice(who, "noise", self.noise, NOISES)

    def fit(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        att: torch.Tensor,
        seen_columns: torch.Tensor,
        seed: int,
    ) -> VAEGenerator:
        """Train the two VAEs (``model/vaemodel.py:195-290``); initialisation and training draw
        from two streams of ``seed``."""
        device = x.device
        g_init, g = init_and_train_generators(seed, device)
        k = int(self.latent_size)
        enc_x = Encoder(x.shape[1], int(self.image_encoder_hidden), k, g_init).to(device)
        enc_a = Encoder(att.shape[1], int(self.attribute_encoder_hidden), k, g_init).to(device)
        dec_x = Decoder(k, int(self.image_decoder_hidden), x.shape[1], g_init).to(device)
        dec_a = Decoder(k, int(self.attribute_decoder_hidden), att.shape[1], g_init).to(device)
        modules = (enc_x, enc_a, dec_x, dec_a)
        # model/vaemodel.py:84
        optimiser = adam(
            [p for m in modules for p in m.parameters()], float(self.lr), 0.9, amsgrad=True
        )
        n, bs = x.shape[0], int(self.batch_size)
        per_epoch = -(-n // bs)  # model/vaemodel.py:211: range(0, ntrain, batch_size)
        epochs = int(self.epochs)
        history = torch.zeros(epochs, dtype=torch.float64, device=device)
        noise = self.noise
        for m in modules:
            m.train()
        with steps("cada-vae epochs", epochs) as advance:
            for epoch in range(epochs):
                beta, cross, dist = loss_weights(self, epoch)
                total = torch.zeros((), dtype=torch.float64, device=device)
                count = 0
                for _ in range(per_epoch):
                    idx = torch.randperm(n, generator=g, device=device)[:bs]
                    img, a = x[idx], att[y[idx]]
                    mu_x, lv_x = enc_x(img)
                    mu_a, lv_a = enc_a(a)
                    z_x = sample_latent(mu_x, lv_x, g, noise)
                    z_a = sample_latent(mu_a, lv_a, g, noise)
                    loss = vae_loss(
                        img,
                        a,
                        (mu_x, lv_x, z_x),
                        (mu_a, lv_a, z_a),
                        dec_x,
                        dec_a,
                        beta,
                        cross,
                        dist,
                    )
                    optimiser.zero_grad(set_to_none=True)
                    loss.backward()
                    optimiser.step()
                    total += loss.detach()
                    count += img.shape[0]
                history[epoch] = total / max(count, 1)
                advance()
        for m in modules:
            m.eval()
            m.requires_grad_(False)
        self.image_encoder_, self.attribute_encoder_ = enc_x, enc_a
        self.image_decoder_, self.attribute_decoder_ = dec_x, dec_a
        self.loss_history_ = history.cpu().numpy()
        return self

    def synthesise(self, att_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """A noisy encoding of each attribute row (``model/vaemodel.py:362-405``)."""
        mu, lv = self.attribute_encoder_(att_rows)
        return sample_latent(mu, lv, gen, self.noise)

    def embed_train(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """A noisy encoding of each image (``model/vaemodel.py:336-360``)."""
        mu, lv = self.image_encoder_(x)
        return sample_latent(mu, lv, gen, self.noise)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The image posterior's mean (``model/vaemodel.py:315``: no noise at test time)."""
        return self.image_encoder_(x)[0]


@hookimpl
def zslbench_generators() -> list[type[FeatureGenerator]]:
    return [VAEGenerator]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [
        MethodSpec(
            "cada-vae",
            model="generative",
            components={"generator": "cada-vae"},
            preprocessor="minmax",
            description="Cross- and distribution-aligned VAEs for images and attributes, softmax "
            "classifier on latent features (Schönfeld et al. 2019)",
            paper_name="CADA-VAE",
            citation="Schönfeld, Ebrahimi, Sinha, Darrell, Akata. Generalized Zero- and Few-Shot "
            "Learning via Aligned Variational Autoencoders. CVPR 2019. Defaults: "
            "github.com/edgarschnfld/CADA-VAE-PyTorch model/single_experiment.py",
        )
    ]
