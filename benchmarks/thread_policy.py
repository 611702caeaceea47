"""How BLAS/OpenMP thread settings change a run's ``train`` time, on a quiet machine and beside CPU hogs.

Each configuration sets the thread count and how idle OpenMP threads wait (environment variables
read when torch loads, so every run is a fresh ``zslbench run`` process). The runs are interleaved
(every configuration once per round, the order rotated each round) so that a drift in the machine's
background load hits every configuration alike; what to compare is the ratio of medians within one
hog level. A "hog" is a ``python -c "while True: pass"`` process at the same priority, the
simplest model of another job holding a core.

Usage (from the repository root, with zslbench installed)::

    python benchmarks/thread_policy.py --datasets synth-apy --hogs 0,1,2 --rounds 3
    python benchmarks/thread_policy.py --datasets synth-sun --set embedder.episodes=100 --timeout 900

``--python`` runs another checkout's interpreter. Each run's ``train`` seconds come from its record;
the 1-minute load average before each run is printed beside it (``uptime``), and runs that exceed
``--timeout`` are shown as ``>T``. Prints one Markdown table per dataset.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: label -> environment. Every variable any configuration sets is removed first, so each run gets
#: exactly its own settings. ``ZSLBENCH_THREAD_POLICY=off`` keeps zslbench's own defaults out of the
#: way (zslbench.threads), so that "2T-spin-default" is libgomp's built-in behaviour.
CONFIGS: dict[str, dict[str, str]] = {
    "1T": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "2T-spin-default": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
    "2T-ACTIVE": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OMP_WAIT_POLICY": "ACTIVE"},
    "2T-PASSIVE": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"},
    "2T-spin10k": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "GOMP_SPINCOUNT": "10000"},
    "zslbench-default": {},
}
MANAGED = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
    "KMP_BLOCKTIME",
    "ZSLBENCH_THREAD_POLICY",
)


def load1() -> float:
    return os.getloadavg()[0]


def one_run(
    python: str, dataset: str, env_extra: dict[str, str], sets: list[str], timeout: float
) -> dict[str, object]:
    """One ``zslbench run`` in a fresh process; its record's train seconds (None on timeout)."""
    env = {k: v for k, v in os.environ.items() if k not in MANAGED}
    env.update(env_extra)
    if env_extra:  # an explicit configuration: zslbench must not add its own defaults
        env["ZSLBENCH_THREAD_POLICY"] = "off"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            python,
            "-c",
            "from zslbench.cli import main; main()",
            "run",
            "--method",
            "bt-gp",
            "--dataset",
            dataset,
            "--results-dir",
            tmp,
            "--force",
        ]
        for s in sets:
            cmd += ["--set", s]
        before = load1()
        start = time.perf_counter()
        try:
            subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=timeout, check=True
            )
        except subprocess.TimeoutExpired:
            return {"train": None, "wall": time.perf_counter() - start, "load": before}
        (path,) = Path(tmp).glob("*.json")
        rec = json.loads(path.read_text())
    return {
        "train": rec["timings"]["train"],
        "wall": time.perf_counter() - start,
        "load": before,
        "record_load": rec.get("load", {}),
    }


def start_hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for h in hogs:
        h.kill()
    for h in hogs:
        h.wait()


def fmt(v: float | None, timeout: float) -> str:
    return f">{timeout:.0f}" if v is None else f"{v:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="synth-apy")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--hogs", default="0,1,2", help="comma-separated hog counts")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--set", action="append", default=[], help="passed to zslbench run --set")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", help="also write every run here")
    args = ap.parse_args()
    configs = args.configs.split(",")
    hog_levels = [int(h) for h in args.hogs.split(",")]
    runs: list[dict[str, object]] = []
    for dataset in args.datasets.split(","):
        for hogs in hog_levels:
            for r in range(args.rounds):
                order = configs[r % len(configs) :] + configs[: r % len(configs)]
                for label in order:
                    hog_procs = start_hogs(hogs)
                    try:
                        time.sleep(1.0 if hogs else 0.0)
                        res = one_run(args.python, dataset, CONFIGS[label], args.set, args.timeout)
                    finally:
                        stop_hogs(hog_procs)
                    res.update(dataset=dataset, hogs=hogs, config=label, round=r)
                    runs.append(res)
                    print(
                        f"# {dataset} hogs={hogs} round={r} {label}: train "
                        f"{fmt(res['train'], args.timeout)} s (load before {res['load']:.2f})",
                        file=sys.stderr,
                        flush=True,
                    )
                    if args.json:
                        Path(args.json).write_text(json.dumps(runs, indent=1))
        print(
            f"\n{dataset}, bt-gp, {' '.join('--set ' + s for s in args.set)}; `train` seconds, "
            f"median of {args.rounds} (min-max); load = 1-min load average before the runs\n"
        )
        ref = configs[0]
        print("| hogs | config | median | min-max | ratio to " + ref + " | load (median) |")
        print("|---|---|---|---|---|---|")
        for hogs in hog_levels:
            rows = {
                c: [
                    x
                    for x in runs
                    if x["dataset"] == dataset and x["hogs"] == hogs and x["config"] == c
                ]
                for c in configs
            }

            def med(xs: list[dict[str, object]]) -> float:
                vals = [args.timeout if x["train"] is None else float(x["train"]) for x in xs]
                return statistics.median(vals)

            for c in configs:
                xs = rows[c]
                vals = [x["train"] for x in xs]
                lo = min((v for v in vals if v is not None), default=None)
                hi = None if any(v is None for v in vals) else max(vals)
                ratio = med(xs) / med(rows[ref])
                load = statistics.median(float(x["load"]) for x in xs)
                print(
                    f"| {hogs} | {c} | {fmt(med(xs), args.timeout) if None not in vals else '>' + format(med(xs), '.0f')} "
                    f"| {fmt(lo, args.timeout)}-{fmt(hi, args.timeout)} | {ratio:.2f} | {load:.1f} |"
                )


if __name__ == "__main__":
    main()
