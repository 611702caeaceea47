"""Run methods x datasets x seeds, one atomic record per run, skipping runs already recorded.

What runs, with which seed and key, and why a run is not taken from the cache, is planned in
:mod:`zslbench.planning` (keys: :mod:`zslbench.identity`); this module resolves methods and
executes the plans. Seeds follow benchopt: each run's seed is a hash of (base seed, dataset,
repetition), so adding a method never changes another's seeds, and methods pair up by seed.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import inspect
import itertools
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

import zslbench
from zslbench import claims, executors, identity, provenance, rechecks, records
from zslbench.components import Component
from zslbench.data.dataset import ZSLData
from zslbench.errors import ConfigError, UserError, blame
from zslbench.methods import OUTER_ROLES, MethodSpec
from zslbench.planning import (
    PlannedRun,
    RecordIndex,
    dry_run_lines,
    load_checked,
    plan_dataset,
)
from zslbench.planning import derive_seed as derive_seed  # re-exported for importers of runner
from zslbench.protocol import Method, run_protocol
from zslbench.records import Record, write_record
from zslbench.registry import BUILTIN_DISTRIBUTION, Registry, suggestion

INJECTED = ("random_state", "device")


def split_names(values: tuple[str, ...] | list[str] | str) -> list[str]:
    """``("a,b", "c")`` -> ``["a", "b", "c"]`` (order kept, duplicates dropped)."""
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part and part not in out:
                out.append(part)
    return out


def expand_datasets(names: list[str], registry: Registry) -> list[str]:
    """Expand group aliases (``all``, ``synth-all``) and check every name is registered, or is a
    location that a plugin opens (``path/to/mine.npz``), which is then registered under its name."""
    groups: dict[str, list[str]] = {}
    for provided in registry.items["dataset"].values():
        for group in provided.obj.groups:
            groups.setdefault(group, []).append(provided.name)
    out: list[str] = []
    for name in names:
        if name in groups:
            members = groups[name]
            if name == "all":  # keep the paper's order for the real benchmarks
                order = ["awa1", "awa2", "apy", "cub", "sun"]
                members = sorted(members, key=lambda m: order.index(m) if m in order else 99)
            out += [m for m in members if m not in out]
        else:
            if name not in registry.items["dataset"]:
                opened = registry.open_dataset(name)  # a path a plugin can read (mine.npz)
                if opened is None:
                    choices = list(registry.items["dataset"]) + list(groups)
                    raise ConfigError(f"unknown dataset {name!r}",
                                      hint=suggestion(name, choices, "dataset"))
                known = registry.items["dataset"].get(opened.name)
                # a name taken by a registered dataset is refused; one taken by a file opened
                # earlier in this process (a second `run` in the same session) is replaced
                if known is not None and (known.plugin != "open_dataset" or opened.name in out):
                    raise ConfigError(f"--dataset {name}: the file's dataset name "
                                      f"{opened.name!r} is already a registered dataset",
                                      hint="rename the file")
                registry.items["dataset"][opened.name] = opened
                name = opened.name
            if name not in out:
                out.append(name)
    return out


def parse_value(text: str) -> Any:
    """``--set`` values: JSON or Python literals (``64``, ``0.1``, ``true``, ``None``; ``nan`` and
    ``inf`` are floats, so that a component refuses them as numbers), else a string."""
    if text.strip().lower() in ("nan", "inf", "+inf", "-inf", "infinity", "-infinity"):
        return float(text)
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError):
            continue
    return text


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


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
    #: The hyperparameters as records made before numbers were canonical may hold them: as
    #: given, and with the floats given by --set or --sweep as integers where integral (the
    #: committed ``--sweep embedder.margin=0.5,1,2,4,8`` recorded 1, 2, 4, 8). Only those that
    #: differ from ``params``.
    variants: tuple[dict[str, dict[str, Any]], ...] = ()

    def legacy(self) -> list[PreparedMethod]:
        """This method with each of :attr:`variants` as its hyperparameters: the planner runs one
        of them only to keep an existing record's id (``zslbench.planning``)."""
        return [dataclasses.replace(self, params=v, variants=()) for v in self.variants]

    @property
    def sub_roles(self) -> list[str]:
        return list(getattr(self.classes["model"], "components", {}))

    def config(self, overrides: Overrides) -> dict[str, Any]:
        comps = {role: {"name": self.classes[role].name, "plugin": self.plugins[role],
                        "params": _jsonable(self.params[role]),
                        **_distribution(self.distributions.get(role))} for role in self.classes}
        # Only what applies to this method: a grid's --set for another method's component is
        # not part of this one's configuration (nor of its row's label on the board).
        applies = set(self.classes) | {cls.name for cls in self.classes.values()}
        flat = {f"{t}.{p}": _jsonable(v) for t, ps in sorted(overrides.params.items())
                if t in applies for p, v in sorted(ps.items())}
        flat.update({role: name for role, name in sorted(overrides.swaps.items())})
        out = {"method": self.spec.name, "components": comps, "overrides": flat}
        method_dist = _distribution(self.distributions.get("method"))
        if method_dist:  # a third-party method: which package, which version (board.py)
            out["method_distribution"] = method_dist
        return out

    def config_id(self) -> str:
        return records.config_id(self.spec.name, {
            role: (self.classes[role].name, _jsonable(self.params[role])) for role in self.classes})

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
        return Method(name=self.spec.name,
                      preprocessor=self._make("preprocessor", seed, device),  # type: ignore[arg-type]
                      model=model,  # type: ignore[arg-type]
                      calibrator=self._make("calibrator", seed, device),  # type: ignore[arg-type]
                      fixed=frozenset(fixed))


