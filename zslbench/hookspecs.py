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

The kinds of component are open, as pytest's hooks are (``pytest_addhooks``): the core declares
only the family-neutral ones (datasets, preprocessors, models, calibrators, methods). A plugin adds
a kind, and the hook through which plugins register components of it, with
``zslbench_add_kinds`` (the paper's prototype pipeline adds ``embedder`` and ``regressor`` this way,
``plugins/prototype_kinds.py``); a composite model then names the kind of each sub-component in
its ``components`` (``{"generator": "generator"}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from zslbench.components import Calibrator, Preprocessor
    from zslbench.data.dataset import DatasetSpec
    from zslbench.methods import Citation, MethodSpec
    from zslbench.model import Model

PROJECT = "zslbench"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@dataclass(frozen=True)
class Kind:
    """A kind of component that a plugin adds (``zslbench_add_kinds``).

    ``name`` is the kind (``"generator"``): a composite model's ``components`` names it, and
    ``zslbench list`` lists its components. ``hook`` is the registering hook that the harness
    declares for it (``"zslbench_generators"``): like the built-in ones it takes no arguments and
    returns a list of classes, each with a ``name``. ``base``, when given, is the class every
    registered component must subclass (checked at registration). ``doc`` says what a component
    of the kind does; it becomes the hook's docstring.
    """

    name: str
    hook: str
    doc: str = ""
    base: type | None = None


@hookspec
def zslbench_add_kinds() -> list[Kind]:
    """Component kinds this plugin adds (``Kind`` objects), as pytest plugins add hooks with
    ``pytest_addhooks``. Collected before any component is registered, from every loaded plugin;
    a kind whose name or hook is already taken is refused with one line naming both plugins."""


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
def zslbench_calibrators() -> list[type[Calibrator]]:
    """Calibrator classes: ``fit(scores, labels, seen_mask)`` sets the seen-class penalty ``gamma_``."""


@hookspec
def zslbench_methods() -> list[MethodSpec]:
    """Methods: ``MethodSpec`` objects naming a registered model (and, for a composite model, its
    components), a preprocessor and a calibrator, with default hyperparameters per role."""


@hookspec
def zslbench_citations() -> list[Citation]:
    """Where methods come from: ``zslbench.methods.Citation`` objects, each naming a registered
    method (``name``), its paper (authors, title, venue, year, DOI or arXiv id) and the authors'
    code; ``zslbench list --method NAME`` prints it."""


@hookspec
def zslbench_commands(cli: click.Group) -> None:
    """Add subcommands to the ``zslbench`` command line (``cli.add_command(...)``)."""
