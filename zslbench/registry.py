"""Plugin discovery and the registry of everything plugins provide.

Loading follows pytest: every module in the ``zslbench`` entry-point group is loaded (built-ins
included, they register the same way), ``-p module.path`` adds a module without installing it, and
``ZSLBENCH_DISABLE_PLUGIN_AUTOLOAD=1`` turns entry-point loading off. A plugin that fails to import,
raises inside a hook, or registers a name twice is reported by name in one line and skipped; the
rest keep working. ``strict=True`` (``--strict-plugins``) turns such problems into errors.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy

from zslbench import hookspecs
from zslbench.errors import ConfigError, PluginError

ENTRY_POINT_GROUP = "zslbench"
DISABLE_AUTOLOAD_ENV = "ZSLBENCH_DISABLE_PLUGIN_AUTOLOAD"

#: hook name -> registry kind
KINDS = {
    "zslbench_datasets": "dataset",
    "zslbench_preprocessors": "preprocessor",
    "zslbench_embedders": "embedder",
    "zslbench_regressors": "regressor",
    "zslbench_calibrators": "calibrator",
    "zslbench_methods": "method",
}


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

    items: dict[str, dict[str, Provided]] = field(default_factory=lambda: {k: {} for k in KINDS.values()})
    #: One line per plugin problem (import failure, hook failure, duplicate name).
    problems: list[str] = field(default_factory=list)
    #: plugin name -> distribution that installed it (None for ``-p`` modules)
    plugins: dict[str, str | None] = field(default_factory=dict)
    #: plugin name -> the registered module (its source goes into the runs' code fingerprint)
    modules: dict[str, Any] = field(default_factory=dict)

    def get(self, kind: str, name: str) -> Provided:
        """Look a name up; an unknown name raises a ConfigError that suggests the closest one."""
        table = self.items[kind]
        if name in table:
            return table[name]
        raise ConfigError(f"unknown {kind} {name!r}", hint=suggestion(name, list(table), kind))

    def names(self, kind: str) -> list[str]:
        return sorted(self.items[kind])


def suggestion(name: str, choices: list[str], kind: str) -> str:
    """'did you mean X?' plus the valid names, for one-line errors."""
    import difflib

    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    listing = ", ".join(sorted(choices)) or "none registered"
    if close:
        return f"did you mean {close[0]!r}? (known {kind}s: {listing})"
    return f"known {kind}s: {listing} (see `zslbench list`)"


def _item_name(kind: str, obj: Any) -> str:
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{kind} {obj!r} has no non-empty string attribute 'name'")
    return name


def load_registry(extra_plugins: tuple[str, ...] | list[str] = (), *, strict: bool = False,
                  autoload: bool | None = None) -> Registry:
    """Discover plugins and collect what they provide.

    ``extra_plugins`` are importable module paths (``-p``). ``autoload`` defaults to on unless
    ``ZSLBENCH_DISABLE_PLUGIN_AUTOLOAD`` is set to a non-empty value.
    """
    if autoload is None:
        autoload = not os.environ.get(DISABLE_AUTOLOAD_ENV)
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    registry = Registry()

    def problem(line: str) -> None:
        if strict:
            raise PluginError(line, hint="fix or uninstall the plugin, or drop --strict-plugins")
        registry.problems.append(line)

    if autoload:
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else None
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not take the tool down
                problem(f"plugin {ep.name!r} ({dist or 'unknown distribution'}) failed to import: "
                        f"{type(exc).__name__}: {exc}")
                continue
            if pm.is_registered(module):
                continue
            pm.register(module, name=ep.name)
            registry.plugins[ep.name] = dist
            registry.modules[ep.name] = module
    for path in extra_plugins:
        try:
            module = importlib.import_module(path)
        except Exception as exc:
            # A -p the user typed is their own input: always fatal, with the fix.
            raise PluginError(f"-p {path}: cannot import plugin module ({type(exc).__name__}: {exc})",
                              hint="check the module path and that it is on PYTHONPATH") from None
        if not pm.is_registered(module):
            pm.register(module, name=path)
            registry.plugins[path] = None
            registry.modules[path] = module

    for hook_name, kind in KINDS.items():
        hook = getattr(pm.hook, hook_name)
        for impl in hook.get_hookimpls():
            plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)
            try:
                provided = impl.function() or []
                for obj in provided:
                    name = _item_name(kind, obj)
                    table = registry.items[kind]
                    if name in table:
                        problem(f"plugin {plugin_name!r} registers {kind} {name!r}, already provided by "
                                f"plugin {table[name].plugin!r}; keeping the first")
                        continue
                    table[name] = Provided(kind, name, obj, plugin_name,
                                           registry.plugins.get(plugin_name))
            except PluginError:
                raise
            except Exception as exc:
                problem(f"plugin {plugin_name!r} failed in {hook_name}: {type(exc).__name__}: {exc}")
    return registry
