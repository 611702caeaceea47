"""The plugin contract: every hook a zslbench plugin can implement.

A plugin is a module (or object) with functions decorated by ``zslbench.hookimpl`` whose names
match the specs below. Register it through the ``zslbench`` entry-point group in your package's
``pyproject.toml`` (exactly as the built-ins in ``plugins/`` do)::

    [project.entry-points.zslbench]
    my_method = "my_package.zsl_plugin"

or load it without installing: ``zslbench -p my_package.zsl_plugin run ...``.

The registering hooks take no arguments and return a list; the harness collects the lists of all
plugins, remembers which plugin gave each name, and on a clash keeps the built-in (or the first
loaded) and names the plugin it ignored. Two hooks take arguments: ``zslbench_open_dataset``
(a dataset named by a path) and ``zslbench_commands`` (extra CLI subcommands, as datasette's
``register_commands``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from zslbench.components import Calibrator, Embedder, Preprocessor, Regressor
    from zslbench.data.dataset import DatasetSpec
    from zslbench.methods import MethodSpec
    from zslbench.model import Model

PROJECT = "zslbench"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def zslbench_datasets() -> list[DatasetSpec]:
    """Datasets this plugin provides: ``DatasetSpec`` objects (name, loader, kind, description).

    The loader is called exactly as ``spec.load(data_dir)`` (``data_dir``: a ``Path`` or None) and
    returns a ``ZSLData``. The harness then runs the same checks on every dataset, built-in or not,
    before any training (``zslbench.data.checks``). A published benchmark (``kind="real"``)
    declares which one it is and what pins it (``benchmark=``, a ``zslbench.data.dataset.Benchmark``).
    """


@hookspec(firstresult=True)
def zslbench_open_dataset(location: str) -> DatasetSpec | None:
    """A dataset named by a location instead of a registered name (``--dataset path/to/x.npz``):
    return a ``DatasetSpec`` if this plugin reads that location, else None."""


@hookspec
def zslbench_models() -> list[type[Model]]:
    """Model classes (``zslbench.model.Model`` subclasses with a ``name``): ``fit(features,
    labels, class_semantics, classes)`` then ``decision_function(features)`` -> scores."""


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
    """Methods: ``MethodSpec`` objects naming a registered model (and, for a composite model, its
    components), a preprocessor and a calibrator, with default hyperparameters per role."""


@hookspec
def zslbench_commands(cli: click.Group) -> None:
    """Add subcommands to the ``zslbench`` command line (``cli.add_command(...)``)."""
