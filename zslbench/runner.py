"""Run methods x datasets x seeds, one atomic record per run, skipping runs already recorded.

Seeds follow benchopt: each run's seed is a hash of (base seed, dataset, method, repetition), so
adding a method or a dataset never changes another run's numbers. A run is cached when a record with
the same key exists; the key covers the resolved config, the data fingerprint, the seed, the device
type and a hash of the code, so changing any hyperparameter or any line of code reruns it.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

import zslbench
from zslbench import provenance
from zslbench.components import Component
from zslbench.data.dataset import ZSLData
from zslbench.errors import ConfigError, UserError
from zslbench.methods import ROLES, MethodSpec
from zslbench.protocol import Components, run_protocol
from zslbench.records import SCHEMA_VERSION, write_record
from zslbench.registry import Registry

INJECTED = ("random_state", "device")


def derive_seed(base_seed: int, dataset: str, method: str, repetition: int) -> int:
    """A 31-bit seed that depends only on these four values."""
    text = f"{base_seed}|{dataset}|{method}|{repetition}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:4], "big") & 0x7FFFFFFF


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
    """Expand group aliases (``all``, ``synth-all``) and check every name is registered."""
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
                choices = list(registry.items["dataset"]) + list(groups)
                from zslbench.registry import suggestion

                raise ConfigError(f"unknown dataset {name!r}", hint=suggestion(name, choices, "dataset"))
            if name not in out:
                out.append(name)
    return out


def parse_value(text: str) -> Any:
    """``--set`` values: JSON or Python literals (``64``, ``0.1``, ``true``, ``None``), else a string."""
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError):
            continue
    return text


def parse_overrides(items: list[str] | tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``["embedder.latent_dim=64", "gp.optimizer=adam"]`` -> ``{"embedder": {"latent_dim": 64}, ...}``.

    The target is a role (preprocessor, embedder, regressor, calibrator) or a component name.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        target, dot, param = key.strip().partition(".")
        if not sep or not dot or not target or not param:
            raise ConfigError(f"--set {item!r} is not of the form component.param=value",
                              hint="e.g. --set embedder.latent_dim=64 or --set gp.optimizer=adam")
        out.setdefault(target, {})[param] = parse_value(value.strip())
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


@dataclass
class PreparedMethod:
    """A method's components with overrides applied, and the resolved config to record."""

    spec: MethodSpec
    classes: dict[str, type[Component]]
    params: dict[str, dict[str, Any]]
    plugins: dict[str, str]

    def config(self, overrides: dict[str, dict[str, Any]]) -> dict[str, Any]:
        comps = {role: {"name": self.classes[role].name, "plugin": self.plugins[role],
                        "params": _jsonable(self.params[role])} for role in ROLES}
        flat = {f"{t}.{p}": _jsonable(v) for t, ps in sorted(overrides.items()) for p, v in sorted(ps.items())}
        return {"method": self.spec.name, "components": comps, "overrides": flat}

    def config_id(self) -> str:
        body = {role: [self.classes[role].name, _jsonable(self.params[role])] for role in ROLES}
        return hashlib.sha256(json.dumps([self.spec.name, body], sort_keys=True).encode()).hexdigest()

    def instantiate(self, seed: int, device: str) -> Components:
        made = {}
        for role in ROLES:
            cls = self.classes[role]
            accepted = set(cls._param_names())
            kwargs = dict(self.params[role])
            if "random_state" in accepted:
                kwargs["random_state"] = seed
            if "device" in accepted:
                kwargs["device"] = device
            made[role] = cls(**kwargs)
        return Components(**made)


def prepare_method(registry: Registry, name: str, overrides: dict[str, dict[str, Any]]) -> PreparedMethod:
    spec: MethodSpec = registry.get("method", name).obj
    classes: dict[str, type[Component]] = {}
    plugins: dict[str, str] = {}
    params: dict[str, dict[str, Any]] = {}
    for role in ROLES:
        kind = role
        provided = registry.get(kind, spec.component(role))
        cls = provided.obj
        classes[role], plugins[role] = cls, provided.plugin
        defaults = {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
                    if p.name != "self" and p.default is not inspect.Parameter.empty}
        valid = [n for n in cls._param_names() if n not in INJECTED]
        merged = {k: v for k, v in defaults.items() if k not in INJECTED}
        merged.update(spec.params.get(role, {}))
        for target in (role, cls.name):
            for key, value in overrides.get(target, {}).items():
                if key not in valid:
                    raise ConfigError(f"--set {target}.{key}: {cls.name!r} ({role}) has no hyperparameter {key!r}",
                                      hint=f"valid: {', '.join(valid) or 'none'}")
                merged[key] = value
        params[role] = merged
    return PreparedMethod(spec, classes, params, plugins)


def check_override_targets(overrides: dict[str, dict[str, Any]], prepared: list[PreparedMethod]) -> None:
    """Every ``--set`` target must be a role or a component used by at least one selected method."""
    used = set(ROLES) | {p.classes[r].name for p in prepared for r in ROLES}
    for target in overrides:
        if target not in used:
            from zslbench.registry import suggestion

            raise ConfigError(f"--set {target}.…: no selected method uses a component {target!r}",
                              hint=suggestion(target, sorted(used), "component"))


@dataclass
class RunOutcome:
    dataset: str
    method: str
    repetition: int
    seed: int
    status: str  # "ran" | "cached" | "failed"
    record: dict[str, Any] | None = None
    path: Path | None = None
    error: str | None = None


@dataclass
class GridRequest:
    methods: list[str]
    datasets: list[str]
    results_dir: Path
    data_dir: Path | None = None
    seeds: int = 1
    base_seed: int = 0
    device: str = "cpu"
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    force: bool = False
    allow_nonstandard: bool = False


