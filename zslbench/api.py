"""The Python API: ``zslbench.run(...)`` and ``zslbench.load_results(...)``.

``zslbench run`` on the command line and :func:`run` here take one path: :func:`grid_request`
resolves the options (a keyword given wins over the ``config`` file's value, as a command-line
option does), :func:`make_executor` picks the executor, and :func:`outcomes` runs the grid
(``zslbench.runner.run_grid``). The CLI adds only its progress lines and its table.

    import zslbench

    records = zslbench.run(methods=["krr", "eszsl"], datasets=["toy"], seeds=2,
                           results_dir="results", sets={"krr.alpha": 0.1, "krr.width": 1.0})
    frame = zslbench.load_results("results")   # one row per record, pandas

A run that fails does not stop the grid (as on the command line): the others are recorded, and
:func:`run` raises :class:`RunsFailed` at the end, which carries the records and the reasons.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from zslbench.config import EXECUTORS, load_config
from zslbench.errors import ConfigError, DataError, UserError, blame
from zslbench.records import Record
from zslbench.registry import Registry, load_registry


class RunsFailed(UserError):
    """Some runs of a grid failed; every other run is recorded. ``records`` holds the records
    (ran or cached) and ``failures`` the one-line reason of each failed run."""

    exit_code = 1

    def __init__(self, records: list[Record], failures: list[str], results_dir: Path) -> None:
        self.records = records
        self.failures = failures
        total = len(records) + len(failures)
        super().__init__(f"{len(failures)} of {total} run(s) failed, first: {failures[0]}",
                         hint=f"the reasons are also in {results_dir}/<run_id>.failed; fix the "
                         "cause and run again: recorded runs are cached")


class MissingData(DataError):
    """Files the grid's datasets need are missing; ``lines`` names each (the CLI prints them
    all, one a line)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        more = f" (and {len(lines) - 1} more missing file(s))" if len(lines) > 1 else ""
        super().__init__(lines[0] + more)


def _names(value: str | Sequence[str] | None) -> list[str]:
    from zslbench.runner import split_names

    return split_names(_listed(value))


