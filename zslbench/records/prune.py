"""Pruning a results folder: the records that the current code would re-run.

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

What the current code would run is asked of a :data:`Planner` (``zslbench.api.record_planner``
plans each record as ``zslbench run --dry-run`` would): the results folder does not plan runs.
``zslbench leaderboard prune`` is the command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zslbench import identity as ident
from zslbench.records.rechecks import path_for
from zslbench.records.rows import valid_record
from zslbench.records.schema import SCHEMA_VERSION
from zslbench.records.store import board_files, failure_note_path

#: ``expected(row) -> identity``: what the current code would run for the record of this row
#: (a row of :func:`zslbench.records.results.read_runs`); raises :class:`CannotPlan` saying why not.
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


def stale_records(results_dir: Path, expected: Planner) -> PruneReport:
    """Compare every record's key with the key the current code plans for it (see the module)."""
    from zslbench.records.results import read_runs  # pandas: only when pruning

    runs, _refused = read_runs(Path(results_dir), skip=board_files(Path(results_dir)))
    return compare_keys(runs, expected)


def compare_keys(runs: Any, expected: Planner) -> PruneReport:
    """Count each record whose key is the planned one as current, list the others as stale (with
    why) and those that cannot be planned as unknown (with why)."""
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
        why = ident.difference(record.identity, identity)
        report.stale.append((path, why))
    report.stale.sort()
    report.unknown.sort()
    return report


def companions(path: Path) -> list[Path]:
    """The files the harness wrote beside the record at ``path``, named after it: its rechecks
    and its failure note."""
    return [path_for(path), failure_note_path(path)]


def remove(results_dir: Path, paths: list[Path]) -> list[Path]:
    """Delete these record files: each must be a valid record (checked again now), a plain file
    inside ``results_dir``, not reached through a link; its companions (:func:`companions`) go
    with it, when they are plain files. Returns the records removed."""
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
