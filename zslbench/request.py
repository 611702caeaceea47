"""A grid request: what to run, parsed and checked before anything is loaded or trained.

``zslbench run`` options, a ``--config`` TOML file and :func:`zslbench.run`'s keywords all become
one :class:`GridRequest` through :func:`grid_request` (a value given on the command line or as a
keyword wins over the file's, which wins over the default). Parsing ``--set`` and ``--sweep``
(:func:`parse_overrides`, :func:`parse_sweeps`) and expanding dataset groups
(:func:`expand_datasets`, in the order the datasets declare) live here too. Every mistake is one
:class:`~zslbench.errors.ConfigError` line; resolving methods against the registry is
:mod:`zslbench.prepare`'s.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zslbench.config import EXECUTORS, load_config
from zslbench.errors import ConfigError, DataError, suggestion
from zslbench.methods import method_roles
from zslbench.registry import Registry


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
    """Expand group aliases (``all``, ``synth-all``) into their members, in the order their
    plugins register them (xlsa17's ``all``: awa1, awa2, apy, cub, sun), and check every name
    is registered, or is a location that a plugin opens (``path/to/mine.npz``), which is then
    registered under its name."""
    groups: dict[str, list[str]] = {}
    for provided in registry.items["dataset"].values():
        for group in provided.obj.groups:
            groups.setdefault(group, []).append(provided.name)
    out: list[str] = []
    for name in names:
        if name in groups:
            members = groups[name]
            out += [m for m in members if m not in out]
        else:
            if name not in registry.items["dataset"]:
                opened = registry.open_dataset(name)  # a path a plugin can read (mine.npz)
                if opened is None:
                    choices = list(registry.items["dataset"]) + list(groups)
                    raise ConfigError(
                        f"unknown dataset {name!r}", hint=suggestion(name, choices, "dataset")
                    )
                known = registry.items["dataset"].get(opened.name)
                # a name taken by a registered dataset is refused; one taken by a file opened
                # earlier in this process (a second `run` in the same session) is replaced
                if known is not None and (known.plugin != "open_dataset" or opened.name in out):
                    raise ConfigError(
                        f"--dataset {name}: the file's dataset name "
                        f"{opened.name!r} is already a registered dataset",
                        hint="rename the file",
                    )
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
            raise ConfigError(
                f"--set {item!r} is not of the form component.param=value or role=component",
                hint="e.g. --set embedder.latent_dim=64, --set gp.optimizer=adam, "
                "--set preprocessor=none",
            )
        if not dot:
            name = value.strip()
            if not name:
                raise ConfigError(
                    f"--set {item!r} names no component", hint=f"e.g. --set {key}=none"
                )
            if out.swaps.get(target, name) != name:
                raise ConfigError(
                    f"--set {target}= is given twice ({out.swaps[target]!r} and {name!r})",
                    hint="give each role one component",
                )
            out.swaps[target] = name
            continue
        parsed = parse_value(value.strip())
        prev = out.params.get(target, {})
        if param in prev and not same_value(prev[param], parsed):
            raise ConfigError(
                f"--set {target}.{param} is given twice ({prev[param]!r} and {parsed!r})",
                hint="give each hyperparameter one value",
            )
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
            raise ConfigError(
                f"--sweep {item!r} is not of the form component.param=v1,v2,...",
                hint="e.g. --sweep embedder.margin=0.25,0.5,1,2,4",
            )
        if text.startswith("["):
            values = parse_value(text)
            if not isinstance(values, list):
                raise ConfigError(
                    f"--sweep {item!r}: {text!r} is not a list",
                    hint="e.g. --sweep embedder.margin=[1,2,4]",
                )
        else:
            values = [parse_value(v.strip()) for v in text.split(",") if v.strip()]
        if key in out:
            raise ConfigError(f"--sweep {key} is given twice", hint="list all its values once")
        out[key] = values
    return out


def same_value(a: Any, b: Any) -> bool:
    """Equal and of one type (``1`` and ``1.0`` are two values of a hyperparameter)."""
    return type(a) is type(b) and a == b


@dataclass
class GridRequest:
    """A grid to run: methods x datasets x seeds (x swept values), and where and how."""

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
    #: (:mod:`zslbench.records.rechecks`).
    recheck: bool = False
    allow_nonstandard: bool = False
    #: The TOML config file the request came from, recorded in every record.
    config_file: str | None = None
    #: "reduced" (a config's ``schedule``): recorded in every record's ``config.schedule``.
    schedule: str | None = None


class MissingData(DataError):
    """Files the grid's datasets need are missing; ``lines`` names each (the CLI prints them
    all, one a line)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        more = f" (and {len(lines) - 1} more missing file(s))" if len(lines) > 1 else ""
        super().__init__(lines[0] + more)


