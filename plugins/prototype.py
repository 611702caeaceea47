"""The paper's pipeline as one model: embed images, regress class prototypes from semantics, score
each image by its distance to every prototype.

``fit`` (paper, "Gaussian Process (GP) Regression Model" and "Calibration"):

1. fit the embedder on the training images and labels, and embed them;
2. the prototype of each seen class is the mean embedding of its images;
3. fit the regressor from the seen classes' semantics to their prototypes, and predict the
   prototypes of the unseen classes (those of ``classes`` without images) from their semantics.

``decision_function`` scores image ``x`` against class ``c`` by ``-||embed(x) - mu_c||^2``, the
nearest-prototype rule of eq. 9; the harness adds the calibrated seen-class penalty of eq. 10.

The preprocessor (``clip``) is not part of this model: the harness applies a method's preprocessor
to every image before any model sees it, so that every method can swap it with ``--set``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from zslbench.errors import blame
from zslbench.hookspecs import hookimpl
from zslbench.model import FitInputs, Model
from zslbench.stages import Stage, StagedModel
from zslbench_plugins.distances import scores
from zslbench_plugins.prototype_kinds import Embedder, Regressor


def class_means(latent: np.ndarray, labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Prototype of each class: the mean latent vector of its images (float64, one row per class)."""
    out = np.empty((len(classes), latent.shape[1]), dtype=np.float64)
    for i, c in enumerate(classes):
        out[i] = latent[labels == c].mean(axis=0, dtype=np.float64)
    return out


class PrototypeModel(StagedModel):
    """Embedder + prototype regressor + nearest-prototype scores (the paper's method family).

    Parameters: ``embedder`` and ``regressor``, registered components (``bt``/``t``/``identity``,
    ``gp``/``krr``); their hyperparameters are set as ``embedder.PARAM`` / ``regressor.PARAM``.
    The search space is the sub-components' own (``krr`` declares its grid).

    Fitted state: ``embedder_`` and ``regressor_`` (fitted clones), ``prototypes_`` (c, k) float64
    in the order of ``classes_``, ``seen_mask_``.

    Two stages (:mod:`zslbench.stages`): ``embedder_fit`` (fit the embedder, embed the training
    images, average each seen class) reads the embedder; ``regressor_fit`` reads the regressor.
    When a search refits with only the regressor's hyperparameters changed, on the very same
    training arrays, the harness reuses the first stage: the numbers are those of a full refit
    (``check_model`` checks it).
    """

    name = "prototype"
    components: ClassVar[dict[str, str]] = {"embedder": "embedder", "regressor": "regressor"}
    #: The only search space among the paper's components is KRR's two ordered grids, where
    #: successive refinement finds the grid optimum in ~70 fits instead of 221.
    search_strategy: ClassVar[str] = "refine"
    stages: ClassVar[tuple[Stage, ...]] = (
        Stage("embedder_fit", reads=("embedder",)),
        Stage("regressor_fit", reads=("regressor",), after=("embedder_fit",)),
    )

    def __init__(self, embedder: Embedder, regressor: Regressor) -> None:
        self.embedder = embedder
        self.regressor = regressor

    def fit_embedder_fit(self, inputs: FitInputs) -> tuple[Embedder, np.ndarray]:
        """The fitted embedder and the seen classes' prototypes (mean embedding of their images)."""
        with blame(f"embedder {self.embedder.name!r}", "fit"):
            embedder = self.embedder.clone().fit(inputs.features, inputs.labels)
        with blame(f"embedder {self.embedder.name!r}", "transform"):
            z = embedder.transform(inputs.features)
            p_seen = class_means(z, inputs.labels, inputs.classes[inputs.seen_columns])
        return embedder, p_seen

    def fit_regressor_fit(
        self, inputs: FitInputs, embedder_fit: tuple[Embedder, np.ndarray]
    ) -> tuple[Regressor, np.ndarray]:
        """The fitted regressor and every class's prototype (unseen ones predicted)."""
        _, p_seen = embedder_fit
        seen_cols, unseen_cols = inputs.seen_columns, inputs.unseen_columns
        with blame(f"regressor {self.regressor.name!r}", "fit"):
            regressor = self.regressor.clone().fit(inputs.class_semantics[seen_cols], p_seen)
            protos = np.empty((len(inputs.classes), p_seen.shape[1]), dtype=np.float64)
            protos[seen_cols] = p_seen
            if len(unseen_cols):
                protos[unseen_cols] = np.asarray(
                    regressor.predict(inputs.class_semantics[unseen_cols]), dtype=np.float64
                )
        return regressor, protos

    def end_fit(self, inputs: FitInputs, outputs: Any) -> None:
        self.embedder_ = outputs["embedder_fit"][0]
        self.regressor_, self.prototypes_ = outputs["regressor_fit"]
        self.classes_ = inputs.classes
        self.seen_mask_ = inputs.seen_mask

    def decision_function(self, features: np.ndarray) -> np.ndarray:
        """``-||embed(x) - mu_c||^2`` (float64, one column per class of ``classes_``)."""
        if not hasattr(self, "prototypes_"):
            raise RuntimeError("PrototypeModel.decision_function called before fit")
        with blame(f"embedder {self.embedder.name!r}", "transform"):
            latent = self.embedder_.transform(features)
        return scores(latent, self.prototypes_)


@hookimpl
def zslbench_models() -> list[type[Model]]:
    return [PrototypeModel]
