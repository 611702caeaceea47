"""Result records: the one type (:class:`Record`) that every number zslbench prints comes from.

One JSON file per run (dataset, method, configuration, seed), written atomically by
:func:`write_record` and read back only through :func:`read_record`, which checks the schema
version, the types of the fields that leaderboards and the cache rely on, and the record's digest
of its own content. A record that fails any of these is refused with the reason: ``run`` re-runs
it, ``leaderboard`` skips it with a warning naming the file.

The digest (``sha256`` of the canonical JSON of every other field) detects accidental edits and
damage; it is integrity, not security: anyone can recompute it after editing a record.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from zslbench.files import atomic_write_text, read_folder_file

SCHEMA_VERSION = 2
METRICS = ("A_T", "A_U", "A_S", "H", "AUSUC")
#: Extra metrics a record may carry (not in schema 1): AUSUC averaged per image, as CNZSL's code
#: computes it; zslbench's headline AUSUC averages per class (Chao et al.).
EXTRA_METRICS = ("AUSUC_per_image",)
KINDS = ("real", "synthetic", "custom")


class RecordError(Exception):
    """A file that is not a valid, intact zslbench record (the message says why)."""


def config_id(method: str, components: dict[str, tuple[str, Any]]) -> str:
    """The configuration id: sha256 of the method and, per role, its component's name and
    hyperparameters (``{"model": ("krr", {"alpha": 0.1})}``), as JSON data."""
    body = {role: [name, params] for role, (name, params) in components.items()}
    return hashlib.sha256(json.dumps([method, body], sort_keys=True).encode()).hexdigest()


def run_name(
    dataset: str,
    method: str,
    config_id: str,
    data_fingerprint: str,
    device_type: str,
    seed: int,
    *,
    full: bool = False,
) -> str:
    """A run's id, its record's file name without ``.json``.

    The short form keeps 8 hex digits of the configuration id and of the data fingerprint, as
    every record made before 0.2 is named. Two configurations can share those 8 digits; the
    planner then names the second run in the full form (the whole configuration id, 16 digits of
    the data fingerprint), so that no run ever replaces the record of another configuration
    (``zslbench.planning``).
    """
    cid, fp = (config_id, data_fingerprint[:16]) if full else (config_id[:8], data_fingerprint[:8])
    return f"{dataset}__{method}__{cid}__{fp}__{device_type}__s{seed}"


@dataclass
class Record:
    """One run. Every field is JSON data; see the README ("Records") for their meaning."""

    run_id: str
    key: str
    config_id: str
    code_fingerprint: str
    dataset: str
    dataset_kind: str
    method: str
    repetition: int
    base_seed: int
    seed: int
    metrics: dict[str, float]
    gamma: float
    timings: dict[str, float]
    config: dict[str, Any]
    split: dict[str, Any]
    data: dict[str, Any]
    device: dict[str, Any]
    environment: dict[str, Any]
    git: dict[str, Any]
    zslbench_version: str
    started_at: str
    finished_at: str
    paper_name: str = ""
    load: dict[str, Any] = field(default_factory=dict)
    curve: dict[str, Any] | None = None
    operating_point: dict[str, Any] | None = None
    per_class: dict[str, Any] | None = None
    search: dict[str, Any] | None = None
    validation: dict[str, Any] = field(default_factory=dict)
    #: What the run's key covers, per component (:mod:`zslbench.identity`); empty in records made
    #: before it was stored, which then digest as they did (the field is left out of ``body``).
    identity: dict[str, Any] = field(default_factory=dict)
    #: What the official code's selection on test would have reported
    #: (``zslbench.protocol.selection_audit``); None for a method that has no such rule, and then
    #: left out of ``body``, so that records made before the field existed keep their digest.
    selection_audit: dict[str, Any] | None = None
    schema: int = SCHEMA_VERSION
    digest: str = ""

    # -- integrity -------------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:
        """The fields the digest covers, as a new top-level dict that shares the record's values
        (do not mutate them). Not ``dataclasses.asdict``: its deep copy of every curve and
        per-class list was most of the time of reading a results folder, and the fields already
        hold plain JSON values, so the digest is the same."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.pop("digest")
        if not out["identity"]:
            out.pop("identity")
        if out["selection_audit"] is None:
            out.pop("selection_audit")
        return out

    def compute_digest(self) -> str:
        text = json.dumps(self.body(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def sealed(self) -> Record:
        self.digest = self.compute_digest()
        return self

    def to_json(self) -> str:
        out = self.body()
        out["digest"] = self.digest
        return json.dumps(out, indent=2, sort_keys=True, allow_nan=False) + "\n"

    @property
    def standard(self) -> bool:
        return bool(self.split.get("standard"))

    # -- reading ---------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, raw: Any) -> Record:
        """Validate ``raw`` (parsed JSON) and build the record; ``RecordError`` says what is wrong."""
        if not isinstance(raw, dict):
            raise RecordError(f"holds a JSON {type(raw).__name__}, not a record object")
        schema = raw.get("schema")
        if schema != SCHEMA_VERSION:
            raise RecordError(f"schema version {schema!r}, this zslbench reads {SCHEMA_VERSION}")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise RecordError(f"unknown field(s) {', '.join(unknown)}")
        missing = [name for name, f in known.items() if name not in raw and _required(f)]
        if missing:
            raise RecordError(f"lacks {', '.join(missing)}")
        _check_types(raw)
        record = cls(**raw)
        if record.digest != record.compute_digest():
            raise RecordError("its content does not match its digest (edited or damaged)")
        return record


def _required(f: Any) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def is_finite(value: Any) -> bool:
    """Whether ``value`` is a finite JSON number (an int or a float, not a bool): the one test
    of a number in a record, used by the schema checks here and by :mod:`zslbench.results`."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def jsonable(value: Any) -> Any:
    """``value`` as JSON data for a record: NumPy arrays and scalars as lists and numbers,
    tuples as lists, a non-finite float as its text (``"nan"``), anything else as its repr."""
    import numpy as np  # only when a record is made: reading records needs no NumPy

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _check_types(raw: dict[str, Any]) -> None:
    """Every field that leaderboards and the cache rely on has its type (one check per part)."""
    _check_names(raw)
    _check_metrics(raw)
    _check_objects(raw)
    _check_load(raw.get("load", {}))
    _check_config(raw["config"])
    _check_audit(raw.get("selection_audit"), raw["metrics"])


def _check_names(raw: dict[str, Any]) -> None:
    for name in ("run_id", "key", "config_id", "dataset", "method", "digest"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise RecordError(f"field {name!r} is not a non-empty string")
    if raw["dataset_kind"] not in KINDS:
        raise RecordError(f"dataset_kind {raw['dataset_kind']!r} is not one of {', '.join(KINDS)}")
    for name in ("repetition", "base_seed", "seed"):
        if not isinstance(raw.get(name), int) or isinstance(raw[name], bool):
            raise RecordError(f"field {name!r} is not an integer")
    if raw["repetition"] < 0:
        raise RecordError(f"repetition {raw['repetition']} is negative")


def _check_metrics(raw: dict[str, Any]) -> None:
    metrics = raw.get("metrics")
    if not isinstance(metrics, dict):
        raise RecordError("field 'metrics' is not an object")
    for m in METRICS:
        if not is_finite(metrics.get(m)):
            raise RecordError(f"metric {m} is {metrics.get(m)!r}, not a finite number")
    for m, v in metrics.items():
        if m not in METRICS + EXTRA_METRICS or not is_finite(v):
            raise RecordError(f"metric {m}={v!r} is unknown or not a finite number")
    if not is_finite(raw.get("gamma")):
        raise RecordError("field 'gamma' is not a finite number")
    timings = raw.get("timings")
    if not isinstance(timings, dict) or not is_finite(timings.get("train")):
        raise RecordError("timings lack a finite 'train'")


def _check_objects(raw: dict[str, Any]) -> None:
    for name in ("config", "split", "data", "device", "environment", "git", "identity"):
        if not isinstance(raw.get(name, {}), dict):
            raise RecordError(f"field {name!r} is not an object")
    if not isinstance(raw["split"].get("standard"), bool):
        raise RecordError("split.standard is not true or false")
    if not isinstance(raw["split"].get("reason", ""), str):
        raise RecordError("split.reason is not a string")


def _check_load(load: Any) -> None:
    if not isinstance(load, dict):
        raise RecordError("field 'load' is not an object")
    if "oversubscribed" in load and not isinstance(load["oversubscribed"], bool):
        raise RecordError("load.oversubscribed is not true or false")
    for key in (
        "cpu_seconds",
        "wall_seconds",
        "load_start",
        "load_end",
        "cores",
        "threads",
        "other_load",
    ):
        if load.get(key) is not None and not is_finite(load[key]):
            raise RecordError(f"load.{key} is not a finite number")


def _check_config(config: dict[str, Any]) -> None:
    sweep = config.get("sweep")
    if sweep is not None and (
        not isinstance(sweep, dict) or not all(isinstance(k, str) and "." in k for k in sweep)
    ):
        raise RecordError("config.sweep is not an object of component.param keys")
    if not isinstance(config.get("config_file", ""), str):
        raise RecordError("config.config_file is not a string")


def _check_audit(audit: Any, metrics: dict[str, Any]) -> None:
    """``selection_audit``: absent, or a rule, finite H values in [0, 100], an epoch within
    ``H_by_epoch`` whose entry is the test-selected H, and ``clean_H`` equal to the record's H."""
    if audit is None:
        return
    if not isinstance(audit, dict) or set(audit) != {
        "rule",
        "clean_H",
        "test_selected_H",
        "test_selected_epoch",
        "H_by_epoch",
    }:
        raise RecordError(
            "selection_audit is not an object of rule, clean_H, test_selected_H, "
            "test_selected_epoch and H_by_epoch"
        )
    if not isinstance(audit["rule"], str) or not audit["rule"]:
        raise RecordError("selection_audit.rule is not a non-empty string")
    hs = audit["H_by_epoch"]
    if (
        not isinstance(hs, list)
        or not hs
        or not all(is_finite(h) and 0.0 <= h <= 100.0 for h in hs)
    ):
        raise RecordError("selection_audit.H_by_epoch is not a list of H values in [0, 100]")
    epoch = audit["test_selected_epoch"]
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not 1 <= epoch <= len(hs):
        raise RecordError("selection_audit.test_selected_epoch is not an epoch of H_by_epoch")
    if audit["test_selected_H"] != hs[epoch - 1] or audit["test_selected_H"] != max(hs):
        raise RecordError("selection_audit.test_selected_H is not the best of H_by_epoch")
    if audit["clean_H"] != metrics.get("H"):
        raise RecordError("selection_audit.clean_H differs from the record's H")


# -- files --------------------------------------------------------------------------------------
def write_record(results_dir: Path, record: Record) -> Path:
    """Seal ``record`` and write it to ``results_dir/<run_id>.json`` atomically (a reader or a
    killed run only ever sees the old file or the complete new one)."""
    target = Path(results_dir) / f"{record.run_id}.json"
    atomic_write_text(target, record.sealed().to_json())
    return target


def read_record(path: Path) -> Record:
    """Read one record; ``RecordError`` when the file is unreadable, not JSON, or not a valid,
    intact record."""
    try:
        text = read_folder_file(Path(path)).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"cannot be read ({exc})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"is not JSON ({exc})") from None
    return Record.from_dict(raw)


def iter_records(results_dir: Path) -> Iterator[tuple[Path, Record | RecordError]]:
    """Every ``*.json`` under ``results_dir`` (recursively, sorted), with its record or the
    ``RecordError`` that refused it. Hidden files (temporaries of atomic writes) are skipped."""
    for path in sorted(Path(results_dir).rglob("*.json")):
        if any(part.startswith(".") for part in path.relative_to(results_dir).parts):
            continue
        try:
            yield path, read_record(path)
        except RecordError as exc:
            yield path, exc
