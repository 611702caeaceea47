"""The generative family's shared base: a ``generator`` component kind, and one model that owns
everything else a generative GZSL method does.

A generative method (f-CLSWGAN, CADA-VAE, TF-VAEGAN, FREE, CE-GZSL, HSVA, SDGZSL) learns to synthesise features
of a class from its attributes, then trains a softmax classifier over *all* candidate classes on
real seen features plus synthetic unseen ones, and scores images with it. Only the first part
differs between methods. So a method is a :class:`FeatureGenerator` (its networks and losses,
registered through the ``zslbench_generators`` hook that this module adds with
``zslbench_add_kinds``), and :class:`GenerativeModel` (model ``"generative"``) does the rest:

* seeds: one stream for the generator stage and one for the classifier stage, both from
  ``random_state``, so that a search that reuses the generator gives exactly a full refit's numbers;
* staged fitting (:mod:`zslbench.stages`): stage ``generator`` reads the generator component (its
  every hyperparameter, through its ``repr``), stage ``classifier`` reads the classifier's; the
  search over classifier settings trains the generator once;
* the GZSL classifier stage (:func:`train_softmax`): a linear softmax trained by Adam on the NLL of
  real seen features (all of them, or ``seen_num`` per class) and ``syn_num`` synthetic features per
  unseen class, both mapped to the classifier's space by the generator (``embed_train``,
  ``synthesise``); scores are the log-probabilities of ``embed(x)``;
* the selection audit's checkpoints: the classifier's weights after every epoch, so that the
  harness can score each on test *after* the clean evaluation (``zslbench.protocol``) and measure
  what the official codes' "best test H over epochs" adds.

Each generator declares the official settings of its paper's GZSL classifier
(``classifier_defaults``) and what the harness searches on validation (``classifier_search``); the
model's classifier hyperparameters default to None, meaning "the generator's official value", and a
value given with ``--set model.PARAM=...`` is used instead (and not searched). Every record holds the
values that ran (``config.components.model.resolved``, :meth:`GenerativeModel.resolved_params`).

One copy of the helpers every generative method needs: :func:`seeded_linear`,
:func:`permutation_stream`, :func:`train_softmax`, and :func:`adam` (re-exported from
:mod:`zslbench_plugins.optim`, which CN-ZSL shares).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from zslbench import hyperparams as hp
from zslbench.components import Component
from zslbench.errors import DataError
from zslbench.hookspecs import Kind, hookimpl
from zslbench.model import Model
from zslbench.progress import steps
from zslbench.stages import Stage, StagedModel
from zslbench_plugins.optim import adam

#: Rows per block when embedding, synthesising or scoring: bounds device temporaries (a block of
#: 2048-d features and a 4096-unit hidden layer) to ~200 MB.
BLOCK_ROWS = 8192
INITS = ("normal", "xavier")
BATCHINGS = ("stream", "reshuffle")
#: The classifier settings a generator must declare (``classifier_defaults``).
CLASSIFIER_PARAMS = (
    "syn_num",
    "seen_num",
    "classifier_lr",
    "classifier_beta1",
    "classifier_epochs",
    "classifier_batch_size",
    "classifier_init",
    "classifier_batches",
)


# --------------------------------------------------------------------------------------------
# Helpers (one copy for the family)
# --------------------------------------------------------------------------------------------


def init_and_train_generators(
    seed: int, device: torch.device
) -> tuple[torch.Generator, torch.Generator]:
    """Two independent streams of ``seed``: one (on the CPU) for initialising weights, one (on
    ``device``) for the training draws, so that a change in how many numbers initialisation
    draws never shifts the training noise."""
    init_seed, train_seed = (
        int(s) & (2**63 - 1) for s in np.random.SeedSequence(seed).generate_state(2, np.uint64)
    )
    return torch.Generator().manual_seed(init_seed), torch.Generator(device=device).manual_seed(
        train_seed
    )


def seeded_linear(
    n_in: int, n_out: int, device: torch.device, gen: torch.Generator, init: str = "normal"
) -> nn.Linear:
    """``nn.Linear`` initialised from ``gen`` only (``skip_init`` keeps PyTorch's default
    initialisation off the global RNG), bias 0. ``"normal"``: weights ~ N(0, 0.02), the
    ``weights_init`` of f-CLSWGAN (``util.py:8-12``), TF-VAEGAN and FREE; ``"xavier"``:
    Xavier-uniform with gain 0.5, CADA-VAE's (``model/models.py:6-11``)."""
    layer = torch.nn.utils.skip_init(nn.Linear, n_in, n_out, device=device)
    with torch.no_grad():
        if init == "normal":
            layer.weight.normal_(0.0, 0.02, generator=gen)
        else:
            bound = 0.5 * math.sqrt(6.0 / (n_in + n_out))
            layer.weight.uniform_(-bound, bound, generator=gen)
        layer.bias.zero_()
    return layer


