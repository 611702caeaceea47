"""Run methods x datasets x seeds, one atomic record per run, skipping runs already recorded.

The driver of a grid: :func:`run_grid` takes the plan (:func:`zslbench.planning.plan`, the one
the dry run prints), hands the runs to do to an executor (:mod:`zslbench.executors`), and writes
each finished run's record (:func:`make_record`) or failure note through the results store
(:mod:`zslbench.records.store`). Seeds follow benchopt: each run's seed is a hash of (base seed, dataset,
repetition), so adding a method never changes another's seeds, and methods pair up by seed.

The request (:mod:`zslbench.request`) and the resolved methods (:mod:`zslbench.prepare`) have
their own modules.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from zslbench import identity, provenance
from zslbench._version import __version__
from zslbench.errors import UserError
from zslbench.executors import Batch, LocalExecutor, RunResult
from zslbench.identity import derive_seed
from zslbench.planning import DatasetPlan, Emit, Loader, PlannedRun, dry_run_lines, plan
from zslbench.prepare import PreparedMethod
from zslbench.records import METRIC_SPECS, Record, jsonable, rechecks, store
from zslbench.records.store import write_record
from zslbench.registry import Registry
from zslbench.request import GridRequest


class Executor(Protocol):
    """What :func:`run_grid` needs of an executor (:mod:`zslbench.executors`)."""

    def run(self, batches: Iterator[Batch], emit: Emit) -> Iterator[Batch | RunResult]: ...

    def shutdown(self) -> None: ...


@dataclass
class RunOutcome:
    """How one run of the grid ended: ``ran`` (its record written now), ``cached``, ``rechecked``
    or ``failed`` (``error`` says why)."""

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
    #: A failed run's ``<run_id>.failed`` note (``store.write_failure_note``).
    note: Path | None = None


def run_grid(
    request: GridRequest,
    registry: Registry,
    load: Loader,
    on_event: Emit | None = None,
    executor: Executor | None = None,
) -> Iterator[RunOutcome]:
    """Yield one outcome per (dataset, method, configuration, repetition).

    ``load(name)`` returns the dataset and its kind (called once per dataset); the dataset contract
    (``zslbench.data.checks``) runs on it before any training. Cached runs are yielded at once;
    the others go to ``executor`` (``LocalExecutor`` by default, in grid order; the Ray executor
    yields them as they finish). Records are written here, by the driver, atomically.
    ``on_event(kind, info)`` reports progress: ``"dataset"``, ``"run"``, ``"phase"``,
    ``"stage_start"``/``"stage_end"``, ``"step"``, ``"warning"``, ``"info"`` (for every run not
    taken from the cache, the reason, before the dataset's first fit).
    """
    emit = _each_warning_once(on_event or (lambda kind, info: None))
    executor = executor or LocalExecutor()
    grid = plan(request, registry, load, on_event=emit, keep_going=len(request.datasets) > 1)
    git = provenance.git_state()
    planned: dict[str, DatasetPlan] = {}
    for item in executor.run(_batches(grid.datasets, request, grid.device_name, emit), emit):
        if isinstance(item, Batch):  # the executor took the next dataset: its known outcomes first
            planned[item.planned.dataset] = item.planned
            yield from _known(item.planned, grid.configs, request)
            continue
        yield _finish(item, planned[item.plan.dataset], request, git, emit)


def _each_warning_once(emit: Emit) -> Emit:
    """``emit`` that passes a warning once per dataset: the same line for every seed (the search
    chose an end of its grid on each of five seeds) says nothing new after the first."""
    said: set[tuple[Any, str]] = set()
    dataset: list[Any] = [None]

    def once(kind: str, info: dict[str, Any]) -> None:
        if kind in ("dataset", "run"):
            dataset[0] = info.get("dataset")
        elif kind == "warning":
            key = (dataset[0], str(info.get("message")))
            if key in said:
                return
            said.add(key)
        emit(kind, info)

    return once


def _batches(
    datasets: Iterator[DatasetPlan], request: GridRequest, device_name: str, emit: Emit
) -> Iterator[Batch]:
    """Each dataset's runs to do, with a line for each saying why it is not cached."""
    for planned in datasets:
        todo: list[PlannedRun] = []
        if any(run.status == "run" for run in planned.runs):
            emit(
                "info",
                {"message": f"{planned.dataset}: " + dry_run_lines(planned.runs, device_name)[-1]},
            )
        for run in planned.runs:
            if run.status == "cached":
                continue
            if request.recheck and run.record is None:  # nothing recorded to compare with
                emit(
                    "info",
                    {
                        "message": f"not rechecked {run.label}: no current record "
                        f"({run.reason}); run it without --recheck first"
                    },
                )
                continue
            if run.damaged:
                emit("warning", {"message": run.damaged})
            emit("info", {"message": f"to run {run.label}: {run.reason}"})
            todo.append(run)
        yield Batch(planned, todo)


def _known(
    planned: DatasetPlan, configs: list[tuple[PreparedMethod, Any, Any]], request: GridRequest
) -> Iterator[RunOutcome]:
    """The outcomes of a dataset known without running: its cached runs, or, when it could not
    be loaded, every one of its runs failed."""
    if planned.failure is not None:
        for prep, _, _ in configs:
            for rep in range(request.seeds):
                yield RunOutcome(
                    planned.dataset,
                    prep.spec.name,
                    rep,
                    derive_seed(request.base_seed, planned.dataset, rep),
                    "failed",
                    error=f"{prep.spec.name} on {planned.dataset}: {planned.failure}",
                )
        return
    for run in planned.runs:
        if run.status == "cached":
            yield RunOutcome(
                planned.dataset,
                run.method,
                run.repetition,
                run.seed,
                "cached",
                run.record,
                run.path,
            )


def _finish(
    res: RunResult, planned: DatasetPlan, request: GridRequest, git: dict[str, Any], emit: Emit
) -> RunOutcome:
    """Keep what a finished run produced: its failure note, its recheck, or its record."""
    plan = res.plan
    if res.error is not None:
        note = None
        try:
            note = store.write_failure_note(plan.path, res.error)
        except OSError as exc:
            emit(
                "warning",
                {
                    "message": f"cannot write {store.failure_note_path(plan.path)}"
                    f" ({exc.strerror or exc})"
                },
            )
        return RunOutcome(
            plan.dataset,
            plan.method,
            plan.repetition,
            plan.seed,
            "failed",
            error=res.error,
            note=note,
        )
    record = make_record(plan, res, planned.verdict, planned.info, request.base_seed, git)
    if request.recheck and plan.record is not None:  # the recorded run stays as it is
        entry = rechecks.compare(plan.record, record)
        emit("info", {"message": rechecks.line(entry)})
        try:
            kept: Path | None = rechecks.append(plan.path, entry)
        except rechecks.RechecksError as exc:
            kept = None
            where = rechecks.path_for(plan.path)
            emit(
                "warning",
                {"message": f"{where}: not extended, {exc}; move it away to keep rechecks"},
            )
        return RunOutcome(
            plan.dataset, plan.method, plan.repetition, plan.seed, "rechecked", record, kept
        )
    try:
        written = write_record(request.results_dir, record)
    except OSError as exc:
        raise UserError(
            f"cannot write the record {plan.path} ({exc.strerror or exc}); every "
            "record written before it is complete",
            hint="free disk space or fix the results dir, then re-run the same "
            "command to finish the rest",
        ) from None
    store.clear_failure_note(plan.path, other_configs=not plan.config.get("sweep"))
    return RunOutcome(plan.dataset, plan.method, plan.repetition, plan.seed, "ran", record, written)


def make_record(
    plan: PlannedRun,
    res: RunResult,
    verdict: Any,
    data_info: dict[str, Any],
    base_seed: int,
    git: dict[str, Any],
) -> Record:
    """The record of a finished run (unsealed; ``write_record`` seals it)."""
    result = res.result
    assert result is not None and plan.prepared is not None, "a finished run has its result"
    ev = result.evaluation
    # every declared metric the evaluation gives (an optional one may be absent)
    measured = {m.name: m.measure(ev) for m in METRIC_SPECS}
    metrics = {name: value for name, value in measured.items() if value is not None}
    return Record(
        run_id=plan.run_id,
        key=plan.key,
        config_id=plan.config_id,
        code_fingerprint=identity.code_digest(plan.identity),
        identity=jsonable(plan.identity),
        dataset=plan.dataset,
        dataset_kind=plan.kind,
        method=plan.method,
        paper_name=plan.prepared.spec.paper_name,
        repetition=plan.repetition,
        base_seed=base_seed,
        seed=plan.seed,
        metrics=metrics,
        gamma=result.gamma,
        timings={k: round(v, 4) for k, v in sorted(result.timings.items())},
        load=jsonable(res.load),
        curve=jsonable(ev.get("curve")),
        operating_point=jsonable(ev.get("operating_point")),
        per_class=jsonable(ev.get("per_class")),
        search=jsonable(result.search),
        selection_audit=jsonable(result.selection_audit),
        validation=jsonable(result.validation),
        config=_resolved_config(plan, result.search),
        split=jsonable(verdict.as_record()),
        data=jsonable(data_info),
        device=jsonable(res.device),
        environment=jsonable(res.environment),
        git=jsonable(git),
        zslbench_version=__version__,
        started_at=res.started_at,
        finished_at=res.finished_at,
    )


def _resolved_config(plan: PlannedRun, search: Any) -> dict[str, Any]:
    """The run's configuration, with what its model resolved at fit time: a model whose
    hyperparameters default to None, meaning "decided when fitting" (the generative model's
    classifier settings come from its generator), says what they were through an optional
    ``resolved_params()``; with the search's choice applied, that is what the final fit ran.
    Kept under ``components.model.resolved``, outside the configuration id."""
    config = jsonable(plan.config)  # a copy: the plan's is shared by its repetitions
    assert plan.prepared is not None, "a planned run carries its prepared method"
    model = plan.prepared.instantiate(plan.seed, plan.device).model
    resolve = getattr(model, "resolved_params", None)
    if callable(resolve):
        model.set_search_params(**((search or {}).get("chosen") or {}))
        config["components"]["model"]["resolved"] = jsonable(resolve())
    return config
