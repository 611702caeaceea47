"""Records in, one pandas row per run out, then mean ± std over seeds per configuration.

Everything a leaderboard shows comes from here, so the grouping rules live in one place:

* A **cell group** is (kind, dataset, method, config id, standard split?, device type, data
  fingerprint). The record's config id hashes the resolved hyperparameters without the per-run
  seed and device, so the seeds of one configuration land in one group and changing a
  hyperparameter starts a new one.
* Within a cell group a seed counts once: when several records carry the same seed (a re-run after
  a code change), the newest (``finished_at``) wins and the others are counted as *superseded*.
* A **row key** is the cell group without the dataset: one leaderboard row per method
  configuration. Two rows that would read the same get a distinguishing suffix (device, config
  hash, data fingerprint), so nothing is silently averaged together.
* The spread is the *sample* standard deviation (``ddof=1``) over seeds; with one seed it is
  undefined and shown as missing, not as 0.
* Training times are **medians** over the runs *not* taken on an oversubscribed machine (the
  record's ``load.oversubscribed``): wall times of a machine busy with other work say little about
  the method. A record without a ``load`` report counts as unknown and is kept.
* A run of a **sweep** (``config["sweep"]``: the swept hyperparameters and this run's values) is a
  configuration of its own; the sweep's runs are shown together in the sweep tables and figures.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from zslbench import records
from zslbench.errors import UserError
from zslbench.leaderboard.manifest import MANIFEST, owned_files
from zslbench.records import Record, RecordError, iter_records

METRICS = ("A_T", "A_U", "A_S", "H", "AUSUC")
#: Optional metrics (``AUSUC_per_image``: averaged per image, as CNZSL's code does; the headline
#: ``AUSUC`` averages per class, as Chao et al. define it).
EXTRA_METRICS = records.EXTRA_METRICS
GZSL_METRICS = ("A_U", "A_S", "H", "AUSUC")
ZSL_METRICS = ("A_T",)
#: The metrics a sweep table and figure show, in this order.
SWEEP_METRICS = ("H", "A_U", "A_S", "AUSUC", "A_T")
KINDS = records.KINDS

#: The paper's column order (CUB, SUN, AWA2, AWA1, APY); other datasets follow alphabetically.
PAPER_DATASET_ORDER = ("cub", "sun", "awa2", "awa1", "apy")

CELL_KEYS = ["kind", "dataset", "method", "config_id", "standard", "device_type", "data_fp"]
ROW_KEYS = ["kind", "method", "config_id", "standard", "device_type"]


def is_synthetic_name(name: str) -> bool:
    """``toy`` and ``synth-*`` are the embedded stand-ins, whatever a record claims."""
    return name == "toy" or name.startswith("synth-")


def dataset_kind(record: Record) -> str:
    """The record's ``dataset_kind``, except that a run on an embedded stand-in never counts as
    real, whatever the record claims (fail safe)."""
    if record.dataset_kind == "real" and is_synthetic_name(record.dataset):
        return "synthetic"
    return record.dataset_kind


def dataset_label(name: str, kind: str) -> str:
    """Real benchmarks print as the paper does (``AWA2``); stand-ins and custom data keep their name."""
    return name.upper() if kind == "real" else name


def dataset_order(name: str) -> tuple[int, str]:
    """Sort key: the paper's order, for real datasets and their ``synth-`` stand-ins alike."""
    base = name.lower().removeprefix("synth-")
    if base in PAPER_DATASET_ORDER:
        return (PAPER_DATASET_ORDER.index(base), name.lower())
    return (len(PAPER_DATASET_ORDER), name.lower())


def method_ranks(methods: Iterable[str], first: Iterable[str] = ()) -> dict[str, int]:
    """Row order of methods: those in ``first`` (the order of the curated reported file, so that a
    measured row sits where the paper lists the method) in that order, then the rest by name."""
    first = list(dict.fromkeys(first))
    ordered = sorted(set(methods), key=lambda m: (first.index(m) if m in first else len(first), m))
    return {m: i for i, m in enumerate(ordered)}


