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

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from zslbench.files import atomic_write_text, read_folder_file
from zslbench.records.schema import is_finite, metric_names
from zslbench.records.store import folder_files

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
    metrics = metric_names(required=True)
    delta = {k: again.metrics[k] - recorded.metrics[k] for k in metrics}
    identical = (
        all(again.metrics[k] == recorded.metrics[k] for k in metrics)
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


class RechecksError(Exception):
    """A ``.rechecks`` file that is not a list of recheck entries (the message says why)."""


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` itself while a ``.rechecks`` file is read,
    extended and replaced: two ``--recheck`` runs of one record then append in turn instead of
    each replacing the file with its own copy (which lost half of 400 entries). The lock is on
    the folder, so no lock file is left behind, and the kernel releases it if the run dies; one
    file per entry would have changed the format of the committed files and of every reader."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no flock; appends are then unserialised
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def append(record_path: Path, entry: dict[str, Any]) -> Path:
    """Add ``entry`` to the record's ``.rechecks`` file (written whole, atomically, under a lock
    on the folder so that concurrent appends all land). ``RechecksError`` when the file there is
    not a valid rechecks file: it is left as it is (the harness never overwrites a file it may
    not have written)."""
    path = path_for(record_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(path.parent):
        entries = read(path) if path.exists() or path.is_symlink() else []
        entries.append(entry)
        atomic_write_text(path, json.dumps(entries, indent=1, sort_keys=True) + "\n")
    return path


def _check_entry(entry: Any) -> str | None:
    """Why ``entry`` is not a recheck entry the summary can read, or None."""
    if not isinstance(entry, dict):
        return "holds an entry that is not an object"
    delta = entry.get("delta")
    if not isinstance(delta, dict) or not all(is_finite(v) for v in delta.values()):
        return "holds a delta that is not an object of finite numbers"
    for side in ("recorded", "again"):
        if not isinstance(entry.get(side), dict):
            return f"holds a {side!r} that is not an object"
        if not is_finite(entry[side].get("gamma", 0.0)):
            return f"holds a {side}.gamma that is not a finite number"
    if not isinstance(entry.get("bit_identical", False), bool):
        return "holds a bit_identical that is not true or false"
    return None


def read(path: Path) -> list[dict[str, Any]]:
    """The entries of one ``.rechecks`` file; ``RechecksError`` (saying why) when it cannot be
    read or any entry is malformed: the file's content is untrusted."""
    try:
        body = json.loads(read_folder_file(Path(path)).decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RechecksError(f"cannot be read ({exc})") from None
    except (ValueError, RecursionError):
        raise RechecksError("is not JSON") from None
    if not isinstance(body, list):
        raise RechecksError("is not a JSON list of recheck entries")
    for entry in body:
        why = _check_entry(entry)
        if why is not None:
            raise RechecksError(why)
    return body


def read_all(results_dir: Path) -> tuple[list[dict[str, Any]], list[tuple[Path, str]]]:
    """Every recheck under ``results_dir``, and ``(path, why)`` for each ``.rechecks`` file
    skipped as malformed. A file without its record beside it (an orphan: the record was removed
    or renamed) is ignored: it says nothing about any run on the board."""
    entries: list[dict[str, Any]] = []
    refused: list[tuple[Path, str]] = []
    for path in folder_files(Path(results_dir), SUFFIX):
        if not path.with_suffix(".json").is_file():
            continue
        try:
            entries += read(path)
        except RechecksError as exc:
            refused.append((path, str(exc)))
    return entries, refused


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
                "max_abs_d": max(
                    (abs(float(v)) for e in group for v in e["delta"].values()), default=0.0
                ),
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
        moved = ", ".join(f"{k} {_signed(v)}" for k, v in d.items())
    return (
        f"recheck {entry['dataset']} · {entry['method']} (seed {entry['seed']}): {moved} "
        f"(recorded on {rec.get('device')}, {rec.get('threads')} thread(s); again on "
        f"{again.get('device')}, {again.get('threads')} thread(s))"
    )


def _signed(value: float) -> str:
    """``+0.26``; a move too small for two decimals keeps two significant digits (``+3.6e-15``)."""
    return f"{value:+.2f}" if value == 0 or abs(value) >= 0.005 else f"{value:+.2g}"
