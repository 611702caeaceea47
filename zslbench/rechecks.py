"""The same run made again on another machine: how far its numbers moved.

A record is keyed by what the run computes (:mod:`zslbench.identity`), not by the machine, so a
run recorded on one CPU is taken from the cache on another. That is by design, since a board
gathers records from many machines, but a method whose training is chaotic in float (another BLAS
kernel, thread count, CPU or GPU rounds differently, and the trajectory diverges) gives other
numbers there. ``zslbench run --recheck`` re-runs cached runs without replacing their records and
keeps what it found beside each record, in ``<run_id>.rechecks`` (a JSON list, one entry per
recheck), so that the leaderboard can say which methods are bit-reproducible across machines and
how far the others moved.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from zslbench.files import atomic_write_text

METRICS = ("A_T", "A_U", "A_S", "H", "AUSUC")
SUFFIX = ".rechecks"


def _machine(record: Any) -> dict[str, Any]:
    device = record.device or {}
    return {
        "device": device.get("name"),
        "type": device.get("type"),
        "threads": device.get("threads"),
        "commit": (record.git or {}).get("commit"),
        "date": record.finished_at,
    }


def compare(recorded: Any, again: Any) -> dict[str, Any]:
    """One recheck: the recorded run's and the new run's machines and numbers, and the moves."""
    delta = {k: again.metrics[k] - recorded.metrics[k] for k in METRICS}
    identical = (
        all(again.metrics[k] == recorded.metrics[k] for k in METRICS)
        and again.gamma == recorded.gamma
    )
    return {
        "run_id": recorded.run_id,
        "key": recorded.key,
        "method": recorded.method,
        "dataset": recorded.dataset,
        "seed": recorded.seed,
        "recorded": {
            **_machine(recorded),
            "metrics": dict(recorded.metrics),
            "gamma": recorded.gamma,
        },
        "again": {**_machine(again), "metrics": dict(again.metrics), "gamma": again.gamma},
        "bit_identical": identical,
        "delta": delta,
    }


def path_for(record_path: Path) -> Path:
    return Path(record_path).with_suffix(SUFFIX)


def append(record_path: Path, entry: dict[str, Any]) -> Path:
    """Add ``entry`` to the record's ``.rechecks`` file (written whole, atomically)."""
    path = path_for(record_path)
    entries = read(path)
    entries.append(entry)
    atomic_write_text(path, json.dumps(entries, indent=1, sort_keys=True) + "\n")
    return path


def read(path: Path) -> list[dict[str, Any]]:
    """The entries of one ``.rechecks`` file ([] when absent or unreadable)."""
    try:
        body = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return (
        [e for e in body if isinstance(e, dict) and isinstance(e.get("delta"), dict)]
        if isinstance(body, list)
        else []
    )


def read_all(results_dir: Path) -> list[dict[str, Any]]:
    """Every recheck under ``results_dir``."""
    out: list[dict[str, Any]] = []
    for path in sorted(Path(results_dir).rglob(f"*{SUFFIX}")):
        out += read(path)
    return out


def summary(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per method: rechecks, how many were bit-identical, the largest move of H and of any metric,
    and the machines involved; sorted by method."""
    by_method: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_method.setdefault(str(e.get("method")), []).append(e)
    out = []
    for method, group in sorted(by_method.items()):
        machines = sorted(
            {
                str(m.get("device"))
                for e in group
                for m in (e.get("recorded", {}), e.get("again", {}))
            }
        )
        out.append(
            {
                "method": method,
                "rechecks": len(group),
                "bit_identical": sum(bool(e.get("bit_identical")) for e in group),
                "metrics_identical": sum(not any(e["delta"].values()) for e in group),
                "max_abs_dH": max(abs(float(e["delta"].get("H", 0.0))) for e in group),
                "max_abs_d": max(abs(float(v)) for e in group for v in e["delta"].values()),
                "machines": machines,
            }
        )
    return out


def line(entry: dict[str, Any]) -> str:
    """What ``run --recheck`` prints for one recheck."""
    d = entry["delta"]
    rec, again = entry["recorded"], entry["again"]
    if entry["bit_identical"]:
        moved = "bit-identical"
    elif not any(d.values()):
        dg = entry["again"]["gamma"] - entry["recorded"]["gamma"]
        moved = f"metrics bit-identical, gamma {dg:+.2g}"
    else:
        moved = ", ".join(f"{k} {_signed(d[k])}" for k in METRICS)
    return (
        f"recheck {entry['dataset']} · {entry['method']} (seed {entry['seed']}): {moved} "
        f"(recorded on {rec.get('device')}, {rec.get('threads')} thread(s); again on "
        f"{again.get('device')}, {again.get('threads')} thread(s))"
    )


def _signed(value: float) -> str:
    """``+0.26``; a move too small for two decimals keeps two significant digits (``+3.6e-15``)."""
    return f"{value:+.2f}" if value == 0 or abs(value) >= 0.005 else f"{value:+.2g}"
