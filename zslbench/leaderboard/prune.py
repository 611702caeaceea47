"""``zslbench leaderboard prune``: the records that the current code would re-run.

A record is *stale* when ``zslbench run``, given the record's own configuration (method, dataset,
``--set``, swept values, base seed, repetition, device type, configuration file), would not take
it from the cache: its code, data, protocol or resolved configuration has changed since it was
written. Such a record still shows on the board (an old row beside the new one, or the only row,
with numbers that the code no longer produces); pruning removes it.

Only files that are valid, intact zslbench records (their digest checks) are ever removed, never
through a symbolic link and never outside the results folder; any other file is left alone. A
record that cannot be planned here (its plugin is not installed, its data is missing, it ran on a
GPU and this machine has none) is kept, and said so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zslbench.errors import UserError


@dataclass
class PruneReport:
    #: (record path, why the current code would re-run it)
    stale: list[tuple[Path, str]] = field(default_factory=list)
    #: (record path, why it could not be checked): kept
    unknown: list[tuple[Path, str]] = field(default_factory=list)
    current: int = 0


def _group_key(row: Any) -> tuple[Any, ...]:
    """Records that one ``zslbench run`` request can plan together."""
    overrides = tuple(sorted((k, repr(v)) for k, v in row.overrides_map.items()))
    sweep = tuple(sorted((k, repr(v)) for k, v in row.sweep_map.items()))
    return (overrides, sweep, int(row.base_seed), row.device_type, row.config_file)


def _dataset_arg(row: Any) -> str:
    """How ``--dataset`` names the record's dataset (as the Reproduce line does)."""
    from zslbench.leaderboard.collect import by_plugin_name

    return row.data_path if row.data_path and not by_plugin_name(row) else row.dataset


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


def stale_records(results_dir: Path, registry: Any, data_dir: Path | None = None) -> PruneReport:
    """Plan every record's run with the current code and compare keys (see the module)."""
    from zslbench.leaderboard.collect import load_runs

    runs, _refused = load_runs(results_dir, link_base=results_dir)
    report = PruneReport()
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for row in runs.itertuples(index=False):
        groups[_group_key(row)].append(row)
    for key, rows in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        planned = _plan(key, rows, results_dir, registry, data_dir, report)
        if planned is not None:
            _compare_keys(rows, planned, report)
    report.stale.sort()
    report.unknown.sort()
    return report


def _plan(
    key: tuple[Any, ...],
    rows: list[Any],
    results_dir: Path,
    registry: Any,
    data_dir: Path | None,
    report: PruneReport,
) -> list[Any] | None:
    """The runs the current code plans for one group of records, or None (each record then listed
    in ``report.unknown`` with why)."""
    import torch

    from zslbench import api
    from zslbench.planning import plan_grid

    _, _, base_seed, device_type, config_file = key
    why = ""
    if device_type == "cuda" and not torch.cuda.is_available():
        why = "ran on a GPU; this machine has none to plan it on"
    else:
        first = rows[0]
        config = _config_path(config_file, results_dir) if config_file else None
        try:
            request, _ = api.grid_request(
                registry,
                methods=sorted({r.method for r in rows}),
                datasets=sorted({_dataset_arg(r) for r in rows}),
                config=config,
                seeds=max(int(r.repetition) for r in rows) + 1,
                base_seed=base_seed,
                device=device_type,
                results_dir=results_dir,
                data_dir=data_dir,
                sets=dict(first.overrides_map),
                sweeps={k: [v] for k, v in first.sweep_map.items()},
                allow_nonstandard_split=not all(bool(r.standard) for r in rows),
            )
            return list(plan_grid(request, registry, api.loader(registry, request.data_dir)))
        except api.MissingData as exc:
            why = f"cannot plan it: {exc.lines[0]}"
        except UserError as exc:
            why = f"cannot plan it: {exc.one_line()}"
    report.unknown += [(Path(r.path), why) for r in rows]
    return None


def _compare_keys(rows: list[Any], planned: list[Any], report: PruneReport) -> None:
    """Count each record whose key the plan gives as current, list the others as stale, with why."""
    from zslbench import identity as ident
    from zslbench.results import valid_record

    keys = {p.key for p in planned}
    by_slot = {(p.dataset, p.method, p.repetition): p for p in planned}
    for row in rows:
        record = valid_record(Path(row.path))
        if isinstance(record, Exception):  # changed since it was read: leave it alone
            continue
        if record.key in keys:
            report.current += 1
            continue
        plan = by_slot.get((row.dataset, row.method, int(row.repetition)))
        why = (
            ident.difference(record.identity, plan.identity)
            if plan is not None
            else "its own configuration no longer plans it"
        )
        report.stale.append((Path(row.path), why))


def remove(results_dir: Path, paths: list[Path]) -> list[Path]:
    """Delete these record files: each must be a valid record (checked again now), a plain file
    inside ``results_dir``, not reached through a link. Returns the files removed."""
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
    return removed
