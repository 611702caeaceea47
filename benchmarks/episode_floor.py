"""Where an L_BT episode's time goes at SUN shape, and the floor that its two matrix products set.

bt-gp's ``train`` on SUN is dominated by the embedder: 2 fits (validation, then final) x 500
episodes, each a (5160 x 2048) x (2048 x 64) product forward and its (64 x 5160) x (5160 x 2048)
gradient, about 2.7 GFLOP per episode that no reordering removes (Adam is not rotation-invariant,
so the features cannot be projected to fewer dimensions without changing W). This script times,
on this machine and with zslbench's thread policy:

* a whole episode (``EpisodeTrainer.step``: sample, gather, forward, L_BT, backward, Adam);
* the two products alone at the batch's shape, and the row gather;
* a square 2048^3 product, as this CPU's practical GEMM rate.

and projects each to the 2 x 500 episodes of one run. "Products only" is the floor for the
embedder with the paper's schedule and our batch shape: any faster run has to change the numbers
(fewer episodes, smaller batches, lower precision) or the hardware. Medians of ``--repeats``
timings; on a shared machine, run it twice and compare.

Usage: ``python benchmarks/episode_floor.py [--shape sun|awa2] [--repeats 30]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from zslbench import threads

threads.apply_defaults()  # as the CLI does, before torch loads

import torch  # noqa: E402

from zslbench.provenance import cpu_name  # noqa: E402
from zslbench_plugins.embedders import BalancedTripletEmbedder  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bench_embedders import _shape  # noqa: E402  (the benchmarks' one SUN/AWA2 shape)

FITS, EPISODES = 2, 500


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=("sun", "awa2"), default="sun")
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    features, labels = _shape(args.shape)
    trainer = BalancedTripletEmbedder(random_state=0).trainer(features, labels)
    rows = trainer.state.sampler.batch_size
    f = torch.from_numpy(features)
    batch = f[:rows].clone()
    w_t = trainer.linear.weight.detach().T.contiguous()
    bias = trainer.linear.bias.detach()
    grad = torch.randn(rows, w_t.shape[1])
    index = torch.randperm(len(f))[:rows]
    out = torch.empty_like(batch)
    square = torch.rand(2048, 2048)

    episode = median_ms(trainer.step, args.repeats)
    forward = median_ms(lambda: torch.addmm(bias, batch, w_t), args.repeats)
    backward = median_ms(lambda: grad.T @ batch, args.repeats)
    gather = median_ms(lambda: torch.index_select(f, 0, index, out=out), args.repeats)
    square_ms = median_ms(lambda: square @ square, max(5, args.repeats // 3))
    gflop = 2.0 * rows * batch.shape[1] * w_t.shape[1] / 1e9

    per_run = FITS * EPISODES / 1e3
    print(f"# L_BT episode at {args.shape.upper()} shape ({rows} images x {batch.shape[1]} features"
          f" -> {w_t.shape[1]}), {cpu_name()}, {torch.get_num_threads()} threads,"
          f" median of {args.repeats}\n")
    print("| part | ms per episode | s per run (2 x 500 episodes) | GFLOP/s |")
    print("|---|---:|---:|---:|")
    for name, ms, flops in (
        ("whole episode", episode, None),
        ("forward product F·Wᵀ", forward, gflop),
        ("gradient product Gᵀ·F", backward, gflop),
        ("row gather", gather, None),
        ("rest (L_BT forward + backward, sampling, Adam)", episode - forward - backward - gather,
         None),
        ("**floor: the two products only**", forward + backward, 2 * gflop),
    ):
        rate = f"{flops / ms * 1e3:.0f}" if flops else ""
        print(f"| {name} | {ms:.1f} | {ms * per_run:.1f} | {rate} |")
    print(f"\nThis CPU's square 2048³ product: {2 * 2048**3 / square_ms / 1e6:.0f} GFLOP/s.")


if __name__ == "__main__":
    main()
