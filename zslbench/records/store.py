"""The results folder: the one owner of where records and failure notes go, and of reading,
validating and writing them.

A results folder holds one ``<run_id>.json`` record per run (:func:`record_path`; the name is
:func:`zslbench.records.run_name`'s) and, beside it, a ``<run_id>.failed`` note while the run's
last attempt failed (:func:`write_failure_note`, :func:`failure_note`,
:func:`clear_failure_note`). :func:`check_results_dir` refuses, before any training, a folder that
cannot take records. :class:`RecordIndex` reads the folder once per grid, every record checked as
the board checks it (:func:`zslbench.records.rows.valid_record`), so a damaged one is re-run rather than
served from the cache; :func:`write_record` writes a record atomically.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zslbench.errors import ConfigError
from zslbench.files import atomic_write_text, read_folder_file
from zslbench.records.rows import valid_record
from zslbench.records.schema import Record, RecordError

#: Below this much free space the results dir is refused up front (records are ~100 KiB each).
MIN_FREE_BYTES = 4 * 2**20


def record_path(results_dir: Path, run_id: str) -> Path:
    """Where the record of run ``run_id`` goes: ``<results_dir>/<run_id>.json``."""
    return Path(results_dir) / f"{run_id}.json"


def write_record(results_dir: Path, record: Record) -> Path:
    """Seal ``record`` and write it to :func:`record_path` atomically (a reader or a killed run
    only ever sees the old file or the complete new one)."""
    target = record_path(results_dir, record.run_id)
    atomic_write_text(target, record.sealed().to_json())
    return target


def folder_files(results_dir: Path, suffix: str) -> list[Path]:
    """Every ``*<suffix>`` under ``results_dir``, sorted, without hidden files or folders (the
    temporaries of atomic writes): the one walk of a results folder."""
    return [
        path
        for path in sorted(Path(results_dir).rglob(f"*{suffix}"))
        if not any(part.startswith(".") for part in path.relative_to(results_dir).parts)
    ]


def record_files(results_dir: Path) -> list[Path]:
    """Every record file (``*.json``) under ``results_dir`` (:func:`folder_files`)."""
    return folder_files(results_dir, ".json")


#: The file in which ``zslbench leaderboard`` lists what it wrote (a board can be rendered inside
#: the results folder, its default ``--out``): those files are not records.
MANIFEST = "manifest.json"
GENERATOR = "zslbench leaderboard"


def is_own_manifest(doc: Any) -> bool:
    """Whether a parsed manifest.json was written by ``zslbench leaderboard``."""
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        return False
    return doc.get("generator") == GENERATOR


def owned_files(manifest: Path) -> set[str] | None:
    """The files (relative to its folder, the manifest itself included) that the manifest at
    ``manifest`` says zslbench leaderboard wrote; None when it is absent, unreadable, foreign or
    a link (never followed)."""
    if Path(manifest).is_symlink():
        return None
    try:
        doc = json.loads(read_folder_file(Path(manifest)).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not is_own_manifest(doc):
        return None
    names = {str(p) for p in doc["files"]}
    return {n for n in names if ".." not in Path(n).parts and not Path(n).is_absolute()} | {
        MANIFEST
    }


def board_files(results_dir: Path) -> set[Path]:
    """The files of a leaderboard rendered inside ``results_dir``: every file its manifest lists,
    and the manifest itself. They are not records, and reading them is no reason to warn."""
    own: set[Path] = set()
    if Path(results_dir).is_dir():
        for path in record_files(Path(results_dir)):
            if path.name == MANIFEST:
                listed = owned_files(path)
                if listed is not None:
                    own.update(path.parent / name for name in listed)
    return own


def device_type(device: str) -> str:
    """The device type a record's name and key hold: ``cuda`` for any CUDA device, else ``cpu``."""
    return "cuda" if device.startswith("cuda") else "cpu"


