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
from zslbench.records import Record
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
