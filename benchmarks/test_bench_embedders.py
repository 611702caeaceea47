"""One training episode of the ``bt`` (L_BT) and ``t`` (L_T) embedders, and a whole ``bt`` fit.

Run with ``pytest benchmarks/test_bench_embedders.py --benchmark-only`` (the default options skip
benchmarks). Shapes, with 2048-d features uniform in [0, 1] (what the ``clip`` preprocessor
outputs) and the default hyperparameters (latent_dim 64, n_cb 8, batch_size 1024):

* AWA2: 40 seen classes, 23 527 trainval images, class sizes from 200 to 976 (imbalanced);
  an L_BT batch is 40 x 8 = 320 images;
* SUN: 645 seen classes, 16 trainval images each (10 320); an L_BT batch is 645 x 8 = 5 160
  images, and the L² = 416 025 class pairs make the loss itself a large part of the cost.

An episode is what ``fit`` repeats 500 times: draw a batch, forward, backward, Adam step. The
full-fit benchmarks time ``fit`` itself (500 episodes plus moving the data on the device once).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zslbench_plugins.embedders import BalancedTripletEmbedder, TripletEmbedder

FEATURE_DIM = 2048


def _shape(name: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    if name == "awa2":
        sizes = np.round(np.linspace(200, 976, 40)).astype(int)  # mean 588: 23 527 in all
        sizes[-1] += 23527 - sizes.sum()
    else:
        sizes = np.full(645, 16)
    labels = np.repeat(np.arange(len(sizes)), sizes)[rng.permutation(int(sizes.sum()))]
    features = rng.random((len(labels), FEATURE_DIM), dtype=np.float32)
    return features, labels


@pytest.fixture(scope="module", params=["awa2", "sun"])
def shaped(request) -> tuple[str, np.ndarray, np.ndarray]:
    return (request.param, *_shape(request.param))


def _info(benchmark, name: str, trainer) -> None:
    benchmark.extra_info.update(
        shape=name,
        threads=torch.get_num_threads(),
        full_pass=trainer.state.full,
        batch=trainer.state.sampler.batch_size,
    )


def test_bench_bt_episode(benchmark, shaped) -> None:
    name, features, labels = shaped
    trainer = BalancedTripletEmbedder(random_state=0).trainer(features, labels)
    for _ in range(3):  # warm up: first-touch of the buffers, Adam's state
        trainer.step()
    loss = benchmark.pedantic(trainer.step, rounds=30, iterations=1, warmup_rounds=2)
    _info(benchmark, name, trainer)
    assert torch.isfinite(loss)


def test_bench_t_episode(benchmark, shaped) -> None:
    name, features, labels = shaped
    trainer = TripletEmbedder(random_state=0).trainer(features, labels)
    for _ in range(3):
        trainer.step()
    loss = benchmark.pedantic(trainer.step, rounds=30, iterations=1, warmup_rounds=2)
    _info(benchmark, name, trainer)
    assert torch.isfinite(loss)


def test_bench_bt_full_fit(benchmark, shaped) -> None:
    """The 500-episode fit the protocol runs twice per run (validation split, then trainval)."""
    name, features, labels = shaped
    model = benchmark.pedantic(
        lambda: BalancedTripletEmbedder(random_state=0).fit(features, labels),
        rounds=1,
        iterations=1,
    )
    benchmark.extra_info.update(
        shape=name,
        threads=torch.get_num_threads(),
        final_loss=float(model.loss_history_[-20:].mean()),
    )
    assert model.W_.shape == (64, FEATURE_DIM)