@dataclass
class Overrides:
    """``--set`` parsed: ``params`` {target: {param: value}} (target = role or component name) and
    ``swaps`` {role: component name} (``--set preprocessor=none``)."""

    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    swaps: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.params or self.swaps)


def parse_overrides(items: list[str] | tuple[str, ...]) -> Overrides:
    """``["embedder.latent_dim=64", "gp.optimizer=adam", "preprocessor=none"]`` -> Overrides.

    ``TARGET.PARAM=VALUE`` sets a hyperparameter of the component filling role TARGET (or named
    TARGET); ``ROLE=NAME`` puts another registered component in a role. Setting the same value
    twice, under two names, is refused when the values differ.
    """
    out = Overrides()
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        target, dot, param = key.partition(".")
        if not sep or not target or (dot and not param):
            raise ConfigError(f"--set {item!r} is not of the form component.param=value or "
                              "role=component",
                              hint="e.g. --set embedder.latent_dim=64, --set gp.optimizer=adam, "
                              "--set preprocessor=none")
        if not dot:
            name = value.strip()
            if not name:
                raise ConfigError(f"--set {item!r} names no component", hint=f"e.g. --set {key}=none")
            if out.swaps.get(target, name) != name:
                raise ConfigError(f"--set {target}= is given twice ({out.swaps[target]!r} and "
                                  f"{name!r})", hint="give each role one component")
            out.swaps[target] = name
            continue
        parsed = parse_value(value.strip())
        prev = out.params.get(target, {})
        if param in prev and not _same(prev[param], parsed):
            raise ConfigError(f"--set {target}.{param} is given twice ({prev[param]!r} and "
                              f"{parsed!r})", hint="give each hyperparameter one value")
        out.params.setdefault(target, {})[param] = parsed
    return out


