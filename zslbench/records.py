"""Result records: one JSON file per (dataset, method, seed), written atomically.

A record is the only source of every number zslbench prints: leaderboards are rendered from
records alone. Schema (version 1)::

    {
      "schema": 1,
      "run_id": "synth-awa2__bt-gp__r0__<key[:12]>",   # also the file name, + ".json"
      "key": "<sha256 of config + data fingerprint + seed + code version>",
      "dataset": "synth-awa2", "dataset_kind": "synthetic" | "real",
      "method": "bt-gp", "paper_name": "L_BT + GP (ours)",
      "repetition": 0, "base_seed": 0, "seed": 1234567,
      "metrics": {"A_T": %, "A_U": %, "A_S": %, "H": %, "AUSUC": %},
      "gamma": float,                      # calibrated seen-class penalty used for A_U/A_S/H
      "timings": {"train": s, "embedder_fit": s, "regressor_fit": s, "calibration": s,
                  "evaluation": s, ...},  # "train" = everything before evaluation
      "curve": {"gamma": [...], "A_U": [...], "A_S": [...]},   # seen-unseen curve, percent
      "operating_point": {"A_U": %, "A_S": %},               # at the calibrated gamma
      "per_class": {
        "unseen": [{"class": int, "name": str|null, "accuracy": %, "n_test": int,
                     "frequency": fraction of all images of the dataset}, ...],
        "seen":   [... same ...]
      },
      "config": {"method": str,
                 "components": {role: {"name": str, "params": {...}}},
                 "overrides": {"embedder.latent_dim": 64, ...}},
      "split": {"fingerprint": str, "standard": bool, "reason": str},
      "data": {"fingerprint": str, "n_images": int, "n_seen": int, "n_unseen": int,
               "source": {...}},
      "device": {"type": "cpu"|"cuda", "name": str, "threads": int},
      "environment": {"zslbench": str, "python": str, "platform": str,
                      "packages": {"torch": str, "gpytorch": str, "numpy": str, ...}},
      "git": {"commit": str|null, "dirty": bool|null},
      "started_at": ISO-8601 UTC, "finished_at": ISO-8601 UTC
    }
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from zslbench.errors import UserError
from zslbench.files import atomic_write_text

SCHEMA_VERSION = 1
REQUIRED_KEYS = ("schema", "run_id", "key", "dataset", "method", "seed", "metrics", "timings",
                 "config", "split", "device", "environment", "git")


def write_record(results_dir: Path, record: dict[str, Any]) -> Path:
    """Write ``record`` to ``results_dir/<run_id>.json`` atomically.

    The JSON goes to a temporary file in the same directory, is flushed and fsynced, and is then
    renamed over the target, so a reader (or a killed run) only ever sees a complete record.
    """
    target = results_dir / f"{record['run_id']}.json"
    atomic_write_text(target, json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n")
    return target


def read_record(path: Path) -> dict[str, Any]:
    """Read one record, refusing files that are not complete zslbench records."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a readable zslbench record ({exc})",
                        hint="delete the file and re-run to regenerate it") from None
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise UserError(f"{path}: record lacks {', '.join(missing)}",
                        hint="delete the file and re-run to regenerate it")
    return record


def iter_records(results_dir: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every record under ``results_dir`` (recursively), in sorted path order."""
    for path in sorted(Path(results_dir).rglob("*.json")):
        if path.name.startswith("."):
            continue
        yield path, read_record(path)
