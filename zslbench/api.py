"""The Python API: ``zslbench.run(...)`` and ``zslbench.load_results(...)``.

``zslbench run`` on the command line and :func:`run` here take one path: :func:`grid_request`
(:mod:`zslbench.request`) resolves the options (a keyword given wins over the ``config`` file's value, as a command-line
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from zslbench.data.dataset import ZSLData
from zslbench.errors import ConfigError, UserError, blame
from zslbench.executors import RayExecutor
from zslbench.planning import Emit, Loader
from zslbench.records import Planner, Record
from zslbench.registry import Registry, load_registry
from zslbench.request import GridRequest, MissingData, grid_request, missing_data
from zslbench.runner import RunOutcome, run_grid

__all__ = [
    "MissingData",
    "RunsFailed",
    "grid_request",
    "loader",
    "make_executor",
    "missing_data",
    "outcomes",
    "print_progress",
    "run",
]


class RunsFailed(UserError):
    """Some runs of a grid failed; every other run is recorded. ``records`` holds the records
    (ran or cached) and ``failures`` the one-line reason of each failed run."""

    exit_code = 1

    def __init__(self, records: list[Record], failures: list[str], results_dir: Path) -> None:
        self.records = records
        self.failures = failures
        total = len(records) + len(failures)
        super().__init__(
            f"{len(failures)} of {total} run(s) failed, first: {failures[0]}",
            hint=f"the reasons are also in {results_dir}/<run_id>.failed; fix the "
            "cause and run again: recorded runs are cached",
        )


def make_executor(
    name: str,
    device: str,
    *,
    address: str | None = None,
    cpus_per_run: float | None = None,
    gpus_per_run: float | None = None,
    plugins: tuple[str, ...] = (),
) -> RayExecutor | None:
    """``None`` for the local executor (``run_grid``'s default), else a started Ray executor."""
    if name == "ray":
        return RayExecutor(
            address=address,
            cpus_per_run=cpus_per_run,
            gpus_per_run=gpus_per_run,
            device=device,
            plugins=plugins,
        )
    if address is not None or cpus_per_run is not None or gpus_per_run is not None:
        raise ConfigError(
            "--address, --cpus-per-run and --gpus-per-run need --executor ray",
            hint="add --executor ray, or drop them",
        )
    return None


def loader(registry: Registry, data_dir: Path | None) -> Loader:
    """``load(name) -> (data, kind)`` for the grid: the dataset's plugin reads it from
    ``data_dir``; a failure names the dataset (``dataset 'x' in load``)."""

    def load(name: str) -> tuple[ZSLData, str]:
        spec = registry.items["dataset"][name].obj
        with blame(f"dataset {name!r}", "load"):
            return spec.load(data_dir), spec.kind

    return load


def outcomes(
    request: GridRequest,
    registry: Registry,
    executor: RayExecutor | None = None,
    on_event: Emit | None = None,
) -> Iterator[RunOutcome]:
    """Run the grid (``runner.run_grid``), one ``RunOutcome`` per run as it ends; the executor
    is shut down at the end, or when the caller stops (Ctrl-C)."""
    try:
        yield from run_grid(
            request,
            registry,
            loader(registry, request.data_dir),
            on_event=on_event,
            executor=executor,
        )
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
        sweep = "".join(
            f" {k.rsplit('.', 1)[-1]}={v}" for k, v in (info.get("sweep") or {}).items()
        )
        line = f"run {info['dataset']} · {info['method']}{sweep} · r{info['repetition']}"
    elif kind == "warning":
        line = f"warning: {info['message']}"
    elif kind == "info":
        line = str(info["message"])
    else:  # phases, stages and steps: too many for a log; the CLI shows them live
        return
    print(f"zslbench: {line}", file=out, flush=True)


def run(
    methods: str | Sequence[str] | None = None,
    datasets: str | Sequence[str] | None = None,
    *,
    seeds: int | None = None,
    results_dir: str | Path | None = None,
    sets: Mapping[str, Any] | Sequence[str] | None = None,
    sweeps: Mapping[str, Sequence[Any]] | Sequence[str] | None = None,
    config: str | Path | None = None,
    base_seed: int | None = None,
    device: str | None = None,
    data_dir: str | Path | None = None,
    executor: str | None = None,
    force: bool = False,
    allow_nonstandard_split: bool | None = None,
    plugins: Sequence[str] = (),
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
) -> list[Record]:
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
        registry,
        methods=methods,
        datasets=datasets,
        config=config,
        seeds=seeds,
        base_seed=base_seed,
        device=device,
        results_dir=results_dir,
        data_dir=data_dir,
        sets=sets,
        sweeps=sweeps,
        executor=executor,
        allow_nonstandard_split=allow_nonstandard_split,
        force=force,
    )
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