def value_text(value: Any) -> str:
    """A hyperparameter value as typed on the command line (``adam``, ``4.0``, ``[1, 2]``)."""
    return value if isinstance(value, str) else json.dumps(value)


def value_sort_key(value: Any) -> tuple[int, float, str]:
    """Swept values in order: numbers numerically, then anything else by its text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, value_text(value))


def assignments(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={value_text(v)}" for k, v in sorted(values.items()))


def _number(value: Any) -> float:
    """A number from a free-form part of a record (per-class entries); anything else is NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value) if math.isfinite(value) else math.nan


def _link(path: Path, link_base: Path) -> str:
    """``path`` relative to the directory the pages are written to, with forward slashes."""
    return Path(os.path.relpath(Path(path).resolve(), Path(link_base).resolve())).as_posix()


def run_row(path: Path, record: Record, link_base: Path) -> dict[str, Any]:
    """Flatten one record into the columns the leaderboard needs (the record itself rides along).

    Fields the schema guarantees (``read_record`` checked them) are read directly; the free-form
    objects (``config``, ``device``, ``data``, ``git``) may lack a key, which reads as unknown.
    """
    # ``config`` is free-form: "sweep" and "config_file" are there only for runs that had them.
    sweep = record.config.get("sweep") or {}
    overrides = {k: v for k, v in (record.config.get("overrides") or {}).items() if k not in sweep}
    row = {
        "kind": dataset_kind(record),
        "dataset": record.dataset,
        "method": record.method,
        "paper_name": record.paper_name,
        "config_id": record.config_id,
        "overrides": assignments(overrides),
        "overrides_map": overrides,
        "sweep": assignments(sweep),
        "sweep_params": ", ".join(sorted(sweep)),
        "sweep_map": sweep,
        "config_file": str(record.config.get("config_file") or ""),
        "standard": record.standard,
        "split_reason": str(record.split.get("reason") or ""),
        "data_fp": str(record.data.get("fingerprint") or ""),
        "device_type": str(record.device.get("type") or "unknown"),
        "device_name": str(record.device.get("name") or record.device.get("type") or "unknown"),
        "seed": record.seed,
        "repetition": record.repetition,
        "base_seed": record.base_seed,
        "version": record.zslbench_version or "unknown",
        "commit": str(record.git.get("commit") or "unknown"),
        "dirty": bool(record.git.get("dirty")),
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "run_id": record.run_id,
        "link": _link(path, link_base),
        "train": float(record.timings["train"]),
        # An empty ``load`` (a record that did not measure it) is unknown, not oversubscribed.
        "oversubscribed": record.load.get("oversubscribed") is True,
        "load_known": bool(record.load),
        "record": record,
    }
    for metric in METRICS:
        row[metric] = float(record.metrics[metric])
    for metric in EXTRA_METRICS:  # optional: absent means not measured
        row[metric] = float(record.metrics.get(metric, math.nan))
    return row


def load_runs(results_dir: Path, link_base: Path) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """Every valid, intact record under ``results_dir`` as one row (sorted so that order never
    depends on the disk), and ``(path, reason)`` for each JSON file ``read_record`` refused: not a
    record, invalid, or edited since it was written (its digest no longer matches)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: no such results directory",
                        hint="run `zslbench run ... --results-dir DIR` first, or point --results-dir at the records")
    items = list(iter_records(results_dir))
    # A leaderboard rendered inside the results dir (the default --out) is not records: skip every
    # file its manifest lists, and the manifest itself.
    own: set[Path] = set()
    for path, item in items:
        if path.name == MANIFEST and isinstance(item, RecordError):
            own.update(path.parent / name for name in owned_files(path) or ())
    rows, refused = [], []
    for path, item in items:
        if path in own:
            continue
        if isinstance(item, RecordError):
            refused.append((path.as_posix(), str(item)))
        else:
            rows.append(run_row(path, item, link_base))
    return runs_frame(rows), refused


def runs_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Rows from :func:`run_row` as a frame in a canonical order."""
    frame = pd.DataFrame(list(rows))
    if frame.empty:
        frame = pd.DataFrame(columns=[*CELL_KEYS, "seed", "finished_at", "link", *METRICS, "train"])
    return frame.sort_values(["kind", "dataset", "method", "config_id", "seed", "finished_at", "link"],
                             kind="mergesort").reset_index(drop=True)


