"""An L_BT episode's time against the floor that its matrix products set, for the five shapes.

bt-gp's ``train`` is dominated by the embedder: 2 fits (validation, then final) x 500 episodes.
Each episode of ``EpisodeTrainer.step`` (sample, gather, forward, L_BT, backward, Adam) has three
matrix products that no reordering removes, for a batch of B = L x n_cb images (L seen classes)
of d = 2048 features mapped to k = 64 dimensions:

* the forward product F·Wᵀ, (B x d) x (d x k);
* the gradient product Gᵀ·F, (k x B) x (B x d), in W's (k, d) layout (Adam is not
  rotation-invariant, so the features cannot be projected to fewer dimensions without changing
  W);
* L_BT's distance product, (B x (k+2)) x ((k+2) x L): every sample against every class mean
  (the loss takes, for each class mean, the nearest sample of every other class).

Two passes over memory are as unavoidable as the products, and the script times them too, for a
second, fuller floor: the gather of the batch's B rows of F into a buffer (the products then read
it; without it they would need a gather-GEMM that eager PyTorch does not have) and Adam's update of
W (read W, its gradient and two moments, write three; ``torch._fused_adam_`` on tensors of W's
shape). A ratio against the products alone says how much of an episode is BLAS; against the
fuller floor, how much is left for the loss's small operations, the sampler and Python.

The batch's draw is timed too (``ClassBalancedSampler.sample_slots`` on a generator of its own,
so the trainer's stream is untouched). It is no product, but it is fixed: its random keys and its
``topk`` order decide every batch, so a faster draw of other numbers would change every trained
record. The last ratio, episode ÷ (products + gather + Adam + draw), is what is left for the
loss's small operations and Python alone.

This script trains the ``bt`` embedder (the paper's defaults) on each stand-in's trainval images
(``synth-apy`` ... ``synth-sun``: the real datasets' sizes and class counts, ``clip``-preprocessed
as bt-gp does) for a whole fit, and after every episode times the three products alone at that
episode's shapes, so that both see the same machine load (back to back, one process). The floor
of a fit is the sum of the products' times; the ratio is (episode time) / (floor). Early episodes
take the dense L_BT backward and later ones the sparse one, so a whole fit is timed, not one
episode. On a shared machine, run it twice and compare; report ``uptime`` with it.

Usage: ``python benchmarks/episode_floor.py [--shapes apy,awa1,awa2,cub,sun] [--episodes 500]``
"""

from __future__ import annotations

import argparse
import time

from zslbench import threads

threads.apply_defaults()  # as the CLI does, before torch loads

import numpy as np  # noqa: E402
import torch  # noqa: E402

from zslbench.provenance import cpu_name  # noqa: E402
from zslbench.registry import load_registry  # noqa: E402
from zslbench_plugins.embedders import BalancedTripletEmbedder  # noqa: E402
from zslbench_plugins.preprocessors import ClipScale  # noqa: E402

SHAPES = ("apy", "awa1", "awa2", "cub", "sun")
FITS = 2