def data_fingerprint(data: ZSLData) -> str:
    src = data.source
    payload = {"split": data.split_fingerprint,
               "files": {k: v for k, v in sorted(src.items()) if "sha256" in k or k == "data_fingerprint"},
               "shape": list(data.features.shape)}
    return hashlib.sha256(json.dumps(_jsonable(payload), sort_keys=True).encode()).hexdigest()


def run_key(config_id: str, data_fp: str, seed: int, device_type: str, code_fp: str) -> str:
    body = json.dumps([config_id, data_fp, seed, device_type, code_fp, SCHEMA_VERSION])
    return hashlib.sha256(body.encode()).hexdigest()


def run_grid(request: GridRequest, registry: Registry,
             load: Callable[[str], ZSLData],
             on_event: Callable[[str, dict[str, Any]], None] | None = None,
             code_modules: list[Any] | None = None) -> Iterator[RunOutcome]:
    """Yield one outcome per (dataset, method, repetition), in grid order.

    ``load(name)`` returns the dataset (called once per dataset). ``on_event(kind, info)`` reports
    progress: ``"dataset"``, ``"run"``, ``"stage"``.
    """
    emit = on_event or (lambda kind, info: None)
    prepared = [prepare_method(registry, m, request.overrides) for m in request.methods]
    check_override_targets(request.overrides, prepared)
    modules = code_modules if code_modules is not None else _code_modules(registry)
    code_fp = provenance.code_fingerprint(modules)
    env = provenance.environment(tuple(sorted({d for d in registry.plugins.values() if d})))
    git = provenance.git_state()
    device_type = "cuda" if request.device.startswith("cuda") else "cpu"
    dev = provenance.device_info(request.device)

    for dataset in request.datasets:
        emit("dataset", {"dataset": dataset})
        data = load(dataset)
        data_fp = data_fingerprint(data)
        for prep in prepared:
            config = prep.config(request.overrides)
            config_id = prep.config_id()
            for rep in range(request.seeds):
                seed = derive_seed(request.base_seed, dataset, prep.spec.name, rep)
                # The data fingerprint is in the name so a non-standard copy never overwrites a standard run.
                run_id = (f"{dataset}__{prep.spec.name}__{config_id[:8]}__{data_fp[:8]}__"
                          f"{device_type}__s{seed}")
                key = run_key(config_id, data_fp, seed, device_type, code_fp)
                path = request.results_dir / f"{run_id}.json"
                emit("run", {"dataset": dataset, "method": prep.spec.name, "repetition": rep})
                if path.exists() and not request.force:
                    try:
                        existing = json.loads(path.read_text())
                    except (OSError, json.JSONDecodeError):
                        existing = None
                    if existing and existing.get("key") == key:
                        yield RunOutcome(dataset, prep.spec.name, rep, seed, "cached", existing, path)
                        continue
                started = datetime.now(timezone.utc)
                parts = prep.instantiate(seed, request.device)
                try:
                    result = run_protocol(data, parts, seed, request.device,
                                          on_stage=lambda s: emit("stage", {"stage": s}))
                except (UserError, KeyboardInterrupt):
                    raise
                except Exception as exc:  # a component raised: name it, write nothing
                    msg = (f"{prep.spec.name} on {dataset} (seed {seed}): a component raised "
                           f"{type(exc).__name__}: {exc}")
                    yield RunOutcome(dataset, prep.spec.name, rep, seed, "failed", error=msg)
                    continue
                ev = result.evaluation
                record = {
                    "schema": SCHEMA_VERSION,
                    "run_id": run_id,
                    "key": key,
                    "config_id": config_id,
                    "code_fingerprint": code_fp,
                    "dataset": dataset,
                    "dataset_kind": data.kind,
                    "method": prep.spec.name,
                    "paper_name": prep.spec.paper_name,
                    "repetition": rep,
                    "base_seed": request.base_seed,
                    "seed": seed,
                    "metrics": {k: float(ev[k]) for k in ("A_T", "A_U", "A_S", "H", "AUSUC")},
                    "gamma": result.gamma,
                    "timings": {k: round(v, 4) for k, v in sorted(result.timings.items())},
                    "curve": ev.get("curve"),
                    "operating_point": ev.get("operating_point"),
                    "per_class": ev.get("per_class"),
                    "tuned": _jsonable(result.tuned),
                    "validation": result.validation,
                    "config": config,
                    "split": {"fingerprint": data.split_fingerprint, "standard": bool(data.standard),
                              "reason": data.nonstandard_reason},
                    "data": {"fingerprint": data_fp, "n_images": int(data.features.shape[0]),
                             "feature_dim": int(data.features.shape[1]),
                             "n_seen": int(len(data.seen_classes)),
                             "n_unseen": int(len(data.unseen_classes)),
                             "source": _jsonable(data.source)},
                    "device": dev,
                    "environment": env,
                    "git": git,
                    "zslbench_version": zslbench.__version__,
                    "started_at": started.isoformat(timespec="seconds"),
                    "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                }
                record = _jsonable(record)
                written = write_record(request.results_dir, record)
                yield RunOutcome(dataset, prep.spec.name, rep, seed, "ran", record, written)
        del data


def _code_modules(registry: Registry) -> list[Any]:
    """zslbench itself plus the top-level package of every plugin module (helpers included)."""
    mods: dict[str, Any] = {"zslbench": zslbench}
    for module in registry.modules.values():
        top = module.__name__.split(".")[0]
        mods.setdefault(top, sys.modules.get(top, module))
    return list(mods.values())

