"""Methods resolved against the registry: the component of every role, its hyperparameters
(defaults, the method's own values, ``--set``), checked before any data is loaded.

:func:`prepare_grid` turns a :class:`~zslbench.request.GridRequest` into one
:class:`PreparedMethod` per (method, combination of swept values); the planner
(:mod:`zslbench.planning`) gives each its runs, and an executor instantiates it
(:meth:`PreparedMethod.instantiate`) with each run's seed and device.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from zslbench import records
from zslbench.components import Component
from zslbench.errors import ConfigError, blame, suggestion
from zslbench.methods import MethodSpec, method_roles
from zslbench.protocol import Method
from zslbench.records import jsonable
from zslbench.registry import BUILTIN_DISTRIBUTION, Registry
from zslbench.request import GridRequest, Overrides, same_value

INJECTED = ("random_state", "device")


def _distribution(name: str | None) -> dict[str, str]:
    """A third-party component's provenance: the distribution that installed it and its version
    (``{"distribution": "my-zsl", "version": "1.0"}``), so that a board row names the exact
    package; nothing for the built-ins (zslbench's version is the record's) or a ``-p`` module."""
    if not name or name == BUILTIN_DISTRIBUTION:
        return {}
    try:
        return {"distribution": name, "version": importlib.metadata.version(name)}
    except importlib.metadata.PackageNotFoundError:
        return {"distribution": name}


@dataclass
class PreparedMethod:
    """A method resolved against the registry: the component of every role, its resolved
    hyperparameters, and which of them were given explicitly (those are not searched)."""

    spec: MethodSpec
    classes: dict[str, type[Component]]
    plugins: dict[str, str]
    params: dict[str, dict[str, Any]]
    explicit: dict[str, set[str]]
    #: role (and ``"method"``, for the MethodSpec) -> the installed distribution that provides
    #: it (None for ``-p`` modules)
    distributions: dict[str, str | None] = field(default_factory=dict)
    _search: dict[str, list[Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def sub_roles(self) -> list[str]:
        return list(getattr(self.classes["model"], "components", {}))

    def config(self, overrides: Overrides) -> dict[str, Any]:
        comps = {
            role: {
                "name": self.classes[role].name,
                "plugin": self.plugins[role],
                "params": jsonable(self.params[role]),
                **_distribution(self.distributions.get(role)),
            }
            for role in self.classes
        }
        # Only what applies to this method: a grid's --set for another method's component is
        # not part of this one's configuration (nor of its row's label on the board).
        applies = set(self.classes) | {cls.name for cls in self.classes.values()}
        flat = {
            f"{t}.{p}": jsonable(v)
            for t, ps in sorted(overrides.params.items())
            if t in applies
            for p, v in sorted(ps.items())
        }
        flat.update({role: name for role, name in sorted(overrides.swaps.items())})
        out = {
            "method": self.spec.name,
            "components": comps,
            "search": self.search_space(),
            "overrides": flat,
        }
        method_dist = _distribution(self.distributions.get("method"))
        if method_dist:  # a third-party method: which package, which version (board.py)
            out["method_distribution"] = method_dist
        return out

    def search_space(self) -> dict[str, list[Any]]:
        """The hyperparameters the harness searches on validation classes, with the values it
        tries (``{"alpha": [...], "embedder.margin": [...]}``): the model's declared space less
        what the method or the user fixed. Part of the configuration's identity, since a
        searched and a fixed value are two different runs even when the fixed value is the
        default. A model's space may depend on its hyperparameters (krr's grids), so it is read
        from an instance (on the CPU: the space does not depend on the device)."""
        if self._search is None:
            space = self.instantiate(0, "cpu").search_space()
            self._search = {k: list(jsonable(list(v))) for k, v in sorted(space.items())}
        return self._search

    def config_id(self) -> str:
        return records.config_id(
            self.spec.name,
            {role: (self.classes[role].name, jsonable(self.params[role])) for role in self.classes},
            self.search_space(),
        )

    def _make(self, role: str, seed: int, device: str, **extra: Any) -> Component:
        cls = self.classes[role]
        accepted = set(cls._param_names())
        kwargs = dict(self.params[role], **extra)
        if "random_state" in accepted:
            kwargs["random_state"] = seed
        if "device" in accepted:
            kwargs["device"] = device
        made = cls(**kwargs)
        with blame(f"{role} {cls.name!r}", "checking its hyperparameters"):
            made.check_params()
        return made

    def instantiate(self, seed: int, device: str) -> Method:
        subs = {role: self._make(role, seed, device) for role in self.sub_roles}
        model = self._make("model", seed, device, **subs)
        fixed = {p for p in self.explicit["model"]}
        fixed |= {f"{role}.{p}" for role in self.sub_roles for p in self.explicit[role]}
        return Method(
            name=self.spec.name,
            preprocessor=self._make("preprocessor", seed, device),  # type: ignore[arg-type]
            model=model,  # type: ignore[arg-type]
            calibrator=self._make("calibrator", seed, device),  # type: ignore[arg-type]
            fixed=frozenset(fixed),
        )


def prepare_method(
    registry: Registry, name: str, overrides: Overrides | None = None
) -> PreparedMethod:
    """Resolve method ``name`` with ``overrides``; every mistake is one ``ConfigError`` line."""
    overrides = overrides or Overrides()
    provided_method = registry.get("method", name)
    spec: MethodSpec = provided_method.obj
    classes: dict[str, type[Component]] = {}
    plugins: dict[str, str] = {}
    distributions: dict[str, str | None] = {"method": provided_method.distribution}
    params: dict[str, dict[str, Any]] = {}
    given_params: dict[str, dict[str, Any]] = {}
    explicit: dict[str, set[str]] = {}
    for role, (kind, comp_name) in method_roles(registry, name, overrides.swaps).items():
        provided = registry.get(kind, comp_name)
        cls = provided.obj
        classes[role], plugins[role] = cls, provided.plugin
        distributions[role] = provided.distribution
        # A method's own values for a role apply only to the component it names.
        own = spec.params.get(role, {}) if comp_name == spec.roles().get(role) else {}
        given_params[role], explicit[role] = _role_params(cls, role, own, overrides)
        hints = {p.name: p.annotation for p in inspect.signature(cls.__init__).parameters.values()}
        params[role] = {k: canonical_number(v, hints.get(k)) for k, v in given_params[role].items()}
    return PreparedMethod(spec, classes, plugins, params, explicit, distributions)


def _role_params(
    cls: type[Component], role: str, own: dict[str, Any], overrides: Overrides
) -> tuple[dict[str, Any], set[str]]:
    """The hyperparameters of the component ``cls`` filling ``role`` (its defaults, the
    method's ``own`` values, then ``--set`` by role or by component name) and those given."""
    sig = inspect.signature(cls.__init__).parameters.values()
    subs = set(getattr(cls, "components", {}))
    merged = {
        p.name: p.default
        for p in sig
        if p.name != "self"
        and p.default is not inspect.Parameter.empty
        and p.name not in INJECTED
        and p.name not in subs
    }
    valid = [n for n in cls._param_names() if n not in INJECTED and n not in subs]
    merged.update(own)
    given = set(own)
    by_key: dict[str, tuple[str, Any]] = {}
    for target in dict.fromkeys((role, cls.name)):
        for key, value in overrides.params.get(target, {}).items():
            if key not in valid:
                raise ConfigError(
                    f"--set {target}.{key}: {cls.name!r} ({role}) has no hyperparameter {key!r}",
                    hint=f"valid: {', '.join(valid) or 'none'}",
                )
            earlier = by_key.get(key)
            if earlier is not None and not same_value(earlier[1], value):
                raise ConfigError(
                    f"--set {earlier[0]}.{key}={earlier[1]!r} and --set "
                    f"{target}.{key}={value!r} set the same hyperparameter of "
                    f"{cls.name!r} to different values",
                    hint="keep one of them",
                )
            by_key[key] = (target, value)
            merged[key] = value
            given.add(key)
    return merged, given


def canonical_number(value: Any, annotation: Any) -> Any:
    """``value`` as the hyperparameter's declared type holds it, so that ``--set krr.alpha=1`` and
    ``=1.0`` are one configuration (one id, one record): an integer given for a ``float``
    hyperparameter (``float``, ``float | None``) becomes a float, and so do the integers of a
    ``tuple[float, ...]``. Values of any other type, and of hyperparameters declared as ints or
    not annotated, are kept as given."""
    if annotation is None or annotation is inspect.Parameter.empty:
        return value
    text = (
        annotation
        if isinstance(annotation, str)
        else getattr(annotation, "__name__", None)
        if isinstance(annotation, type)
        else str(annotation)
    )
    words = set(re.findall(r"[A-Za-z_]+", text or ""))
    if "float" not in words or "int" in words:
        return value

    def number(v: Any) -> Any:
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v

    if words & {"tuple", "list", "Sequence"}:
        return type(value)(number(v) for v in value) if isinstance(value, (list, tuple)) else value
    return number(value)


def check_override_targets(overrides: Overrides, prepared: list[PreparedMethod]) -> None:
    """Every ``--set`` target must be a role or a component used by at least one selected method."""
    used = {r for p in prepared for r in p.classes} | {
        p.classes[r].name for p in prepared for r in p.classes
    }
    for target, params in overrides.params.items():
        if target not in used:
            keys = ", ".join(f"--set {target}.{p}" for p in params)  # as the user typed them
            raise ConfigError(
                f"{keys}: no selected method uses a component {target!r}",
                hint=suggestion(target, sorted(used), "component"),
            )


def _combinations(sweeps: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The Cartesian product of the swept values, in the order given ([{}] without sweeps)."""
    keys = list(sweeps)
    return [
        dict(zip(keys, combo, strict=True))
        for combo in itertools.product(*(sweeps[k] for k in keys))
    ]


def _merge(overrides: Overrides, combo: dict[str, Any]) -> Overrides:
    merged = Overrides({t: dict(ps) for t, ps in overrides.params.items()}, dict(overrides.swaps))
    for key, value in combo.items():
        target, _, param = key.partition(".")
        if param in merged.params.get(target, {}):
            raise ConfigError(
                f"{key} is both set (--set) and swept (--sweep)", hint="drop one of them"
            )
        merged.params.setdefault(target, {})[param] = value
    return merged


def _without(overrides: Overrides, target: str, param: str | None) -> Overrides:
    """``overrides`` less one ``--set target.param`` (or, ``param`` None, the swap of role
    ``target``)."""
    if param is None:
        swaps = {r: c for r, c in overrides.swaps.items() if r != target}
        return Overrides({k: dict(v) for k, v in overrides.params.items()}, swaps)
    params = {
        k: {q: v for q, v in ps.items() if (k, q) != (target, param)}
        for k, ps in overrides.params.items()
    }
    return Overrides({k: v for k, v in params.items() if v}, dict(overrides.swaps))


def _as_held(prep: PreparedMethod, overrides: Overrides) -> Overrides:
    """``overrides`` with each value as the hyperparameter holds it (``--sweep margin=1`` is
    1.0), so that a configuration's overrides, swept values and resolved values read alike."""
    roles = {t: r for r, cls in prep.classes.items() for t in (r, cls.name)}
    params = {
        t: {q: prep.params[roles[t]].get(q, v) if t in roles else v for q, v in ps.items()}
        for t, ps in overrides.params.items()
    }
    return Overrides(params, dict(overrides.swaps))


def _effective(
    registry: Registry, name: str, overrides: Overrides, combo: dict[str, Any]
) -> tuple[PreparedMethod, dict[str, Any], Overrides]:
    """Method ``name`` under ``overrides``, less every ``--set``, ``--sweep`` or swap that changes
    nothing it runs: a value equal to the default of a hyperparameter that is not searched
    (``--sweep embedder.margin=1,4`` when 4 is bt-gp's margin), a component swapped for the one
    the method already uses. Such a run *is* the default configuration, so it gets the default's
    config, id and record, and is shown and compared as the plain method. A value that fixes a
    searched hyperparameter is kept even when it equals the default: fixed and searched are two
    configurations (their search spaces differ, and so do their ids)."""
    target = prepare_method(registry, name, overrides).config_id()
    current = overrides
    keys: list[tuple[str, str | None]] = [(t, p) for t, ps in overrides.params.items() for p in ps]
    for t, p in keys + [(role, None) for role in overrides.swaps]:
        trial = _without(current, t, p)
        try:
            if prepare_method(registry, name, trial).config_id() == target:
                current = trial
        except ConfigError:  # the method cannot run without it (clip-text's class names)
            continue
    prep = prepare_method(registry, name, current)
    held = _as_held(prep, current)
    kept = {
        key: held.params[t][q]
        for key in combo
        for t, _, q in [key.partition(".")]
        if q in held.params.get(t, {})
    }
    return prep, kept, held


def prepare_grid(
    request: GridRequest, registry: Registry
) -> list[tuple[PreparedMethod, dict[str, Any], Overrides]]:
    """Every (method, sweep combination) of the request, resolved and checked before any data is
    loaded: unknown names, bad values and conflicts are one ``ConfigError`` line."""
    for key in request.sweeps:
        target, dot, param = key.partition(".")
        if not dot or not target or not param:
            raise ConfigError(
                f"--sweep {key}=...: not of the form component.param=v1,v2",
                hint="e.g. --sweep embedder.margin=1,2,4",
            )
        if not request.sweeps[key]:
            raise ConfigError(
                f"--sweep {key} has no values", hint="e.g. --sweep embedder.margin=1,4"
            )
    out = []
    seen: set[tuple[str, str]] = set()
    for name in request.methods:
        for combo in _combinations(request.sweeps):
            prep, combo, overrides = _effective(
                registry, name, _merge(request.overrides, combo), combo
            )
            if (name, prep.config_id()) in seen:  # a swept value that runs what another does
                continue
            seen.add((name, prep.config_id()))
            out.append((prep, combo, overrides))
    check_override_targets(
        _merge(request.overrides, _combinations(request.sweeps)[0]), [p for p, _, _ in out]
    )
    for prep, _, _ in out:  # every hyperparameter checked before any data is loaded
        prep.instantiate(0, request.device)
    return out
