"""Hand-made result records (:class:`zslbench.records.Record`), sealed by ``write_record``.

The leaderboard reads nothing but records, so its tests build records directly: every number in
them is chosen by the test, which makes the expected medians, means, spreads and best marks exact.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from zslbench.records import Record, write_record

PAPER_NAMES = {"bt-gp": "L_BT + GP (ours)", "t-gp": "L_T + GP", "gp": "GP", "krr": "KRR",
               "bt-krr": "L_BT + KRR"}


def make_record(dataset: str = "synth-apy", method: str = "bt-gp", repetition: int = 0, *,
                seed: int | None = None, metrics: dict[str, float] | None = None,
                train: float = 2.0, standard: bool = True, kind: str | None = None,
                overrides: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
                sweep: dict[str, Any] | None = None, config_file: str | None = None,
                oversubscribed: bool | None = False, device_type: str = "cpu",
                device_name: str = "Test CPU", finished_at: str = "2025-01-02T03:04:05+00:00",
                version: str = "0.1.0", commit: str = "0123456789abcdef0123456789abcdef01234567",
                per_class_acc: list[float] | None = None, frequencies: list[float] | None = None,
                class_names: list[str] | None = None, with_curve: bool = True,
                data_fp: str = "datafp", config_id: str | None = None) -> Record:
    """A complete record. Unspecified metrics derive from fixed defaults; ``oversubscribed=None``
    gives a record without a ``load`` report (load unknown)."""
    seed = seed if seed is not None else 1000 + repetition
    kind = kind or ("synthetic" if dataset == "toy" or dataset.startswith("synth-") else "real")
    m = {"A_T": 50.0, "A_U": 40.0, "A_S": 60.0, "H": 48.0, "AUSUC": 30.0}
    m.update(metrics or {})
    params = dict(params or {"latent_dim": 64})
    config: dict[str, Any] = {
        "method": method,
        "components": {"embedder": {"name": "bt", "plugin": "test", "params": params},
                       "regressor": {"name": "gp", "plugin": "test", "params": {}}},
        "overrides": overrides or {}}
    if sweep is not None:
        config["sweep"] = sweep
    if config_file is not None:
        config["config_file"] = config_file
    cid = config_id or hashlib.sha256(json.dumps([method, params, overrides or {}, sweep or {}],
                                                 sort_keys=True).encode()).hexdigest()
    key = hashlib.sha256(f"{cid}|{data_fp}|{seed}|{device_type}".encode()).hexdigest()
    gammas = [0.0, 0.5, 1.0, 2.0]
    curve = ({"gamma": gammas, "A_U": [m["A_U"] * 1.5, m["A_U"], m["A_U"] / 2, 0.0],
              "A_S": [0.0, m["A_S"], m["A_S"] * 1.2, m["A_S"] * 1.3]} if with_curve else None)
    acc = per_class_acc or [m["A_U"] - 10, m["A_U"], m["A_U"] + 10]
    freqs = frequencies or [0.02, 0.05, 0.13][: len(acc)]
    names = class_names or [f"class{i}" for i in range(len(acc))]
    unseen = [{"class": 10 + i, "name": names[i], "accuracy": a, "n_test": 20 * (i + 1),
               "frequency": freqs[i]} for i, a in enumerate(acc)]
    load = ({} if oversubscribed is None else
            {"cpu_seconds": train * 1.5, "wall_seconds": train, "load_start": 9.0 if oversubscribed else 0.5,
             "load_end": 0.5, "cores": 2, "threads": 2, "oversubscribed": oversubscribed})
    sweep_tag = "".join(f"__{k}={v}" for k, v in sorted((sweep or {}).items()))
    return Record(
        run_id=f"{dataset}__{method}__{cid[:8]}__{data_fp[:8]}__{device_type}__s{seed}{sweep_tag}",
        key=key, config_id=cid, code_fingerprint="code", dataset=dataset, dataset_kind=kind,
        method=method, paper_name=PAPER_NAMES.get(method, method), repetition=repetition, base_seed=0,
        seed=seed, metrics=m, gamma=0.5,
        timings={"train": train, "embedder_fit": train / 2, "regressor_fit": train / 4,
                 "calibration": train / 4, "evaluation": 0.1},
        load=load, curve=curve, operating_point={"A_U": m["A_U"], "A_S": m["A_S"]},
        per_class={"unseen": unseen, "seen": []}, config=config,
        split={"fingerprint": f"split-{dataset}", "standard": standard,
               "reason": "" if standard else "split fingerprint differs from Split V2.0"},
        data={"fingerprint": data_fp, "n_images": 1000, "n_seen": 5, "n_unseen": len(acc), "source": {}},
        device={"type": device_type, "name": device_name, "threads": 2},
        environment={"python": "3.11.0", "platform": "test", "packages": {"zslbench": version}},
        git={"commit": commit, "dirty": False}, zslbench_version=version,
        started_at=finished_at, finished_at=finished_at)


def write_records(results_dir: Path, records: list[Record]) -> list[Path]:
    return [write_record(results_dir, r) for r in records]


def small_grid(results_dir: Path) -> list[Path]:
    """A tiny but complete grid: 2 synthetic datasets × 2 methods × 2 seeds, plus 2 real runs."""
    records = []
    for dataset, base in (("synth-apy", 40.0), ("synth-cub", 30.0)):
        for method, bonus in (("gp", 0.0), ("bt-gp", 5.0)):
            for rep in range(2):
                h = base + bonus + rep
                records.append(make_record(dataset, method, rep, train=1.0 + bonus / 10 + rep,
                                           metrics={"H": h, "A_U": h - 5, "A_S": h + 5, "A_T": h + 2,
                                                    "AUSUC": h / 2}))
    for rep in range(2):
        records.append(make_record("apy", "bt-gp", rep, metrics={"H": 60.0 + rep},
                                   class_names=["person", "cow", "goat"],
                                   frequencies=[0.3, 0.01, 0.02], per_class_acc=[12.0, 15.0, 48.0]))
    return write_records(results_dir, records)
