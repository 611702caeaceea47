"""Time one method's run through zslbench, loop by loop: our side of a side-by-side timing against
a peer's official code (``benchmarks/results/peers-vs-official-*.md``; the official side is run
outside the project, from the authors' repositories, never copied here).

Usage::

    OMP_NUM_THREADS=2 python benchmarks/peer_timing.py --method cnzsl --dataset apy \\
        --data-dir DIR [--set model.epochs=50 ...] [--json]

It runs the method once (``--force``, records into a temporary folder) and prints the record's
phase timings (``search``, ``fit_validation``, ``fit_final``, ``train``) and, for every loop a fit
reports through :func:`zslbench.progress.steps` (``epochs``, ``cada-vae epochs``, ``gan epochs``,
``classifier epochs``), its seconds per step: the time from the loop's first report (0 done) to
its last, divided by its steps. That is the unit to compare with an official code's epoch; the
phase timings are the whole train. Compare the ``fit_final`` loops only: a search candidate that
resumes a cached training (a stage with ``resumes``, e.g. cnzsl's epochs) runs only the epochs it
adds, but its loop still counts all of them, so its seconds per step read too low. ``--json`` prints one JSON line instead of the table.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any


def timed_run(
    method: str, dataset: str, data_dir: str | None, sets: list[str], device: str = "cpu"
) -> dict[str, Any]:
    """Run ``method`` on ``dataset`` once; return the record's timings and every reported loop
    as ``{"phase", "label", "steps", "seconds", "per_step"}``, in the order they ran."""
    from zslbench.api import run

    loops: list[dict[str, Any]] = []
    open_loops: dict[str, dict[str, Any]] = {}
    phase = ["load"]

    def on_event(kind: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if kind == "phase":
            phase[0] = info["phase"]
        elif kind == "step":
            label, done, total = info["label"], info["done"], info["total"]
            if done == 0:  # a loop starts (the same label recurs: one loop per fit or candidate)
                open_loops[label] = {"phase": phase[0], "label": label, "start": now}
            elif done >= total and label in open_loops:
                loop = open_loops.pop(label)
                seconds = now - loop.pop("start")
                loops.append(
                    {**loop, "steps": total, "seconds": seconds, "per_step": seconds / total}
                )

    with tempfile.TemporaryDirectory() as results:
        start = time.perf_counter()
        (record,) = run(
            method,
            dataset,
            data_dir=data_dir,
            results_dir=results,
            sets=sets,
            device=device,
            force=True,
            on_event=on_event,
        )
        wall = time.perf_counter() - start
    return {
        "method": method,
        "dataset": dataset,
        "sets": sets,
        "timings": record.timings,
        "search": (record.search or {}).get("chosen"),
        "threads": record.load.get("threads"),
        "wall": wall,
        "loops": loops,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="K=V")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of a table")
    args = parser.parse_args()
    out = timed_run(args.method, args.dataset, args.data_dir, args.sets, args.device)
    if args.json:
        print(json.dumps(out))
        return
    t = out["timings"]
    print(f"{out['method']} on {out['dataset']} ({out['threads']} threads) {' '.join(args.sets)}")
    for key in ("search", "fit_validation", "fit_final", "train"):
        if key in t:
            print(f"  {key:<16} {t[key]:9.2f} s")
    print(f"  {'phase':<16} {'loop':<18} {'steps':>5} {'s/step':>9}")
    for loop in out["loops"]:
        print(
            f"  {loop['phase']:<16} {loop['label']:<18} {loop['steps']:>5} {loop['per_step']:9.3f}"
        )


if __name__ == "__main__":
    main()