def parse_sweeps(items: list[str] | tuple[str, ...]) -> dict[str, list[Any]]:
    """``["embedder.margin=1,2,4"]`` -> ``{"embedder.margin": [1, 2, 4]}``; a value list in
    brackets is read as JSON (``krr.alpha_grid=[[0.1,1],[1,10]]`` sweeps two grids)."""
    out: dict[str, list[Any]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key, text = key.strip(), text.strip()
        if not sep or "." not in key or not text:
            raise ConfigError(f"--sweep {item!r} is not of the form component.param=v1,v2,...",
                              hint="e.g. --sweep embedder.margin=0.25,0.5,1,2,4")
        if text.startswith("["):
            values = parse_value(text)
            if not isinstance(values, list):
                raise ConfigError(f"--sweep {item!r}: {text!r} is not a list",
                                  hint="e.g. --sweep embedder.margin=[1,2,4]")
        else:
            values = [parse_value(v.strip()) for v in text.split(",") if v.strip()]
        if key in out:
            raise ConfigError(f"--sweep {key} is given twice", hint="list all its values once")
        out[key] = values
    return out


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def prepare_method(registry: Registry, name: str, overrides: Overrides | None = None
                   ) -> PreparedMethod:
    """Resolve method ``name`` with ``overrides``; every mistake is one ``ConfigError`` line."""
    overrides = overrides or Overrides()
    provided_method = registry.get("method", name)
    spec: MethodSpec = provided_method.obj
    roles = dict(spec.roles())
    model_cls = registry.get("model", overrides.swaps.get("model", roles["model"])).obj
    wanted = dict(getattr(model_cls, "components", {}))
    missing = [r for r in wanted if r not in roles]
    if missing:
        raise ConfigError(f"method {name!r}: model {model_cls.name!r} needs a component for "
                          f"{', '.join(missing)}", hint="name it in the MethodSpec")
    roles = {r: n for r, n in roles.items() if r in OUTER_ROLES or r in wanted}
    for role, new in overrides.swaps.items():
        if role not in roles:
            raise ConfigError(f"--set {role}={new}: method {name!r} has no role {role!r}",
                              hint=f"its roles: {', '.join(roles)}")
        roles[role] = new
    kinds = {r: (r if r in OUTER_ROLES else wanted[r]) for r in roles}
    classes: dict[str, type[Component]] = {}
    plugins: dict[str, str] = {}
    distributions: dict[str, str | None] = {"method": provided_method.distribution}
    params: dict[str, dict[str, Any]] = {}
    given_params: dict[str, dict[str, Any]] = {}
    overridden: dict[str, set[str]] = {}
    explicit: dict[str, set[str]] = {}
    by_target: dict[tuple[str, str], tuple[str, Any]] = {}
    for role, comp_name in roles.items():
        provided = registry.get(kinds[role], comp_name)
        cls = provided.obj
        classes[role], plugins[role] = cls, provided.plugin
        distributions[role] = provided.distribution
        sig = inspect.signature(cls.__init__).parameters.values()
        subs = set(getattr(cls, "components", {}))
        defaults = {p.name: p.default for p in sig if p.name != "self"
                    and p.default is not inspect.Parameter.empty
                    and p.name not in INJECTED and p.name not in subs}
        valid = [n for n in cls._param_names() if n not in INJECTED and n not in subs]
        merged = dict(defaults)
        given = set()
        # A method's own values for a role apply only to the component it names.
        if comp_name == spec.roles().get(role):
            merged.update(spec.params.get(role, {}))
            given |= set(spec.params.get(role, {}))
        for target in dict.fromkeys((role, cls.name)):
            for key, value in overrides.params.get(target, {}).items():
                if key not in valid:
                    raise ConfigError(f"--set {target}.{key}: {cls.name!r} ({role}) has no "
                                      f"hyperparameter {key!r}",
                                      hint=f"valid: {', '.join(valid) or 'none'}")
                earlier = by_target.get((role, key))
                if earlier is not None and not _same(earlier[1], value):
                    raise ConfigError(f"--set {earlier[0]}.{key}={earlier[1]!r} and --set "
                                      f"{target}.{key}={value!r} set the same hyperparameter of "
                                      f"{cls.name!r} to different values",
                                      hint="keep one of them")
                by_target[(role, key)] = (target, value)
                merged[key] = value
                given.add(key)
        hints = {p.name: p.annotation for p in sig}
        params[role] = {k: canonical_number(v, hints.get(k)) for k, v in merged.items()}
        given_params[role] = merged
        overridden[role] = {k for t in (role, cls.name) for k in overrides.params.get(t, {})}
        explicit[role] = given
    variants: list[dict[str, dict[str, Any]]] = []
    for variant in (given_params, {r: {k: int(v) if k in overridden[r] and isinstance(v, float)
                                       and v.is_integer() and abs(v) < 2**53 else v
                                       for k, v in ps.items()} for r, ps in params.items()}):
        text = json.dumps(_jsonable(variant), sort_keys=True)
        if text != json.dumps(_jsonable(params), sort_keys=True) and all(
                text != json.dumps(_jsonable(v), sort_keys=True) for v in variants):
            variants.append(variant)
    return PreparedMethod(spec, classes, plugins, params, explicit, distributions, tuple(variants))


def canonical_number(value: Any, annotation: Any) -> Any:
    """``value`` as the hyperparameter's declared type holds it, so that ``--set krr.alpha=1`` and
    ``=1.0`` are one configuration (one id, one record): an integer given for a ``float``
    hyperparameter (``float``, ``float | None``) becomes a float, and so do the integers of a
    ``tuple[float, ...]``. Values of any other type, and of hyperparameters declared as ints or
    not annotated, are kept as given."""
    if annotation is None or annotation is inspect.Parameter.empty:
        return value
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None) \
        if isinstance(annotation, type) else str(annotation)
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
    used = {r for p in prepared for r in p.classes} | {p.classes[r].name for p in prepared
                                                        for r in p.classes}
    for target in overrides.params:
        if target not in used:
            raise ConfigError(f"--set {target}.…: no selected method uses a component {target!r}",
                              hint=suggestion(target, sorted(used), "component"))