def _names(value: str | Sequence[str] | None) -> list[str]:
    return split_names(_listed(value))


def _listed(value: str | Sequence[str] | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _swept(key: str, values: Any) -> list[Any]:
    """A sweep's values as a list: a string is read as on the command line (``"0.1"`` is one
    value, ``"1,2,4"`` three, ``"[1, 2]"`` a JSON list), never as its characters; a single
    number is one value."""
    if isinstance(values, str):
        return parse_sweeps([f"{key}={values}"])[key]
    if isinstance(values, (bytes, Mapping)):
        raise ConfigError(
            f"sweep {key}={values!r} is not a list of values",
            hint=f'e.g. sweeps={{"{key}": [0.1, 1.0]}}',
        )
    return list(values) if isinstance(values, Iterable) else [values]


def _pick(value: Any, conf: Mapping[str, Any], key: str, default: Any) -> Any:
    """A value given here wins over the config file's, which wins over the default."""
    if value is not None:
        return value
    return conf.get(key, default)


def grid_request(
    registry: Registry,
    *,
    methods: str | Sequence[str] | None = None,
    datasets: str | Sequence[str] | None = None,
    config: str | Path | None = None,
    seeds: int | None = None,
    base_seed: int | None = None,
    device: str | None = None,
    results_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
    sets: Mapping[str, Any] | Sequence[str] | None = None,
    sweeps: Mapping[str, Sequence[Any]] | Sequence[str] | None = None,
    executor: str | None = None,
    allow_nonstandard_split: bool | None = None,
    force: bool = False,
    recheck: bool = False,
) -> tuple[GridRequest, str]:
    """The resolved :class:`GridRequest` and the executor's name; every mistake is one
    ``ConfigError`` line, and nothing has run yet.

    ``None`` means "not given": the ``config`` file's value is used, else the default.
    ``sets`` is ``{"embedder.latent_dim": 64, "preprocessor": "none"}`` or the CLI's
    ``["embedder.latent_dim=64"]`` strings (those win over the file's ``[set]`` on the same key);
    ``sweeps`` likewise (``{"embedder.margin": [1, 2, 4]}`` or ``["embedder.margin=1,2,4"]``).
    """
    from zslbench import provenance
    from zslbench.data.dataset import resolve_data_dir

    conf = load_config(Path(config)) if config is not None else {}
    method_names = _methods(registry, methods, conf)
    dataset_names = _datasets(registry, datasets, conf)
    parsed = _overrides(registry, sets, conf, method_names, narrowed=bool(methods))
    sweep_values = {k: _swept(k, v) for k, v in conf.get("sweep", {}).items()}
    if isinstance(sweeps, Mapping):
        sweep_values.update({k: _swept(k, v) for k, v in sweeps.items()})
    elif sweeps:
        sweep_values.update(parse_sweeps(list(sweeps)))
    executor = _pick(executor, conf, "executor", "local")
    if executor not in EXECUTORS:
        raise ConfigError(
            f"executor {executor!r} is not an executor", hint=f"valid: {', '.join(EXECUTORS)}"
        )
    n_seeds = int(_pick(seeds, conf, "seeds", 1))
    if n_seeds < 1:
        raise ConfigError(f"seeds = {n_seeds} must be at least 1", hint="e.g. seeds=3")
    resolved_dir = resolve_data_dir(_pick(data_dir, conf, "data_dir", None))
    missing = missing_data(registry, dataset_names, resolved_dir)
    if missing:
        raise MissingData(missing)
    request = GridRequest(
        methods=method_names,
        datasets=dataset_names,
        results_dir=Path(_pick(results_dir, conf, "results_dir", "results")),
        data_dir=resolved_dir,
        seeds=n_seeds,
        base_seed=int(_pick(base_seed, conf, "base_seed", 0)),
        device=provenance.resolve_device(_pick(device, conf, "device", "auto")),
        overrides=parsed,
        sweeps=sweep_values,
        force=force,
        recheck=recheck,
        allow_nonstandard=bool(
            _pick(allow_nonstandard_split, conf, "allow_nonstandard_split", False)
        ),
        config_file=Path(config).as_posix() if config is not None else None,
        schedule=conf.get("schedule"),
    )
    return request, executor


def _methods(
    registry: Registry, methods: str | Sequence[str] | None, conf: Mapping[str, Any]
) -> list[str]:
    """The methods given here, else the config file's; each one registered."""
    names = _names(methods if methods else conf.get("methods"))
    if not names:
        raise ConfigError(
            f"--method {','.join(_listed(methods))!r} names no method"
            if methods
            else "no method given",
            hint="e.g. --method bt-gp, or a --config file that lists methods (see `zslbench list`)",
        )
    for name in names:
        registry.get("method", name)
    return names


def _datasets(
    registry: Registry, datasets: str | Sequence[str] | None, conf: Mapping[str, Any]
) -> list[str]:
    """The datasets given here, else the config file's, groups expanded."""
    names = expand_datasets(_names(datasets if datasets else conf.get("datasets")), registry)
    if not names:
        raise ConfigError(
            f"--dataset {','.join(_listed(datasets))!r} names no dataset"
            if datasets
            else "no dataset given",
            hint="e.g. --dataset toy, or a --config file that lists datasets (see `zslbench list`)",
        )
    return names


def _overrides(
    registry: Registry,
    sets: Mapping[str, Any] | Sequence[str] | None,
    conf: Mapping[str, Any],
    method_names: list[str],
    narrowed: bool,
) -> Overrides:
    """The file's ``[set]``, then a dict given here on top, then ``--set`` strings on top."""
    parsed = Overrides()
    typed = dict(conf.get("set", {}))
    typed.update(sets if isinstance(sets, Mapping) else {})
    for key, value in typed.items():
        target, dot, param = key.partition(".")
        if dot:
            parsed.params.setdefault(target, {})[param] = value
        else:
            parsed.swaps[target] = str(value)
    if narrowed and conf.get("methods"):
        # --method narrowed the file's grid: the file's [set] for components that none of the
        # chosen methods uses is not a typo, it belongs to the methods left out
        used: set[str] = set()
        for name in method_names:
            for role, (kind, component) in method_roles(registry, name).items():
                used |= {role, registry.get(kind, component).obj.name}
        given_here = {k.partition(".")[0] for k in (sets if isinstance(sets, Mapping) else {})}
        for target in [t for t in parsed.params if t not in used and t not in given_here]:
            del parsed.params[target]
    cli_sets = parse_overrides([] if sets is None or isinstance(sets, Mapping) else list(sets))
    for target, params in cli_sets.params.items():
        parsed.params.setdefault(target, {}).update(params)
    parsed.swaps.update(cli_sets.swaps)
    return parsed


def missing_data(registry: Registry, datasets: list[str], data_dir: Path | None) -> list[str]:
    """One line per file a dataset needs and ``data_dir`` lacks (checked before anything runs)."""
    missing: list[str] = []
    for name in datasets:
        spec = registry.items["dataset"][name].obj
        if spec.missing is not None:
            missing += spec.missing(data_dir)
    return missing


def missing_data_line(lines: list[str]) -> str:
    """Missing data files as one line: each file (relative to the folder they share), then one fix
    for all of them (one line per file would make ``--dataset all`` without the data ten lines of
    300 characters; the first file's fix alone reads as if only its dataset were missing)."""
    if len(lines) == 1:
        return lines[0]
    parts = [line.partition(" is missing") for line in lines]
    if not all(sep for _, sep, _ in parts):
        return f"{lines[0]} (and {len(lines) - 1} more missing file(s))"
    paths = [path for path, _, _ in parts]
    try:
        root = os.path.commonpath(paths)
    except ValueError:  # no common folder (relative and absolute paths mixed)
        root = ""
    shown = [os.path.relpath(p, root) if root else p for p in paths]
    where = f" under {root}" if root else ""
    fix = merged_fix([rest.lstrip(": ") for _, _, rest in parts])
    return f"{len(lines)} data files are missing{where} ({', '.join(shown)}); {fix}"


def merged_fix(fixes: list[str]) -> str:
    """One fix for several files: fixes that differ only in some words (the dataset's name, as in
    ``--dataset awa1`` and ``--dataset cub``) become one with those words joined by commas
    (``--dataset awa1,cub``), which ``zslbench run`` and ``zslbench data`` both read; fixes that
    differ otherwise are the first one, said to be for the first file."""
    import re

    unique = list(dict.fromkeys(fixes))
    if len(unique) == 1:
        return unique[0]
    words = [re.findall(r"[\w.-]+|[^\w.-]+", fix) for fix in unique]
    if len({len(w) for w in words}) != 1:
        return f"for the first: {unique[0]}"
    merged = []
    for column in zip(*words, strict=True):
        values = list(dict.fromkeys(column))
        if len(values) > 1 and not all(re.fullmatch(r"[\w.-]+", v) for v in values):
            return f"for the first: {unique[0]}"
        merged.append(",".join(values))
    return "".join(merged)