def _config_path(config_file: str, results_dir: Path) -> Path:
    """A record's configuration file, as given on its command line: relative to the directory the
    run started in, which is the results folder's project (``configs/x.toml`` of the clone)."""
    path = Path(config_file)
    if path.is_absolute() or path.is_file():
        return path
    for folder in Path(results_dir).resolve().parents:
        if (folder / path).is_file():
            return folder / path
    return path


def record_planner(registry: Registry, results_dir: Path, data_dir: Path | None) -> Planner:
    """What the current code would run for a record (``zslbench leaderboard prune``,
    :func:`zslbench.records.prune.stale_records`): its configuration planned as repetition 0
    (as ``zslbench run --dry-run`` plans it, without the check that the folder is writable), and
    the record's own seed put in, so that no repetition it claims costs anything. A plan and a
    loaded dataset are reused by every record that shares them."""
    import torch

    from zslbench import identity, provenance
    from zslbench.planning import load_checked, plan_dataset
    from zslbench.prepare import prepare_grid
    from zslbench.records import CannotPlan, RecordIndex, declared_datasets

    load = loader(registry, data_dir)
    index: list[Any] = []  # read once, on the first record planned
    loaded: dict[tuple[str, bool], Any] = {}
    plans: dict[tuple[Any, ...], tuple[str, dict[str, Any]] | CannotPlan] = {}

    def plan_one(key: tuple[Any, ...], row: Any) -> tuple[str, dict[str, Any]]:
        sets, sweeps, base_seed, device_type, config_file, method, dataset, standard = key
        if device_type == "cuda" and not torch.cuda.is_available():
            raise CannotPlan("ran on a GPU; this machine has none to plan it on")
        config = _config_path(config_file, results_dir) if config_file else None
        try:
            request, _ = grid_request(
                registry,
                methods=[method],
                datasets=[dataset],
                config=config,
                seeds=1,
                base_seed=base_seed,
                device=device_type,
                results_dir=results_dir,
                data_dir=data_dir,
                sets=dict(row.overrides_map),
                sweeps={k: [v] for k, v in row.sweep_map.items()},
                allow_nonstandard_split=not standard,
            )
            configs = prepare_grid(request, registry)
            (name,) = request.datasets  # a file's path resolved to the name it registers
            if (name, standard) not in loaded:
                loaded[name, standard] = load_checked(request, registry, load, name)
            _data, kind, verdict, _info = loaded[name, standard]
            if not index:
                index.append(RecordIndex.read(results_dir, declared_datasets(registry)))
            runs = plan_dataset(
                configs,
                dataset=name,
                data_fingerprint=verdict.fingerprint,
                results_dir=request.results_dir,
                seeds=1,
                base_seed=request.base_seed,
                device=request.device,
                device_name=str(provenance.device_info(request.device)["name"]),
                force=False,
                index=index[0],
                config_file=request.config_file,
                schedule=request.schedule,
                kind=kind,
            )
        except MissingData as exc:
            raise CannotPlan(f"cannot plan it: {exc.lines[0]}") from None
        except UserError as exc:
            raise CannotPlan(f"cannot plan it: {exc.one_line()}") from None
        if len(runs) != 1:
            raise CannotPlan("its own configuration no longer plans it")
        return runs[0].dataset, runs[0].identity

    def expected(row: Any) -> dict[str, Any]:
        # a dataset opened from its file is named by its path, as the Reproduce line does
        by_name = row.data_plugin not in ("", "open_dataset")
        dataset = row.data_path if row.data_path and not by_name else row.dataset
        key = (
            tuple(sorted((k, repr(v)) for k, v in row.overrides_map.items())),
            tuple(sorted((k, repr(v)) for k, v in row.sweep_map.items())),
            int(row.base_seed),
            row.device_type,
            row.config_file,
            row.method,
            dataset,
            bool(row.standard),
        )
        if key not in plans:
            try:
                plans[key] = plan_one(key, row)
            except CannotPlan as exc:
                plans[key] = exc
        found = plans[key]
        if isinstance(found, CannotPlan):
            raise found
        planned_name, planned = found
        seed = identity.derive_seed(int(row.base_seed), planned_name, int(row.repetition))
        return {**planned, "seed": seed}

    return expected