@dataclass
class RunOutcome:
    dataset: str
    method: str
    repetition: int
    seed: int
    status: str  # "ran" | "cached" | "failed"
    record: Record | None = None
    path: Path | None = None
    error: str | None = None
    #: Why an existing file was not reused (a damaged or edited record), when it was not.
    replaced: str | None = None
    #: A failed run's ``<run_id>.failed`` note (``executors.write_failure_note``).
    note: Path | None = None


@dataclass
class GridRequest:
    methods: list[str]
    datasets: list[str]
    results_dir: Path
    data_dir: Path | None = None
    seeds: int = 1
    base_seed: int = 0
    device: str = "cpu"
    overrides: Overrides = field(default_factory=Overrides)
    #: ``{"embedder.margin": [1, 4]}``: one configuration per combination of swept values.
    sweeps: dict[str, list[Any]] = field(default_factory=dict)
    force: bool = False
    #: Re-run cached runs, keep their records, and write what moved beside each record
    #: (:mod:`zslbench.rechecks`).
    recheck: bool = False
    allow_nonstandard: bool = False
    #: The TOML config file the request came from, recorded in every record.
    config_file: str | None = None
    #: "reduced" (a config's ``schedule``): recorded in every record's ``config.schedule``.
    schedule: str | None = None


def check_results_dir(path: Path) -> None:
    """Refuse, before any training, a results dir that cannot take records (one line naming it).

    Nothing is created here: the folder is made when the first record is written, so a run
    refused for another reason leaves no empty folder behind.
    """
    path = Path(path)
    existing = next((p for p in [path, *path.parents] if p.exists()), None)
    if existing is None:  # pragma: no cover - "/" always exists
        return
    if not existing.is_dir():
        where = "is a file" if existing == path else f"is under the file {existing}"
        raise ConfigError(f"--results-dir {path} {where}, not a directory",
                          hint="choose another --results-dir")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == path else f"cannot be created ({existing} is " \
            "not writable)"
        raise ConfigError(f"--results-dir {path} {what}",
                          hint="choose a writable --results-dir or fix its permissions")
    try:
        free = shutil.disk_usage(existing).free
    except OSError:
        free = None
    if free is not None and free < MIN_FREE_BYTES:
        raise ConfigError(f"--results-dir {path}: only {free // 1024} KiB free on its disk",
                          hint="free some space (a record takes ~100 KiB) or choose another disk")


#: Below this much free space the results dir is refused up front (records are ~100 KiB each).
MIN_FREE_BYTES = 4 * 2**20


@dataclass
class RunResult:
    """What a run produced, wherever it ran; the driver turns it into a record."""

    plan: PlannedRun
    result: Any = None  # ProtocolResult
    error: str | None = None
    load: dict[str, Any] = field(default_factory=dict)
    device: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    finished_at: str = ""