def trainval(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The stand-in's trainval features (clip-preprocessed, as bt-gp's preprocessor) and labels."""
    data = load_registry().get("dataset", f"synth-{name}").obj.load(None)
    features = data.features[data.trainval_idx]
    return ClipScale().fit(features).transform(features), data.labels[data.trainval_idx]


def measure(name: str, episodes: int) -> dict[str, float]:
    features, labels = trainval(name)
    model = BalancedTripletEmbedder(random_state=0, episodes=episodes)
    trainer = model.trainer(features, labels)
    n_cls, n_cb = len(trainer.classes), int(model.n_cb)
    rows, k = n_cls * n_cb, int(model.latent_dim)
    f = trainer.state.features
    gen = torch.Generator().manual_seed(1)
    batch = f[torch.randperm(len(f), generator=gen)[:rows] % len(f)].contiguous()
    grad = torch.randn(rows, k, generator=gen)
    aug_s = torch.randn(rows, k + 2, generator=gen)
    aug_m_t = torch.randn(k + 2, n_cls, generator=gen)
    bias = trainer.bias.detach()
    times = {"episode": 0.0, "forward": 0.0, "gradient": 0.0, "distances": 0.0}
    times |= {"gather": 0.0, "adam": 0.0, "draw": 0.0}
    sampler, draw_gen = trainer.state.sampler, torch.Generator().manual_seed(2)
    picks = torch.randperm(len(f), generator=gen)[:rows] % len(f)
    gathered = torch.empty_like(batch)
    w_like = [torch.randn(k, f.shape[1], generator=gen)]
    adam_state = [[torch.randn_like(w_like[0])] for _ in range(2)] + [[torch.rand(k, f.shape[1])]]
    adam_step = [torch.zeros(())]

    def adam() -> None:
        adam_step[0].add_(1)
        torch._fused_adam_(
            w_like, adam_state[0], adam_state[1], adam_state[2], [], adam_step,
            amsgrad=False, lr=1e-4, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8,
            maximize=False,
        )  # fmt: skip

    def timed(key: str, fn) -> None:
        start = time.perf_counter()
        fn()
        times[key] += time.perf_counter() - start

    for _ in range(3):  # warm-up of the products (the episodes warm up themselves)
        torch.addmm(bias, batch, trainer.weight.detach().T)
    for _ in range(episodes):
        timed("episode", trainer.step)
        w = trainer.weight.detach()
        timed("forward", lambda w=w: torch.addmm(bias, batch, w.T))
        timed("gradient", lambda: grad.T @ batch)
        timed("distances", lambda: aug_s @ aug_m_t)
        timed("gather", lambda: torch.index_select(f, 0, picks, out=gathered))
        timed("adam", adam)
        timed("draw", lambda: sampler.sample_slots(draw_gen))
    gflop = {
        "forward": 2.0 * rows * f.shape[1] * k / 1e9,
        "gradient": 2.0 * rows * f.shape[1] * k / 1e9,
        "distances": 2.0 * rows * (k + 2) * n_cls / 1e9,
    }
    floor = times["forward"] + times["gradient"] + times["distances"]
    full = floor + times["gather"] + times["adam"]
    with_draw = full + times["draw"]
    return {
        "classes": n_cls,
        "rows": rows,
        "episode_ms": 1e3 * times["episode"] / episodes,
        "floor_ms": 1e3 * floor / episodes,
        "ratio": times["episode"] / floor,
        "full_ms": 1e3 * full / episodes,
        "full_ratio": times["episode"] / full,
        "draw_ms": 1e3 * times["draw"] / episodes,
        "draw_ratio": times["episode"] / with_draw,
        "gflop": sum(gflop.values()),
        "gflops": sum(gflop.values()) * episodes / floor,
        "run_s": FITS * times["episode"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--episodes", type=int, default=500)
    args = parser.parse_args()
    square = torch.rand(2048, 2048)
    for _ in range(2):
        square @ square
    start = time.perf_counter()
    for _ in range(5):
        square @ square
    square_rate = 5 * 2 * 2048**3 / (time.perf_counter() - start) / 1e9
    print(
        f"# L_BT episode vs its matrix-product floor, {cpu_name()}, "
        f"{torch.get_num_threads()} thread(s), {args.episodes} episodes per shape\n"
    )
    print(
        "| shape | classes | batch rows | ms per episode | floor ms | episode / floor "
        "| floor GFLOP | floor GFLOP/s | + gather + Adam ms | episode / that "
        "| draw ms | episode / (that + draw) | s per run (2 fits) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.shapes.split(","):
        r = measure(name, args.episodes)
        print(
            f"| {name} | {r['classes']} | {r['rows']} | {r['episode_ms']:.2f} | "
            f"{r['floor_ms']:.2f} | {r['ratio']:.2f} | {r['gflop']:.3f} | {r['gflops']:.0f} | "
            f"{r['full_ms']:.2f} | {r['full_ratio']:.2f} | {r['draw_ms']:.2f} | "
            f"{r['draw_ratio']:.2f} | {r['run_s']:.1f} |",
            flush=True,
        )
    print(f"\nThis CPU's square 2048³ product: {square_rate:.0f} GFLOP/s.")


if __name__ == "__main__":
    main()
