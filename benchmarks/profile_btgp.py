"""Where a bt-gp train goes, per dataset shape: time, matrix FLOPs and tensor operations per part.

For each stand-in of the five benchmarks (``synth-apy`` ... ``synth-sun``: the real datasets'
sizes, class counts and attribute widths, with generated features), one run of the whole protocol
(validation fit with the search, calibration, final fit, evaluation) is made under a
``TorchDispatchMode`` that counts every aten operation (each is at least one kernel launch on a
GPU) and the FLOPs of the matrix products (torch's own ``flop_registry``: mm, addmm, bmm, ...;
factorisations and element-wise work are counted as operations, not FLOPs). Counts are keyed by the
protocol's phase and the model's stage (``embedder_fit``, ``regressor_fit``), so the table shows:

* the embedder's episodes (ops and FLOPs per episode),
* the GP (or KRR) fits (ops per fit),
* the search, the calibration and the evaluation (what is left of each phase),

with the wall time of each part. Counting adds Python overhead to every operation, so the times
here are not the run's times; the operation and FLOP counts do not depend on the machine or its
load. Numpy work (the search's bookkeeping, calibration, metrics) has time but no count.

Two counts: ``ops``, every aten operation, and ``kernels``, those that can launch a kernel, i.e.
without views and aliases (``view``, ``slice``, ``transpose``, ``detach``, ...: metadata only)
and the profiler's ``record_function`` markers.

Usage: ``python benchmarks/profile_btgp.py [--method bt-gp] [--datasets synth-apy,synth-cub]
[--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from typing import Any

from zslbench import threads

threads.apply_defaults()  # as the CLI does, before torch loads

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils.flop_counter import flop_registry  # noqa: E402

from zslbench.prepare import prepare_method  # noqa: E402
from zslbench.protocol import run_protocol  # noqa: E402
from zslbench.provenance import cpu_name  # noqa: E402
from zslbench.registry import load_registry  # noqa: E402
from zslbench.request import parse_overrides  # noqa: E402

SHAPES = ("synth-apy", "synth-awa1", "synth-awa2", "synth-cub", "synth-sun")


#: Operations that only make a tensor's metadata (their schema does not mark them as views).
_METADATA = {torch.ops.aten.detach, torch.ops.aten.lift_fresh, torch.ops.aten._unsafe_view}


class Counter(TorchDispatchMode):
    """Counts aten operations and matrix-product FLOPs under the current ``key``."""

    def __init__(self) -> None:
        super().__init__()
        self.key = "setup"
        self.ops: dict[str, int] = defaultdict(int)
        self.kernels: dict[str, int] = defaultdict(int)
        self.flops: dict[str, int] = defaultdict(int)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.ops[self.key] += 1
        if not (func.is_view or func._overloadpacket in _METADATA or func.namespace == "profiler"):
            self.kernels[self.key] += 1
        count = flop_registry.get(func._overloadpacket)
        if count is not None:
            self.flops[self.key] += int(count(*args, **kwargs, out_val=out))
        return out


class Tracker:
    """Follows the protocol's phases and the model's stages; times each (phase, stage) part and
    counts the episodes and stage entries (fits)."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self.phase, self.stage = "setup", None
        self.seconds: dict[str, float] = defaultdict(float)
        self.entries: dict[str, int] = defaultdict(int)
        self.episodes = 0
        self.last = time.perf_counter()

    def _switch(self) -> None:
        now = time.perf_counter()
        self.seconds[self.counter.key] += now - self.last
        self.last = now
        self.counter.key = f"{self.phase}/{self.stage}" if self.stage else self.phase

    def event(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "phase":
            self.phase, self.stage = info["phase"], None
            self._switch()
        elif kind == "stage_start":
            self.stage = info["stage"]
            self.entries[info["stage"]] += 1
            self._switch()
        elif kind == "stage_end":
            self.stage = None
            self._switch()
        elif kind == "step" and info.get("label") == "episodes" and info["done"] == info["total"]:
            self.episodes += int(info["total"])


def profile(method: str, dataset: str, seed: int = 0) -> dict[str, Any]:
    reg = load_registry()
    data = reg.get("dataset", dataset).obj.load(None)
    prep = prepare_method(reg, method, parse_overrides([]))
    counter = Counter()
    tracker = Tracker(counter)
    start = time.perf_counter()
    with counter:
        result = run_protocol(
            data, prep.instantiate(seed=seed, device="cpu"), seed, "cpu", on_event=tracker.event
        )
    tracker.phase, tracker.stage = "done", None
    tracker._switch()
    parts = sorted(set(counter.ops) | set(tracker.seconds))
    return {
        "method": method,
        "dataset": dataset,
        "H": float(result.evaluation["H"]),
        "wall_seconds": time.perf_counter() - start,
        "episodes": tracker.episodes,
        "stage_entries": dict(tracker.entries),
        "parts": {
            p: {
                "seconds": round(tracker.seconds.get(p, 0.0), 3),
                "ops": counter.ops.get(p, 0),
                "kernels": counter.kernels.get(p, 0),
                "gflop": counter.flops.get(p, 0) / 1e9,
            }
            for p in parts
            if p not in ("done",)
        },
    }


def rows(prof: dict[str, Any]) -> list[tuple[str, float, int, int, float, str]]:
    """(part, seconds, ops, kernels, GFLOP, per-unit note) for the table."""
    out = []
    emb = [v for k, v in prof["parts"].items() if k.endswith("/embedder_fit")]
    reg = [v for k, v in prof["parts"].items() if k.endswith("/regressor_fit")]
    episodes = prof["episodes"]
    fits = prof["stage_entries"].get("regressor_fit", 0)
    if emb:
        ops, flops = sum(v["ops"] for v in emb), sum(v["gflop"] for v in emb)
        kernels = sum(v.get("kernels", 0) for v in emb)
        note = (
            f"{ops / episodes:.0f} ops ({kernels / episodes:.0f} kernels), "
            f"{flops / episodes * 1e3:.0f} MFLOP per episode ({episodes} episodes)"
            if episodes
            else ""
        )
        out.append(("embedder episodes", sum(v["seconds"] for v in emb), ops, kernels, flops, note))
    if reg:
        ops, kernels = sum(v["ops"] for v in reg), sum(v.get("kernels", 0) for v in reg)
        out.append(
            (
                "GP/KRR fits",
                sum(v["seconds"] for v in reg),
                ops,
                kernels,
                sum(v["gflop"] for v in reg),
                f"{ops / fits:.0f} ops ({kernels / fits:.0f} kernels) per fit ({fits} fits)"
                if fits
                else "",
            )
        )
    for phase in (
        "preprocess",
        "search",
        "fit_validation",
        "calibration",
        "fit_final",
        "evaluation",
        "setup",
    ):
        v = prof["parts"].get(phase)
        if v and (v["ops"] or v["seconds"] >= 0.001):
            out.append(
                (f"{phase} (rest)", v["seconds"], v["ops"], v.get("kernels", 0), v["gflop"], "")
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--method", default="bt-gp")
    parser.add_argument("--datasets", default=",".join(SHAPES))
    parser.add_argument("--json", default=None, help="also write the raw counts here")
    args = parser.parse_args()
    # One thread: the counting mode is thread-local, and with more than one thread the GP fits
    # run their independent dimensions in worker threads (gp_fit's pmap), whose operations it
    # would not see (461 instead of 4 978 per fit at APY shape with two threads).
    torch.set_num_threads(1)
    print(
        f"{args.method} on {cpu_name()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s); times include the counting overhead"
    )
    profiles = []
    for dataset in args.datasets.split(","):
        prof = profile(args.method, dataset)
        profiles.append(prof)
        print(f"\n{dataset}: H {prof['H']:.2f}, {prof['wall_seconds']:.1f} s under counting")
        print(f"  {'part':22} {'seconds':>8} {'ops':>10} {'kernels':>10} {'GFLOP':>9}  per unit")
        for part, sec, ops, kernels, gflop, note in rows(prof):
            print(f"  {part:22} {sec:8.2f} {ops:10d} {kernels:10d} {gflop:9.2f}  {note}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(profiles, fh, indent=1)


if __name__ == "__main__":
    main()