def execute(plan: PlannedRun, data: ZSLData,
            on_event: Callable[[str, dict[str, Any]], None] | None = None) -> RunResult:
    """Run one plan on ``data`` (in this process: the local executor, or a Ray worker).

    Whatever fails in the run (its data, a component, the model, plugin code calling
    ``sys.exit`` or raising ``KeyboardInterrupt``) gives a ``RunResult`` whose ``error`` is one
    line naming the method, the dataset, the seed, and the component and stage that failed: the
    run fails alone. Only the user's Ctrl-C or kill (``executors.user_interrupts``) propagates;
    mistakes in the grid's configuration were refused by ``prepare_grid`` before anything ran.
    """
    started = datetime.now(timezone.utc)
    snapshot = provenance.load_snapshot()
    out = RunResult(plan, started_at=started.isoformat(timespec="seconds"))
    signals = executors.user_signals()
    startup = 0.0
    try:
        startup = provenance.warm_device(plan.device)
        provenance.reset_peak_memory(plan.device)
        method = plan.prepared.instantiate(plan.seed, plan.device)
        out.result = run_protocol(data, method, plan.seed, plan.device, on_event=on_event)
    except BaseException as exc:  # the run failed: name what failed, write no record
        if isinstance(exc, KeyboardInterrupt) and executors.user_signals() != signals:
            raise  # the user's Ctrl-C: the grid stops
        out.error = (f"{plan.method} on {plan.dataset} (seed {plan.seed}): "
                     + executors.failure_reason(exc))
        if os.environ.get("ZSLBENCH_TRACEBACK"):
            import traceback

            out.error += "\n" + "".join(traceback.format_exception(exc))
    out.load = provenance.load_report(snapshot)
    out.device = provenance.device_info(plan.device)
    if startup:
        out.device["startup_seconds"] = startup
    peak = provenance.peak_memory_mib(plan.device)
    if peak is not None:
        out.device["peak_memory_mib"] = peak
    out.environment = provenance.environment()
    out.finished_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return out


class LocalExecutor:
    """Runs plans one after another in this process, reporting every phase and step."""

    name = "local"

    def run(self, batches: Iterable[tuple[ZSLData, list[PlannedRun]]],
            emit: Callable[[str, dict[str, Any]], None]) -> Iterator[RunResult | None]:
        for data, plans in batches:
            yield None  # lets the driver report this dataset's cached runs before any fit
            for plan in plans:
                emit("run", {"dataset": plan.dataset, "method": plan.method,
                             "repetition": plan.repetition, "seed": plan.seed,
                             "sweep": plan.config.get("sweep"), "reason": plan.reason})
                with executors.user_interrupts():
                    result = execute(plan, data, on_event=emit)
                yield result