def _listed(value: str | Sequence[str] | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _swept(key: str, values: Any) -> list[Any]:
    """A sweep's values as a list: a string is read as on the command line (``"0.1"`` is one
    value, ``"1,2,4"`` three, ``"[1, 2]"`` a JSON list), never as its characters; a single
    number is one value."""
    from zslbench.runner import parse_sweeps

    if isinstance(values, str):
        return parse_sweeps([f"{key}={values}"])[key]
    if isinstance(values, (bytes, Mapping)):
        raise ConfigError(f"sweep {key}={values!r} is not a list of values",
                          hint=f'e.g. sweeps={{"{key}": [0.1, 1.0]}}')
    return list(values) if isinstance(values, Iterable) else [values]


def _pick(value: Any, conf: Mapping[str, Any], key: str, default: Any) -> Any:
    """A value given here wins over the config file's, which wins over the default."""
    if value is not None:
        return value
    return conf.get(key, default)


def grid_request(registry: Registry, *, methods: str | Sequence[str] | None = None,
                 datasets: str | Sequence[str] | None = None, config: str | Path | None = None,
                 seeds: int | None = None, base_seed: int | None = None,
                 device: str | None = None, results_dir: str | Path | None = None,
                 data_dir: str | Path | None = None,
                 sets: Mapping[str, Any] | Sequence[str] | None = None,
                 sweeps: Mapping[str, Sequence[Any]] | Sequence[str] | None = None,
                 executor: str | None = None, allow_nonstandard_split: bool | None = None,
                 force: bool = False, recheck: bool = False) -> tuple[Any, str]:
    """The resolved ``GridRequest`` and the executor's name; every mistake is one
    ``ConfigError`` line, and nothing has run yet.

    ``None`` means "not given": the ``config`` file's value is used, else the default.
    ``sets`` is ``{"embedder.latent_dim": 64, "preprocessor": "none"}`` or the CLI's
    ``["embedder.latent_dim=64"]`` strings (those win over the file's ``[set]`` on the same key);
    ``sweeps`` likewise (``{"embedder.margin": [1, 2, 4]}`` or ``["embedder.margin=1,2,4"]``).
    """
    from zslbench import provenance
    from zslbench.data.dataset import resolve_data_dir
    from zslbench.runner import (
        GridRequest,
        Overrides,
        expand_datasets,
        parse_overrides,
        parse_sweeps,
    )

    conf = load_config(Path(config)) if config is not None else {}
    method_names = _names(methods if methods else conf.get("methods"))
    if not method_names:
        raise ConfigError(f"--method {','.join(_listed(methods))!r} names no method" if methods
                          else "no method given",
                          hint="e.g. --method bt-gp, or a --config file that lists methods "
                          "(see `zslbench list`)")
    for name in method_names:
        registry.get("method", name)
    dataset_names = expand_datasets(_names(datasets if datasets else conf.get("datasets")),
                                    registry)
    if not dataset_names:
        raise ConfigError(f"--dataset {','.join(_listed(datasets))!r} names no dataset" if datasets
                          else
                          "no dataset given", hint="e.g. --dataset toy, or a --config file that "
                          "lists datasets (see `zslbench list`)")
    parsed = Overrides()
    typed = dict(conf.get("set", {}))  # the file's [set], then a dict given here, on top
    typed.update(sets if isinstance(sets, Mapping) else {})
    for key, value in typed.items():
        target, dot, param = key.partition(".")
        if dot:
            parsed.params.setdefault(target, {})[param] = value
        else:
            parsed.swaps[target] = str(value)
    if methods and conf.get("methods"):
        # --method narrowed the file's grid: the file's [set] for components that none of the
        # chosen methods uses is not a typo, it belongs to the methods left out
        from zslbench.runner import prepare_method

        used: set[str] = set()
        for name in method_names:
            prep = prepare_method(registry, name)
            used |= set(prep.classes) | {cls.name for cls in prep.classes.values()}
        given_here = {k.partition(".")[0] for k in (sets if isinstance(sets, Mapping) else {})}
        for target in [t for t in parsed.params if t not in used and t not in given_here]:
            del parsed.params[target]
    cli_sets = parse_overrides([] if sets is None or isinstance(sets, Mapping) else list(sets))
    for target, params in cli_sets.params.items():
        parsed.params.setdefault(target, {}).update(params)
    parsed.swaps.update(cli_sets.swaps)
    sweep_values = {k: _swept(k, v) for k, v in conf.get("sweep", {}).items()}
    if isinstance(sweeps, Mapping):
        sweep_values.update({k: _swept(k, v) for k, v in sweeps.items()})
    elif sweeps:
        sweep_values.update(parse_sweeps(list(sweeps)))
    executor = _pick(executor, conf, "executor", "local")
    if executor not in EXECUTORS:
        raise ConfigError(f"executor {executor!r} is not an executor",
                          hint=f"valid: {', '.join(EXECUTORS)}")
    n_seeds = int(_pick(seeds, conf, "seeds", 1))
    if n_seeds < 1:
        raise ConfigError(f"seeds = {n_seeds} must be at least 1", hint="e.g. seeds=3")
    resolved_dir = resolve_data_dir(_pick(data_dir, conf, "data_dir", None))
    missing = missing_data(registry, dataset_names, resolved_dir)
    if missing:
        raise MissingData(missing)
    request = GridRequest(
        methods=method_names, datasets=dataset_names,
        results_dir=Path(_pick(results_dir, conf, "results_dir", "results")),
        data_dir=resolved_dir, seeds=n_seeds, base_seed=int(_pick(base_seed, conf, "base_seed", 0)),
        device=provenance.resolve_device(_pick(device, conf, "device", "auto")),
        overrides=parsed, sweeps=sweep_values, force=force, recheck=recheck,
        allow_nonstandard=bool(_pick(allow_nonstandard_split, conf, "allow_nonstandard_split",
                                     False)),
        config_file=Path(config).as_posix() if config is not None else None,
        schedule=conf.get("schedule"))
    return request, executor


def missing_data(registry: Registry, datasets: list[str], data_dir: Path) -> list[str]:
    """One line per file a dataset needs and ``data_dir`` lacks (checked before anything runs)."""
    missing: list[str] = []
    for name in datasets:
        spec = registry.items["dataset"][name].obj
        if spec.missing is not None:
            missing += spec.missing(data_dir)
    return missing


def make_executor(name: str, device: str, *, address: str | None = None,
                  cpus_per_run: float | None = None, gpus_per_run: float | None = None,
                  plugins: tuple[str, ...] = ()) -> Any:
    """``None`` for the local executor (``run_grid``'s default), else a started Ray executor."""
    if name == "ray":
        from zslbench.executors import RayExecutor

        return RayExecutor(address=address, cpus_per_run=cpus_per_run, gpus_per_run=gpus_per_run,
                           device=device, plugins=plugins)
    if address is not None or cpus_per_run is not None or gpus_per_run is not None:
        raise ConfigError("--address, --cpus-per-run and --gpus-per-run need --executor ray",
                          hint="add --executor ray, or drop them")
    return None


def loader(registry: Registry, data_dir: Path | None) -> Callable[[str], tuple[Any, str]]:
    """``load(name) -> (data, kind)`` for the grid: the dataset's plugin reads it from
    ``data_dir``; a failure names the dataset (``dataset 'x' in load``)."""
    def load(name: str) -> tuple[Any, str]:
        spec = registry.items["dataset"][name].obj
        with blame(f"dataset {name!r}", "load"):
            return spec.load(data_dir), spec.kind

    return load


def outcomes(request: Any, registry: Registry, executor: Any = None,
             on_event: Callable[[str, dict[str, Any]], None] | None = None) -> Iterator[Any]:
    """Run the grid (``runner.run_grid``), one ``RunOutcome`` per run as it ends; the executor
    is shut down at the end, or when the caller stops (Ctrl-C)."""
    from zslbench.runner import run_grid

    try:
        yield from run_grid(request, registry, loader(registry, request.data_dir),
                            on_event=on_event, executor=executor)
    finally:
        if executor is not None:
            executor.shutdown()


def print_progress(kind: str, info: dict[str, Any], *, file: Any = None) -> None:
    """An ``on_event`` for :func:`run` that says what the grid is doing, one line on stderr per
    dataset loaded, run started, warning and note (``zslbench.run`` itself prints nothing)."""
    out = file if file is not None else sys.stderr
    if kind == "dataset":
        line = f"loading {info['dataset']}"
    elif kind == "run":
        sweep = "".join(f" {k.rsplit('.', 1)[-1]}={v}" for k, v in (info.get("sweep") or {}).items())
        line = f"run {info['dataset']} · {info['method']}{sweep} · r{info['repetition']}"
    elif kind == "warning":
        line = f"warning: {info['message']}"
    elif kind == "info":
        line = str(info["message"])
    else:  # phases, stages and steps: too many for a log; the CLI shows them live
        return
    print(f"zslbench: {line}", file=out, flush=True)


def run(methods: str | Sequence[str] | None = None, datasets: str | Sequence[str] | None = None,
        *, seeds: int | None = None, results_dir: str | Path | None = None,
        sets: Mapping[str, Any] | Sequence[str] | None = None,
        sweeps: Mapping[str, Sequence[Any]] | Sequence[str] | None = None,
        config: str | Path | None = None, base_seed: int | None = None,
        device: str | None = None, data_dir: str | Path | None = None,
        executor: str | None = None, force: bool = False,
        allow_nonstandard_split: bool | None = None, plugins: Sequence[str] = (),
        on_event: Callable[[str, dict[str, Any]], None] | None = None) -> list[Record]:
    """Run methods x datasets x seeds, as ``zslbench run`` does, and return the records (runs
    done now and runs found cached, in grid order).

    Arguments mirror the CLI's options (``sets`` is ``--set`` as a dict, ``plugins`` is ``-p``);
    ``None`` takes the ``config`` file's value, else the CLI's default (``results_dir``
    ``"results"``, one seed, device ``auto``). Mistakes in the grid raise one
    :class:`~zslbench.errors.UserError` before anything runs; a run that fails does not stop the
    others, and :class:`RunsFailed` is raised at the end with the records and the reasons.
    Plugin problems (a broken third-party plugin) are :class:`UserWarning`.

    It prints nothing. ``on_event(kind, info)`` is called as the grid goes: ``"dataset"``
    (``info["dataset"]``: loading it), ``"run"`` (a run starts: ``dataset``, ``method``,
    ``repetition``, ``seed``, ``sweep``, ``reason``), ``"phase"`` / ``"stage_start"`` /
    ``"stage_end"`` / ``"step"`` / ``"candidate"`` (inside a run), ``"warning"`` and ``"info"``
    (``info["message"]``). ``on_event=zslbench.api.print_progress`` prints a line per dataset and
    run on stderr.
    """
    registry = load_registry(tuple(plugins))
    for line in registry.problems:
        warnings.warn(line, UserWarning, stacklevel=2)
    request, executor_name = grid_request(
        registry, methods=methods, datasets=datasets, config=config, seeds=seeds,
        base_seed=base_seed, device=device, results_dir=results_dir, data_dir=data_dir, sets=sets,
        sweeps=sweeps, executor=executor, allow_nonstandard_split=allow_nonstandard_split,
        force=force)
    runner = make_executor(executor_name, request.device, plugins=tuple(plugins))
    records: list[Record] = []
    failures: list[str] = []
    for outcome in outcomes(request, registry, runner, on_event):
        if outcome.status == "failed":
            failures.append(outcome.error or "failed")
        elif outcome.record is not None:
            records.append(outcome.record)
    if failures:
        raise RunsFailed(records, failures, request.results_dir)
    return records
