"""Planning a grid: which runs it holds, their seeds and keys, which are cached, and why the others
are not; execution (:mod:`zslbench.executors`, driven by :mod:`zslbench.runner`) only runs the plans.

``zslbench run`` and ``zslbench run --dry-run`` plan through the same generator, :func:`plan`, so
what the dry run says is what the run does. For every run that is not taken from the cache the
plan gives one reason (:func:`zslbench.identity.difference`): ``new``, ``data changed``,
``config changed``, ``protocol changed``, ``code of `krr` changed``, ``--force``, ``damaged
record``, ``failed before`` (a ``<run_id>.failed`` note beside the record's path). An earlier run
is found among the records of the results dir by (dataset, method, device type, base seed,
repetition, swept values), so a reason is given even when the new run's file name differs from the
old one's (a new seed, config or data fingerprint is in the name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zslbench import identity as ident
from zslbench import interrupts, provenance
from zslbench.data import backbones
from zslbench.data.checks import check_dataset, declared_benchmarks
from zslbench.data.dataset import ZSLData, check_backbone
from zslbench.errors import ConfigError, UserError, failure_reason
from zslbench.prepare import PreparedMethod, prepare_grid
from zslbench.records import (
    SCHEMA_VERSION,
    Record,
    RecordError,
    declared_datasets,
    jsonable,
    run_name,
)
from zslbench.records.store import (
    RecordIndex,
    check_results_dir,
    device_type,
    failure_note,
    record_path,
    run_slot,
)
from zslbench.registry import Registry
from zslbench.request import GridRequest, Overrides

derive_seed = ident.derive_seed
#: ``load(name) -> (data, kind)``: how the grid reads a dataset (``zslbench.api.loader``).
Loader = Callable[[str], tuple[ZSLData, str]]
#: ``on_event(kind, info)``: progress reports (``zslbench.runner.run_grid`` lists the kinds).
Emit = Callable[[str, dict[str, Any]], None]


@dataclass
class PlannedRun:
    """One run of the grid as planned: ``status`` is ``"cached"`` (``record`` holds it) or
    ``"run"``, with ``reason`` saying why it is not taken from the cache. A run to do is handed
    as is to an executor (``executors.execute``): it is picklable, so that a Ray worker can run it."""

    dataset: str
    method: str
    repetition: int
    seed: int
    run_id: str
    key: str
    config_id: str
    config: dict[str, Any]
    identity: dict[str, Any]
    path: Path
    status: str
    reason: str = ""
    record: Record | None = None
    eta_seconds: float | None = None
    #: Why a file at ``path`` could not be read as a record (it is then re-run and replaced).
    damaged: str | None = None
    #: The resolved method that runs it.
    prepared: PreparedMethod | None = None
    #: The dataset's kind (``synthetic``, ``real``, ...), stored in its record.
    kind: str = ""
    #: The torch device it runs on (``cpu``, ``cuda``, ``cuda:1``).
    device: str = "cpu"
    #: Whether ``eta_seconds`` comes only from earlier runs on a busy machine.
    eta_approximate: bool = False

    @property
    def label(self) -> str:
        sweep = self.config.get("sweep") or {}
        extra = "".join(f" {k.rsplit('.', 1)[-1]}={v}" for k, v in sweep.items())
        return f"{self.dataset} · {self.method}{extra} · r{self.repetition} (seed {self.seed})"


def plan_dataset(
    configs: Iterable[tuple[PreparedMethod, dict[str, Any], Overrides]],
    *,
    dataset: str,
    data_fingerprint: str,
    results_dir: Path,
    seeds: int,
    base_seed: int,
    device: str,
    device_name: str,
    force: bool,
    index: RecordIndex,
    config_file: str | None = None,
    schedule: str | None = None,
    kind: str = "",
) -> list[PlannedRun]:
    """Plan every (configuration, repetition) of one dataset.

    ``configs`` are ``(PreparedMethod, sweep combination, Overrides)`` from
    :func:`zslbench.prepare.prepare_grid`. Component digests are computed once per component
    class.
    """
    dev_type = device_type(device)
    digests: dict[type, dict[str, Any]] = {}
    #: record path -> (config id, data fingerprint) of the run of this grid that writes it
    claimed: dict[Path, tuple[str, str]] = {}
    out: list[PlannedRun] = []
    for prep, combo, overrides in configs:
        config = prep.config(overrides)
        if combo:
            config["sweep"] = jsonable(combo)
        if config_file:
            config["config_file"] = config_file
        if schedule == "reduced":
            config["schedule"] = "reduced"
        config_id = prep.config_id()
        components = {}
        for role, cls in prep.classes.items():
            if cls not in digests:
                digests[cls] = ident.component_digest(cls)
            components[role] = digests[cls]
        eta = index.eta(dataset, prep.spec.name, device_name)
        approximate = eta is None
        if approximate:  # earlier runs only on a busy machine: their time, marked approximate
            eta = index.eta(dataset, prep.spec.name, device_name, busy=True)
        for rep in range(seeds):
            seed = derive_seed(base_seed, dataset, rep)
            run_id = _free_name(
                index,
                claimed,
                Path(results_dir),
                dataset,
                prep.spec.name,
                config_id,
                data_fingerprint,
                dev_type,
                seed,
            )
            identity = ident.run_identity(config_id, data_fingerprint, seed, dev_type, components)
            key = ident.run_key(identity, SCHEMA_VERSION)
            path = record_path(results_dir, run_id)
            claimed[path.resolve()] = (config_id, data_fingerprint)
            run = PlannedRun(
                dataset,
                prep.spec.name,
                rep,
                seed,
                run_id,
                key,
                config_id,
                config,
                identity,
                path,
                "run",
                eta_seconds=eta,
                prepared=prep,
                kind=kind,
                device=device,
                eta_approximate=approximate and eta is not None,
            )
            existing = index.by_path.get(path.resolve())
            failed = failure_note(path)
            if failed is not None and not (isinstance(existing, Record) and existing.key == key):
                run.reason = f"failed before ({failed})"
            elif isinstance(existing, RecordError):
                run.damaged = f"{path}: {existing}; re-running it"
                run.reason = f"damaged record ({existing})"
            elif existing is not None and existing.key == key:
                run.record = existing
                if force:
                    run.reason = "--force"
                else:
                    run.status, run.eta_seconds = "cached", None
            else:
                if existing is None:
                    existing = index.previous(
                        run_slot(
                            dataset, prep.spec.name, dev_type, base_seed, rep, config.get("sweep")
                        ),
                        config_id,
                        data_fingerprint,
                    )
                run.reason = ident.difference(
                    existing.identity if existing is not None else None, identity
                )
                if force:
                    run.reason = f"--force ({run.reason})"
            out.append(run)
    return out


def _free_name(
    index: RecordIndex,
    claimed: dict[Path, tuple[str, str]],
    results_dir: Path,
    dataset: str,
    method: str,
    config_id: str,
    data_fp: str,
    dev_type: str,
    seed: int,
) -> str:
    """The run's id (:func:`zslbench.records.run_name`); a ``ConfigError`` when its file holds the
    record of another configuration or data, or another run of this grid writes it, so that no
    run ever replaces another's record (48 bits of each id: not expected to happen)."""
    name = run_name(dataset, method, config_id, data_fp, dev_type, seed)
    path = record_path(results_dir, name).resolve()
    rec = index.by_path.get(path)
    owner = claimed.get(path) or (
        (rec.config_id, str(rec.data.get("fingerprint"))) if isinstance(rec, Record) else None
    )
    if owner not in (None, (config_id, data_fp)):
        raise ConfigError(
            f"{path}: holds the record of another configuration or data under this run's name",
            hint="move that record out of --results-dir, or run into another --results-dir",
        )
    return name


