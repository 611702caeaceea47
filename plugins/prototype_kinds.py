"""The component kinds of the paper's prototype pipeline, ``embedder`` and ``regressor``, added
through the same hook a third-party plugin uses (``zslbench_add_kinds``), so that the core lists
only family-neutral kinds (``zslbench.registry.KINDS``).

The prototype model (``plugins/prototype.py``) declares ``components = {"embedder": "embedder",
"regressor": "regressor"}``; the embedders (``plugins/embedders.py``) and the regressors
(``plugins/gp.py``, ``plugins/krr.py``) register through the hooks declared here.
"""

from __future__ import annotations

from zslbench.components import Embedder, Regressor
from zslbench.hookspecs import Kind, hookimpl


@hookimpl
def zslbench_add_kinds() -> list[Kind]:
    return [
        Kind("embedder", "zslbench_embedders", base=Embedder,
             doc="Embedder classes: ``fit(features, labels)`` then ``transform(features)`` -> "
                 "latent vectors (the prototype pipeline's first stage)."),
        Kind("regressor", "zslbench_regressors", base=Regressor,
             doc="Regressor classes: ``fit(class_semantics, class_prototypes)`` then "
                 "``predict(class_semantics)`` (the prototype pipeline's second stage)."),
    ]
