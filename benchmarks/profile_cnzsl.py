"""Where a CN-ZSL epoch goes, operator by operator, against its FLOP floor.

A CN-ZSL step runs the attribute MLP over *every* seen class (forward and backward: the
prototypes depend on the parameters, which every step changes), then the batch's cosine logits
against those prototypes, then a fused Adam step over all weights. The MLP's matrix products are
the floor of an epoch: ``batches * C * (k*h + h*h + h*d) * 2 * 3`` FLOPs (multiply-add = 2, forward
+ two backward products = 3; the first layer's input gradient is not needed, so this slightly
overcounts). This script, for the shapes of the real datasets' final fit (xlsa17 trainval: seen
classes C, images n, attribute width k; h = 1024, d = 2048, batch 256):

* times a batch of :class:`zslbench_plugins.cnzsl.CNZSLModel`'s training, and the self time of
  each aten operator per batch under ``torch.profiler``: in both, a 2-epoch fit less a 1-epoch
  fit, so that the fit's setup (input checks, initialisation draws, final prototypes) cancels;
* measures this host's float32 product rate on the MLP's own product shapes (the same three
  orientations as the forward and backward passes) in both libraries of the torch wheel: MKL
  (``a @ b``, what ``F.linear`` runs) and oneDNN (:mod:`zslbench_plugins.gemm`, what the model
  runs where this torch has it), and prints the floor (MLP FLOPs / the model's library's rate)
  against the measured epoch.

Usage: ``OMP_NUM_THREADS=2 python benchmarks/profile_cnzsl.py [--datasets APY,CUB,SUN]
[--batches 8] [--json out.json]``. Synthetic data: the time does not depend on the values.
(torch's ``FlopCounterMode`` is not used: in torch 2.13 it missed the backward products of a fit.)
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from zslbench_plugins import gemm
from zslbench_plugins.cnzsl import CNZSLModel

#: (seen classes, trainval images, attribute width) of the xlsa17 final fit.
SHAPES = {
    "APY": (20, 5932, 64),
    "AWA2": (40, 23527, 85),
    "CUB": (150, 7057, 312),
    "SUN": (645, 10320, 102),
}
HID, FEAT, BATCH = 1024, 2048, 256


def mlp_flops(c: int, k: int) -> int:
    """FLOPs of the prototype MLP's products for one step (forward + backward)."""
    return c * (k * HID + HID * HID + HID * FEAT) * 2 * 3


def sgemm_rate(c: int, k: int, repeats: int = 5, library: str = "mkl") -> float:
    """GFLOP/s of this host's float32 product (``library``: ``"mkl"``, torch's ``@``, or
    ``"onednn"``) on the MLP's products for ``c`` classes: per layer (in -> out), the forward
    ``(c, in) @ (in, out)``, the input gradient ``(c, out) @ (out, in)`` and the weight gradient
    ``(out, c) @ (c, in)``, each best of ``repeats``."""

    def product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b if library == "mkl" else gemm._product(a, b.t())

    gen = torch.Generator().manual_seed(0)
    total_flops, total_s = 0, 0.0
    for d_in, d_out in ((k, HID), (HID, HID), (HID, FEAT)):
        x = torch.randn(c, d_in, generator=gen)
        w = torch.randn(d_out, d_in, generator=gen)
        g = torch.randn(c, d_out, generator=gen)
        for a, b in ((x, w.T), (g, w), (g.T, x)):
            best = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                product(a, b)
                best = min(best, time.perf_counter() - t)
            total_flops += 2 * a.shape[0] * a.shape[1] * b.shape[1]
            total_s += best
    return total_flops / total_s / 1e9


