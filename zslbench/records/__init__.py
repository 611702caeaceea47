"""The record: zslbench's one source of truth, and the one owner of everything about it.

- :mod:`~zslbench.records.schema`: the :class:`Record` type, its identity names
  (:func:`config_id`, :func:`run_name`) and the declaration of every metric
  (:data:`METRIC_SPECS`);
- :mod:`~zslbench.records.validation`: the one validation of a record read from a file (schema,
  claims and typed fields together, :func:`valid_record`);
- :mod:`~zslbench.records.store`: the results folder (names, the one walk, atomic writes,
  failure notes, the planner's :class:`RecordIndex`), with :mod:`~zslbench.records.rechecks`
  beside each record and :mod:`~zslbench.records.prune` (stale records removed);
- :mod:`~zslbench.records.results`: every record as one tidy table (:func:`load_results`), the
  one table ``compare``, notebooks and the leaderboard read (it needs pandas, so it is imported
  on its own).
"""

from zslbench.records.prune import CannotPlan, Planner, PruneReport, stale_records
from zslbench.records.rows import valid_record
from zslbench.records.schema import (
    EXTRA_METRICS,
    KINDS,
    METRIC_SPECS,
    METRICS,
    SCHEMA_VERSION,
    MetricSpec,
    Record,
    RecordError,
    config_id,
    is_finite,
    jsonable,
    metric_names,
    metric_spec,
    run_name,
)
from zslbench.records.store import (
    RecordIndex,
    check_results_dir,
    clear_failure_note,
    device_type,
    failure_note,
    failure_note_path,
    record_files,
    record_path,
    run_slot,
    write_failure_note,
    write_record,
)
from zslbench.records.validation import (
    Declarations,
    check,
    declared_datasets,
    parse,
    read_record,
)

__all__ = [
    "EXTRA_METRICS",
    "KINDS",
    "METRIC_SPECS",
    "METRICS",
    "SCHEMA_VERSION",
    "CannotPlan",
    "MetricSpec",
    "Declarations",
    "Planner",
    "PruneReport",
    "Record",
    "RecordError",
    "RecordIndex",
    "check",
    "check_results_dir",
    "clear_failure_note",
    "config_id",
    "declared_datasets",
    "device_type",
    "failure_note",
    "failure_note_path",
    "is_finite",
    "jsonable",
    "metric_names",
    "metric_spec",
    "parse",
    "read_record",
    "record_files",
    "record_path",
    "run_name",
    "run_slot",
    "stale_records",
    "valid_record",
    "write_failure_note",
    "write_record",
]
