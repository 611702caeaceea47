"""``zslbench leaderboard prune``: the records that the current code would re-run.

A record is *stale* when ``zslbench run``, given the record's own configuration (method, dataset,
``--set``, swept values, base seed, repetition, device type, configuration file), would not take
it from the cache: its code, data, protocol or resolved configuration has changed since it was
written. Such a record still shows on the board (an old row beside the new one, or the only row,
with numbers that the code no longer produces); pruning removes it.

Each record is checked alone: a record that cannot be planned here (its plugin is not installed,
its data is missing, it ran on a GPU and this machine has none) is kept, and said so, and says
nothing about the other records of its configuration. Listing writes nothing, so a read-only
results folder can be listed. Only files that are valid, intact zslbench records (their digest
checks) are ever removed, never through a symbolic link and never outside the results folder,
with the files the harness wrote beside each (its ``.rechecks`` and ``.failed``); any other file
is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zslbench.errors import UserError

#: ``expected(row) -> identity``: what the current code would run for the record of this row
#: (a row of :func:`zslbench.results.read_runs`); raises :class:`CannotPlan` saying why not.
Planner = Callable[[Any], dict[str, Any]]


class CannotPlan(Exception):
    """A record that cannot be planned on this machine (the message says why): it is kept."""


@dataclass
class PruneReport:
    #: (record path, why the current code would re-run it)
    stale: list[tuple[Path, str]] = field(default_factory=list)
    #: (record path, why it could not be checked): kept
    unknown: list[tuple[Path, str]] = field(default_factory=list)
    current: int = 0


def stale_records(results_dir: Path, registry: Any, data_dir: Path | None = None) -> PruneReport:
    """Compare every record's key with the key the current code plans for it (see the module)."""
    from zslbench.results import board_files, read_runs

    runs, _refused = read_runs(Path(results_dir), skip=board_files(Path(results_dir)))
    return compare_keys(runs, planner(registry, Path(results_dir), data_dir))


def compare_keys(runs: Any, expected: Planner) -> PruneReport:
    """Count each record whose key is the planned one as current, list the others as stale (with
    why) and those that cannot be planned as unknown (with why)."""
    from zslbench import identity as ident
    from zslbench.records import SCHEMA_VERSION
    from zslbench.results import valid_record

    report = PruneReport()
    for row in runs.itertuples(index=False):
        path = Path(row.path)
        try:
            identity = expected(row)
        except CannotPlan as exc:
            report.unknown.append((path, str(exc)))
            continue
        record = valid_record(path)
        if isinstance(record, Exception):  # changed since it was read: leave it alone
            continue
        if record.key == ident.run_key(identity, SCHEMA_VERSION):
            report.current += 1
            continue
        why = ident.difference(ident.recorded_identity(record), identity)
        report.stale.append((path, why))
    report.stale.sort()
    report.unknown.sort()
    return report


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


def planner(registry: Any, results_dir: Path, data_dir: Path | None) -> Planner:
    """What the current code would run for a record: its configuration planned as repetition 0
    (as ``zslbench run --dry-run`` plans it, without the check that the folder is writable), and
    the record's own seed put in, so that no repetition it claims costs anything. A plan and a
    loaded dataset are reused by every record that shares them."""
    import torch

    from zslbench import claims, identity, provenance
    from zslbench.api import MissingData, loader
    from zslbench.planning import load_checked, plan_dataset
    from zslbench.prepare import prepare_grid
    from zslbench.request import grid_request
    from zslbench.store import RecordIndex

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
                index.append(RecordIndex.read(results_dir, claims.declared_datasets(registry)))
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


def companions(path: Path) -> list[Path]:
    """The files the harness wrote beside the record at ``path``, named after it: its rechecks
    and its failure note."""
    from zslbench.rechecks import path_for
    from zslbench.store import failure_note_path

    return [path_for(path), failure_note_path(path)]


def remove(results_dir: Path, paths: list[Path]) -> list[Path]:
    """Delete these record files: each must be a valid record (checked again now), a plain file
    inside ``results_dir``, not reached through a link; its companions (:func:`companions`) go
    with it, when they are plain files. Returns the records removed."""
    from zslbench.results import valid_record

    root = Path(results_dir).resolve()
    removed = []
    for path in paths:
        if path.is_symlink() or not path.is_file() or root not in path.resolve().parents:
            continue
        if isinstance(valid_record(path), Exception):
            continue
        path.unlink()
        removed.append(path)
        for other in companions(path):
            if not other.is_symlink() and other.is_file():
                other.unlink()
    return removed
