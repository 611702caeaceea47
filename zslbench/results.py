"""Result records as one tidy table: :func:`load_results`, and the reader the leaderboard uses.

Every record under a results directory becomes one row (:func:`read_runs`). The leaderboard and
:func:`load_results` share this one reader, so a notebook sees exactly the numbers the board
shows. A file that is not a valid, intact record is never a row: it is returned (leaderboard) or
warned about (``load_results``) with the reason, named by its path.

The reader is also the leaderboard's guard against damaged content. ``records.read_record``
checks the schema; this module then takes from each record only plain, typed values (names as
strings, numbers as finite floats, per-class entries and curves as checked tuples), so that no
record content can crash or inject into a later stage: a record whose free-form fields are
malformed (a non-finite number in its configuration, a ``per_class`` entry without a class, a
curve with unequal lengths, ...) is refused like an invalid one.

Fields newer than the record schema this zslbench reads (``selection_audit``, a configuration's
``schedule``) are read through :func:`~zslbench.record_fields.optional_field`, the one place that knows how to find them.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from zslbench import claims, records
from zslbench import record_fields as fields
from zslbench.errors import UserError
from zslbench.records import Record, RecordError

METRICS = records.METRICS
#: Optional metrics (absent in a record: not measured, NaN here).
EXTRA_METRICS = records.EXTRA_METRICS

#: The columns of :func:`load_results`, in order.
COLUMNS = [
    "dataset",
    "dataset_kind",
    "method",
    "config_id",
    "config",
    "seed",
    "repetition",
    "base_seed",
    *METRICS,
    *EXTRA_METRICS,
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
]


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
    out = out[COLUMNS].reset_index(drop=True)
    out.attrs["refused"] = list(refused)
    return out


# -- reading ------------------------------------------------------------------------------------


def record_files(results_dir: Path) -> list[Path]:
    """Every ``*.json`` under ``results_dir``, sorted, without hidden files or folders (the
    temporaries of atomic writes)."""
    return [
        path
        for path in sorted(Path(results_dir).rglob("*.json"))
        if not any(part.startswith(".") for part in path.relative_to(results_dir).parts)
    ]


def board_files(results_dir: Path) -> set[Path]:
    """The files of a leaderboard rendered inside ``results_dir`` (``zslbench leaderboard``'s
    default ``--out`` is ``RESULTS_DIR/leaderboard``): every file its manifest lists, and the
    manifest itself. They are not records, and reading them is no reason to warn."""
    from zslbench.leaderboard.manifest import MANIFEST, owned_files

    own: set[Path] = set()
    if Path(results_dir).is_dir():
        for path in record_files(Path(results_dir)):
            if path.name == MANIFEST:
                listed = owned_files(path)
                if listed is not None:
                    own.update(path.parent / name for name in listed)
    return own


def read_one(path: Path, datasets: claims.Declarations | None = None) -> Record | RecordError:
    """The record at ``path``, or the error that refuses it. Any failure while reading is a
    refusal naming the cause (a 100 000-deep JSON nesting, a NaN under the digest, ...), never an
    exception that would stop a whole board."""
    try:
        record = records.read_record(path)
        claims.check(record, datasets)  # its claims against each other and the declarations
        return record
    except RecordError as exc:
        return exc
    except RecursionError:
        return RecordError("is nested too deeply to read")
    except ValueError as exc:
        if "Out of range float" in str(exc):  # the digest is of JSON, which has no NaN
            return RecordError("holds NaN or Infinity, which no valid record does")
        return RecordError(f"cannot be read as a record (ValueError: {exc})")
    except Exception as exc:  # noqa: BLE001 - the content is untrusted; refuse, naming why
        return RecordError(f"cannot be read as a record ({type(exc).__name__}: {exc})")


def valid_record(path: Path, datasets: claims.Declarations | None = None) -> Record | RecordError:
    """The record at ``path`` when the board would take it (:func:`read_one`, then every
    free-form field checked as :func:`run_row` does), else the error that refuses it: ``run``
    re-runs a damaged record rather than taking it from the cache."""
    item = read_one(path, datasets)
    if isinstance(item, RecordError):
        return item
    try:
        run_row(path, item, Path(path).parent)
    except RecordError as exc:
        return exc
    except RecursionError:
        return RecordError("is nested too deeply to read")
    except Exception as exc:  # noqa: BLE001 - untrusted content: refuse, naming why
        return RecordError(f"cannot be read as a record ({type(exc).__name__}: {exc})")
    return item


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
        frame = pd.DataFrame(columns=[*ROW_FIELDS])
    return frame.sort_values(
        ["kind", "dataset", "method", "config_id", "seed", "finished_at", "path"], kind="mergesort"
    ).reset_index(drop=True)


# -- one record -> one row ------------------------------------------------------------------------


def dataset_kind(record: Record, datasets: claims.Declarations | None = None) -> str:
    """The kind its dataset declares (a run on a declared stand-in never counts as real, whatever
    the record claims), else the record's ``dataset_kind`` (a dataset opened from a file, or a
    plugin not installed here)."""
    declared = (claims.declared_datasets() if datasets is None else datasets).get(record.dataset)
    kind = getattr(declared, "kind", None)
    return kind if isinstance(kind, str) else record.dataset_kind


def value_text(value: Any) -> str:
    """A hyperparameter value as typed on the command line (``adam``, ``4.0``, ``[1, 2]``)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def assignments(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={value_text(v)}" for k, v in sorted(values.items()))


def _link(path: Path, link_base: Path) -> str:
    """``path`` relative to the directory the pages are written to, with forward slashes."""
    return Path(os.path.relpath(Path(path).resolve(), Path(link_base).resolve())).as_posix()


def run_row(path: Path, record: Record, link_base: Path) -> dict[str, Any]:
    """Flatten one record into plain, checked values (the columns in :data:`ROW_FIELDS`).

    Fields the schema guarantees (``read_record`` checked them) are read directly; the free-form
    objects (``config``, ``device``, ``data``, ``git``, ``load``) may lack a key, which reads as
    unknown, and anything malformed in them raises :class:`RecordError`.
    """
    config = fields.mapping(record.config, "config")
    sweep = fields.mapping(config.get("sweep"), "config.sweep")
    components = fields.mapping(config.get("components"), "config.components")
    # A target that is neither a role nor a component of this run (a grid's --set for another
    # method, recorded before records kept only their own) says nothing about this run.
    applies = set(components) | {c.get("name") for c in components.values() if isinstance(c, dict)}
    overrides = {
        k: v
        for k, v in fields.mapping(config.get("overrides"), "config.overrides").items()
        if k not in sweep and (k.partition(".")[0] in applies or "." not in k)
    }
    device = fields.mapping(record.device, "device")
    source = record.data.get("source")
    source = source if isinstance(source, dict) else {}
    provider = record.data.get("provider")
    provider = provider if isinstance(provider, dict) else {}
    schedule = fields.text(config.get("schedule"), "config.schedule")
    op = record.operating_point if isinstance(record.operating_point, dict) else {}
    row = {
        "kind": dataset_kind(record),
        "dataset": record.dataset,
        "method": record.method,
        "paper_name": fields.text(record.paper_name, "paper_name"),
        "config_id": record.config_id,
        "config": config,
        "overrides": assignments(overrides),
        "overrides_map": overrides,
        "sweep": assignments(sweep),
        "sweep_params": ", ".join(sorted(sweep)),
        "sweep_map": sweep,
        "config_file": fields.text(config.get("config_file"), "config.config_file"),
        "schedule": "reduced" if schedule == "reduced" else "",
        "standard": record.standard,
        "split_reason": fields.text(record.split.get("reason"), "split.reason"),
        "data_fp": fields.text(record.data.get("fingerprint"), "data.fingerprint"),
        # The backbone of the features ("" where the record names none: before backbones were named)
        "backbone": fields.text(record.data.get("backbone"), "data.backbone"),
        # A dataset opened from a file is named by its path on the command line.
        "data_path": fields.text(source.get("path"), "data.source.path"),
        # Who registered the dataset's name ("open_dataset" for a file opened by its path; "" in
        # records made before this was recorded), and whether that plugin was a -p module.
        "data_plugin": fields.text(provider.get("plugin"), "data.provider.plugin"),
        "data_plugin_p": bool(provider) and provider.get("distribution") is None,
        "device_type": fields.text(device.get("type"), "device.type", "unknown"),
        "device_name": fields.text(device.get("name"), "device.name")
        or fields.text(device.get("type"), "device.type", "unknown"),
        "seed": record.seed,
        "repetition": record.repetition,
        "base_seed": record.base_seed,
        "version": record.zslbench_version or "unknown",
        "commit": fields.text(record.git.get("commit"), "git.commit", "unknown"),
        "dirty": record.git.get("dirty") is True,
        "started_at": fields.text(record.started_at, "started_at"),
        "finished_at": fields.text(record.finished_at, "finished_at"),
        "run_id": record.run_id,
        "path": Path(path).as_posix(),
        "folder": Path(path).parent.as_posix(),
        "link": _link(path, link_base),
        "train": float(record.timings["train"]),
        # An empty ``load`` (a record that did not measure it) is unknown, not oversubscribed.
        "oversubscribed": record.load.get("oversubscribed") is True,
        "load_known": bool(record.load),
        "per_class": fields.per_class(record),
        "curve": fields.curve(record),
        "op": (
            fields.number(op.get("A_U"), "operating_point.A_U"),
            fields.number(op.get("A_S"), "operating_point.A_S"),
        ),
        "selection_audit": fields.selection_audit(record),
    }
    for metric in METRICS:
        row[metric] = float(record.metrics[metric])
    for metric in EXTRA_METRICS:  # optional: absent means not measured
        row[metric] = fields.number(record.metrics.get(metric), f"metrics.{metric}")
    return row


#: The columns of :func:`read_runs`' frame.
ROW_FIELDS = (
    "kind",
    "dataset",
    "method",
    "paper_name",
    "config_id",
    "config",
    "overrides",
    "overrides_map",
    "sweep",
    "sweep_params",
    "sweep_map",
    "config_file",
    "schedule",
    "standard",
    "split_reason",
    "data_fp",
    "backbone",
    "data_path",
    "data_plugin",
    "data_plugin_p",
    "device_type",
    "device_name",
    "seed",
    "repetition",
    "base_seed",
    "version",
    "commit",
    "dirty",
    "started_at",
    "finished_at",
    "run_id",
    "path",
    "folder",
    "link",
    "train",
    "oversubscribed",
    "load_known",
    "per_class",
    "curve",
    "op",
    "selection_audit",
    *METRICS,
    *EXTRA_METRICS,
)
