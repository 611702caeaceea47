"""One validation of a record: its schema, its claims and its free-form fields, in one place.

A record file is untrusted content. :func:`read_record` reads it (a regular file under the size
cap) and :func:`parse` checks the schema version, the fields and their types and the record's
digest of its own content. The digest (``sha256`` of the canonical JSON of every other field)
detects accidental edits and damage; it is integrity, not security: anyone can recompute it
after editing a record. So every claim that can be recomputed is (:func:`check`), and a record
whose claims disagree is refused with one line naming what disagrees:

- its ``key`` is the key of its ``identity`` (:func:`zslbench.identity.run_key`);
- its ``config_id`` is the id of its own ``config`` (method, components and hyperparameters), and
  the identity's; its method is its configuration's;
- its seed is the one its base seed, dataset and repetition derive
  (:func:`zslbench.identity.derive_seed`);
- its data fingerprint, seed and device type are the identity's, and the fingerprint is the one
  its split's content parts give;
- its ``run_id`` is the name of such a run (:func:`zslbench.records.run_name`);
- where its dataset is registered: its ``dataset_kind`` is the one the dataset declares, and a
  standard split of a declared benchmark has the benchmark's pinned fingerprints.

A record without an identity has no claim to recompute, so it is refused like any other whose
claims cannot be checked.

The free-form fields are then read as typed values by :mod:`zslbench.records.rows`, whose
:func:`~zslbench.records.rows.valid_record` is the whole check: the record ``run`` serves from
the cache is the record the board shows.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import MISSING
from pathlib import Path
from typing import Any

from zslbench import identity as ident
from zslbench.files import read_folder_file
from zslbench.records.schema import (
    KINDS,
    SCHEMA_VERSION,
    Record,
    RecordError,
    config_id,
    is_finite,
    metric_names,
    run_name,
)
from zslbench.registry import installed_datasets

#: The name of a dataset -> its declaration (a ``zslbench.data.dataset.DatasetSpec``: ``kind``,
#: ``benchmark``).
Declarations = Mapping[str, Any]


def declared_datasets(registry: Any = None) -> Declarations:
    """The datasets' declarations: the ``registry``'s, else those of the installed plugins (loaded
    once per process)."""
    if registry is not None:
        return {name: p.obj for name, p in registry.items["dataset"].items()}
    return installed_datasets()


def _short(value: Any) -> str:
    return str(value)[:12]


def check(record: Record, datasets: Declarations | None = None) -> None:
    """Raise :class:`RecordError` naming the first claim of ``record`` that disagrees with another
    (see the module docstring); ``datasets`` defaults to :func:`declared_datasets`."""
    config = record.config
    if config.get("method", record.method) != record.method:
        raise RecordError(
            f"claims method {record.method!r} but its config ran {config.get('method')!r}"
        )
    data_fp = record.data.get("fingerprint")
    dev_type = record.device.get("type")
    if not record.identity:
        raise RecordError("it has no identity, so none of its claims can be checked")
    _check_identity(record, data_fp, dev_type)
    _check_dataset(record, declared_datasets() if datasets is None else datasets)


def _check_identity(record: Record, data_fp: Any, dev_type: Any) -> None:
    idn = record.identity
    try:
        key = ident.run_key(idn, record.schema)
    except (TypeError, ValueError):
        raise RecordError("its identity is not JSON data") from None
    if key != record.key:
        raise RecordError(
            f"its key {_short(record.key)} is not the key of its identity "
            f"({_short(key)}): the record claims another run"
        )
    comps = record.config.get("components")
    if not isinstance(comps, dict) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in comps.values()
    ):
        raise RecordError("config.components is not an object of named components")
    search = record.config.get("search")
    if not isinstance(search, dict) or not all(isinstance(v, list) for v in search.values()):
        raise RecordError("config.search is not an object of searched values")
    own = config_id(
        record.method,
        {role: (c["name"], c.get("params", {})) for role, c in comps.items()},
        search,
    )
    if own != record.config_id:
        raise RecordError(
            f"its config_id {_short(record.config_id)} is not the id of its own "
            f"configuration ({_short(own)}): the record claims another configuration"
        )
    seed = ident.derive_seed(record.base_seed, record.dataset, record.repetition)
    if record.seed != seed:
        raise RecordError(
            f"its seed {record.seed} is not the seed of repetition {record.repetition} of base "
            f"seed {record.base_seed} on {record.dataset!r} ({seed})"
        )
    for name, claimed, own_value in (
        ("config_id", idn.get("config_id"), record.config_id),
        ("data", idn.get("data"), data_fp),
        ("seed", idn.get("seed"), record.seed),
        ("device_type", idn.get("device_type"), dev_type),
    ):
        if claimed != own_value:
            raise RecordError(
                f"its identity's {name} {_short(claimed)!r} differs from the "
                f"record's ({_short(own_value)!r})"
            )
    name = run_name(
        record.dataset, record.method, record.config_id, str(data_fp), str(dev_type), record.seed
    )
    if record.run_id != name:
        raise RecordError(
            f"its run_id {record.run_id!r} does not name its dataset, method, "
            "configuration, data, device and seed"
        )
    from zslbench.data.fingerprints import content_fingerprint  # NumPy: only for such records

    parts, fhash = record.split.get("parts"), record.data.get("features_hash")
    if isinstance(parts, dict) and isinstance(fhash, str):
        if content_fingerprint(parts, fhash) != data_fp:
            raise RecordError(
                f"its data fingerprint {_short(data_fp)} is not the one its split's "
                "content parts give"
            )
        if parts.get("split") != record.split.get("fingerprint"):
            raise RecordError("its split fingerprint is not its content parts' split")


def _check_dataset(record: Record, datasets: Declarations) -> None:
    spec = datasets.get(record.dataset)
    if spec is None:  # a dataset opened from a file, or a plugin not installed here
        return
    kind = getattr(spec, "kind", None)
    if kind is not None and record.dataset_kind != kind:
        raise RecordError(
            f"claims dataset_kind {record.dataset_kind!r}, but dataset "
            f"{record.dataset!r} is declared {kind!r}"
        )
    bench = getattr(spec, "benchmark", None)
    if bench is None or not record.standard:
        return
    if record.split.get("fingerprint") != bench.split:
        raise RecordError(
            f"claims the standard {bench.name} split, but its split fingerprint "
            f"{_short(record.split.get('fingerprint'))} is not the official "
            f"{_short(bench.split)}"
        )
    parts = record.split.get("parts")
    if isinstance(parts, dict):
        for part in ("attributes", "labels", "val_classes"):
            pin = getattr(bench, part, None)
            if pin is not None and part in parts and parts[part] != pin:
                raise RecordError(
                    f"claims the standard {bench.name} data, but its {part} "
                    f"fingerprint {_short(parts[part])} is not the official "
                    f"{_short(pin)}"
                )
    backbone = record.data.get("backbone")
    if backbone is not None and backbone != getattr(bench, "backbone", None):
        return  # another backbone's features: the benchmark's feature pin is not theirs
    pin = getattr(bench, "features", None)
    fhash = record.data.get("features_hash")
    if pin is not None and fhash is not None and fhash != pin:
        raise RecordError(
            f"claims the standard {bench.name} data, but its features hash "
            f"{_short(fhash)} is not the official {_short(pin)}"
        )


# -- the schema ---------------------------------------------------------------------------------
def parse(raw: Any) -> Record:
    """Validate ``raw`` (parsed JSON) and build the record; ``RecordError`` says what is wrong:
    the schema version, unknown or missing fields, the types of the fields that leaderboards and
    the cache rely on, and the record's digest of its own content."""
    if not isinstance(raw, dict):
        raise RecordError(f"holds a JSON {type(raw).__name__}, not a record object")
    schema = raw.get("schema")
    if schema != SCHEMA_VERSION:
        raise RecordError(f"schema version {schema!r}, this zslbench reads {SCHEMA_VERSION}")
    known = {f.name: f for f in dataclasses.fields(Record)}
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise RecordError(f"unknown field(s) {', '.join(unknown)}")
    missing = [name for name, f in known.items() if name not in raw and _required(f)]
    if missing:
        raise RecordError(f"lacks {', '.join(missing)}")
    _check_types(raw)
    record = Record(**raw)
    if record.digest != record.compute_digest():
        raise RecordError("its content does not match its digest (edited or damaged)")
    return record


def read_record(path: Path) -> Record:
    """Read one record (:func:`zslbench.files.read_folder_file`: a regular file under the size
    cap); ``RecordError`` when the file is unreadable, not JSON, or not a valid, intact record."""
    try:
        text = read_folder_file(Path(path)).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"cannot be read ({exc})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"is not JSON ({exc})") from None
    return parse(raw)


def _required(f: Any) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


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
    for m in metric_names(required=True):
        if not is_finite(metrics.get(m)):
            raise RecordError(f"metric {m} is {metrics.get(m)!r}, not a finite number")
    for m, v in metrics.items():
        if m not in metric_names() or not is_finite(v):
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


# -- reading a record as the board takes it ------------------------------------------------------
def read_one(path: Path, datasets: Declarations | None = None) -> Record | RecordError:
    """The record at ``path``, or the error that refuses it. Any failure while reading is a
    refusal naming the cause (a 100 000-deep JSON nesting, a NaN under the digest, ...), never an
    exception that would stop a whole board."""
    try:
        record = read_record(path)
        check(record, datasets)  # its claims against each other and the declarations
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