def _combinations(sweeps: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The Cartesian product of the swept values, in the order given ([{}] without sweeps)."""
    keys = list(sweeps)
    return [dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(sweeps[k] for k in keys))]


def _merge(overrides: Overrides, combo: dict[str, Any]) -> Overrides:
    merged = Overrides({t: dict(ps) for t, ps in overrides.params.items()}, dict(overrides.swaps))
    for key, value in combo.items():
        target, _, param = key.partition(".")
        if param in merged.params.get(target, {}):
            raise ConfigError(f"{key} is both set (--set) and swept (--sweep)",
                              hint="drop one of them")
        merged.params.setdefault(target, {})[param] = value
    return merged


def prepare_grid(request: GridRequest, registry: Registry
                 ) -> list[tuple[PreparedMethod, dict[str, Any], Overrides]]:
    """Every (method, sweep combination) of the request, resolved and checked before any data is
    loaded: unknown names, bad values and conflicts are one ``ConfigError`` line."""
    for key in request.sweeps:
        target, dot, param = key.partition(".")
        if not dot or not target or not param:
            raise ConfigError(f"--sweep {key}=...: not of the form component.param=v1,v2",
                              hint="e.g. --sweep embedder.margin=1,2,4")
        if not request.sweeps[key]:
            raise ConfigError(f"--sweep {key} has no values", hint="e.g. --sweep embedder.margin=1,4")
    out = []
    for name in request.methods:
        for combo in _combinations(request.sweeps):
            overrides = _merge(request.overrides, combo)
            prep = prepare_method(registry, name, overrides)
            out.append((prep, combo, overrides))
    check_override_targets(_merge(request.overrides, _combinations(request.sweeps)[0]),
                           [p for p, _, _ in out])
    for prep, _, _ in out:  # every hyperparameter checked before any data is loaded
        prep.instantiate(0, request.device)
    return out


def _load_failure(exc: BaseException) -> str:
    """One line for a dataset that could not be loaded or failed the split checks."""
    if isinstance(exc, UserError):
        return exc.one_line()
    return "cannot be loaded: " + executors.failure_reason(exc)


def run_grid(request: GridRequest, registry: Registry, load: Callable[[str], tuple[ZSLData, str]],
             on_event: Callable[[str, dict[str, Any]], None] | None = None,
             executor: Any = None) -> Iterator[RunOutcome]:
    """Yield one outcome per (dataset, method, configuration, repetition).

    ``load(name)`` returns the dataset and its kind (called once per dataset); the dataset contract
    (``zslbench.data.checks``) runs on it before any training. Cached runs are yielded at once;
    the others go to ``executor`` (``LocalExecutor`` by default, in grid order; the Ray executor
    yields them as they finish). Records are written here, by the driver, atomically.
    ``on_event(kind, info)`` reports progress: ``"dataset"``, ``"run"``, ``"phase"``,
    ``"stage_start"``/``"stage_end"``, ``"step"``, ``"warning"``, ``"info"`` (for every run not
    taken from the cache, the reason, before the dataset's first fit).
    """
    emit = on_event or (lambda kind, info: None)
    executor = executor or LocalExecutor()
    configs = prepare_grid(request, registry)
    check_results_dir(request.results_dir)
    git = provenance.git_state()
    index = RecordIndex.read(request.results_dir, claims.declared_datasets(registry))
    device_name = str(provenance.device_info(request.device)["name"])
    verdicts: dict[str, Any] = {}
    data_info: dict[str, dict[str, Any]] = {}
    #: Outcomes known without running: cached runs, and the runs of a dataset that failed to load.
    ready: list[RunOutcome] = []

    def batches() -> Iterator[tuple[ZSLData, list[PlannedRun]]]:
        for dataset in request.datasets:
            emit("dataset", {"dataset": dataset})
            signals = executors.user_signals()
            try:
                data, kind, verdict, info = load_checked(request, registry, load, dataset)
            except BaseException as exc:  # its runs fail, the grid goes on (as a failed run)
                if isinstance(exc, KeyboardInterrupt) and executors.user_signals() != signals:
                    raise  # the user's Ctrl-C: the grid stops
                if len(request.datasets) == 1:
                    raise  # nothing else could run: the data error itself is the answer (exit 2)
                reason = _load_failure(exc).removeprefix(f"{dataset}: ")
                emit("warning", {"message": f"{dataset}: {reason}; its runs fail, the grid goes on"})
                for prep, _, _ in configs:
                    for rep in range(request.seeds):
                        ready.append(RunOutcome(
                            dataset, prep.spec.name, rep,
                            derive_seed(request.base_seed, dataset, rep), "failed",
                            error=f"{prep.spec.name} on {dataset}: {reason}"))
                continue
            verdicts[dataset], data_info[dataset] = verdict, info
            plans = []
            planned = plan_dataset(configs, dataset=dataset, data_fingerprint=verdict.fingerprint,
                                   results_dir=request.results_dir, seeds=request.seeds,
                                   base_seed=request.base_seed, device=request.device,
                                   device_name=device_name,
                                   force=request.force or request.recheck, index=index,
                                   config_file=request.config_file,
                                   schedule=request.schedule, kind=kind)
            if any(run.status == "run" for run in planned):
                emit("info", {"message": f"{dataset}: " + dry_run_lines(planned, device_name)[-1]})
            for run in planned:
                if run.status == "cached":
                    ready.append(RunOutcome(dataset, run.method, run.repetition, run.seed,
                                             "cached", run.record, run.path))
                    continue
                if request.recheck and run.record is None:  # nothing recorded to compare with
                    emit("info", {"message": f"not rechecked {run.label}: no current record "
                                             f"({run.reason}); run it without --recheck first"})
                    continue
                if run.damaged:
                    emit("warning", {"message": run.damaged})
                emit("info", {"message": f"to run {run.label}: {run.reason}"})
                plans.append(run)
            yield data, plans

    def drain() -> Iterator[RunOutcome]:
        while ready:
            yield ready.pop(0)

    for res in executor.run(batches(), emit):
        yield from drain()
        if res is None:  # the executor took the next dataset: its cached runs are out first
            continue
        plan = res.plan
        if res.error is not None:
            note = None
            try:
                note = executors.write_failure_note(plan.path, res.error)
            except OSError as exc:
                emit("warning", {"message": f"cannot write {executors.failure_note_path(plan.path)}"
                                 f" ({exc.strerror or exc})"})
            yield RunOutcome(plan.dataset, plan.method, plan.repetition, plan.seed, "failed",
                             error=res.error, note=note)
            continue
        record = make_record(plan, res, verdicts[plan.dataset], data_info[plan.dataset],
                             request.base_seed, git)
        if request.recheck and plan.record is not None:  # the recorded run stays as it is
            entry = rechecks.compare(plan.record, record)
            emit("info", {"message": rechecks.line(entry)})
            yield RunOutcome(plan.dataset, plan.method, plan.repetition, plan.seed, "rechecked",
                             record, rechecks.append(plan.path, entry))
            continue
        try:
            written = write_record(request.results_dir, record)
        except OSError as exc:
            raise UserError(f"cannot write the record {plan.path} ({exc.strerror or exc}); every "
                            "record written before it is complete",
                            hint="free disk space or fix the results dir, then re-run the same "
                            "command to finish the rest") from None
        executors.clear_failure_note(plan.path, other_configs=not plan.config.get("sweep"))
        yield RunOutcome(plan.dataset, plan.method, plan.repetition, plan.seed, "ran", record,
                         written)
    yield from drain()  # a last dataset that failed to load has no batch to yield after it
    yield from drain()


def make_record(plan: PlannedRun, res: RunResult, verdict: Any, data_info: dict[str, Any],
                base_seed: int, git: dict[str, Any]) -> Record:
    """The record of a finished run (unsealed; ``write_record`` seals it)."""
    result = res.result
    ev = result.evaluation
    metrics = {k: float(ev[k]) for k in ("A_T", "A_U", "A_S", "H", "AUSUC")}
    if "AUSUC_per_image" in ev:
        metrics["AUSUC_per_image"] = float(ev["AUSUC_per_image"])
    return Record(
        run_id=plan.run_id, key=plan.key, config_id=plan.config_id,
        code_fingerprint=identity.code_digest(plan.identity), identity=_jsonable(plan.identity),
        dataset=plan.dataset, dataset_kind=plan.kind, method=plan.method,
        paper_name=plan.prepared.spec.paper_name, repetition=plan.repetition,
        base_seed=base_seed, seed=plan.seed, metrics=metrics, gamma=result.gamma,
        timings={k: round(v, 4) for k, v in sorted(result.timings.items())},
        load=_jsonable(res.load), curve=_jsonable(ev.get("curve")),
        operating_point=_jsonable(ev.get("operating_point")),
        per_class=_jsonable(ev.get("per_class")), search=_jsonable(result.search),
        selection_audit=_jsonable(result.selection_audit),
        validation=_jsonable(result.validation), config=_resolved_config(plan, result.search),
        split=_jsonable(verdict.as_record()), data=_jsonable(data_info),
        device=_jsonable(res.device), environment=_jsonable(res.environment),
        git=_jsonable(git), zslbench_version=zslbench.__version__,
        started_at=res.started_at, finished_at=res.finished_at)


def _resolved_config(plan: PlannedRun, search: Any) -> dict[str, Any]:
    """The run's configuration, with what its model resolved at fit time: a model whose
    hyperparameters default to None, meaning "decided when fitting" (the generative model's
    classifier settings come from its generator), says what they were through an optional
    ``resolved_params()``; with the search's choice applied, that is what the final fit ran.
    Kept under ``components.model.resolved``, outside the configuration id."""
    config = _jsonable(plan.config)  # a copy: the plan's is shared by its repetitions
    model = plan.prepared.instantiate(plan.seed, plan.device).model
    resolve = getattr(model, "resolved_params", None)
    if callable(resolve):
        model.set_search_params(**((search or {}).get("chosen") or {}))
        config["components"]["model"]["resolved"] = _jsonable(resolve())
    return config
