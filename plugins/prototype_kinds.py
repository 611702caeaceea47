"""The component kinds of the paper's prototype pipeline, ``embedder`` and ``regressor``, added
through the same hook a third-party plugin uses (``zslbench_add_kinds``), so that the core lists
only family-neutral kinds (``zslbench.registry.KINDS``).

The kinds' base classes live here, with the pipeline, not in the core. The prototype model
(``plugins/prototype.py``) declares ``components = {"embedder": "embedder",
"regressor": "regressor"}``; the embedders (``plugins/embedders.py``) and the regressors
(``plugins/gp.py``, ``plugins/krr.py``) register through the hooks declared here.
"""

from __future__ import annotations

import numpy as np

from zslbench.components import Component
from zslbench.hookspecs import Kind, hookimpl


class Embedder(Component):
    """Learns a map from image features (n, d) to a latent space (n, k)."""

    def fit(self, features: np.ndarray, labels: np.ndarray) -> Embedder:
        """Fit on training images; ``labels`` are class indices (0-based, any subset)."""
        raise NotImplementedError

    def transform(self, features: np.ndarray) -> np.ndarray:
        """Latent vectors, float32 array of shape (n, k)."""
        raise NotImplementedError


class Regressor(Component):
    """Learns a map from class semantics (attributes) to class prototypes in latent space."""

    def fit(self, class_semantics: np.ndarray, class_prototypes: np.ndarray) -> Regressor:
        """``class_semantics`` (c, a) and ``class_prototypes`` (c, k) of the seen classes."""
        raise NotImplementedError

    def predict(self, class_semantics: np.ndarray) -> np.ndarray:
        """Predicted prototypes (m, k) for the given (m, a) class semantics."""
        raise NotImplementedError


@hookimpl
def zslbench_add_kinds() -> list[Kind]:
    return [
        Kind(
            "embedder",
            "zslbench_embedders",
            base=Embedder,
            doc="Embedder classes: ``fit(features, labels)`` then ``transform(features)`` -> "
            "latent vectors (the prototype pipeline's first stage).",
        ),
        Kind(
            "regressor",
            "zslbench_regressors",
            base=Regressor,
            doc="Regressor classes: ``fit(class_semantics, class_prototypes)`` then "
            "``predict(class_semantics)`` (the prototype pipeline's second stage).",
        ),
    ]


__all__ = ["Embedder", "Regressor"]
