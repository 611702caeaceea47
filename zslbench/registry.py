"""Plugin discovery and the registry of everything plugins provide.

Loading follows pytest: every module in the ``zslbench`` entry-point group is loaded (built-ins
included, they register the same way), ``-p module.path`` adds a module without installing it, and
``ZSLBENCH_DISABLE_PLUGIN_AUTOLOAD=1`` turns entry-point loading off. A plugin that fails to import,
raises inside a hook, or registers a name twice is reported by name in one line and skipped; the
rest keep working. ``strict=True`` (``--strict-plugins``) turns such problems into errors.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, overload

import pluggy

from zslbench import hookspecs
from zslbench.data.dataset import name_problem, printable
from zslbench.errors import ConfigError, PluginError, UserError, suggestion

ENTRY_POINT_GROUP = "zslbench"
DISABLE_AUTOLOAD_ENV = "ZSLBENCH_DISABLE_PLUGIN_AUTOLOAD"

#: hook name -> registry kind: the core's own, family-neutral kinds. Plugins add others
#: (``hookspecs.zslbench_add_kinds``); a registry's ``kinds`` holds both.
KINDS = {
    "zslbench_datasets": "dataset",
    "zslbench_preprocessors": "preprocessor",
    "zslbench_calibrators": "calibrator",
    "zslbench_models": "model",
    "zslbench_methods": "method",
    "zslbench_citations": "citation",
}
#: The kinds that are not components of a method.
NOT_COMPONENTS = ("dataset", "method", "citation")
#: A kind's name and its hook's name: lower-case identifiers.
_KIND_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
#: Kinds whose names become part of a record's file name (``<dataset>__<method>__...``): a name
#: must be a safe file-name part (``zslbench.data.dataset.name_problem``).
FILE_NAMED = ("dataset", "method")
#: What :meth:`Registry.call_hook` gives for a plugin's hook that raised.
FAILED: Any = object()
#: The distribution whose entry points are the built-ins: on a name clash they win.
BUILTIN_DISTRIBUTION = "zslbench"


@dataclass(frozen=True)
class Provided:
    """One registered item and who provides it."""

    kind: str
    name: str
    obj: Any
    plugin: str
    distribution: str | None


@dataclass
class Registry:
    """Everything the loaded plugins provide, by kind and name."""

    items: dict[str, dict[str, Provided]] = field(
        default_factory=lambda: {k: {} for k in KINDS.values()}
    )
    #: One line per plugin problem (import failure, hook failure, duplicate name).
    problems: list[str] = field(default_factory=list)
    #: plugin name -> distribution that installed it (None for ``-p`` modules)
    plugins: dict[str, str | None] = field(default_factory=dict)
    #: plugin name -> the registered module (its source goes into the runs' code fingerprint)
    modules: dict[str, Any] = field(default_factory=dict)
    #: The plugin manager, for the hooks that take arguments (open_dataset, commands).
    pm: pluggy.PluginManager | None = field(default=None, repr=False)
    #: hook name -> kind: the core's :data:`KINDS` and those plugins added.
    kinds: dict[str, str] = field(default_factory=lambda: dict(KINDS))
    #: kind -> the plugin that added it (absent for the core's own kinds) and its declaration.
    added_kinds: dict[str, tuple[str, hookspecs.Kind]] = field(default_factory=dict)
    #: ``--strict-plugins``: a plugin problem is an error rather than a warning.
    strict: bool = False

    def component_kinds(self) -> list[str]:
        """The kinds of component (every kind but datasets, methods and citations), core ones
        first."""
        return [k for k in self.kinds.values() if k not in NOT_COMPONENTS]

    def get(self, kind: str, name: str) -> Provided:
        """Look a name up; an unknown name raises a ConfigError that suggests the closest one."""
        table = self.items[kind]
        if name in table:
            return table[name]
        raise ConfigError(f"unknown {kind} {name!r}", hint=suggestion(name, list(table), kind))

    def names(self, kind: str) -> list[str]:
        return sorted(self.items[kind])

    def open_dataset(self, location: str) -> Provided | None:
        """A dataset named by a location (``path/to/mine.npz``), from the first plugin that reads
        it; None when no plugin does. Each plugin's hook is called alone, in pluggy's order: one
        that raises or returns no ``DatasetSpec`` is named and the next one asked."""
        from zslbench.data.dataset import DatasetSpec

        # pluggy calls the implementations last-registered first (tryfirst/trylast respected).
        for impl in reversed(self.pm.hook.zslbench_open_dataset.get_hookimpls() if self.pm else []):
            plugin = self.pm.get_name(impl.plugin) or repr(impl.plugin)  # type: ignore[union-attr]
            spec = self.call_hook(plugin, "zslbench_open_dataset", impl.function, location=location)
            if isinstance(spec, DatasetSpec) and isinstance(spec.name, str):
                return Provided("dataset", spec.name, spec, "open_dataset", None)
            if spec is not None and spec is not FAILED:
                self.report(
                    f"plugin {plugin!r} returned {printable(repr(spec))[:80]} from "
                    f"zslbench_open_dataset({location!r}), not a DatasetSpec: ignoring it"
                )
        return None

    def add_commands(self, group: Any) -> None:
        """Each plugin's ``zslbench_commands`` alone, built-ins first: one that raises is named
        and the others' commands still work; none may replace a command already in ``group``."""
        for impl in self.pm.hook.zslbench_commands.get_hookimpls() if self.pm else []:
            plugin = self.pm.get_name(impl.plugin) or repr(impl.plugin)  # type: ignore[union-attr]
            before = dict(group.commands)
            failed = self.call_hook(plugin, "zslbench_commands", impl.function, cli=group)
            added = {n: c for n, c in group.commands.items() if before.get(n) is not c}
            group.commands = before  # what a plugin that failed added may be half-built
            for name in added if failed is not FAILED else []:
                if name in before:
                    self.report(
                        f"plugin {plugin!r} adds a command {name!r}, which zslbench or an "
                        "earlier plugin already provides: ignoring the plugin's (rename it)"
                    )
                else:
                    group.commands[name] = added[name]

    def call_hook(self, plugin_name: str, hook_name: str, function: Any, **kwargs: Any) -> Any:
        """One plugin's implementation of a hook that takes arguments, called outside pluggy so
        that a plugin that fails is reported by name (:meth:`report`) and gives :data:`FAILED`; a
        ``UserError`` it raises is its answer to the user's input and goes through."""
        try:
            return function(**kwargs)
        except UserError:
            raise
        except Exception as exc:
            self.report(
                f"plugin {plugin_name!r} failed in {hook_name}: "
                f"{type(exc).__name__}: {printable(str(exc))}"
            )
            return FAILED

    def report(self, line: str) -> None:
        """A plugin problem found after loading: a ``zslbench: warning:`` line (or, with
        ``strict``, a ``PluginError``), as the loading problems are."""
        if self.strict:
            raise PluginError(line, hint="fix or uninstall the plugin, or drop --strict-plugins")
        self.problems.append(line)
        logging.getLogger("zslbench.registry").warning(line)


