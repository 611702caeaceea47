"""CNZSL: class normalization for zero-shot learning (Skorokhodov & Elhoseiny, ICLR 2021).

Skorokhodov & Elhoseiny, "Class normalization for (continual)? generalized zero-shot learning",
ICLR 2021 (arXiv 2006.11328); official code https://github.com/universome/class-norm at 0a4cdd6.
The paper's README sends ZSL users to the notebook ``class-norm-for-czsl.ipynb`` ("it contains the
code to reproduce our results"); its code cell 6 (cited below as ``nb:LINE``, lines of that cell)
is what this module reproduces. ``configs/zsl.yml`` + ``src/models/attrs_head.py`` (the firelab
trainer ``src/trainers/zsl_trainer.py``) hold the same hyperparameters, with no per-dataset
override (``hp: {}`` for every dataset, zsl.yml:58-91).

The method: an MLP maps each class's attribute vector to a classifier weight (a "prototype") in
feature space, and an image's score for a class is the cosine of the two, times a scale::

    a_c  = sqrt(k) a_c / ||a_c||                                   (attributes, nb:32)
    h_c  = CN(ReLU(CN(W_2 ReLU(W_1 a_c + b_1) + b_2)))             (nb:90-101)
    p_c  = ReLU(W_3 h_c + b_3)                                     (prototype, in R^d)
    s(x, c) = scale^2 <x / ||x||, p_c / ||p_c||>                   (nb:110-112)

trained by softmax cross-entropy over the seen classes (nb:130-131). CN, class normalization
(the paper's "class standardization", eq. 9; nb:50-83), standardises every hidden unit over the
*classes*: in training the statistics are those of the seen classes' hidden vectors of the current
forward pass, and running averages of them (momentum 0.1) are used at inference, so that an unseen
class never enters the statistics (nb:79-81). See :func:`class_normalize`.

Defaults (all from the official code; none is dataset-specific there):

=================  ========  =============================================================
hid_dim            1024      nb:119 ``CNZSLModel(attrs.shape[1], 1024, ...)``; zsl.yml:28
epochs             50        nb:124 ``range(50)``; zsl.yml:17 ``max_num_epochs: 50`` (used when
                             fixed, ``--set model.epochs=50``; otherwise searched, below)
batch_size         256       nb:44 ``DataLoader(ds_train, batch_size=256, shuffle=True)``;
                             zsl.yml:19
lr                 5e-4      nb:120 ``Adam(..., lr=0.0005, weight_decay=0.0001)``; zsl.yml:49
weight_decay       1e-4      nb:120 (Adam's coupled L2); zsl.yml:49
lr_step, lr_decay  25, 0.1   nb:121 ``StepLR(optim, gamma=0.1, step_size=25)``, stepped once
                             per epoch (nb:136); zsl.yml:50
scale              5.0       nb:110-111 ``5 * x / x.norm(...)``, the same for prototypes;
                             zsl.yml:27
class_norm         "var"     nb:2 of cell 2 ``USE_CLASS_STANDARTIZATION = True``; nb:72/81
                             divide by ``var + 1e-5`` (see below); momentum 0.1 (nb:75-76),
                             unbiased variance (``Tensor.var``, nb:69), eps 1e-5 (nb:72)
proper_init        True      nb:3 of cell 2 ``USE_PROPER_INIT = True``, eq. 10: output weight
                             ~ U(+-sqrt(3 / (hid_dim d))) (nb:103-106); every other weight
                             and bias keeps PyTorch's default U(+-1/sqrt(fan_in))
attributes         l2 norm   each class's vector rescaled to norm sqrt(k) (nb:32;
                   sqrt(k)   attrs_head.py:20 with ``attrs_additional_scale: 1.0``)
features           raw       nb:16 uses the ResNet features as loaded
                             (zsl.yml:21 ``standardize_feats: false``): preprocessor ``none``
=================  ========  =============================================================

``class_norm="var"`` is the official code as written: ``(h - mean) / (var + 1e-5)`` (nb:72, 81),
dividing by the *variance*, where a standardization (the notebook's name for it, nb:52, and the
``nn.BatchNorm1d`` it says it is "conceptually equivalent" to, nb:53) divides by the standard
deviation; the notebook notes that BatchNorm "performs slightly worse" (nb:54) without saying
why. ``"std"`` is the standardization (``(h - mean) / sqrt(var + 1e-5)``), ``"none"`` the
notebook's ablation switch (``USE_CLASS_STANDARTIZATION = False``). The firelab trainer's
``AttrsHead`` (attrs_head.py:42-77) builds the same network with ``nn.BatchNorm1d`` layers in
place of the CN layers (the first with a learned affine, attrs_head.py:47); we follow the
notebook, the code the README points to for the paper's ZSL numbers.

Protocol differences from the official code (zslbench's protocol is the same for every method):

* The official notebook trains on trainval for a fixed 50 epochs and reports test numbers; the
  firelab trainer (zsl_trainer.py:93-109, ``val_ratio: 0`` in zsl.yml:18) uses the *test* set as
  its validation set and reports the test scores of the epoch of best test H (zsl_trainer.py:
  325-337). Here the number of epochs is the only searched hyperparameter (``search_space``, the
  analogue of that epoch choice: a fit stopped after ``k`` epochs is the same trajectory as the
  first ``k`` epochs of a longer one, since the learning-rate steps fall at fixed epochs), and the
  harness chooses it on the leak-free validation split, never on a test image.
* The official code calibrates by multiplying the seen-class logits by a hard-coded 0.95 (1.0 on
  CUB; nb:143, zsl_trainer.py:299). Here the model returns raw scores and the harness calibrates
  an additive seen-class penalty gamma on the validation split (Chao et al.).
* Its AUSUC (src/utils/metrics.py:93-148, off by default: zsl.yml:8) averages accuracy per *image*;
  zslbench's is per class (Chao et al.), like its A_U/A_S.

Speed: the features' normalisation does not depend on the parameters, so it is done once per fit
instead of once per batch; batches are drawn by indexing one tensor instead of collating a list
of arrays (nb:42-44); Adam runs fused (:func:`zslbench_plugins.optim.adam`); the matrix
products (the MLP's layers and the logits, forward and backward) run in oneDNN on the CPU
(:func:`zslbench_plugins.gemm.linear`; about twice MKL's rate on an AMD CPU with AVX-512, equal to
float rounding). The number and
content of the optimisation steps are the official ones. The search's epochs grid costs its largest
value once, not its sum (50 epochs, not 85): training is a stage that resumes on ``epochs``
(:mod:`zslbench.stages`), so a refit with more epochs on the same arrays continues the last one,
and returns bit for bit what a fresh fit of that count returns (the state it continues from holds
the random stream, Adam's moments and step, the learning-rate schedule and the CN running
statistics). Per epoch the cost is the prototype MLP over every seen class, forward and backward,
at every step: ``C (k h + h^2 + h d) 6`` FLOPs per batch, 12.6 GFLOP on SUN (C = 645); see
``benchmarks/profile_cnzsl.py``.
All randomness (initialisation, shuffling) comes from one ``torch.Generator`` seeded by
``random_state``, drawn on the CPU so that a seed gives the same run on every device; the global
RNG is never touched.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from zslbench import hyperparams as hp
from zslbench.errors import DataError
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.model import FitInputs, Model
from zslbench.progress import steps
from zslbench.stages import Stage, StagedModel
from zslbench_plugins.gemm import linear
from zslbench_plugins.optim import adam

#: The three modes of the CN layers (see the module docstring).
CLASS_NORMS = ("var", "std", "none")
#: Added to the variance before dividing (nb:72, 81).
CN_EPS = 1e-5
#: Weight of the current statistics in the running averages (nb:75-76).
CN_MOMENTUM = 0.1
#: Rows scored at once in ``decision_function`` (bounds its memory; every row is independent).
SCORE_CHUNK = 8192


def class_normalize(
    h: torch.Tensor, mean: torch.Tensor, var: torch.Tensor, mode: str
) -> torch.Tensor:
    """CN with given per-unit statistics: ``(h - mean) / (var + eps)`` for ``"var"`` (the
    official code), ``(h - mean) / sqrt(var + eps)`` for ``"std"`` (a standardization proper).
    ``h`` is (classes, units); ``mean`` and ``var`` are (units,)."""
    if mode == "var":
        return (h - mean) / (var + CN_EPS)
    return (h - mean) / torch.sqrt(var + CN_EPS)


class _ClassNorm(torch.nn.Module):
    """A CN layer: statistics over the classes (rows) in training, running averages in eval."""

    def __init__(self, units: int, mode: str, device: torch.device) -> None:
        super().__init__()
        self.mode = mode
        self.register_buffer("running_mean", torch.zeros(units, device=device))
        self.register_buffer("running_var", torch.ones(units, device=device))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.mode == "none":
            return h
        if self.training:
            mean = h.mean(dim=0)
            var = h.var(dim=0)  # unbiased, as nb:69
            with torch.no_grad():
                self.running_mean.mul_(1 - CN_MOMENTUM).add_(mean.detach(), alpha=CN_MOMENTUM)
                self.running_var.mul_(1 - CN_MOMENTUM).add_(var.detach(), alpha=CN_MOMENTUM)
            return class_normalize(h, mean, var, self.mode)
        return class_normalize(h, self.running_mean, self.running_var, self.mode)


class _AttributeNet(torch.nn.Module):
    """Attributes (classes, k) -> prototypes (classes, d), the network of nb:90-101."""

    def __init__(
        self,
        att_dim: int,
        hid_dim: int,
        feat_dim: int,
        class_norm: str,
        proper_init: bool,
        generator: torch.Generator,
        device: torch.device,
    ) -> None:
        super().__init__()
        self.fc1 = _linear(att_dim, hid_dim, generator, device)
        self.fc2 = _linear(hid_dim, hid_dim, generator, device)
        self.cn1 = _ClassNorm(hid_dim, class_norm, device)
        self.cn2 = _ClassNorm(hid_dim, class_norm, device)
        # eq. 10: Var[W] = 1 / (hid_dim * d), uniform (nb:103-106)
        bound = math.sqrt(3.0 / (hid_dim * feat_dim)) if proper_init else None
        self.fc3 = _linear(hid_dim, feat_dim, generator, device, weight_bound=bound)

    def forward(self, attributes: torch.Tensor) -> torch.Tensor:
        h = F.relu(_dense(self.fc1, attributes))
        h = self.cn2(F.relu(self.cn1(_dense(self.fc2, h))))
        return F.relu(_dense(self.fc3, h))


def _dense(layer: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)``, its products in oneDNN on the CPU (:mod:`zslbench_plugins.gemm`)."""
    return linear(x, layer.weight, layer.bias)


