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

from typing import ClassVar

import numpy as np

from zslbench.classifier import scores
from zslbench.components import Embedder, Regressor
from zslbench.errors import blame
from zslbench.hookspecs import hookimpl
from zslbench.model import Model
from zslbench.progress import stage


def class_means(latent: np.ndarray, labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Prototype of each class: the mean latent vector of its images (float64, one row per class)."""
    out = np.empty((len(classes), latent.shape[1]), dtype=np.float64)
    for i, c in enumerate(classes):
        out[i] = latent[labels == c].mean(axis=0, dtype=np.float64)
    return out


class PrototypeModel(Model):
    """Embedder + prototype regressor + nearest-prototype scores (the paper's method family).

    Parameters: ``embedder`` and ``regressor``, registered components (``bt``/``t``/``identity``,
    ``gp``/``krr``); their hyperparameters are set as ``embedder.PARAM`` / ``regressor.PARAM``.
    The search space is the sub-components' own (``krr`` declares its grid).

    Fitted state: ``embedder_`` and ``regressor_`` (fitted clones), ``prototypes_`` (c, k) float64
    in the order of ``classes_``, ``seen_mask_``.

    When a search refits with only the regressor's hyperparameters changed, on the very same
    training arrays, the fitted embedder and the seen prototypes are reused (as scikit-learn's
    ``Pipeline(memory=...)`` reuses fitted transformers): the numbers are those of a full refit.
    """

    name = "prototype"
    components: ClassVar[dict[str, str]] = {"embedder": "embedder", "regressor": "regressor"}
    #: The only search space among the paper's components is KRR's two ordered grids, where
    #: successive refinement finds the grid optimum in ~70 fits instead of 221.
    search_strategy: ClassVar[str] = "refine"

    def __init__(self, embedder: Embedder, regressor: Regressor) -> None:
        self.embedder = embedder
        self.regressor = regressor

    def fit(self, features: np.ndarray, labels: np.ndarray, class_semantics: np.ndarray,
            classes: np.ndarray) -> PrototypeModel:
        inp = self.check_fit_inputs(features, labels, class_semantics, classes, who="prototype")
        seen_cols, unseen_cols = inp.seen_columns, inp.unseen_columns
        seen_classes = inp.classes[seen_cols]
        upstream = (repr(self.embedder.get_params()), seen_classes.tobytes())
        cached = getattr(self, "_upstream", None)
        if (cached is not None and cached[0] is features and cached[1] is labels
                and cached[2] == upstream):
            embedder, p_seen = cached[3], cached[4]
        else:
            with stage("embedder_fit"), blame(f"embedder {self.embedder.name!r}", "fit"):
                embedder = self.embedder.clone().fit(features, labels)
            with stage("regressor_fit"), blame(f"embedder {self.embedder.name!r}", "transform"):
                z = embedder.transform(features)
                p_seen = class_means(z, labels, seen_classes)
            self._upstream = (features, labels, upstream, embedder, p_seen)
        with stage("regressor_fit"), blame(f"regressor {self.regressor.name!r}", "fit"):
            regressor = self.regressor.clone().fit(inp.class_semantics[seen_cols], p_seen)
            protos = np.empty((len(inp.classes), p_seen.shape[1]), dtype=np.float64)
            protos[seen_cols] = p_seen
            if len(unseen_cols):
                protos[unseen_cols] = np.asarray(
                    regressor.predict(inp.class_semantics[unseen_cols]), dtype=np.float64)
        self.embedder_ = embedder
        self.regressor_ = regressor
        self.prototypes_ = protos
        self.classes_ = inp.classes
        self.seen_mask_ = inp.seen_mask
        return self

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