def _add_kinds(registry: Registry, pm: pluggy.PluginManager, problem: Any) -> None:
    """Collect the kinds plugins add (``zslbench_add_kinds``) and declare each one's hook.

    Called once every plugin is registered: pluggy accepts implementations of a hook before its
    specification, and checks them against it when it is added here."""
    for impl in pm.hook.zslbench_add_kinds.get_hookimpls():
        plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)
        dist = registry.plugins.get(plugin_name)
        who = f"plugin {plugin_name!r} ({dist or 'loaded with -p'})"
        try:
            returned: Any = impl.function()  # a plugin's code: anything, checked below
            added = list(returned or [])
        except Exception as exc:
            problem(
                f"plugin {plugin_name!r} failed in zslbench_add_kinds: {type(exc).__name__}: {exc}"
            )
            continue
        for kind in added:
            if not isinstance(kind, hookspecs.Kind):
                problem(
                    f"{who} returned {kind!r} from zslbench_add_kinds, not a "
                    "zslbench.hookspecs.Kind: ignoring it"
                )
                continue
            if not (
                isinstance(kind.name, str)
                and _KIND_NAME.fullmatch(kind.name)
                and isinstance(kind.hook, str)
                and kind.hook.startswith("zslbench_")
                and _KIND_NAME.fullmatch(kind.hook)
            ):
                problem(
                    f"{who} adds kind {kind.name!r} with hook {kind.hook!r}: a kind is a "
                    "lower-case identifier and its hook one that starts with 'zslbench_' "
                    "(e.g. Kind('generator', 'zslbench_generators')): ignoring it"
                )
                continue
            taken = next((h for h, k in registry.kinds.items() if k == kind.name), None)
            if (
                taken is not None
                or kind.hook in registry.kinds
                or (kind.hook in pm.hook.__dict__ and getattr(pm.hook, kind.hook).spec is not None)
            ):
                first = registry.added_kinds.get(kind.name, (None,))[0]
                owner = f"plugin {first!r}" if first else "zslbench itself"
                problem(
                    f"{who} adds kind {kind.name!r} (hook {kind.hook!r}), but that kind or "
                    f"hook is already declared by {owner}: ignoring it (rename it)"
                )
                continue
            pm.add_hookspecs(_hook_namespace(kind))
            registry.kinds[kind.hook] = kind.name
            registry.added_kinds[kind.name] = (plugin_name, kind)
            registry.items[kind.name] = {}


