"""Runs (one row per record, :mod:`zslbench.records.results`) -> one row per configuration and dataset.

Everything a leaderboard shows comes from here, so the grouping rules live in one place:

* A **cell group** is (kind, dataset, method, config id, standard split?, device type, data
  fingerprint, schedule). The config id hashes the resolved hyperparameters without the per-run
  seed and device, so the seeds of one configuration land in one group.
* Within a cell group a seed counts once: when several records carry the same seed (a re-run after
  a code change), the newest (``finished_at``) wins and the others are *superseded*.
* A **row key** is the cell group without the dataset and the fingerprint: one leaderboard row per
  method configuration. Two rows that would read the same get a distinguishing suffix.
* **Data versions.** Records of one dataset may come from other bytes (another fingerprint: an
  edited file, a stand-in generated on another machine). Per dataset, the fingerprint with the
  most records is the *compared* version; a cell group on any other version becomes a row of its
  own, labelled with its fingerprint, that is never compared, ranked or marked, and a warning says
  so. Runs on different data never share a comparison.
* Spreads are *sample* standard deviations (``ddof=1``) with a 95% *t* interval
  (:func:`zslbench.stats.t_interval`); with one seed both are undefined, never 0. Each cell keeps
  its values by seed, for the paired tests of :mod:`zslbench.leaderboard.tables`.
* **Training times** are kept per device model (the record's ``device.name``): times are compared
  only on the same model. The median is taken over the runs *not* on an oversubscribed machine
  (``load.oversubscribed``); a cell whose runs were all on a busy machine shows their median,
  marked, rather than nothing. A record without a ``load`` report counts as unknown and is kept.
* A run of a **sweep** (``config["sweep"]``) is a configuration of its own, shown in the sweep
  tables and figures. A swept value equal to an unsearched default runs the default configuration
  itself, so the harness records it as the plain method (no sweep, :func:`zslbench.prepare._effective`).
  The sweep of method M over parameters P (other overrides O) therefore takes M's configuration
  with overrides exactly O and no sweep as one more point (:func:`default_point`), each parameter's
  value read from its resolved hyperparameters; the main tables still show it as plain M.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from zslbench import stats
from zslbench.records import EXTRA_METRICS, METRICS
from zslbench.records.results import RUN_KEYS, samples_by_seed
from zslbench.records.rows import value_text
from zslbench.registry import dataset_order as declared_dataset_order

#: The metrics a sweep table and figure show, in this order.
SWEEP_METRICS = ("H", "A_U", "A_S", "AUSUC", "A_T")
#: The metrics whose columns are tested and marked (A_U and A_S alone say little: a method can buy
#: one with the other, so only their harmonic mean H is ranked).
TESTED_METRICS = ("H", "A_T", "AUSUC")

#: The column order the datasets declare (xlsa17: the paper's CUB, SUN, AWA2, AWA1, APY), read on
#: first use; other datasets follow alphabetically.
PAPER_DATASET_ORDER = declared_dataset_order()

CELL_KEYS = RUN_KEYS  # a cell group is one run: the records package says what that is
ROW_KEYS = "kind method config_id standard device_type schedule".split()
#: What a cell group's runs were told, alike for all of them (read from the first).
SETTINGS = "config overrides overrides_map sweep sweep_params sweep_map base_seed".split()


def dataset_label(name: str, kind: str) -> str:
    """Real benchmarks print as the paper does (``AWA2``); stand-ins and custom data keep their name.
    A benchmark's feature set of another backbone (``awa2@vit_b32_clip``) is labelled with it:
    ``AWA2 · vit_b32_clip``, its own group of columns beside the benchmark's."""
    base, sep, backbone = name.partition("@")
    if sep and base and backbone:
        return f"{dataset_label(base, kind)} · {backbone}"
    return name.upper() if kind == "real" else name


def dataset_order(name: str) -> tuple[int, str, str]:
    """Sort key: the paper's order, for real datasets and their ``synth-`` stand-ins alike (a
    feature set of another backbone right after its benchmark)."""
    base = name.lower().partition("@")[0].removeprefix("synth-")
    order = PAPER_DATASET_ORDER
    return (order.index(base) if base in order else len(order), name.lower(), name)


def is_number(value: Any) -> bool:
    """An int or a float (a bool is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite(value: Any) -> float | None:
    """``value`` as a float, or None when it is None, NaN or infinite."""
    return float(value) if value is not None and math.isfinite(value) else None


def value_sort_key(value: Any) -> tuple[int, float, str]:
    """Swept values in order: numbers numerically, then anything else by its text."""
    return (0, float(value), "") if is_number(value) else (1, 0.0, value_text(value))


@dataclass(frozen=True)
class DataVersions:
    """The fingerprints of one dataset's records: which one is compared, and the others."""

    kind: str
    dataset: str
    compared: str
    counts: tuple[tuple[str, int], ...]  # (fingerprint, records), compared first
    #: The backbone of each version, in the order of ``counts`` ("" where the records name none).
    backbones: tuple[str, ...] = ()

    def warning(self) -> str:
        others = ", ".join(f"{fp[:8]} ({n} record(s))" for fp, n in self.counts[1:])
        of, backbone = "", ""
        if len(set(self.backbones)) > 1:
            of = f", of backbones {', '.join(b or '(none named)' for b in self.backbones)}"
            backbone = f"{self.backbones[0] or 'no backbone named'}, "
        return (
            f"{self.dataset}: records on {len(self.counts)} data versions{of}; only fingerprint "
            f"{self.compared[:8]} ({backbone}{self.counts[0][1]} record(s)) is compared, the runs on {others} "
            "are shown as rows of their own and never compared"
        )


