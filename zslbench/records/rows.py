"""One record as one row of plain, typed values: what the table, the cache and the board take.

:func:`run_row` reads the free-form fields (``config``, ``device``, ``data``, per-class entries,
curves) as plain, typed values (names as strings, numbers as finite floats), so that no record
content can crash or inject into a later stage: a malformed one raises :class:`RecordError`
naming the field, and the record is refused like an invalid one. :func:`valid_record` is the
whole check of a record file (:mod:`zslbench.records.validation`, then its row). Fields newer
than the schema this zslbench reads (``selection_audit``) are read through
:func:`optional_field`, the one adapter between versions.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from zslbench.records.schema import Record, RecordError, is_finite, metric_names
from zslbench.records.validation import Declarations, declared_datasets, read_one

# -- typed reads of the free-form fields ---------------------------------------------------------
#: Deepest nesting accepted in a free-form value (an override, a swept value).
MAX_DEPTH = 16


def optional_field(record: Record, name: str) -> Any:
    """A field newer than the schema this zslbench reads (``selection_audit``): None when the
    record type or the record lacks it. The one adapter between record schema versions."""
    return getattr(record, name, None)


def refuse(field: str, problem: str) -> RecordError:
    return RecordError(f"{field} {problem}")


def plain(value: Any, field: str, depth: int = 0) -> Any:
    """A free-form value as plain JSON data: strings, booleans, None, finite numbers, lists and
    objects of them, at most :data:`MAX_DEPTH` deep."""
    if depth > MAX_DEPTH:
        raise refuse(field, "is nested too deeply")
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise refuse(field, f"holds {value!r}, not a finite number")
        return value
    if isinstance(value, list):
        return [plain(v, field, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v, field, depth + 1) for k, v in value.items()}
    raise refuse(field, f"holds a {type(value).__name__}")


def mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise refuse(field, "is not an object")
    return plain(value, field)


def text(value: Any, field: str, default: str = "") -> str:
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        raise refuse(field, "is not a string")
    return value


def number(value: Any, field: str, *, optional: bool = True) -> float:
    """A finite number as a float (NaN for an absent optional one), else a refusal."""
    if value is None and optional:
        return math.nan
    if not is_finite(value):
        raise refuse(field, f"is {value!r}, not a finite number")
    return float(value)


def per_class(record: Record) -> tuple[tuple[int, str, float, float, int | None], ...]:
    """The unseen classes' entries as ``(class, name, accuracy, frequency, n_test)``."""
    raw = record.per_class
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise refuse("per_class", "is not an object")
    entries = raw.get("unseen") or []
    if not isinstance(entries, list):
        raise refuse("per_class.unseen", "is not a list")
    out, seen = [], set()
    for i, entry in enumerate(entries):
        where = f"per_class.unseen[{i}]"
        if not isinstance(entry, dict):
            raise refuse(where, "is not an object")
        cls = entry.get("class")
        if isinstance(cls, bool) or not isinstance(cls, int) or cls in seen:
            raise refuse(f"{where}.class", "is not a distinct integer")
        seen.add(cls)
        n_test = entry.get("n_test")
        if n_test is not None and (
            isinstance(n_test, bool) or not isinstance(n_test, int) or n_test < 0
        ):
            raise refuse(f"{where}.n_test", "is not a count")
        out.append(
            (
                cls,
                text(entry.get("name"), f"{where}.name", f"class {cls}"),
                number(entry.get("accuracy"), f"{where}.accuracy"),
                number(entry.get("frequency"), f"{where}.frequency"),
                n_test,
            )
        )
    return tuple(out)


def curve(record: Record) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    raw = record.curve
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise refuse("curve", "is not an object")
    a_u, a_s = raw.get("A_U"), raw.get("A_S")
    if not a_u:
        return None
    if not isinstance(a_u, list) or not isinstance(a_s, list) or len(a_u) != len(a_s):
        raise refuse("curve", "does not hold two lists A_U and A_S of one length")
    return (
        tuple(number(v, "curve.A_U", optional=False) for v in a_u),
        tuple(number(v, "curve.A_S", optional=False) for v in a_s),
    )


def selection_audit(record: Record) -> dict[str, Any] | None:
    raw = optional_field(record, "selection_audit")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise refuse("selection_audit", "is not an object")
    epoch = raw.get("test_selected_epoch")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise refuse("selection_audit.test_selected_epoch", "is not an integer")
    return {
        "clean_H": number(raw.get("clean_H"), "selection_audit.clean_H", optional=False),
        "test_selected_H": number(
            raw.get("test_selected_H"), "selection_audit.test_selected_H", optional=False
        ),
        "test_selected_epoch": epoch,
        "rule": text(raw.get("rule"), "selection_audit.rule"),
    }