def _hook_namespace(kind: hookspecs.Kind) -> Any:
    """An object holding one hook specification, named ``kind.hook``, for ``add_hookspecs``."""

    def spec() -> list[Any]:  # pragma: no cover - a specification, never called
        return []

    spec.__name__ = spec.__qualname__ = kind.hook
    spec.__doc__ = kind.doc or f"{kind.name} classes (a kind added by a plugin)."
    return type(f"{kind.name}_hookspec", (), {kind.hook: staticmethod(hookspecs.hookspec(spec))})


def canonical_distribution(name: str) -> str:
    """PEP 503 normalisation: ``My_ZSL`` and ``my-zsl`` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


_DIST_NAMES: dict[str, str | None] = {}


def dist_name(ep: Any) -> str | None:
    """The distribution that installed entry point ``ep`` (its metadata parsed once, not once per
    entry point: 50 parses were a fifth of ``zslbench --help``)."""
    dist = getattr(ep, "dist", None)
    key = str(getattr(dist, "_path", id(dist)))
    if key not in _DIST_NAMES:
        _DIST_NAMES[key] = dist.name if dist is not None else None
    return _DIST_NAMES[key]


def _item_name(kind: str, obj: Any) -> str:
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{kind} {obj!r} has no non-empty string attribute 'name'")
    return name


#: The built-in plugins that add subcommands (``zslbench_commands``): the only built-ins that
#: ``zslbench --help`` imports (the others import torch, seconds). A test keeps this list true.
BUILTIN_COMMAND_PLUGINS = ("xlsa17", "features")


def load_registry(
    extra_plugins: tuple[str, ...] | list[str] = (),
    *,
    strict: bool = False,
    autoload: bool | None = None,
    commands_only: bool = False,
) -> Registry:
    """Discover plugins and collect what they provide.

    ``extra_plugins`` are importable module paths (``-p``). ``autoload`` defaults to on unless
    ``ZSLBENCH_DISABLE_PLUGIN_AUTOLOAD`` is set to a non-empty value. ``commands_only`` (for
    ``zslbench --help``) registers every third-party and ``-p`` plugin but, of the built-ins, only
    :data:`BUILTIN_COMMAND_PLUGINS`, and collects no items: enough to list the subcommands.
    """
    if autoload is None:
        autoload = not os.environ.get(DISABLE_AUTOLOAD_ENV)
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    registry = Registry(pm=pm, strict=strict)

    def problem(line: str) -> None:
        if strict:
            raise PluginError(line, hint="fix or uninstall the plugin, or drop --strict-plugins")
        registry.problems.append(line)

    if autoload:
        # Built-ins register first, so that a third-party plugin registering a built-in's name is
        # the one ignored (and named), whatever the alphabetical order of the entry points.
        eps = sorted(
            entry_points(group=ENTRY_POINT_GROUP),
            key=lambda e: (dist_name(e) != BUILTIN_DISTRIBUTION, e.name),
        )
        for ep in eps:
            dist = dist_name(ep)
            if (
                commands_only
                and dist == BUILTIN_DISTRIBUTION
                and ep.name not in BUILTIN_COMMAND_PLUGINS
            ):
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not take the tool down
                problem(
                    f"plugin {ep.name!r} ({dist or 'unknown distribution'}) failed to import: "
                    f"{type(exc).__name__}: {exc}"
                )
                continue
            if pm.is_registered(module):
                continue
            # A third-party entry point may reuse a built-in's entry-point name: qualify it.
            name = ep.name if pm.get_plugin(ep.name) is None else f"{dist}:{ep.name}"
            pm.register(module, name=name)
            registry.plugins[name] = dist
            registry.modules[name] = module
    if extra_plugins and os.getcwd() not in sys.path and "" not in sys.path:
        # `zslbench -p my_zsl.plugin` from the plugin's folder works without PYTHONPATH=., as
        # pytest finds a rootdir's conftest; appended, so an installed module of the same name wins.
        sys.path.append(os.getcwd())
    for path in extra_plugins:
        try:
            module = importlib.import_module(path)
        except Exception as exc:
            # A -p the user typed is their own input: always fatal, with the fix.
            raise PluginError(
                f"-p {path}: cannot import plugin module ({type(exc).__name__}: {exc})",
                hint="check the module path and that it is on PYTHONPATH",
            ) from None
        if not pm.is_registered(module) and pm.get_plugin(path) is None:
            pm.register(module, name=path)
            registry.plugins[path] = None
            registry.modules[path] = module

    if commands_only:
        return registry
    _add_kinds(registry, pm, problem)
    for hook_name, kind in registry.kinds.items():
        hook = getattr(pm.hook, hook_name)
        # get_hookimpls lists implementations in registration order: built-ins first.
        for impl in hook.get_hookimpls():
            plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)
            try:
                provided = impl.function() or []
                for obj in provided:
                    name = _item_name(kind, obj)
                    base = registry.added_kinds.get(kind, (None, None))[1]
                    if (
                        base is not None
                        and base.base is not None
                        and not (isinstance(obj, type) and issubclass(obj, base.base))
                    ):
                        dist = registry.plugins.get(plugin_name)
                        problem(
                            f"plugin {plugin_name!r} ({dist or 'loaded with -p'}) registers "
                            f"{kind} {name!r}, which is not a subclass of "
                            f"{base.base.__qualname__}: ignoring it"
                        )
                        continue
                    table = registry.items[kind]
                    unsafe = name_problem(name) if kind in FILE_NAMED else None
                    if unsafe is None and kind in FILE_NAMED and "," in name:
                        unsafe = "contains ',', which separates names in --method and --dataset"
                    if unsafe is not None:  # "x/../../y" would write outside --results-dir
                        dist = registry.plugins.get(plugin_name)
                        problem(
                            f"plugin {plugin_name!r} ({dist or 'loaded with -p'}) registers "
                            f"{kind} {printable(name)!r}, whose name {unsafe}; a {kind} name "
                            "is part of every record's file name: ignoring it (rename it)"
                        )
                        continue
                    if name in table:
                        first = table[name]
                        who = (
                            "the built-in plugin"
                            if first.distribution == BUILTIN_DISTRIBUTION
                            else "plugin"
                        )
                        dist = registry.plugins.get(plugin_name)
                        problem(
                            f"plugin {plugin_name!r} ({dist or 'loaded with -p'}) registers "
                            f"{kind} {name!r}, which {who} {first.plugin!r} already provides; "
                            f"ignoring {plugin_name!r}'s {name!r} (rename it)"
                        )
                        continue
                    table[name] = Provided(
                        kind, name, obj, plugin_name, registry.plugins.get(plugin_name)
                    )
            except PluginError:
                raise
            except Exception as exc:
                problem(
                    f"plugin {plugin_name!r} failed in {hook_name}: {type(exc).__name__}: {exc}"
                )
    return registry


@lru_cache(maxsize=1)
def installed_datasets() -> dict[str, Any]:
    """Name -> declaration (``DatasetSpec``) of every dataset the installed plugins register,
    loaded once per process."""
    return {name: p.obj for name, p in load_registry().items["dataset"].items()}


class DatasetOrder(Sequence[str]):
    """The names of the datasets that declare an ``order`` (their place in tables), in that
    order; read from the declarations on first use, so that importing a module that holds one
    loads no plugin."""

    def __init__(self, datasets: Mapping[str, Any] | None = None) -> None:
        self._datasets = datasets
        self._names: tuple[str, ...] | None = None

    def _load(self) -> tuple[str, ...]:
        if self._names is None:
            specs = self._datasets if self._datasets is not None else installed_datasets()
            ranked = sorted(
                (spec.order, name)
                for name, spec in specs.items()
                if getattr(spec, "order", None) is not None
            )
            self._names = tuple(name for _, name in ranked)
        return self._names

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._load()[index]

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"DatasetOrder({self._load()!r})"


def dataset_order(datasets: Mapping[str, Any] | None = None) -> DatasetOrder:
    """The datasets' declared table order (``DatasetSpec.order``: the xlsa17 plugin declares the
    paper's columns, CUB, SUN, AWA2, AWA1, APY), from ``datasets`` or the installed plugins."""
    return DatasetOrder(datasets)