def data_versions(runs: pd.DataFrame) -> dict[tuple[str, str], DataVersions]:
    """Per (kind, dataset): the compared fingerprint, the one with the most records (ties: the
    one with the newest record), and every other one."""
    out: dict[tuple[str, str], DataVersions] = {}
    for (kind, dataset), group in runs.groupby(["kind", "dataset"], sort=True):
        by_fp = dict(list(group.groupby("data_fp", sort=True)))
        stat = {fp: (len(g), max(g["finished_at"]), fp) for fp, g in by_fp.items()}
        order = sorted(stat, key=stat.__getitem__, reverse=True)
        counts = tuple((fp, stat[fp][0]) for fp in order)
        backbones = tuple(next((b for b in by_fp[fp]["backbone"] if b), "") for fp in order)
        out[(kind, dataset)] = DataVersions(kind, dataset, order[0], counts, backbones)
    return out


def _times(group: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per device model: the median ``train`` seconds and how it was taken."""
    out = {}
    for name, runs in group.groupby("device_name", sort=True):
        busy = runs["oversubscribed"].astype(bool)
        quiet = runs.loc[~busy, "train"]
        used = quiet if len(quiet) else runs["train"]
        out[str(name)] = {
            **{stat: float(getattr(used, stat)()) for stat in ("median", "min", "max")},
            "n": int(len(used)),
            "busy_only": not len(quiet),
            "busy": int(busy.sum()),
            "unknown": int((~runs["load_known"].astype(bool)).sum()),
            "runs": int(len(runs)),
        }
    return out


def _per_class(group: pd.DataFrame) -> list[dict[str, Any]]:
    """Per unseen class: accuracy by seed, its mean ± std and interval, and the class's share of
    the unseen test images (the record's frequency is a fraction of *all* images, rescaled here to
    the share among the listed classes, which is what the paper's per-class table prints)."""
    by_class: dict[int, dict[str, Any]] = {}
    for seed, entries in zip(group["seed"], group["per_class"], strict=True):
        for cls, name, acc, freq, n_test in entries:
            new = {"class": cls, "name": name, "frequency": freq, "n_test": n_test, "samples": {}}
            slot = by_class.setdefault(cls, new)
            if math.isfinite(acc):
                slot["samples"][int(seed)] = acc
    total = sum(s["frequency"] for s in by_class.values() if math.isfinite(s["frequency"]))
    for slot in by_class.values():
        slot["share"] = slot["frequency"] / total if total > 0 else math.nan
        slot["interval"] = stats.t_interval(list(slot["samples"].values()))
    return [by_class[cls] for cls in sorted(by_class)]


def aggregate(runs: pd.DataFrame, method_first: Iterable[str] = ()) -> pd.DataFrame:
    """One row per cell group: per metric its :class:`~zslbench.stats.Interval` (``{m}``) and values
    by seed (``{m}_samples``); training times per device model (``times``); per-class accuracy,
    curves and selection audits; and the group's provenance.

    Call on the newest runs (:func:`zslbench.records.results.newest_runs`). Row labels are unique
    per kind; rows are ordered by method (those in ``method_first``, the order of the curated
    reported file, so that a measured row sits where the paper lists the method; then the rest by
    name), label and dataset.
    """
    if runs.empty:
        return pd.DataFrame(
            columns=[*CELL_KEYS, "row_key", "label", "n", "compared", "method_rank"]
        )
    versions = data_versions(runs)
    out = [
        _entry(key, group.sort_values("seed", kind="mergesort"), versions)
        for key, group in runs.groupby(CELL_KEYS, sort=True, dropna=False)
    ]
    frame = pd.DataFrame(out)
    frame["row_key"] = [
        tuple(r[k] for k in ROW_KEYS) + (() if r["compared"] else ("data", r["data_fp"]))
        for r in out
    ]
    frame["label"] = _labels(frame)
    first = list(dict.fromkeys(method_first))
    at = {m: first.index(m) if m in first else len(first) for m in set(frame["method"])}
    methods = sorted(at, key=lambda m: (at[m], m))
    frame["method_rank"] = frame["method"].map({m: i for i, m in enumerate(methods)})
    rows = zip(frame["kind"], frame["method_rank"], frame["label"], frame["dataset"], strict=True)
    keys = [(k, r, lb, dataset_order(d)) for k, r, lb, d in rows]
    frame = frame.iloc[sorted(range(len(frame)), key=keys.__getitem__)].reset_index(drop=True)
    frame.attrs["data_versions"] = [v for v in versions.values() if len(v.counts) > 1]
    return frame


def _entry(
    key: tuple[Any, ...], group: pd.DataFrame, versions: dict[tuple[str, str], DataVersions]
) -> dict[str, Any]:
    """The aggregated row of one cell group (``key``: its cell keys, ``group``: its runs)."""
    entry = dict(zip(CELL_KEYS, key, strict=True))
    seeds = [int(s) for s in group["seed"]]
    entry |= {
        "paper_name": next((p for p in group["paper_name"] if p), ""),
        **group.iloc[0][SETTINGS].to_dict(),
        "config_files": sorted({f for f in group["config_file"] if f}),
        "split_reason": "; ".join(sorted({r for r in group["split_reason"] if r})),
        "n": len(group),
    }
    for metric in (*METRICS, *EXTRA_METRICS):
        samples = samples_by_seed(group, metric)
        entry |= {metric: stats.t_interval(list(samples.values())), f"{metric}_samples": samples}
    version = versions[(entry["kind"], entry["dataset"])]
    rows = list(zip(seeds, group["curve"], group["op"], group["selection_audit"], strict=True))
    return entry | {
        "times": _times(group),
        **run_summary(group),
        "seeds": seeds,
        "dirty": bool(group["dirty"].any()),
        "links": sorted(group["link"]),
        "seed_of": dict(zip(group["link"], seeds, strict=True)),
        "per_class": _per_class(group),
        "curves": [{"seed": s, "curve": c, "op": op} for s, c, op, _ in rows if c is not None],
        "audits": [{"seed": s, **a} for s, _, _, a in rows if a is not None],
        "compared": version.compared == entry["data_fp"],
        # the features' backbone, and the compared version's: a row on other features of the
        # same dataset is labelled with its backbone when that is what differs
        "backbone": next((b for b in group["backbone"] if b), ""),
        "compared_backbone": version.backbones[0],
    }


def run_summary(runs: pd.DataFrame) -> dict[str, Any]:
    """What any set of runs says of itself, alike for a cell group and a whole page: how many ran
    on a busy machine or without a load report, the versions, commits and devices, and the first
    and last day a run finished."""
    days = sorted(v[:10] for v in runs["finished_at"] if v)
    return {
        "oversubscribed": int(runs["oversubscribed"].astype(bool).sum()),
        "load_unknown": int((~runs["load_known"].astype(bool)).sum()),
        "versions": sorted(set(runs["version"])),
        "commits": sorted(set(runs["commit"])),
        "devices": sorted(set(runs["device_name"])),
        "date_first": days[0] if days else "",
        "date_last": days[-1] if days else "",
    }


def default_point(config: dict[str, Any], params: Iterable[str]) -> dict[str, Any] | None:
    """The values of swept ``params`` (``X.param``, X a role or a component's name) that a
    configuration ran with, from its resolved hyperparameters; None when one is searched (it has
    no single value) or the configuration has no such parameter."""
    components, search = config.get("components") or {}, config.get("search") or {}
    out = {}
    for key in params:
        target, _, param = key.partition(".")
        role = next((r for r, c in components.items() if target in (r, c.get("name"))), None)
        values = components[role].get("params") or {} if role is not None else {}
        searched = param if role == "model" else f"{role}.{param}"
        if param not in values or key in search or searched in search:
            return None
        out[key] = values[param]
    return out


def measured(agg: pd.DataFrame, kind: str, *, sweeps: bool = False) -> pd.DataFrame:
    """The aggregated rows of one page kind: plain configurations, or (``sweeps``) sweep runs."""
    if agg.empty:
        return agg
    return agg[(agg["kind"] == kind) & ((agg["sweep"] != "") == sweeps)]


def _labels(frame: pd.DataFrame) -> list[str]:
    """``method`` (+ overrides, + sweep values), plus just enough of device / config / schedule /
    data version to tell rows apart from their twins (the rows of the same base)."""
    brackets = [frame[c].map(lambda x: f" [{x}]" if x else "") for c in ("overrides", "sweep")]
    base = frame["method"] + brackets[0] + brackets[1]
    twins = frame.groupby([frame["kind"], base])
    differ = {c: twins[c].transform("nunique") > 1 for c in ("device_type", "config_id")}
    labels = []
    for r, b, device, cid in zip(frame.itertuples(), base, *differ.values(), strict=True):
        parts = [b, "" if r.standard else "non-standard split", r.schedule]
        parts += [r.device_type if device else "", f"cfg {r.config_id[:8]}" if cid else ""]
        if not r.compared:
            other = r.backbone and r.backbone != r.compared_backbone
            parts.append(f"backbone {r.backbone}" if other else f"data {r.data_fp[:8]}")
            parts[-1] += ", not compared"
        labels.append(" · ".join(p for p in parts if p))
    return labels