def load_checked(
    request: GridRequest, registry: Registry, load: Loader, dataset: str
) -> tuple[ZSLData, str, Any, dict[str, Any]]:
    """Load ``dataset`` and run the dataset contract on it (before any training, and for a dry
    run): (data, kind, the checks' verdict, the record's ``data`` section)."""
    data, kind = load(dataset)
    # The benchmark the dataset's plugin declares, and every declared one (to match a file that
    # says it is real): the pins are the plugins', not the core's.
    declared = registry.items["dataset"].get(dataset)
    bench = declared.obj.benchmark if declared is not None else None
    if data.backbone is not None:  # a plugin's own loader may set anything: it names records
        check_backbone(data.backbone, where=f"dataset {dataset!r}")
    # Another backbone's features are the benchmark with other features: every pin but the
    # features' applies, and the backbone enters the fingerprint (zslbench.data.backbones).
    verdict = check_dataset(
        data,
        kind,
        allow_nonstandard=request.allow_nonstandard,
        benchmark=backbones.for_backbone(bench, data.backbone),
        known=backbones.relax_all(
            declared_benchmarks(p.obj for p in registry.items["dataset"].values()), data.backbone
        ),
    )
    if bench is None and verdict.official is not None:  # a real file matched by its split
        bench = next(
            (
                p.obj.benchmark
                for p in registry.items["dataset"].values()
                if p.obj.benchmark is not None and p.obj.benchmark.name == verdict.official
            ),
            None,
        )
    verdict = backbones.named(verdict, data.backbone, bench)
    info = {
        "fingerprint": verdict.fingerprint,
        "features_hash": verdict.features_hash,
        "n_images": int(data.features.shape[0]),
        "feature_dim": int(data.features.shape[1]),
        "n_seen": int(len(data.seen_classes)),
        "n_unseen": int(len(data.unseen_classes)),
        "source": data.source,
    }
    if declared is not None:
        # Who registered the name: a Reproduce line names a plugin's dataset by name (with -p
        # when its plugin is a -p module, distribution null), and only a file opened from the
        # command line (plugin "open_dataset") by its path.
        info["provider"] = {"plugin": declared.plugin, "distribution": declared.distribution}
    if data.backbone is not None:
        info["backbone"] = data.backbone
    return data, kind, verdict, info


