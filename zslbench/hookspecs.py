"""The plugin contract: every hook a zslbench plugin can implement.

A plugin is a module (or object) with functions decorated by ``zslbench.hookimpl`` whose names
match the specs below. Register it through the ``zslbench`` entry-point group in your package's
``pyproject.toml`` (exactly as the built-ins in ``plugins/`` do)::

    [project.entry-points.zslbench]
    my_method = "my_package.zsl_plugin"

or load it without installing: ``zslbench -p my_package.zsl_plugin run ...``.

Every hook takes no arguments and returns a list; the harness collects the lists of all plugins,
remembers which plugin gave each name, and refuses duplicate names (reporting both plugins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from zslbench.components import Calibrator, Embedder, Preprocessor, Regressor
    from zslbench.data.dataset import DatasetSpec
    from zslbench.methods import MethodSpec

PROJECT = "zslbench"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def zslbench_datasets() -> list[DatasetSpec]:
    """Datasets this plugin provides: ``DatasetSpec`` objects (name, loader, kind, description).

    The loader is called as ``spec.load(data_dir)`` and returns a ``ZSLData``; the harness
    checks the split before any training.
    """


@hookspec
def zslbench_preprocessors() -> list[type[Preprocessor]]:
    """Preprocessor classes (``Preprocessor`` subclasses with a ``name`` class attribute)."""


@hookspec
def zslbench_embedders() -> list[type[Embedder]]:
    """Embedder classes: ``fit(features, labels)`` then ``transform(features)`` -> latent vectors."""


@hookspec
def zslbench_regressors() -> list[type[Regressor]]:
    """Regressor classes: ``fit(class_semantics, class_prototypes)`` then ``predict(class_semantics)``."""


@hookspec
def zslbench_calibrators() -> list[type[Calibrator]]:
    """Calibrator classes: ``fit(scores, labels, seen_mask)`` sets the seen-class penalty ``gamma_``."""


@hookspec
def zslbench_methods() -> list[MethodSpec]:
    """Methods: ``MethodSpec`` compositions naming a preprocessor, embedder, regressor and
    calibrator by their registered names, with default hyperparameters per component."""
