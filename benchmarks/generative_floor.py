"""Each generative method's generator epoch: its matrix-product FLOPs, its time, and the floor.

A generator epoch of five of the generative peers (f-CLSWGAN, CADA-VAE, TF-VAEGAN, FREE, CE-GZSL;
not HSVA or SDGZSL) is almost only dense matrix products (4096-wide MLPs), so their FLOPs at this host's GEMM rate bound the epoch from below: any faster epoch has
to change the numbers (smaller networks, fewer steps, lower precision) or the hardware. This
script, on this machine and with zslbench's thread policy:

* counts the FLOPs of one epoch at official size with ``torch.utils.flop_counter.FlopCounterMode``
  (every mm/addmm/bmm, forward and backward);
* times one epoch (median of ``--repeats``), outside the counter;
* times a square 2048^3 product, as this CPU's practical GEMM rate;

and prints, per method, GFLOP per epoch, seconds per epoch, the floor (FLOPs at the GEMM rate),
the ratio, and the projected ``train`` of one run at the official schedule (two generator fits:
validation and final). The data is the ``toy`` shape (960 training images, 256-d, 24-d
attributes, 12 seen and 6 unseen classes) unless ``--shape cub`` (7057 x 2048, 312-d, 150 + 50
classes; minutes per method).

Usage: ``python benchmarks/generative_floor.py [--shape toy|cub] [--repeats 3] [--methods ...]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from zslbench import threads

threads.apply_defaults()  # as the CLI does, before torch loads

import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from zslbench.provenance import cpu_name  # noqa: E402
from zslbench_plugins.cadavae import VAEGenerator  # noqa: E402
from zslbench_plugins.cegzsl import CEGZSLGenerator  # noqa: E402
from zslbench_plugins.fclswgan import WGANGenerator  # noqa: E402
from zslbench_plugins.vaegan import FREEGenerator, TFVAEGANGenerator  # noqa: E402

SHAPES = {"toy": (960, 256, 24, 12, 6), "cub": (7057, 2048, 312, 150, 50)}
#: Official epochs of one generator fit (each module's docstring gives the source).
OFFICIAL_EPOCHS = {"f-clswgan": 56, "cada-vae": 100, "tf-vaegan": 300, "free": 501, "ce-gzsl": 2000}
#: One epoch of each generator at official size (f-CLSWGAN's classifier pre-training is a
#: one-off: left out by ``cls_weight=0``, it costs under 1% of its GAN epochs).
ONE_EPOCH = {
    "f-clswgan": lambda: WGANGenerator(nepoch=1, cls_weight=0.0),
    "cada-vae": lambda: VAEGenerator(epochs=1),
    "tf-vaegan": lambda: TFVAEGANGenerator(nepoch=1),
    "free": lambda: FREEGenerator(nepoch=1),
    "ce-gzsl": lambda: CEGZSLGenerator(nepoch=1),
}


def data(shape: str) -> tuple[torch.Tensor, ...]:
    n, d, a, n_seen, n_unseen = SHAPES[shape]
    g = torch.Generator().manual_seed(0)
    y = torch.arange(n) % n_seen
    att = torch.rand(n_seen + n_unseen, a, generator=g)
    x = torch.rand(n, d, generator=g)
    return x, y, att, torch.arange(n_seen)


def gemm_rate(repeats: int) -> float:
    """FLOP/s of a 2048^3 float32 product (median)."""
    a = torch.rand(2048, 2048)
    b = torch.rand(2048, 2048)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(max(repeats, 5)):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * 2048**3 / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=tuple(SHAPES), default="toy")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="*", default=list(ONE_EPOCH))
    args = parser.parse_args()
    x, y, att, seen = data(args.shape)
    rate = gemm_rate(args.repeats)
    print(
        f"# {cpu_name()}, {torch.get_num_threads()} threads, torch {torch.__version__}; "
        f"shape {args.shape} {tuple(x.shape)}, GEMM 2048^3: {rate / 1e9:.0f} GFLOP/s"
    )
    print("| method | GFLOP/epoch | s/epoch | floor s/epoch | x floor | epochs | run (2 fits) |")
    print("|---|---|---|---|---|---|---|")
    for name in args.methods:
        make = ONE_EPOCH[name]
        with FlopCounterMode(display=False) as counter:
            make().fit(x, y, att, seen, 0)
        flops = counter.get_total_flops()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            make().fit(x, y, att, seen, 0)
            times.append(time.perf_counter() - start)
        t = statistics.median(times)
        floor = flops / rate
        epochs = OFFICIAL_EPOCHS[name]
        run_min = 2 * epochs * t / 60
        print(
            f"| {name} | {flops / 1e9:.1f} | {t:.2f} | {floor:.2f} | {t / floor:.1f} | "
            f"{epochs} | {run_min:.0f} min |"
        )


if __name__ == "__main__":
    main()