@dataclass
class DatasetPlan:
    """One dataset of a grid, planned: its runs and the checked data they run on, or, when the
    dataset could not be loaded, why (``failure``; its runs then fail, the grid goes on)."""

    dataset: str
    runs: list[PlannedRun] = field(default_factory=list)
    data: ZSLData | None = None
    #: The dataset checks' verdict (``zslbench.data.checks``) and the record's ``data`` section.
    verdict: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None


@dataclass
class GridPlan:
    """A grid, checked and ready: every configuration resolved, the results dir read once;
    :attr:`datasets` plans one dataset at a time (loading it), in the request's order."""

    request: GridRequest
    configs: list[tuple[PreparedMethod, dict[str, Any], Overrides]]
    index: RecordIndex
    device_name: str
    datasets: Iterator[DatasetPlan]


def plan(
    request: GridRequest,
    registry: Registry,
    load: Loader,
    *,
    on_event: Emit | None = None,
    keep_going: bool = False,
) -> GridPlan:
    """Plan the grid: what ``zslbench run`` runs and ``--dry-run`` prints.

    Every configuration is resolved and the results dir checked before any data is loaded (a
    mistake is one ``ConfigError`` line). Each dataset is then loaded and checked when its plan
    is asked for, since its fingerprint is part of every key. With ``keep_going`` a dataset that
    cannot be loaded gives a :class:`DatasetPlan` with its ``failure`` (and a ``"warning"``
    event) rather than an exception; the user's Ctrl-C always propagates.
    """
    configs = prepare_grid(request, registry)
    check_results_dir(request.results_dir)
    index = RecordIndex.read(request.results_dir, declared_datasets(registry))
    device_name = str(provenance.device_info(request.device)["name"])
    emit = on_event or (lambda kind, info: None)

    def datasets() -> Iterator[DatasetPlan]:
        for dataset in request.datasets:
            emit("dataset", {"dataset": dataset})
            signals = interrupts.user_signals()
            try:
                # Counted, so that the user's Ctrl-C while a dataset loads stops the grid rather
                # than failing that dataset's runs as plugin code raising KeyboardInterrupt would.
                with interrupts.user_interrupts():
                    data, kind, verdict, info = load_checked(request, registry, load, dataset)
            except BaseException as exc:  # its runs fail, the grid goes on (as a failed run)
                if isinstance(exc, KeyboardInterrupt) and interrupts.user_signals() != signals:
                    raise  # the user's Ctrl-C: the grid stops
                if not keep_going:
                    raise  # nothing else could run: the data error itself is the answer (exit 2)
                reason = _load_failure(exc).removeprefix(f"{dataset}: ")
                emit(
                    "warning", {"message": f"{dataset}: {reason}; its runs fail, the grid goes on"}
                )
                yield DatasetPlan(dataset, failure=reason)
                continue
            runs = plan_dataset(
                configs,
                dataset=dataset,
                data_fingerprint=verdict.fingerprint,
                results_dir=request.results_dir,
                seeds=request.seeds,
                base_seed=request.base_seed,
                device=request.device,
                device_name=device_name,
                force=request.force or request.recheck,
                index=index,
                config_file=request.config_file,
                schedule=request.schedule,
                kind=kind,
            )
            yield DatasetPlan(dataset, runs, data, verdict, info)

    return GridPlan(request, configs, index, device_name, datasets())


def _load_failure(exc: BaseException) -> str:
    """One line for a dataset that could not be loaded or failed the split checks."""
    if isinstance(exc, UserError):
        return exc.one_line()
    return "cannot be loaded: " + failure_reason(exc)


def plan_grid(request: GridRequest, registry: Registry, load: Loader) -> list[PlannedRun]:
    """The whole grid planned, without running anything (``zslbench run --dry-run``): every
    dataset is loaded and checked, since its fingerprint is part of every key."""
    return [run for planned in plan(request, registry, load).datasets for run in planned.runs]


def fmt_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def dry_run_lines(runs: list[PlannedRun], device_name: str) -> list[str]:
    """What ``zslbench run --dry-run`` prints: one line per run, then the grid's totals and ETA."""
    lines = []
    for run in runs:
        if run.status == "cached":
            lines.append(f"cached  {run.label}")
            continue
        eta = f", ~{fmt_seconds(run.eta_seconds)}" if run.eta_seconds is not None else ""
        eta += " (approximate: earlier runs on a busy machine)" if run.eta_approximate else ""
        lines.append(f"to run  {run.label}: {run.reason}{eta}")
    todo = [r for r in runs if r.status == "run"]
    known = [r.eta_seconds for r in todo if r.eta_seconds is not None]
    busy = sum(r.eta_approximate for r in todo)
    total = f"{len(runs)} run(s): {len(runs) - len(todo)} cached, {len(todo)} to run"
    if todo:
        total += f"; ETA ~{fmt_seconds(sum(known))}" if known else "; ETA unknown"
        notes = [f"approximate: {busy} run(s) timed only on a busy machine"] if busy else []
        if len(known) < len(todo):
            notes.append(
                f"{len(todo) - len(known)} run(s) without an earlier record on "
                f"{device_name} not counted"
            )
        total += f" ({'; '.join(notes)})" if notes else ""
    lines.append(total)
    return lines