def check_results_dir(path: Path) -> None:
    """Refuse, before any training, a results dir that cannot take records (one line naming it).

    Nothing is created here: the folder is made when the first record is written, so a run
    refused for another reason leaves no empty folder behind.
    """
    path = Path(path)
    existing = next((p for p in [path, *path.parents] if p.exists()), None)
    if existing is None:  # pragma: no cover - "/" always exists
        return
    if not existing.is_dir():
        where = "is a file" if existing == path else f"is under the file {existing}"
        raise ConfigError(
            f"--results-dir {path} {where}, not a directory", hint="choose another --results-dir"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        what = (
            "is not writable"
            if existing == path
            else f"cannot be created ({existing} is not writable)"
        )
        raise ConfigError(
            f"--results-dir {path} {what}",
            hint="choose a writable --results-dir or fix its permissions",
        )
    try:
        free = shutil.disk_usage(existing).free
    except OSError:
        free = None
    if free is not None and free < MIN_FREE_BYTES:
        raise ConfigError(
            f"--results-dir {path}: only {free // 1024} KiB free on its disk",
            hint="free some space (a record takes ~100 KiB) or choose another disk",
        )


def failure_note_path(path: Path) -> Path:
    """Where a failed run's note goes: ``<run_id>.failed`` beside its record's ``<run_id>.json``
    (no reader of records globs it)."""
    return Path(path).with_suffix(".failed")


def write_failure_note(path: Path, reason: str) -> Path:
    """Keep a failed run's one-line reason, atomically (a reader sees no note or the whole one)."""
    note = failure_note_path(path)
    atomic_write_text(note, reason.splitlines()[0] + "\n" if reason else "failed\n")
    return note


def clear_failure_note(path: Path, *, other_configs: bool = False) -> None:
    """Remove a run's failure note once the run has its record: that failure no longer holds.

    With ``other_configs`` (a run that is not part of a sweep), the notes of the same run under
    another configuration go too: same dataset, method, data, device type and seed, another
    config id (``--set preprocessor=none`` after the ``clip`` default refused the data), so that
    fixed failures do not stay behind. Only plain files named as the harness names its notes, of
    one line, are removed."""
    failure_note_path(path).unlink(missing_ok=True)
    if not other_configs:
        return
    parts = Path(path).stem.split("__")
    if len(parts) != 6:
        return
    dataset, method, config, data, device, seed = parts
    for note in Path(path).parent.glob(f"*__{device}__{seed}.failed"):
        theirs = note.stem.split("__")
        if (
            len(theirs) != 6
            or theirs[:2] != [dataset, method]
            or theirs[3] != data
            or theirs[2] == config
            or not re.fullmatch(r"[0-9a-f]{12}", theirs[2])
        ):
            continue
        try:
            if note.is_symlink():
                continue
            if read_folder_file(note, 4096).decode("utf-8", "replace").count("\n") != 1:
                continue
            note.unlink()
        except OSError:
            continue


def failure_note(path: Path) -> str | None:
    """The one-line reason of this run's last failure: the ``<run_id>.failed`` note beside its
    record's path (written by the runner when a run fails, removed when it succeeds)."""
    try:
        raw = read_folder_file(failure_note_path(path))
        text = raw.decode("utf-8", errors="replace").strip()
    except OSError:
        return None
    first = text.splitlines()[0] if text else "no reason kept"
    return first if len(first) <= 160 else first[:157] + "..."


def run_slot(
    dataset: str, method: str, dev_type: str | None, base_seed: int, repetition: int, sweep: Any
) -> tuple[Any, ...]:
    """The run a record fills, whatever its configuration or data: (dataset, method, device
    type, base seed, repetition, swept values); a new run replaces the earlier run of its slot."""
    return (dataset, method, dev_type, base_seed, repetition, repr(sorted((sweep or {}).items())))


@dataclass
class RecordIndex:
    """The records of a results dir, read once per grid: by file, and by run slot (dataset,
    method, device type, base seed, repetition, sweep) to find the run a new one replaces."""

    by_path: dict[Path, Record | RecordError] = field(default_factory=dict)
    by_slot: dict[tuple[Any, ...], list[Record]] = field(default_factory=dict)

    @classmethod
    def read(cls, results_dir: Path, datasets: Any = None) -> RecordIndex:
        """``datasets``: the declarations records are checked against
        (:func:`zslbench.records.validation.declared_datasets`)."""
        index = cls()
        if not Path(results_dir).is_dir():
            return index
        for path in record_files(results_dir):
            # checked as the board checks it: a damaged record is re-run, never served
            rec = valid_record(path, datasets)
            index.by_path[path.resolve()] = rec
            if isinstance(rec, Record):
                slot = run_slot(
                    rec.dataset,
                    rec.method,
                    rec.device.get("type"),
                    rec.base_seed,
                    rec.repetition,
                    rec.config.get("sweep"),
                )
                index.by_slot.setdefault(slot, []).append(rec)
        return index

    def previous(self, slot: tuple[Any, ...], config_id: str, data_fp: str) -> Record | None:
        """The earlier run of this slot that best explains a change: same config and data
        first, then same config, then same data, else the newest."""
        found = self.by_slot.get(slot, [])
        if not found:
            return None

        def rank(rec: Record) -> tuple[int, int, str]:
            return (
                rec.config_id == config_id,
                rec.data.get("fingerprint") == data_fp,
                rec.finished_at,
            )

        return max(found, key=rank)

    def eta(
        self, dataset: str, method: str, device_name: str, *, busy: bool = False
    ) -> float | None:
        """Median wall seconds of earlier runs of (dataset, method) on this device model, None
        without any. Runs on an oversubscribed machine are left out, or with ``busy`` only they
        count: an approximate ETA where the plain one has none."""
        times = [
            float(rec.load.get("wall_seconds") or rec.timings["train"])
            for recs in self.by_slot.values()
            for rec in recs
            if rec.dataset == dataset
            and rec.method == method
            and rec.device.get("name") == device_name
            and (rec.load.get("oversubscribed") is True) == busy
        ]
        return statistics.median(times) if times else None