def valid_record(path: Path, datasets: Declarations | None = None) -> Record | RecordError:
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


# -- one record -> one row ------------------------------------------------------------------------


def dataset_kind(record: Record, datasets: Declarations | None = None) -> str:
    """The kind its dataset declares (a run on a declared stand-in never counts as real, whatever
    the record claims), else the record's ``dataset_kind`` (a dataset opened from a file, or a
    plugin not installed here)."""
    declared = (declared_datasets() if datasets is None else datasets).get(record.dataset)
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
    """Flatten one record into plain, checked values (the columns of :func:`row_fields`).

    Fields the schema guarantees (``read_record`` checked them) are read directly; the free-form
    objects (``config``, ``device``, ``data``, ``git``, ``load``) may lack a key, which reads as
    unknown, and anything malformed in them raises :class:`RecordError`.
    """
    config = mapping(record.config, "config")
    sweep = mapping(config.get("sweep"), "config.sweep")
    components = mapping(config.get("components"), "config.components")
    # A target that is neither a role nor a component of this run (a grid's --set for another
    # method, recorded before records kept only their own) says nothing about this run.
    applies = set(components) | {c.get("name") for c in components.values() if isinstance(c, dict)}
    overrides = {
        k: v
        for k, v in mapping(config.get("overrides"), "config.overrides").items()
        if k not in sweep and (k.partition(".")[0] in applies or "." not in k)
    }
    device = mapping(record.device, "device")
    source = record.data.get("source")
    source = source if isinstance(source, dict) else {}
    provider = record.data.get("provider")
    provider = provider if isinstance(provider, dict) else {}
    schedule = text(config.get("schedule"), "config.schedule")
    op = record.operating_point if isinstance(record.operating_point, dict) else {}
    row = {
        "kind": dataset_kind(record),
        "dataset": record.dataset,
        "method": record.method,
        "paper_name": text(record.paper_name, "paper_name"),
        "config_id": record.config_id,
        "config": config,
        "overrides": assignments(overrides),
        "overrides_map": overrides,
        "sweep": assignments(sweep),
        "sweep_params": ", ".join(sorted(sweep)),
        "sweep_map": sweep,
        "config_file": text(config.get("config_file"), "config.config_file"),
        "schedule": "reduced" if schedule == "reduced" else "",
        "standard": record.standard,
        "split_reason": text(record.split.get("reason"), "split.reason"),
        "data_fp": text(record.data.get("fingerprint"), "data.fingerprint"),
        # The backbone of the features ("" where the record names none: before backbones were named)
        "backbone": text(record.data.get("backbone"), "data.backbone"),
        # A dataset opened from a file is named by its path on the command line.
        "data_path": text(source.get("path"), "data.source.path"),
        # Who registered the dataset's name ("open_dataset" for a file opened by its path; "" in
        # records made before this was recorded), and whether that plugin was a -p module.
        "data_plugin": text(provider.get("plugin"), "data.provider.plugin"),
        "data_plugin_p": bool(provider) and provider.get("distribution") is None,
        "device_type": text(device.get("type"), "device.type", "unknown"),
        "device_name": text(device.get("name"), "device.name")
        or text(device.get("type"), "device.type", "unknown"),
        "seed": record.seed,
        "repetition": record.repetition,
        "base_seed": record.base_seed,
        "version": record.zslbench_version or "unknown",
        "commit": text(record.git.get("commit"), "git.commit", "unknown"),
        "dirty": record.git.get("dirty") is True,
        "started_at": text(record.started_at, "started_at"),
        "finished_at": text(record.finished_at, "finished_at"),
        "run_id": record.run_id,
        "path": Path(path).as_posix(),
        "folder": Path(path).parent.as_posix(),
        "link": _link(path, link_base),
        "train": float(record.timings["train"]),
        # An empty ``load`` (a record that did not measure it) is unknown, not oversubscribed.
        "oversubscribed": record.load.get("oversubscribed") is True,
        "load_known": bool(record.load),
        "per_class": per_class(record),
        "curve": curve(record),
        "op": (
            number(op.get("A_U"), "operating_point.A_U"),
            number(op.get("A_S"), "operating_point.A_S"),
        ),
        "selection_audit": selection_audit(record),
    }
    for metric in metric_names(required=True):
        row[metric] = float(record.metrics[metric])
    for metric in metric_names(required=False):  # optional: absent means not measured
        row[metric] = number(record.metrics.get(metric), f"metrics.{metric}")
    return row


#: The columns of :func:`read_runs`' frame before the metrics (:func:`row_fields`).
RECORD_FIELDS = (
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
)


def row_fields() -> tuple[str, ...]:
    """The columns of :func:`zslbench.records.results.read_runs`' frame: the record's fields,
    then every declared metric."""
    return (*RECORD_FIELDS, *metric_names())
