"""CADA-VAE: Schönfeld, Ebrahimi, Sinha, Darrell, Akata, "Generalized Zero- and Few-Shot Learning
via Aligned Variational Autoencoders", CVPR 2019. Official code: edgarschnfld/CADA-VAE-PyTorch
(commit 26f0085; paths below are relative to it, line numbers are those of that commit).

``fit``:

1. **VAE stage** (``stage("vae")``). Two VAEs, one for image features and one for class attributes,
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
2. **Classifier stage** (``stage("classifier")``). Latent training samples
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

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from zslbench import hyperparams as hp
from zslbench.errors import ConfigError, DataError
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.model import Model
from zslbench.progress import steps
from zslbench.stages import Stage, StagedModel
from zslbench_plugins.embedders import _to_tensor

#: Rows encoded per block when building the classifier's samples and scoring images: bounds the
#: device temporaries (a block of 2048-d images plus its 1560-d hidden layer) to ~60 MB.
_BLOCK_ROWS = 4096
#: Hyperparameters the VAE stage reads (besides the injected ``random_state`` and ``device``).
VAE_READS = ("latent_size", "image_encoder_hidden", "image_decoder_hidden",
             "attribute_encoder_hidden", "attribute_decoder_hidden", "epochs", "batch_size", "lr",
             "beta_factor", "beta_start", "beta_end", "cross_reconstruction_factor",
             "cross_reconstruction_start", "cross_reconstruction_end", "distance_factor",
             "distance_start", "distance_end", "noise")
#: Hyperparameters the classifier stage reads: changing only these reuses the fitted VAE.
CLASSIFIER_READS = ("seen_samples", "unseen_samples", "classifier_lr", "classifier_epochs",
                    "classifier_batch_size", "noise")
NOISES = ("official", "standard")


# --------------------------------------------------------------------------------------------
# Loss terms and schedule (public: the tests check them against closed forms)
# --------------------------------------------------------------------------------------------

def warmup_factor(epoch: int, factor: float, start: int, end: int) -> float:
    """A loss weight's warm-up (``model/vaemodel.py:163-173``): 0 up to epoch ``start``, rising
    linearly to ``factor`` at epoch ``end``, then constant."""
    f = (epoch - start) / (end - start) * factor
    return float(min(max(f, 0.0), factor))


def gaussian_kl(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """``KL(N(mu, diag(exp(logvar))) || N(0, I))`` summed over every row and dimension
    (the official ``-KLD``, ``model/vaemodel.py:147``)."""
    return -0.5 * torch.sum(1.0 + logvar - mu.pow(2) - logvar.exp())


def wasserstein_distance(mu1: torch.Tensor, logvar1: torch.Tensor, mu2: torch.Tensor,
                         logvar2: torch.Tensor) -> torch.Tensor:
    """The 2-Wasserstein distance between diagonal Gaussians, row by row, summed over rows
    (``model/vaemodel.py:153-156``): ``sqrt(||mu1 - mu2||^2 + ||sigma1 - sigma2||^2)`` with
    ``sigma = exp(logvar / 2)`` (the Frobenius norm of the difference of the covariances' square
    roots, for diagonal covariances)."""
    d2 = (mu1 - mu2).pow(2).sum(dim=1) + (torch.exp(0.5 * logvar1) - torch.exp(0.5 * logvar2)
                                          ).pow(2).sum(dim=1)
    return torch.sqrt(d2).sum()


def cross_reconstruction_loss(x: torch.Tensor, a: torch.Tensor, x_from_a: torch.Tensor,
                              a_from_x: torch.Tensor) -> torch.Tensor:
    """Each modality decoded from the other's latent sample, summed L1 error
    (``model/vaemodel.py:137-141``)."""
    return F.l1_loss(x_from_a, x, reduction="sum") + F.l1_loss(a_from_x, a, reduction="sum")


def sample_latent(mu: torch.Tensor, logvar: torch.Tensor, generator: torch.Generator,
                  noise: str) -> torch.Tensor:
    """A noisy latent sample. ``"official"``: ``mu + exp(logvar) * eps`` with one ``eps`` per row
    (``model/vaemodel.py:92-97``); ``"standard"``: ``mu + exp(logvar / 2) * eps``, ``eps`` per
    entry."""
    if noise == "official":
        eps = torch.randn(mu.shape[0], 1, generator=generator, device=mu.device, dtype=mu.dtype)
        return mu + torch.exp(logvar) * eps
    eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
    return mu + torch.exp(0.5 * logvar) * eps


def vae_loss(img: torch.Tensor, att: torch.Tensor,
             image_posterior: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
             attribute_posterior: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
             image_decoder: nn.Module, attribute_decoder: nn.Module, beta: float, cross: float,
             distance: float) -> torch.Tensor:
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
        loss = (F.l1_loss(out_x[:b], img, reduction="sum")
                + F.l1_loss(out_a[:b], att, reduction="sum")
                + cross * cross_reconstruction_loss(img, att, out_x[b:], out_a[b:]))
    else:
        loss = (F.l1_loss(image_decoder(z_x), img, reduction="sum")
                + F.l1_loss(attribute_decoder(z_a), att, reduction="sum"))
    if beta > 0:
        loss = loss + beta * (gaussian_kl(mu_x, lv_x) + gaussian_kl(mu_a, lv_a))
    if distance > 0:
        loss = loss + distance * wasserstein_distance(mu_x, lv_x, mu_a, lv_a)
    return loss


# --------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------

def _xavier_linear(d_in: int, d_out: int, generator: torch.Generator) -> nn.Linear:
    """``nn.Linear`` initialised as the official ``weights_init`` (``model/models.py:6-11``):
    Xavier-uniform weights with gain 0.5, zero bias; drawn on the CPU from ``generator`` so the
    initialisation is the same on every device."""
    layer = nn.utils.skip_init(nn.Linear, d_in, d_out)
    bound = 0.5 * math.sqrt(6.0 / (d_in + d_out))
    with torch.no_grad():
        layer.weight.copy_(torch.empty(d_out, d_in, device="cpu").uniform_(-bound, bound, generator=generator))
        layer.bias.zero_()
    return layer


class Encoder(nn.Module):
    """Linear-ReLU, then the posterior's mean and log-variance (``model/models.py:18-57``). The
    two heads are stored as one layer of twice the width (one matrix product instead of two),
    each half initialised as its own ``Linear(hidden, latent)``."""

    def __init__(self, d_in: int, hidden: int, latent: int, generator: torch.Generator) -> None:
        super().__init__()
        self.hidden = _xavier_linear(d_in, hidden, generator)
        mu = _xavier_linear(hidden, latent, generator)
        logvar = _xavier_linear(hidden, latent, generator)
        self.heads = nn.utils.skip_init(nn.Linear, hidden, 2 * latent)
        with torch.no_grad():
            self.heads.weight.copy_(torch.cat([mu.weight, logvar.weight]))
            self.heads.bias.zero_()
        self.latent = latent

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.heads(F.relu(self.hidden(x)))
        return out[:, :self.latent], out[:, self.latent:]


class Decoder(nn.Module):
    """Linear-ReLU-Linear (``model/models.py:59-74``)."""

    def __init__(self, latent: int, hidden: int, d_out: int, generator: torch.Generator) -> None:
        super().__init__()
        self.hidden = _xavier_linear(latent, hidden, generator)
        self.out = _xavier_linear(hidden, d_out, generator)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.hidden(z)))


@dataclass
class _FittedVAE:
    image_encoder: Encoder
    attribute_encoder: Encoder
    image_decoder: Decoder
    attribute_decoder: Decoder
    loss_history: np.ndarray


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------

@dataclass
class _Context:
    """What both stages of one fit share: the checked inputs, the device, the four seeds and the
    class semantics on the device."""

    inputs: Any
    device: torch.device
    seeds: tuple[int, int, int, int]
    att: torch.Tensor


class CadaVAE(StagedModel):
    """CADA-VAE (see the module docstring for the method, the defaults' sources and the protocol
    differences).

    Parameters: ``latent_size``; ``image_encoder_hidden``, ``image_decoder_hidden``,
    ``attribute_encoder_hidden``, ``attribute_decoder_hidden``; ``epochs``, ``batch_size``, ``lr``
    (VAE); ``beta_factor``/``beta_start``/``beta_end``, ``cross_reconstruction_factor``/``_start``/
    ``_end``, ``distance_factor``/``_start``/``_end`` (warm-ups); ``seen_samples``,
    ``unseen_samples``, ``classifier_lr``, ``classifier_epochs``, ``classifier_batch_size``
    (classifier stage); ``noise`` (``"official"`` or ``"standard"`` reparameterisation);
    ``random_state``, ``device``.

    Fitted state: ``image_encoder_`` and ``classifier_`` (torch modules on ``device``),
    ``attribute_encoder_``, ``classes_``, ``seen_mask_``, ``vae_loss_history_`` (mean loss per
    image, per epoch), ``classifier_loss_history_`` (mean NLL per epoch).
    """

    name = "cada-vae"
    #: The official per-dataset classifier epochs for GZSL (SUN, CUB, AWA2, AWA1;
    #: ``model/single_experiment.py:70,90,100,80``), chosen among on the validation split. A refit
    #: that changes only classifier settings reuses the fitted VAE, so each candidate costs one
    #: classifier fit.
    search_space: ClassVar[dict[str, tuple[Any, ...]]] = {"classifier_epochs": (21, 23, 29, 33)}
    search_strategy: ClassVar[str] = "grid"
    stages: ClassVar[tuple[Stage, ...]] = (
        Stage("vae", reads=VAE_READS),
        Stage("classifier", reads=CLASSIFIER_READS, after=("vae",)),
    )

    def __init__(self, latent_size: int = 64, image_encoder_hidden: int = 1560,
                 image_decoder_hidden: int = 1660, attribute_encoder_hidden: int = 1450,
                 attribute_decoder_hidden: int = 665, epochs: int = 100, batch_size: int = 50,
                 lr: float = 0.00015, beta_factor: float = 0.25, beta_start: int = 0,
                 beta_end: int = 93, cross_reconstruction_factor: float = 2.37,
                 cross_reconstruction_start: int = 21, cross_reconstruction_end: int = 75,
                 distance_factor: float = 8.13, distance_start: int = 6, distance_end: int = 22,
                 seen_samples: int = 200, unseen_samples: int = 400, classifier_lr: float = 0.001,
                 classifier_epochs: int = 23, classifier_batch_size: int = 32,
                 noise: str = "official", random_state: int | None = None,
                 device: str = "cpu") -> None:
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
        self.seen_samples = seen_samples
        self.unseen_samples = unseen_samples
        self.classifier_lr = classifier_lr
        self.classifier_epochs = classifier_epochs
        self.classifier_batch_size = classifier_batch_size
        self.noise = noise
        self.random_state = random_state
        self.device = device

    # ---------------------------------------------------------------- parameters

    def check_params(self) -> None:
        who = self.name
        for p in ("latent_size", "image_encoder_hidden", "image_decoder_hidden",
                  "attribute_encoder_hidden", "attribute_decoder_hidden", "epochs", "batch_size",
                  "seen_samples", "unseen_samples", "classifier_epochs",
                  "classifier_batch_size"):
            hp.integer(who, p, getattr(self, p), 1)
        hp.real(who, "lr", self.lr)
        hp.real(who, "classifier_lr", self.classifier_lr)
        for term in ("beta", "cross_reconstruction", "distance"):
            hp.real(who, f"{term}_factor", getattr(self, f"{term}_factor"), allow_low=True)
            start = hp.integer(who, f"{term}_start", getattr(self, f"{term}_start"), 0)
            end = hp.integer(who, f"{term}_end", getattr(self, f"{term}_end"), 0)
            if end <= start:
                raise ConfigError(f"{who}.{term}_end={end} must be greater than "
                                  f"{who}.{term}_start={start}",
                                  hint=f"the warm-up rises from {term}_start to {term}_end")
        hp.choice(who, "noise", self.noise, NOISES)
        hp.seed(who, self.random_state)
        hp.torch_device(who, self.device)

    def _seeds(self) -> tuple[int, int, int, int]:
        """Four independent seeds (VAE init, VAE batches/noise, classifier init, classifier
        samples/batches) from ``random_state``; fresh entropy when it is None."""
        seq = np.random.SeedSequence(self.random_state)
        s = seq.generate_state(4, dtype=np.uint64)
        return tuple(int(v) & (2**63 - 1) for v in s)  # type: ignore[return-value]

    # ---------------------------------------------------------------- fit

    def begin_fit(self, inputs: Any) -> _Context:
        if not inputs.seen_mask.any():
            raise DataError(f"{self.name}: no training image", hint="pass the training images")
        device = hp.torch_device(self.name, self.device)
        if device.type == "cuda" and device.index is None:
            # Generators and tensors must name the same device: "cuda" -> "cuda:<current>".
            device = torch.device("cuda", torch.cuda.current_device())
        att = torch.as_tensor(inputs.class_semantics, dtype=torch.float32, device=device)
        return _Context(inputs, device, self._seeds(), att)

    def fit_vae(self, ctx: _Context) -> tuple[torch.Tensor, torch.Tensor, _FittedVAE]:
        """The training tensors and the fitted VAE (the tensors are kept with it, so that a
        search's refits do not convert the features again)."""
        x = _to_tensor(ctx.inputs.features, ctx.device)
        if not bool(torch.isfinite(x).all()):
            raise DataError(f"{self.name}: the training features contain NaN or inf",
                            hint="fix the feature file")
        y = torch.as_tensor(ctx.inputs.y, device=ctx.device)
        return x, y, self._fit_vae(x, y, ctx.att, ctx.seeds[0], ctx.seeds[1], ctx.device)

    def fit_classifier(self, ctx: _Context, vae: tuple[torch.Tensor, torch.Tensor, _FittedVAE]
                       ) -> tuple[nn.Linear, np.ndarray]:
        x, _, fitted = vae
        return self._fit_classifier(x, ctx.inputs.y, ctx.att, ctx.inputs.seen_mask, fitted,
                                    ctx.seeds[2], ctx.seeds[3], ctx.device)

    def end_fit(self, ctx: _Context, outputs: Any) -> None:
        vae = outputs["vae"][2]
        clf, history = outputs["classifier"]
        self.image_encoder_ = vae.image_encoder
        self.attribute_encoder_ = vae.attribute_encoder
        self.classifier_ = clf
        self.vae_loss_history_ = vae.loss_history
        self.classifier_loss_history_ = history
        self.classes_ = ctx.inputs.classes
        self.seen_mask_ = ctx.inputs.seen_mask
        self.n_features_in_ = int(ctx.inputs.features.shape[1])

    def _fit_vae(self, x: torch.Tensor, y: torch.Tensor, att: torch.Tensor, init_seed: int,
                 train_seed: int, device: torch.device) -> _FittedVAE:
        g_init = torch.Generator().manual_seed(init_seed)
        g = torch.Generator(device=device).manual_seed(train_seed)
        k = int(self.latent_size)
        enc_x = Encoder(x.shape[1], int(self.image_encoder_hidden), k, g_init).to(device)
        enc_a = Encoder(att.shape[1], int(self.attribute_encoder_hidden), k, g_init).to(device)
        dec_x = Decoder(k, int(self.image_decoder_hidden), x.shape[1], g_init).to(device)
        dec_a = Decoder(k, int(self.attribute_decoder_hidden), att.shape[1], g_init).to(device)
        modules = (enc_x, enc_a, dec_x, dec_a)
        params = [p for m in modules for p in m.parameters()]
        # model/vaemodel.py:84
        optimiser = torch.optim.Adam(params, lr=float(self.lr), betas=(0.9, 0.999), eps=1e-8,
                                     weight_decay=0, amsgrad=True, fused=True)
        n, bs = x.shape[0], int(self.batch_size)
        per_epoch = -(-n // bs)  # model/vaemodel.py:211: range(0, ntrain, batch_size)
        epochs = int(self.epochs)
        history = torch.zeros(epochs, dtype=torch.float64, device=device)
        noise = self.noise
        for m in modules:
            m.train()
        with steps("cada-vae epochs", epochs) as advance:
            for epoch in range(epochs):
                beta = warmup_factor(epoch, float(self.beta_factor), int(self.beta_start),
                                     int(self.beta_end))
                cross = warmup_factor(epoch, float(self.cross_reconstruction_factor),
                                      int(self.cross_reconstruction_start),
                                      int(self.cross_reconstruction_end))
                dist = warmup_factor(epoch, float(self.distance_factor),
                                     int(self.distance_start), int(self.distance_end))
                total = torch.zeros((), dtype=torch.float64, device=device)
                count = 0
                for _ in range(per_epoch):
                    idx = torch.randperm(n, generator=g, device=device)[:bs]
                    img, a = x[idx], att[y[idx]]
                    mu_x, lv_x = enc_x(img)
                    mu_a, lv_a = enc_a(a)
                    z_x = sample_latent(mu_x, lv_x, g, noise)
                    z_a = sample_latent(mu_a, lv_a, g, noise)
                    loss = vae_loss(img, a, (mu_x, lv_x, z_x), (mu_a, lv_a, z_a), dec_x, dec_a,
                                    beta, cross, dist)
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
        return _FittedVAE(enc_x, enc_a, dec_x, dec_a, history.cpu().numpy())

    def _fit_classifier(self, x: torch.Tensor, y: np.ndarray, att: torch.Tensor,
                        seen_mask: np.ndarray, vae: _FittedVAE, init_seed: int, train_seed: int,
                        device: torch.device) -> tuple[nn.Linear, np.ndarray]:
        g_init = torch.Generator().manual_seed(init_seed)
        g = torch.Generator(device=device).manual_seed(train_seed)
        z, t = self._latent_samples(x, y, att, seen_mask, vae, g, device)
        clf = _xavier_linear(z.shape[1], len(seen_mask), g_init).to(device)
        # model/final_classifier.py:137
        optimiser = torch.optim.Adam(clf.parameters(), lr=float(self.classifier_lr),
                                     betas=(0.5, 0.999), fused=True)
        n = z.shape[0]
        bs = min(int(self.classifier_batch_size), n)
        n_batches = n // bs  # DataLoader(drop_last=True), model/final_classifier.py:234
        epochs = int(self.classifier_epochs)
        history = torch.zeros(epochs, dtype=torch.float64, device=device)
        with steps("cada-vae classifier epochs", epochs) as advance:
            for epoch in range(epochs):
                order = torch.randperm(n, generator=g, device=device)[:n_batches * bs]
                batches = order.view(n_batches, bs)
                total = torch.zeros((), dtype=torch.float64, device=device)
                for i in range(n_batches):
                    rows = batches[i]
                    loss = F.cross_entropy(clf(z[rows]), t[rows])
                    optimiser.zero_grad(set_to_none=True)
                    loss.backward()
                    optimiser.step()
                    total += loss.detach()
                history[epoch] = total / n_batches
                advance()
        clf.requires_grad_(False)
        return clf, history.cpu().numpy()

    def _latent_samples(self, x: torch.Tensor, y: np.ndarray, att: torch.Tensor,
                        seen_mask: np.ndarray, vae: _FittedVAE, g: torch.Generator,
                        device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """The classifier's training set (``model/vaemodel.py:336-405``): ``seen_samples`` noisy
        encodings of each seen class's images (taken in order, repeated cyclically) and
        ``unseen_samples`` noisy encodings of each unseen class's attributes."""
        rows, row_labels = [], []
        for c in np.flatnonzero(seen_mask):
            members = np.flatnonzero(y == c)
            rows.append(np.resize(members, int(self.seen_samples)))
            row_labels.append(np.full(int(self.seen_samples), c))
        seen_rows = torch.as_tensor(np.concatenate(rows), device=device)
        unseen = np.flatnonzero(~seen_mask)
        parts, labels = [], [np.concatenate(row_labels)]
        with torch.no_grad():
            for start in range(0, len(seen_rows), _BLOCK_ROWS):
                mu, lv = vae.image_encoder(x[seen_rows[start:start + _BLOCK_ROWS]])
                parts.append(sample_latent(mu, lv, g, self.noise))
            if len(unseen):
                mu, lv = vae.attribute_encoder(att[torch.as_tensor(unseen, device=device)])
                reps = int(self.unseen_samples)
                mu = mu.repeat_interleave(reps, dim=0)
                lv = lv.repeat_interleave(reps, dim=0)
                parts.append(sample_latent(mu, lv, g, self.noise))
                labels.append(np.repeat(unseen, reps))
        z = torch.cat(parts)
        t = torch.as_tensor(np.concatenate(labels), dtype=torch.int64, device=device)
        return z, t

    # ---------------------------------------------------------------- scores

    def decision_function(self, features: np.ndarray) -> np.ndarray:
        """Log-probabilities (m, c) of the classifier on the posterior means, columns in the order
        of ``classes_``; computed on ``device`` block by block (so an image's scores never depend
        on the others)."""
        if not hasattr(self, "classifier_"):
            raise RuntimeError("CadaVAE.decision_function called before fit")
        if not hasattr(features, "ndim") or features.ndim != 2 \
                or features.shape[1] != self.n_features_in_:
            raise DataError(f"{self.name}: features must be (images x {self.n_features_in_}), got "
                            f"shape {getattr(features, 'shape', None)}",
                            hint="score features of the kind the model was fitted on")
        device = self.classifier_.weight.device
        out = np.empty((features.shape[0], len(self.classes_)), dtype=np.float32)
        with torch.no_grad():
            for start in range(0, features.shape[0], _BLOCK_ROWS):
                block = _to_tensor(features[start:start + _BLOCK_ROWS], device)
                mu, _ = self.image_encoder_(block)
                scores = torch.log_softmax(self.classifier_(mu), dim=1)
                out[start:start + block.shape[0]] = scores.cpu().numpy()
        return out


@hookimpl
def zslbench_models() -> list[type[Model]]:
    return [CadaVAE]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [MethodSpec(
        "cada-vae", model="cada-vae", preprocessor="minmax",
        description="Cross- and distribution-aligned VAEs for images and attributes, softmax "
                    "classifier on latent features (Schönfeld et al. 2019)",
        paper_name="CADA-VAE",
        citation="Schönfeld, Ebrahimi, Sinha, Darrell, Akata. Generalized Zero- and Few-Shot "
                 "Learning via Aligned Variational Autoencoders. CVPR 2019. Defaults: "
                 "github.com/edgarschnfld/CADA-VAE-PyTorch model/single_experiment.py")]
