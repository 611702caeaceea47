"""Result records as one tidy table: :func:`load_results`, and the reader the leaderboard uses.

Every record under a results directory becomes one row (:func:`read_runs`), read and checked by
:func:`zslbench.records.rows.valid_record` (schema, claims and free-form fields). The
leaderboard, ``compare`` and :func:`load_results` share this one reader, so a notebook sees
exactly the numbers the board shows. A file that is not a valid, intact record is never a row: it
is returned (leaderboard) or warned about (``load_results``) with the reason, named by its path.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from zslbench.errors import UserError
from zslbench.records.rows import row_fields, run_row
from zslbench.records.schema import RecordError, metric_names
from zslbench.records.store import board_files, record_files
from zslbench.records.validation import read_one

#: The columns of :func:`load_results` before the metrics, and after them (:func:`columns`).
RUN_COLUMNS = (
    "dataset",
    "dataset_kind",
    "method",
    "config_id",
    "config",
    "seed",
    "repetition",
    "base_seed",
)
AFTER_METRICS = (
    "train_seconds",
    "device_type",
    "device_name",
    "data_fingerprint",
    "backbone",
    "standard",
    "oversubscribed",
    "schedule",
    "finished_at",
    "path",
)


def columns() -> list[str]:
    """The columns of :func:`load_results`, in order: every declared metric
    (:data:`zslbench.records.METRIC_SPECS`) between the run's fields and its provenance."""
    return [*RUN_COLUMNS, *metric_names(), *AFTER_METRICS]


def load_results(results_dir: str | Path) -> pd.DataFrame:
    """Every valid, intact record under ``results_dir`` (searched recursively) as one row.

    Columns: ``dataset``, ``dataset_kind`` (a run on an embedded stand-in is never ``real``),
    ``method``, ``config_id`` and ``config`` (the resolved configuration, a dict), ``seed``,
    ``repetition``, ``base_seed``, the metrics ``A_T``, ``A_U``, ``A_S``, ``H``, ``AUSUC``,
    ``AUSUC_per_image`` (percent; NaN where a record did not measure it), ``train_seconds``,
    ``device_type``, ``device_name``, ``data_fingerprint``, ``backbone`` (of the features; ``""``
    where the record names none), ``standard`` (split),
    ``oversubscribed`` (the machine was busy while timing), ``schedule`` (``"reduced"`` or
    ``""``), ``finished_at`` and ``path``. A file that is not a valid record gives a
    :class:`UserWarning` naming it and is left out; ``frame.attrs["refused"]`` lists them as
    ``(path, reason)``.
    """
    frame, refused = read_runs(Path(results_dir), skip=board_files(Path(results_dir)))
    for path, reason in refused:
        warnings.warn(
            f"{path}: skipped, not a valid zslbench record: {reason}", UserWarning, stacklevel=2
        )
    out = frame.rename(
        columns={"train": "train_seconds", "data_fp": "data_fingerprint", "kind": "dataset_kind"}
    )
    out = out[columns()].reset_index(drop=True)
    out.attrs["refused"] = list(refused)
    return out


# -- reading ------------------------------------------------------------------------------------


def read_runs(
    results_dir: Path, link_base: Path | None = None, skip: Iterable[Path] = ()
) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """Every valid, intact record under ``results_dir`` as one row (:func:`run_row`), in a
    canonical order, and ``(path, reason)`` for each JSON file refused. ``link_base`` is the
    folder links are made relative to (the leaderboard's output); ``skip`` are paths that are not
    records (a board rendered inside the results directory)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise UserError(
            f"{results_dir}: no such results directory",
            hint="run `zslbench run ... --results-dir DIR` first, or point --results-dir at the records",
        )
    skipped = {Path(p) for p in skip}
    rows, refused = [], []
    for path in record_files(results_dir):
        if path in skipped:
            continue
        item = read_one(path)
        if not isinstance(item, RecordError):
            try:
                rows.append(
                    run_row(path, item, link_base if link_base is not None else results_dir)
                )
                continue
            except RecordError as exc:
                item = exc
        refused.append((path.as_posix(), str(item)))
    return runs_frame(rows), refused


def runs_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Rows from :func:`run_row` as a frame in a canonical order (never the disk's)."""
    frame = pd.DataFrame(list(rows))
    if frame.empty:
        frame = pd.DataFrame(columns=[*row_fields()])
    return frame.sort_values(
        ["kind", "dataset", "method", "config_id", "seed", "finished_at", "path"], kind="mergesort"
    ).reset_index(drop=True)


#: What makes records the same run (with its ``seed``): of such records only the newest counts.
RUN_KEYS = "kind dataset method config_id standard device_type data_fp schedule".split()


def newest_runs(
    results_dir: Path, link_base: Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[str, str]]]:
    """The runs of ``results_dir`` that count: (kept, superseded, refused). Files of a board
    rendered inside the folder are not read; of several records of one run (:data:`RUN_KEYS`
    and seed), the newest is kept. ``compare`` and the leaderboard both read this table."""
    results_dir = Path(results_dir)
    runs, refused = read_runs(results_dir, link_base=link_base, skip=board_files(results_dir))
    if runs.empty:
        return runs, runs, refused
    ordered = runs.sort_values([*RUN_KEYS, "seed", "finished_at", "path"], kind="mergesort")
    newest = ~ordered.duplicated([*RUN_KEYS, "seed"], keep="last")
    kept, superseded = ordered[newest], ordered[~newest]
    return kept.reset_index(drop=True), superseded.reset_index(drop=True), refused


def samples_by_seed(group: pd.DataFrame, column: str) -> dict[int, float]:
    """``{seed: value}`` of a metric over a configuration's runs (non-finite values left out),
    the samples that the paired tests of :mod:`zslbench.stats` pair by seed."""
    pairs = zip(group["seed"], group[column], strict=True)
    return {int(s): float(v) for s, v in pairs if math.isfinite(v)}