def _problem(c: int, n: int, k: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    x = rng.random((n, FEAT), dtype=np.float32)
    y = np.arange(n) % c
    att = rng.random((c, k)).astype(np.float32)
    return x, y, att, np.arange(c)


def _op_times(model: CNZSLModel, data: tuple[np.ndarray, ...]) -> tuple[float, dict[str, list]]:
    """Wall seconds of one fit, and (calls, self ms) per aten operator of a profiled fit."""
    t = time.perf_counter()
    model.fit(*data)
    wall = time.perf_counter() - t
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model.clone().fit(*data)  # a clone: a refit of ``model`` would reuse its cached stage
    ops = {
        ev.key: [ev.count, ev.self_cpu_time_total / 1e3]
        for ev in prof.key_averages()
        if ev.key.startswith("aten::")
    }
    return wall, ops


def profile_epoch(name: str, batches: int) -> dict[str, Any]:
    """Per batch of training: wall time and each operator's time, as the difference between a
    2-epoch and a 1-epoch fit over ``batches * 256`` images (so the fit's setup, the input
    checks, the initialisation draws and the final prototype pass, cancels out)."""
    c, n_full, k = SHAPES[name]
    n = min(n_full, batches * BATCH)
    data = _problem(c, n, k)
    CNZSLModel(epochs=1, random_state=0).fit(*data)  # warm-up
    n_batches = -(-n // BATCH)
    wall1, ops1 = _op_times(CNZSLModel(epochs=1, random_state=0), data)
    wall2, ops2 = _op_times(CNZSLModel(epochs=2, random_state=0), data)
    rows = []
    for op, (count, ms) in ops2.items():
        c1, ms1 = ops1.get(op, (0, 0.0))
        if ms - ms1 > 0:
            rows.append((op, count - c1, (ms - ms1) / n_batches))
    rows.sort(key=lambda r: -r[2])
    rates = {"mkl": sgemm_rate(c, k)}
    if gemm._onednn_op() is not None:
        rates["onednn"] = sgemm_rate(c, k, library="onednn")
    library = "onednn" if "onednn" in rates else "mkl"  # what the model's layers run
    rate = rates[library]
    floor_batch = mlp_flops(c, k) / (rate * 1e9)
    return {
        "dataset": name,
        "classes": c,
        "images": n_full,
        "attributes": k,
        "batches_profiled": n_batches,
        "wall_per_batch_ms": (wall2 - wall1) / n_batches * 1e3,
        "mlp_flops_per_batch": mlp_flops(c, k),
        "sgemm_gflops": rate,
        "library": library,
        "gflops_by_library": rates,
        "floor_per_batch_ms": floor_batch * 1e3,
        "epoch_batches": -(-n_full // BATCH),
        "ops": [
            {"op": o, "calls_per_batch": cnt / n_batches, "ms_per_batch": ms} for o, cnt, ms in rows
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="APY,AWA2,CUB,SUN")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json")
    args = parser.parse_args()
    out = []
    for name in args.datasets.split(","):
        r = profile_epoch(name, args.batches)
        out.append(r)
        e = r["epoch_batches"]
        print(
            f"\n{name}: C={r['classes']} n={r['images']} k={r['attributes']} "
            f"({e} batches/epoch, threads {torch.get_num_threads()})"
        )
        print(
            f"  measured {r['wall_per_batch_ms']:.1f} ms/batch (epoch ~{r['wall_per_batch_ms'] * e / 1e3:.2f} s; the "
            "operators below: under the profiler)"
        )
        print(
            "  float32 products: "
            + ", ".join(f"{lib} {g:.0f} GFLOP/s" for lib, g in r["gflops_by_library"].items())
            + f" (the model runs {r['library']})"
        )
        print(
            f"  MLP FLOPs/batch {r['mlp_flops_per_batch'] / 1e9:.2f} G at {r['sgemm_gflops']:.0f} GFLOP/s -> floor "
            f"{r['floor_per_batch_ms']:.1f} ms/batch, {r['floor_per_batch_ms'] * e / 1e3:.2f} s/epoch "
            f"({r['floor_per_batch_ms'] / r['wall_per_batch_ms']:.0%} of measured)"
        )
        print(f"  {'op':<40}{'calls':>7}{'ms/batch':>10}{'share':>8}")
        for row in r["ops"][: args.top]:
            share = row["ms_per_batch"] / r["wall_per_batch_ms"]
            print(
                f"  {row['op']:<40}{row['calls_per_batch']:>7.1f}{row['ms_per_batch']:>10.2f}{share:>8.1%}"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
