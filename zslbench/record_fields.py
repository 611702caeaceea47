"""Typed reads of a record's free-form fields for the board: plain JSON values, finite numbers,
per-class entries and curves, each checked, so that no record content can crash or inject into a
later stage. A malformed field raises :class:`~zslbench.records.RecordError` naming it; the reader
(:mod:`zslbench.results`) then refuses the record like an invalid one."""

from __future__ import annotations

import math
from typing import Any

from zslbench import records
from zslbench.records import Record, RecordError

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
    if not records.is_finite(value):
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