def dedupe(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keep the newest record per (cell group, seed); return (kept, superseded)."""
    if runs.empty:
        return runs, runs
    ordered = runs.sort_values([*CELL_KEYS, "seed", "finished_at", "link"], kind="mergesort")
    newest = ~ordered.duplicated([*CELL_KEYS, "seed"], keep="last")
    kept = ordered[newest].reset_index(drop=True)
    superseded = ordered[~newest].reset_index(drop=True)
    return kept, superseded


def _mean_std_n(values: pd.Series) -> tuple[float, float, int]:
    clean = values.dropna()
    n = int(clean.size)
    if n == 0:
        return math.nan, math.nan, 0
    mean = float(clean.mean())
    std = float(clean.std(ddof=1)) if n > 1 else math.nan
    return mean, std, n


def _dates(values: pd.Series) -> tuple[str, str]:
    days = sorted(v[:10] for v in values if v)
    return (days[0], days[-1]) if days else ("", "")


def aggregate(runs: pd.DataFrame, method_first: Iterable[str] = ()) -> pd.DataFrame:
    """One row per cell group: ``{metric}_mean/_std/_n``, the training-time median over the runs
    not taken on an oversubscribed machine, and the group's provenance.

    Call on de-duplicated runs (:func:`dedupe`). Row labels (``label``) are made unique per kind;
    rows are ordered by method (:func:`method_ranks` with ``method_first``), label and dataset.
    """
    out: list[dict[str, Any]] = []
    if runs.empty:
        return pd.DataFrame(columns=[*CELL_KEYS, "row_key", "label", "n"])
    for key, group in runs.groupby(CELL_KEYS, sort=True, dropna=False):
        entry: dict[str, Any] = dict(zip(CELL_KEYS, key, strict=True))
        entry["paper_name"] = next((p for p in group["paper_name"] if p), "")
        first = group.iloc[0]
        for column in ("overrides", "overrides_map", "sweep", "sweep_params", "sweep_map", "base_seed"):
            entry[column] = first[column]
        entry["config_files"] = sorted({f for f in group["config_file"] if f})
        entry["split_reason"] = "; ".join(sorted({r for r in group["split_reason"] if r}))
        entry["n"] = int(len(group))
        entry["repetitions"] = int(group["repetition"].max()) + 1
        for metric in (*METRICS, *EXTRA_METRICS):
            mean, std, n = _mean_std_n(group[metric])
            entry[f"{metric}_mean"], entry[f"{metric}_std"], entry[f"{metric}_n"] = mean, std, n
        timed = group.loc[~group["oversubscribed"].astype(bool), "train"]
        entry["train_median"] = float(timed.median()) if len(timed) else math.nan
        entry["train_min"] = float(timed.min()) if len(timed) else math.nan
        entry["train_max"] = float(timed.max()) if len(timed) else math.nan
        entry["train_n"] = int(len(timed))
        entry["train_oversubscribed"] = int(group["oversubscribed"].astype(bool).sum())
        entry["train_load_unknown"] = int((~group["load_known"].astype(bool)).sum())
        entry["seeds"] = sorted(int(s) for s in group["seed"])
        entry["versions"] = sorted(set(group["version"]))
        entry["commits"] = sorted(set(group["commit"]))
        entry["dirty"] = bool(group["dirty"].any())
        entry["devices"] = sorted(set(group["device_name"]))
        entry["date_first"], entry["date_last"] = _dates(group["finished_at"])
        entry["links"] = sorted(group["link"])
        entry["seed_of"] = dict(zip(group["link"], (int(x) for x in group["seed"]), strict=True))
        entry["records"] = [group["record"].iloc[i] for i in range(len(group))] if "record" in group else []
        out.append(entry)
    frame = pd.DataFrame(out)
    frame["row_key"] = [tuple(r) for r in frame[ROW_KEYS].itertuples(index=False)]
    frame = _split_data_collisions(frame)
    frame["label"] = _labels(frame)
    ranks = method_ranks(frame["method"], method_first)
    frame["method_rank"] = [ranks[m] for m in frame["method"]]
    order = sorted(range(len(frame)), key=lambda i: (
        frame["kind"].iloc[i], int(frame["method_rank"].iloc[i]), frame["label"].iloc[i],
        dataset_order(frame["dataset"].iloc[i])))
    return frame.iloc[order].reset_index(drop=True)


def measured(agg: pd.DataFrame, kind: str, *, sweeps: bool = False) -> pd.DataFrame:
    """The aggregated rows of one page kind: plain configurations, or (``sweeps``) sweep runs."""
    if agg.empty:
        return agg
    return agg[(agg["kind"] == kind) & ((agg["sweep"] != "") == sweeps)]


def _split_data_collisions(frame: pd.DataFrame) -> pd.DataFrame:
    """A row key that has two data fingerprints for one dataset becomes one row per fingerprint."""
    counts = frame.groupby(["row_key", "dataset"])["data_fp"].transform("nunique")
    clash = {rk for rk, c in zip(frame["row_key"], counts, strict=True) if c > 1}
    frame["row_key"] = [(*rk, fp) if rk in clash else rk
                        for rk, fp in zip(frame["row_key"], frame["data_fp"], strict=True)]
    frame["data_clash"] = [len(rk) > len(ROW_KEYS) for rk in frame["row_key"]]
    return frame


def _labels(frame: pd.DataFrame) -> list[str]:
    """``method`` (+ overrides, + sweep values), plus just enough of device / config / data to tell
    rows apart."""
    base = {rk: m + "".join(f" [{x}]" for x in (o, w) if x)
            for rk, m, o, w in zip(frame["row_key"], frame["method"], frame["overrides"], frame["sweep"],
                                   strict=True)}
    rows = sorted(set(frame["row_key"]))
    labels = {}
    for rk in rows:
        kind, method, cid, standard, device = rk[:5]
        twins = [o for o in rows if o[0] == kind and base[o] == base[rk] and o != rk]
        parts = [base[rk]]
        if not standard:
            parts.append("non-standard split")
        if any(o[4] != device for o in twins):
            parts.append(device)
        if any(o[2] != cid for o in twins):
            parts.append(f"cfg {cid[:8]}")
        if len(rk) > len(ROW_KEYS):
            parts.append(f"data {rk[5][:8]}")
        labels[rk] = " · ".join(parts)
    return [labels[rk] for rk in frame["row_key"]]


def per_class(records: list[Record], which: str = "unseen") -> list[dict[str, Any]]:
    """Per-class accuracy of a cell group: mean ± std over seeds per class, with class frequency.

    ``share_of_unseen`` rescales the record's frequency (a fraction of *all* images) to the share
    among the listed classes, which is what the paper's per-class table prints.
    """
    by_class: dict[int, dict[str, Any]] = {}
    for record in records:
        for entry in ((record.per_class or {}).get(which) or []):
            cls = int(entry["class"])
            slot = by_class.setdefault(cls, {"class": cls, "name": entry.get("name"), "acc": [],
                                             "frequency": _number(entry.get("frequency")),
                                             "n_test": entry.get("n_test")})
            slot["acc"].append(_number(entry.get("accuracy")))
    total = sum(s["frequency"] for s in by_class.values() if not math.isnan(s["frequency"]))
    out = []
    for cls in sorted(by_class):
        slot = by_class[cls]
        mean, std, n = _mean_std_n(pd.Series(slot["acc"], dtype=float))
        share = slot["frequency"] / total if total > 0 else math.nan
        out.append({"class": cls, "name": slot["name"] or f"class {cls}", "frequency": slot["frequency"],
                    "share": share, "n_test": slot["n_test"], "mean": mean, "std": std, "n": n})
    return out