def _linear(
    d_in: int,
    d_out: int,
    generator: torch.Generator,
    device: torch.device,
    weight_bound: float | None = None,
) -> torch.nn.Linear:
    """``nn.Linear`` with PyTorch's default U(+-1/sqrt(d_in)) for weight and bias (or
    U(+-weight_bound) for the weight), drawn from ``generator`` on the CPU."""
    layer = torch.nn.utils.skip_init(torch.nn.Linear, d_in, d_out, device=device)
    default = 1.0 / math.sqrt(d_in)
    wb = default if weight_bound is None else weight_bound
    with torch.no_grad():
        layer.weight.copy_(
            torch.empty(d_out, d_in, device="cpu").uniform_(-wb, wb, generator=generator)
        )
        layer.bias.copy_(
            torch.empty(d_out, device="cpu").uniform_(-default, default, generator=generator)
        )
    return layer


def normalize_attributes(class_semantics: np.ndarray) -> np.ndarray:
    """Each class's attribute vector rescaled to l2 norm sqrt(k) (nb:32), float32. Row by row,
    so an unseen class's attributes never affect another class's."""
    a = np.asarray(class_semantics, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    if (norms == 0).any():
        raise DataError(
            "cnzsl: a class has an all-zero attribute vector, which cannot be normalised",
            hint="check the dataset's attributes",
        )
    return (a / norms * math.sqrt(a.shape[1])).astype(np.float32)


def cosine_logits(x: torch.Tensor, prototypes: torch.Tensor, scale: float) -> torch.Tensor:
    """``<scale x/||x||, scale p/||p||>`` for every row of ``x`` and of ``prototypes`` (nb:110-112).
    A zero row (norm 0) scores 0 instead of NaN (``F.normalize``'s 1e-12 floor)."""
    return (scale * F.normalize(x, dim=1)) @ (scale * F.normalize(prototypes, dim=1)).T


class CNZSLModel(StagedModel):
    """Attribute-to-classifier MLP with class normalization and scaled cosine logits.

    Parameters (defaults and sources in the module docstring): ``hid_dim``, ``epochs``,
    ``batch_size``, ``lr``, ``weight_decay``, ``lr_step`` (epochs between learning-rate decays),
    ``lr_decay``, ``scale``, ``class_norm`` (``"var"``, ``"std"`` or ``"none"``), ``proper_init``,
    ``random_state`` and ``device`` (injected by the harness).

    Fitted state: ``prototypes_`` (c, d) float32, the unit-norm prototype of every class of
    ``classes_`` (in that order), computed once at the end of ``fit`` with the CN running
    statistics; ``seen_mask_``; ``loss_history_`` (mean training loss of each epoch);
    ``random_state_`` (the seed used).

    One stage, ``cnzsl_train`` (its wall time is reported under that name), resumable on
    ``epochs`` (module docstring, "Speed").
    """

    name = "cnzsl"
    #: The official firelab trainer keeps the epoch of best *test* H (zsl_trainer.py:325-337);
    #: here the harness picks the number of epochs on the validation split. 10..50 spans early
    #: stopping before, at and after the learning-rate step at epoch 25 (nb:121).
    search_space: ClassVar[dict[str, tuple[int, ...]]] = {"epochs": (10, 25, 50)}
    search_strategy: ClassVar[str] = "grid"

    def __init__(
        self,
        hid_dim: int = 1024,
        epochs: int = 50,
        batch_size: int = 256,
        lr: float = 5e-4,
        weight_decay: float = 1e-4,
        lr_step: int = 25,
        lr_decay: float = 0.1,
        scale: float = 5.0,
        class_norm: str = "var",
        proper_init: bool = True,
        random_state: int | None = None,
        device: str = "cpu",
    ) -> None:
        self.hid_dim = hid_dim
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.lr_step = lr_step
        self.lr_decay = lr_decay
        self.scale = scale
        self.class_norm = class_norm
        self.proper_init = proper_init
        self.random_state = random_state
        self.device = device

    def check_params(self) -> None:
        who = self.name
        hp.integer(who, "hid_dim", self.hid_dim, 1)
        hp.integer(who, "epochs", self.epochs, 1)
        hp.integer(who, "batch_size", self.batch_size, 1)
        hp.real(who, "lr", self.lr)
        hp.real(who, "weight_decay", self.weight_decay, allow_low=True)
        hp.integer(who, "lr_step", self.lr_step, 1)
        hp.real(who, "lr_decay", self.lr_decay, high=1.0)
        hp.real(who, "scale", self.scale)
        hp.choice(who, "class_norm", self.class_norm, CLASS_NORMS)
        hp.boolean(who, "proper_init", self.proper_init)
        hp.seed(who, self.random_state)
        hp.torch_device(who, self.device)

    # -- fitting ------------------------------------------------------------------------------
    stages: ClassVar[tuple[Stage, ...]] = (
        # a refit with more epochs continues the cached training (see ``fit_cnzsl_train``)
        Stage(
            "cnzsl_train",
            reads=(
                "hid_dim",
                "epochs",
                "batch_size",
                "lr",
                "weight_decay",
                "lr_step",
                "lr_decay",
                "scale",
                "class_norm",
                "proper_init",
            ),
            resumes="epochs",
        ),
    )

    def begin_fit(self, inputs: FitInputs) -> FitInputs:
        if len(inputs.seen_columns) < 2:
            raise DataError(
                f"cnzsl: the training labels hold {len(inputs.seen_columns)} class; class "
                "normalization and a softmax need at least two",
                hint="check the split: every training set has two or more seen classes",
            )
        return inputs

    def fit_cnzsl_train(
        self, inp: FitInputs, resume: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """``epochs`` epochs from the seeded initialisation, or from ``resume`` (the state after
        fewer epochs, left unmodified): the same steps either way, since the state carries the
        random stream, Adam's moments, the learning-rate schedule and the CN running
        statistics. Why: the search's epochs grid (10, 25, 50) then costs 50 epochs, not 85."""
        device = hp.torch_device(self.name, self.device)
        seen_cols = inp.seen_columns
        # Training targets: the position of each label among the seen classes (nb:39).
        to_seen = np.full(len(inp.classes), -1, dtype=np.int64)
        to_seen[seen_cols] = np.arange(len(seen_cols))
        y = torch.from_numpy(to_seen[inp.y]).to(device)
        # The features' normalisation does not depend on the parameters: done once, not per batch.
        x = _features_tensor(inp.features, device)
        if not bool(torch.isfinite(x).all()):
            raise DataError(
                "cnzsl: the training features contain NaN or inf", hint="fix the feature file"
            )
        x_ns = float(self.scale) * F.normalize(x, dim=1)
        del x
        att = torch.from_numpy(normalize_attributes(inp.class_semantics)).to(device)
        att_seen = att[torch.from_numpy(seen_cols).to(device)]
        epochs = int(self.epochs)

        if resume is None:
            seed = (
                int(self.random_state)
                if self.random_state is not None
                else int(np.random.SeedSequence().entropy % (2**63))
            )
            generator = torch.Generator().manual_seed(seed)
            net = _AttributeNet(
                att.shape[1],
                int(self.hid_dim),
                x_ns.shape[1],
                self.class_norm,
                bool(self.proper_init),
                generator,
                device,
            )
            done = 0
        else:
            seed, done = resume["seed"], resume["epochs"]
            generator = torch.Generator().set_state(resume["generator"])
            net = copy.deepcopy(resume["net"])
        optimiser = adam(net.parameters(), float(self.lr), weight_decay=float(self.weight_decay))
        scheduler = torch.optim.lr_scheduler.StepLR(
            optimiser, step_size=int(self.lr_step), gamma=float(self.lr_decay)
        )
        history = torch.zeros(epochs, dtype=torch.float32, device=device)
        if resume is not None:
            # copies: loading shares the state's tensors, which the fused step updates in place
            optimiser.load_state_dict(copy.deepcopy(resume["optimiser"]))
            scheduler.load_state_dict(copy.deepcopy(resume["scheduler"]))
            history[:done] = resume["history"]
        n, bs, scale = x_ns.shape[0], int(self.batch_size), float(self.scale)
        net.train()
        with steps("epochs", epochs) as step:
            if done:
                step(done)
            for epoch in range(done, epochs):
                order = torch.randperm(n, generator=generator, device="cpu").to(
                    device
                )  # shuffle=True, nb:44
                for start in range(0, n, bs):
                    idx = order[start : start + bs]
                    protos = net(att_seen)
                    logits = linear(x_ns[idx], scale * F.normalize(protos, dim=1))
                    loss = F.cross_entropy(logits, y[idx])
                    optimiser.zero_grad(set_to_none=True)
                    loss.backward()
                    optimiser.step()
                    history[epoch] += loss.detach() * len(idx)
                scheduler.step()
                step()
        net.eval()
        with torch.no_grad():
            prototypes = F.normalize(net(att), dim=1)
        net.train()
        return {
            "seed": seed,
            "epochs": epochs,
            "net": net,
            "optimiser": optimiser.state_dict(),
            "scheduler": scheduler.state_dict(),
            "generator": generator.get_state(),
            "history": history,
            "prototypes": prototypes.cpu().numpy(),
            "n": n,
        }

    def end_fit(self, context: FitInputs, outputs: Mapping[str, Any]) -> None:
        train = outputs["cnzsl_train"]
        self.prototypes_ = train["prototypes"].copy()  # a copy: the cached output stays as is
        self.classes_ = context.classes
        self.seen_mask_ = context.seen_mask
        self.loss_history_ = (train["history"] / train["n"]).cpu().numpy()
        self.random_state_ = train["seed"]

    def decision_function(self, features: np.ndarray) -> np.ndarray:
        """``scale^2 cos(x, p_c)`` (float64, one column per class of ``classes_``)."""
        if not hasattr(self, "prototypes_"):
            raise RuntimeError("CNZSLModel.decision_function called before fit")
        features = np.asarray(features)
        if features.ndim != 2 or features.shape[1] != self.prototypes_.shape[1]:
            raise DataError(
                f"cnzsl: features have shape {features.shape}, expected (n, "
                f"{self.prototypes_.shape[1]})",
                hint="score the features it was fit on",
            )
        device = hp.torch_device(self.name, self.device)
        protos = torch.from_numpy(self.prototypes_).to(device)
        out = np.empty((features.shape[0], protos.shape[0]), dtype=np.float64)
        with torch.no_grad():
            for start in range(0, features.shape[0], SCORE_CHUNK):
                x = _features_tensor(features[start : start + SCORE_CHUNK], device)
                s = cosine_logits(x, protos, float(self.scale))
                out[start : start + SCORE_CHUNK] = s.cpu().numpy()
        return out


def _features_tensor(features: np.ndarray, device: torch.device) -> torch.Tensor:
    """float32 tensor on ``device``; a read-only array is copied (``torch.from_numpy`` cannot
    share it), so the caller's array is never written."""
    arr = np.ascontiguousarray(features, dtype=np.float32)
    if not arr.flags.writeable:
        arr = arr.copy()
    return torch.from_numpy(arr).to(device)


@hookimpl
def zslbench_models() -> list[type[Model]]:
    return [CNZSLModel]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [
        MethodSpec(
            "cnzsl",
            model="cnzsl",
            preprocessor="none",
            description="Attribute-to-classifier MLP with class normalization and scaled cosine "
            "logits (Skorokhodov & Elhoseiny, ICLR 2021)",
            paper_name="CN-ZSL",
            citation="Skorokhodov & Elhoseiny, Class normalization for (continual)? generalized "
            "zero-shot learning, ICLR 2021; defaults from github.com/universome/class-norm "
            "(class-norm-for-czsl.ipynb, configs/zsl.yml)",
        )
    ]