def permutation_stream(
    n: int, batch_size: int, n_steps: int, gen: torch.Generator, device: torch.device
) -> torch.Tensor:
    """(n_steps, batch_size) indices: consecutive batches of a stream of random permutations of
    ``range(n)`` — the official ``CLASSIFIER.next_batch`` of f-CLSWGAN (``classifier.py:63-95``)
    and its descendants, which completes an epoch's last partial batch with the head of the next
    permutation."""
    total = n_steps * batch_size
    perms = [torch.randperm(n, generator=gen, device=device) for _ in range(-(-total // n))]
    return torch.cat(perms)[:total].view(n_steps, batch_size)


def train_softmax(
    x: torch.Tensor,
    y: torch.Tensor,
    n_classes: int,
    *,
    lr: float,
    beta1: float,
    epochs: int,
    batch_size: int,
    gen: torch.Generator,
    label: str,
    init: str = "normal",
    batches: str = "stream",
    checkpoints: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> nn.Linear:
    """A linear softmax classifier trained by Adam on the NLL; returns the layer (logits).

    ``batches="stream"``: ``epochs * ceil(n / batch_size)`` steps of exactly ``batch_size`` rows
    from a :func:`permutation_stream` (f-CLSWGAN's ``classifier.py``/``classifier2.py``, TF-VAEGAN,
    FREE); ``"reshuffle"``: a fresh permutation per epoch, the last incomplete batch dropped
    (CADA-VAE's ``DataLoader(shuffle=True, drop_last=True)``). ``checkpoints``, when given,
    receives a copy of ``(weight, bias)`` after every epoch (the selection audit).
    """
    layer = seeded_linear(x.shape[1], n_classes, x.device, gen, init)
    opt = adam(layer.parameters(), lr, beta1)
    n = len(x)
    if batches == "stream":
        per_epoch = -(-n // batch_size)
        order = permutation_stream(n, batch_size, epochs * per_epoch, gen, x.device)
    else:
        batch_size = min(batch_size, n)
        per_epoch = n // batch_size
    with steps(label, epochs) as step:
        for epoch in range(epochs):
            if batches == "stream":
                rows = order[epoch * per_epoch : (epoch + 1) * per_epoch]
            else:
                rows = torch.randperm(n, generator=gen, device=x.device)[
                    : per_epoch * batch_size
                ].view(per_epoch, batch_size)
            for idx in rows:
                loss = nn.functional.cross_entropy(layer(x[idx]), y[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            if checkpoints is not None:
                checkpoints.append((layer.weight.detach().clone(), layer.bias.detach().clone()))
            step()
    layer.requires_grad_(False)
    return layer


def blockwise(fn: Any, x: torch.Tensor, *args: Any) -> torch.Tensor:
    """``fn`` applied to ``x`` in blocks of :data:`BLOCK_ROWS` rows (no autograd), concatenated:
    the same rows as one call, with bounded temporaries. Extra ``args`` are passed through."""
    with torch.no_grad():
        return (
            torch.cat([fn(x[s : s + BLOCK_ROWS], *args) for s in range(0, len(x), BLOCK_ROWS)])
            if len(x)
            else fn(x, *args)
        )


# --------------------------------------------------------------------------------------------
# The generator kind
# --------------------------------------------------------------------------------------------


class FeatureGenerator(Component):
    """A component of kind ``generator``: a generative method's networks and losses.

    A subclass takes its hyperparameters as constructor keywords (the component contract) and
    implements:

    * ``fit(x, y, att, seen_columns, seed)``: train on the real training features ``x`` (float32,
      on the device), their class columns ``y`` (int64 into the rows of ``att``), the class
      semantics ``att`` (float32, one row per candidate class) and ``seen_columns`` (the rows of
      the classes with images); all randomness from ``seed``. Returns ``self``.
    * ``synthesise(att_rows, gen)``: one synthetic classifier-space feature per row of
      ``att_rows``, noise drawn from ``gen`` (no autograd needed).

    and may override ``embed(x)`` (classifier-space features of real images for scoring; default:
    the features themselves) and ``embed_train(x, gen)`` (of real training images; default
    ``embed``). Class attributes: ``classifier_defaults`` (every name of
    :data:`CLASSIFIER_PARAMS`: the official GZSL classifier of the method's paper or code, with
    sources in the docstring), ``classifier_search`` (the classifier settings searched on the
    leak-free validation split), and ``official_selection`` (how the official code picks its
    reported epoch, when it does so on test; the selection audit records it).
    """

    classifier_defaults: ClassVar[Mapping[str, Any]] = {}
    classifier_search: ClassVar[Mapping[str, tuple[Any, ...]]] = {}
    official_selection: ClassVar[str | None] = None

    def fit(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        att: torch.Tensor,
        seen_columns: torch.Tensor,
        seed: int,
    ) -> FeatureGenerator:
        raise NotImplementedError

    def synthesise(self, att_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        raise NotImplementedError

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def embed_train(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return self.embed(x)


@hookimpl
def zslbench_add_kinds() -> list[Kind]:
    return [
        Kind(
            "generator",
            "zslbench_generators",
            base=FeatureGenerator,
            doc="Feature generator classes (``FeatureGenerator``): a generative method's "
            "networks and losses; model ``generative`` trains the GZSL classifier on "
            "their synthetic features.",
        )
    ]


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


@dataclass
class _Context:
    """What both stages of one fit share: the checked inputs, tensors on the device, the two
    stage seeds and the classifier settings (the generator's official ones where not given)."""

    inputs: Any
    x: torch.Tensor
    y: torch.Tensor
    att: torch.Tensor
    generator_seed: int
    classifier_seed: int
    settings: dict[str, Any]


class GenerativeModel(StagedModel):
    """A generator (component) + a softmax GZSL classifier on real seen and synthetic unseen
    features (see the module docstring).

    Parameters: ``generator`` (a registered ``generator`` component; its hyperparameters are set
    as ``generator.PARAM``); the classifier's ``syn_num``, ``seen_num``, ``classifier_lr``,
    ``classifier_beta1``, ``classifier_epochs``, ``classifier_batch_size`` (None: ``syn_num``),
    ``classifier_init`` (``"normal"``/``"xavier"``), ``classifier_batches``
    (``"stream"``/``"reshuffle"``), each None for the generator's official value; ``random_state``,
    ``device``.

    Fitted state: ``generator_`` (the fitted generator), ``classifier_`` (``nn.Linear`` over
    ``classes_``), ``checkpoints_`` (the classifier's ``(weight, bias)`` after every epoch),
    ``classes_``, ``seen_mask_``, ``n_features_in_``.
    """

    name = "generative"
    components: ClassVar[dict[str, str]] = {"generator": "generator"}
    search_strategy: ClassVar[str] = "grid"
    stages: ClassVar[tuple[Stage, ...]] = (
        Stage("generator", reads=("generator",)),
        Stage("classifier", reads=CLASSIFIER_PARAMS, after=("generator",)),
    )

    def __init__(
        self,
        generator: FeatureGenerator,
        syn_num: int | None = None,
        seen_num: int | None = None,
        classifier_lr: float | None = None,
        classifier_beta1: float | None = None,
        classifier_epochs: int | None = None,
        classifier_batch_size: int | None = None,
        classifier_init: str | None = None,
        classifier_batches: str | None = None,
        random_state: int | None = None,
        device: str = "cpu",
    ) -> None:
        self.generator = generator
        self.syn_num = syn_num
        self.seen_num = seen_num
        self.classifier_lr = classifier_lr
        self.classifier_beta1 = classifier_beta1
        self.classifier_epochs = classifier_epochs
        self.classifier_batch_size = classifier_batch_size
        self.classifier_init = classifier_init
        self.classifier_batches = classifier_batches
        self.random_state = random_state
        self.device = device

    @classmethod
    def with_generator(cls, generator: type[FeatureGenerator], **params: Any) -> GenerativeModel:
        """A model from one flat set of hyperparameters, for scripts and tests: the generator's
        own go to ``generator``, the rest to the model (``with_generator(WGANGenerator, nepoch=5,
        syn_num=100, random_state=0)``)."""
        own = set(generator._param_names())
        return cls(
            generator(**{k: v for k, v in params.items() if k in own}),
            **{k: v for k, v in params.items() if k not in own},
        )

    @property
    def search_space(self) -> dict[str, tuple[Any, ...]]:  # type: ignore[override]
        """The generator's ``classifier_search``: the official classifier settings worth choosing
        on validation (its own hyperparameters' space comes under ``generator.``)."""
        return {k: tuple(v) for k, v in type(self.generator).classifier_search.items()}

    @property
    def selection_rule(self) -> str | None:
        """The official code's test-set selection (``FeatureGenerator.official_selection``); the
        harness audits it when set (``zslbench.protocol``)."""
        return type(self.generator).official_selection

    def _settings(self) -> dict[str, Any]:
        """Every classifier setting: the value given, else the generator's official default."""
        defaults = type(self.generator).classifier_defaults
        missing = [p for p in CLASSIFIER_PARAMS if p not in defaults]
        if missing:
            raise TypeError(
                f"{type(self.generator).__name__}.classifier_defaults lacks {', '.join(missing)}"
            )
        out = {
            p: getattr(self, p) if getattr(self, p) is not None else defaults[p]
            for p in CLASSIFIER_PARAMS
        }
        if out["classifier_batch_size"] is None:
            out["classifier_batch_size"] = out["syn_num"]
        return out

    def resolved_params(self) -> dict[str, Any]:
        """Every classifier setting as it runs (:meth:`_settings`): the harness records them under
        ``config.components.model.resolved`` (``zslbench.runner``), since the hyperparameters
        themselves say None for "the generator's official value"."""
        return self._settings()

    def check_params(self) -> None:
        who = self.name
        if not isinstance(self.generator, FeatureGenerator):
            raise TypeError(
                f"{who}: generator must be a FeatureGenerator, got {type(self.generator).__name__}"
            )
        self.generator.check_params()
        s = self._settings()
        for p in ("syn_num", "classifier_epochs", "classifier_batch_size"):
            hp.integer(who, p, s[p], 1)
        if s["seen_num"] is not None:
            hp.integer(who, "seen_num", s["seen_num"], 1)
        hp.real(who, "classifier_lr", s["classifier_lr"])
        hp.real(
            who,
            "classifier_beta1",
            s["classifier_beta1"],
            low=0.0,
            allow_low=True,
            high=1.0 - 1e-12,
        )
        hp.choice(who, "classifier_init", s["classifier_init"], INITS)
        hp.choice(who, "classifier_batches", s["classifier_batches"], BATCHINGS)
        hp.seed(who, self.random_state)
        hp.torch_device(who, self.device)

    def _seeds(self) -> tuple[int, int]:
        """Independent seeds of the generator stage and the classifier stage."""
        gen, cls = np.random.SeedSequence(self.random_state).spawn(2)
        return (
            int(gen.generate_state(1, np.uint64)[0] >> np.uint64(1)),
            int(cls.generate_state(1, np.uint64)[0] >> np.uint64(1)),
        )

    # -- fit ----------------------------------------------------------------------------------

    def begin_fit(self, inputs: Any) -> _Context:
        device = hp.torch_device(self.name, self.device)
        if device.type == "cuda" and device.index is None:
            # generators and tensors must name the same device: "cuda" -> "cuda:<current>"
            device = torch.device("cuda", torch.cuda.current_device())
        x = torch.tensor(np.asarray(inputs.features, dtype=np.float32), device=device)
        if not bool(torch.isfinite(x).all()):
            raise DataError(
                f"{self.generator.name}: the training features contain NaN or inf",
                hint="fix the feature file",
            )
        g_seed, c_seed = self._seeds()
        return _Context(
            inputs,
            x,
            torch.as_tensor(inputs.y, device=device),
            torch.tensor(inputs.class_semantics, dtype=torch.float32, device=device),
            g_seed,
            c_seed,
            self._settings(),
        )

    def fit_generator(self, ctx: _Context) -> FeatureGenerator:
        seen = torch.as_tensor(ctx.inputs.seen_columns, device=ctx.x.device)
        fitted = self.generator.clone().fit(ctx.x, ctx.y, ctx.att, seen, ctx.generator_seed)
        return fitted

    def fit_classifier(
        self, ctx: _Context, generator: FeatureGenerator
    ) -> tuple[nn.Linear, list[tuple[torch.Tensor, torch.Tensor]]]:
        s, device = ctx.settings, ctx.x.device
        gen = torch.Generator(device=device).manual_seed(ctx.classifier_seed)
        train_x, train_y = self._training_set(ctx, generator, s, gen)
        checkpoints: list[tuple[torch.Tensor, torch.Tensor]] = []
        layer = train_softmax(
            train_x,
            train_y,
            len(ctx.inputs.classes),
            lr=float(s["classifier_lr"]),
            beta1=float(s["classifier_beta1"]),
            epochs=int(s["classifier_epochs"]),
            batch_size=int(s["classifier_batch_size"]),
            gen=gen,
            label="classifier epochs",
            init=s["classifier_init"],
            batches=s["classifier_batches"],
            checkpoints=checkpoints,
        )
        return layer, checkpoints

    @staticmethod
    def _training_set(
        ctx: _Context, generator: FeatureGenerator, s: Mapping[str, Any], gen: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Real seen features (all, or ``seen_num`` per class: its images in order, repeated
        cyclically, as CADA-VAE's ``vaemodel.py:336-360``) in the classifier's space, then
        ``syn_num`` synthetic features per unseen class, grouped by class."""
        device = ctx.x.device
        if s["seen_num"] is None:
            rows, seen_y = None, ctx.y
        else:
            y = ctx.inputs.y
            rows_np = np.concatenate(
                [
                    np.resize(np.flatnonzero(y == c), int(s["seen_num"]))
                    for c in ctx.inputs.seen_columns
                ]
            )
            rows = torch.as_tensor(rows_np, device=device)
            seen_y = ctx.y[rows]
        real = ctx.x if rows is None else ctx.x[rows]
        parts = [blockwise(generator.embed_train, real, gen)]
        labels = [seen_y]
        unseen = torch.as_tensor(ctx.inputs.unseen_columns, device=device)
        if len(unseen):
            num = int(s["syn_num"])
            parts.append(
                blockwise(generator.synthesise, ctx.att[unseen].repeat_interleave(num, dim=0), gen)
            )
            labels.append(unseen.repeat_interleave(num))
        return torch.cat(parts), torch.cat(labels)

    def end_fit(self, ctx: _Context, outputs: Any) -> None:
        self.generator_ = outputs["generator"]
        self.classifier_, self.checkpoints_ = outputs["classifier"]
        self.classes_ = ctx.inputs.classes
        self.seen_mask_ = ctx.inputs.seen_mask
        self.n_features_in_ = int(ctx.x.shape[1])

    # -- scores -------------------------------------------------------------------------------

    def _check_features(self, features: Any) -> None:
        if not hasattr(self, "classifier_"):
            raise RuntimeError(f"{type(self).__name__}.decision_function called before fit")
        if getattr(features, "ndim", None) != 2 or features.shape[1] != self.n_features_in_:
            raise DataError(
                f"{self.generator.name}: features have shape "
                f"{getattr(features, 'shape', None)}, expected "
                f"(n, {self.n_features_in_})",
                hint="score features of the fitted kind",
            )

    def _scores(
        self, features: np.ndarray, layers: list[tuple[torch.Tensor, torch.Tensor]]
    ) -> Iterator[np.ndarray]:
        """Log-probabilities (float64) of each ``(weight, bias)`` in ``layers``, block by block:
        the images are embedded once per block, and no image's scores depend on another's."""
        self._check_features(features)
        device = self.classifier_.weight.device
        outs = [np.empty((len(features), len(self.classes_)), dtype=np.float64) for _ in layers]
        with torch.no_grad():
            for start in range(0, len(features), BLOCK_ROWS):
                block = torch.tensor(
                    np.asarray(features[start : start + BLOCK_ROWS], dtype=np.float32),
                    device=device,
                )
                z = self.generator_.embed(block)
                for out, (w, b) in zip(outs, layers, strict=True):
                    logp = torch.log_softmax(nn.functional.linear(z, w, b), dim=1)
                    out[start : start + len(block)] = logp.double().cpu().numpy()
        yield from outs

    def decision_function(self, features: np.ndarray) -> np.ndarray:
        """Log-probabilities of the GZSL softmax on ``embed(features)`` (float64, one column per
        class of ``classes_``)."""
        self._check_features(features)
        return next(self._scores(features, [(self.classifier_.weight, self.classifier_.bias)]))

    def checkpoint_scores(self, features: np.ndarray) -> Iterator[np.ndarray]:
        """Scores of the classifier after each of its epochs (the last equals
        ``decision_function``), for the selection audit; one matrix at a time."""
        self._check_features(features)
        for layer in self.checkpoints_:
            yield next(self._scores(features, [layer]))


@hookimpl
def zslbench_models() -> list[type[Model]]:
    return [GenerativeModel]


__all__ = [
    "CLASSIFIER_PARAMS",
    "FeatureGenerator",
    "GenerativeModel",
    "adam",
    "blockwise",
    "permutation_stream",
    "seeded_linear",
    "train_softmax",
]
