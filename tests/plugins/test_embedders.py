"""Embedders: identity, the class-balanced sampler, determinism, and that training separates classes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

import zslbench_plugins.embedders as embedders
from tests.plugins.test_losses import _bt_broadcast
from zslbench.errors import ConfigError, DataError
from zslbench_plugins.embedders import (
    BalancedTripletEmbedder,
    ClassBalancedSampler,
    IdentityEmbedder,
    TripletEmbedder,
    UniformSampler,
    zslbench_embedders,
)
from zslbench_plugins.losses import balanced_triplet_loss

TRAINED = [BalancedTripletEmbedder, TripletEmbedder]


def toy_problem(
    seed: int, n_per: int = 60, n_cls: int = 6, d_signal: int = 4, d_noise: int = 60
) -> tuple[np.ndarray, np.ndarray]:
    """Classes separated in 4 of 64 dimensions, drowned in unit noise in the other 60.

    Class centres are fixed (seed 0); ``seed`` draws the images. A random projection keeps mostly
    noise; a map trained with a triplet loss must find the 4 informative directions.
    """
    centres = np.random.default_rng(0).normal(0.0, 1.0, (n_cls, d_signal))
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_cls), n_per)
    signal = centres[labels] + 0.15 * rng.standard_normal((len(labels), d_signal))
    noise = rng.standard_normal((len(labels), d_noise))
    return np.hstack([signal, noise]).astype(np.float32), labels * 3 + 2  # non-contiguous labels


def ncm_accuracy(
    train: np.ndarray, y_train: np.ndarray, test: np.ndarray, y_test: np.ndarray
) -> float:
    classes = np.unique(y_train)
    means = np.stack([train[y_train == c].mean(0) for c in classes])
    pred = classes[((test[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)]
    return float(np.mean(pred == y_test))


# -- registration and the component contract ----------------------------------------------------


def test_hook_registers_three_embedders_with_distinct_names() -> None:
    classes = zslbench_embedders()
    assert [c.name for c in classes] == ["identity", "bt", "t"]


@pytest.mark.parametrize("cls", TRAINED)
def test_defaults_are_the_documented_ones(cls: type) -> None:
    params = cls().get_params()
    # Paper: Adam lr 0.002, weight decay 0.1, 500 episodes, margin 4.
    assert (params["lr"], params["weight_decay"], params["episodes"], params["margin"]) == (
        0.002,
        0.1,
        500,
        4.0,
    )
    assert params["latent_dim"] == 64 and params["reduction"] == "sum"  # eq. 2 and 3 as written
    assert params.get("n_cb", 8) == 8 and params.get("batch_size", 1024) == 1024


@pytest.mark.parametrize("cls", TRAINED)
def test_clone_keeps_hyperparameters_and_drops_fitted_state(cls: type) -> None:
    features, labels = toy_problem(1, n_per=10)
    model = cls(latent_dim=3, episodes=2, random_state=5).fit(features, labels)
    copy = model.clone()
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "W_")


# -- identity -----------------------------------------------------------------------------------


def test_identity_is_identity() -> None:
    rng = np.random.default_rng(0)
    features = rng.random((7, 5)).astype(np.float32)
    model = IdentityEmbedder().fit(features, np.arange(7) % 2)
    out = model.transform(features)
    assert out.dtype == np.float32
    assert np.array_equal(out, features)
    as64 = model.transform(features.astype(np.float64))
    assert as64.dtype == np.float32 and np.array_equal(as64, features)


def test_identity_refuses_other_widths() -> None:
    model = IdentityEmbedder().fit(np.zeros((3, 4), np.float32), np.array([0, 1, 1]))
    with pytest.raises(DataError, match="4"):
        model.transform(np.zeros((3, 5), np.float32))


# -- the class-balanced sampler ----------------------------------------------------------------


def test_sampler_draws_exactly_n_cb_per_class_without_replacement_when_it_can() -> None:
    labels = np.array([0] * 30 + [1] * 8 + [2] * 3 + [3] * 1)
    rng = np.random.default_rng(0)
    labels = labels[rng.permutation(len(labels))]
    sampler = ClassBalancedSampler(labels, 4, n_cb=8)
    gen = torch.Generator().manual_seed(0)
    counts = np.zeros(len(labels))
    for _ in range(400):
        idx = sampler.sample(gen).numpy()
        assert idx.shape == (4, 8)
        for c in range(4):
            assert (labels[idx[c]] == c).all()  # row c holds class c only
        assert len(set(idx[0])) == 8  # 30 images: 8 distinct
        assert sorted(idx[1]) == sorted(np.flatnonzero(labels == 1))  # exactly 8: all of them
        np.add.at(counts, idx.ravel(), 1)
    # Uniform within a class: each of class 0's 30 images is drawn 400·8/30 ≈ 107 times.
    class0 = counts[labels == 0]
    assert class0.min() > 60 and class0.max() < 160
    # Classes smaller than n_cb are drawn with replacement, each image about equally often.
    class2 = counts[labels == 2]
    assert class2.sum() == 400 * 8 and class2.min() > 800
    assert counts[labels == 3].sum() == 400 * 8


def test_sampler_expected_distinct_matches_simulation() -> None:
    labels = np.repeat(np.arange(5), [13, 13, 20, 4, 8])
    sampler = ClassBalancedSampler(labels, 5, n_cb=8)
    gen = torch.Generator().manual_seed(1)
    distinct = [len(np.unique(sampler.sample(gen).numpy())) for _ in range(3000)]
    assert np.mean(distinct) == pytest.approx(sampler.expected_distinct(), rel=0.01)


def test_uniform_sampler_draws_distinct_indices() -> None:
    gen = torch.Generator().manual_seed(0)
    idx = UniformSampler(50, 20).sample(gen)
    assert len(idx) == 20 and len(torch.unique(idx)) == 20
    assert sorted(UniformSampler(5, 20).sample(gen).tolist()) == [0, 1, 2, 3, 4]


# -- determinism --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", TRAINED)
def test_fixed_seed_gives_bit_identical_weights_and_leaves_global_rngs_alone(cls: type) -> None:
    features, labels = toy_problem(1, n_per=20)
    torch_state = torch.get_rng_state()
    numpy_state = np.random.get_state()[1].copy()
    first = cls(latent_dim=8, episodes=30, random_state=123).fit(features, labels)
    second = cls(latent_dim=8, episodes=30, random_state=123).fit(features, labels)
    other = cls(latent_dim=8, episodes=30, random_state=124).fit(features, labels)
    assert np.array_equal(first.W_, second.W_) and np.array_equal(first.b_, second.b_)
    assert not np.array_equal(first.W_, other.W_)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert np.array_equal(np.random.get_state()[1], numpy_state)


@pytest.mark.parametrize("weight_decay", [0.1, 0.0])
def test_episode_adam_is_torch_adam_to_the_last_bit(weight_decay: float) -> None:
    """The embedders' lean Adam gives the weights of ``torch.optim.Adam(fused=True)``, step for
    step, and stays within rounding of the multi-tensor implementation."""
    gen = torch.Generator().manual_seed(0)
    start = [torch.randn(16, 33, generator=gen), torch.randn(16, generator=gen)]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    theirs = [torch.nn.Parameter(t.clone()) for t in start]
    foreach = [torch.nn.Parameter(t.clone()) for t in start]
    adam = embedders.EpisodeAdam(ours, lr=0.002, weight_decay=weight_decay)
    reference = torch.optim.Adam(theirs, lr=0.002, weight_decay=weight_decay, fused=True)
    other = torch.optim.Adam(foreach, lr=0.002, weight_decay=weight_decay, foreach=True)
    for _ in range(25):
        grads = [torch.randn(t.shape, generator=gen) * 10.0 for t in start]
        adam.zero_grad()
        for p, q, r, g in zip(ours, theirs, foreach, grads, strict=True):
            p.grad, q.grad, r.grad = g.clone(), g.clone(), g.clone()
        adam.step()
        reference.step()
        other.step()
        for p, q, r in zip(ours, theirs, foreach, strict=True):
            assert torch.equal(p, q)
            torch.testing.assert_close(p, r, rtol=1e-6, atol=1e-7)
    assert not torch.equal(ours[0], start[0])


def test_full_pass_and_gather_paths_train_the_same_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mapping every image then picking the batch, or gathering the batch first, is the same
    computation up to float summation order."""
    features, labels = toy_problem(1, n_per=12)
    monkeypatch.setattr(embedders, "FULL_PASS_FRACTION", 0.0)  # always the full pass
    full = BalancedTripletEmbedder(latent_dim=8, episodes=40, random_state=3).fit(features, labels)
    monkeypatch.setattr(embedders, "FULL_PASS_FRACTION", 10.0)  # never
    gather = BalancedTripletEmbedder(latent_dim=8, episodes=40, random_state=3).fit(
        features, labels
    )
    np.testing.assert_allclose(full.W_, gather.W_, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(full.loss_history_, gather.loss_history_, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("path", ["gather", "gather-repeats", "full"])
def test_an_episode_sets_autograds_gradient_of_w_and_b(
    monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """One L_BT episode's hand-computed gradients of Wᵀ and b equal autograd's through a
    different vectorisation of eq. 3 (the whole hinge tensor), in float64, on the same batch:
    for each way of forming the batch (gathered, gathered with an image drawn twice, or mapped
    from every training image)."""
    features, labels = toy_problem(1, n_per=12)
    if path == "gather-repeats":
        keep = (labels != labels[0]) | (np.cumsum(labels == labels[0]) <= 5)
        features, labels = features[keep], labels[keep]  # a class of 5 < n_cb = 8 images
    monkeypatch.setattr(embedders, "FULL_PASS_FRACTION", 0.0 if path == "full" else 10.0)
    model = BalancedTripletEmbedder(latent_dim=5, n_cb=8, episodes=1, random_state=0)
    run = model.trainer(features, labels)
    assert run.state.full == (path == "full")
    assert run.state.sampler.may_repeat == (path == "gather-repeats")
    drawn = []
    sample = run.state.sampler.sample_slots
    monkeypatch.setattr(
        run.state.sampler, "sample_slots", lambda g: drawn.append(sample(g)) or drawn[-1]
    )
    weight = run.weight.detach().double().clone().requires_grad_(True)
    bias = run.bias.detach().double().clone().requires_grad_(True)
    loss = model._episode(run.state, run.weight, run.bias)
    idx = drawn[0].T  # (L, n_cb): class i in row i
    f = torch.as_tensor(features, dtype=torch.float64)[idx.reshape(-1)]
    latent = (f @ weight.T + bias).view(*idx.shape, -1)
    want = _bt_broadcast(latent, 4.0)
    want_w, want_b = torch.autograd.grad(want, (weight, bias))
    assert loss.item() == pytest.approx(want.item(), rel=1e-4)
    # L_BT is translation invariant, so d/db is 0 up to rounding: measure both errors against
    # the size of d/dW.
    scale = float(want_w.norm())
    assert scale > 0
    for got, ref in ((run.weight.grad, want_w), (run.bias.grad, want_b)):
        assert float((got.double() - ref).norm()) < 1e-5 * scale


# -- training separates classes -----------------------------------------------------------------


@pytest.mark.parametrize(
    "cls,kwargs", [(BalancedTripletEmbedder, {}), (TripletEmbedder, {"batch_size": 128})]
)
def test_training_lowers_the_loss_and_separates_classes(cls: type, kwargs: dict) -> None:
    features, labels = toy_problem(1)
    test_features, test_labels = toy_problem(2)
    untrained = cls(latent_dim=8, episodes=0, random_state=0, **kwargs).fit(features, labels)
    trained = cls(latent_dim=8, episodes=300, random_state=0, **kwargs).fit(features, labels)

    before = ncm_accuracy(
        untrained.transform(features), labels, untrained.transform(test_features), test_labels
    )
    after = ncm_accuracy(
        trained.transform(features), labels, trained.transform(test_features), test_labels
    )
    assert before < 0.5  # a random projection mostly keeps the noise
    assert after > 0.85  # chance is 1/6
    assert after - before > 0.4

    # The paper's objective on one fixed class-balanced batch of held-out images drops a lot.
    order = np.argsort(test_labels, kind="stable").reshape(6, -1)[:, :8]

    def lbt(model: BalancedTripletEmbedder) -> float:
        latent = torch.from_numpy(model.transform(test_features[order.ravel()]))
        return balanced_triplet_loss(latent.view(6, 8, -1), 4.0).item()

    assert lbt(trained) < 0.4 * lbt(untrained)
    assert len(trained.loss_history_) == 300
    assert trained.loss_history_[-50:].mean() < 0.5 * trained.loss_history_[:10].mean()


# -- inputs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", TRAINED)
def test_fit_accepts_a_read_only_memmap_and_tiny_classes(cls: type, tmp_path) -> None:
    features, labels = toy_problem(1, n_per=10)
    labels[:2] = 999  # a class of two images: drawn with replacement
    path = tmp_path / "features.npy"
    np.save(path, features)
    mapped = np.load(path, mmap_mode="r")
    model = cls(latent_dim=5, episodes=5, random_state=0).fit(mapped, labels)
    out = model.transform(mapped)
    assert out.dtype == np.float32 and out.shape == (len(features), 5)
    np.testing.assert_allclose(out, features @ model.W_.T + model.b_, rtol=1e-5, atol=1e-5)
    assert 999 in model.classes_
    assert np.array_equal(np.load(path), features)  # untouched


@pytest.mark.parametrize("cls", TRAINED)
def test_user_errors_name_the_value_and_the_fix(cls: type) -> None:
    features, labels = toy_problem(1, n_per=5)
    with pytest.raises(DataError, match="two"):
        cls(episodes=1).fit(features, np.zeros(len(features), dtype=int))
    with pytest.raises(ConfigError, match="latent_dim=0"):
        cls(latent_dim=0).fit(features, labels)
    with pytest.raises(ConfigError, match="lr"):
        cls(lr=-1.0).fit(features, labels)
    with pytest.raises(ConfigError, match="reduction"):
        cls(reduction="max").fit(features, labels)
    with pytest.raises(ConfigError, match="device"):
        cls(device="tpu").fit(features, labels)
    bad = features.copy()
    bad[3, 3] = np.nan
    with pytest.raises(DataError, match="NaN"):
        cls(episodes=1).fit(bad, labels)
    with pytest.raises(DataError, match="labels"):
        cls(episodes=1).fit(features, labels[:-1])
    with pytest.raises(RuntimeError, match="before fit"):
        cls().transform(features)
    fitted = cls(latent_dim=2, episodes=1).fit(features, labels)
    with pytest.raises(DataError, match="columns"):
        fitted.transform(features[:, :10])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without CUDA")
def test_cuda_without_a_gpu_is_a_config_error() -> None:
    features, labels = toy_problem(1, n_per=5)
    with pytest.raises(ConfigError, match="--device cpu"):
        BalancedTripletEmbedder(device="cuda").fit(features, labels)


@pytest.mark.gpu
@pytest.mark.parametrize("cls", TRAINED)
def test_cuda_trains_the_same_map_as_the_cpu(cls: type) -> None:
    features, labels = toy_problem(1, n_per=20)
    cpu = cls(latent_dim=8, episodes=50, random_state=0).fit(features, labels)
    gpu = cls(latent_dim=8, episodes=50, random_state=0, device="cuda").fit(features, labels)
    np.testing.assert_allclose(gpu.W_, cpu.W_, rtol=1e-2, atol=1e-3)


# -- operations per episode (issue 29: at most half of the 182-221 when it was filed) ------------

#: Half the fewest operations an L_BT episode took when issue 29 was filed (182, SUN's shape):
#: each operation is a kernel launch on a GPU and ~10 µs of Python on a CPU.
MAX_EPISODE_OPERATIONS = 91


def _profile_script():
    """``benchmarks/profile_btgp.py``, whose ``Counter`` counts operations as its report does."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "profile_btgp.py"
    spec = importlib.util.spec_from_file_location("zslbench_profile_btgp", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "n_classes,path",
    [(20, "dense, uncounted"), (70, "dense"), (70, "sparse")],
)
def test_an_episode_takes_at_most_half_the_operations_it_took_when_filed(
    monkeypatch: pytest.MonkeyPatch, n_classes: int, path: str
) -> None:
    """A whole L_BT episode (sample, gather, forward, loss and gradient, Adam) on each of the
    loss's three paths: dense without counting the active pairs (L² < SPARSE_MIN_PAIRS, the APY
    and AWA shapes), and with the count, dense or sparse (the CUB and SUN shapes)."""
    import zslbench_plugins.losses as losses

    assert (n_classes**2 >= losses.SPARSE_MIN_PAIRS) == (path != "dense, uncounted")
    if path != "dense, uncounted":
        fraction = 2.0 if path == "sparse" else -1.0
        monkeypatch.setattr(losses, "SPARSE_GRADIENT_FRACTION", fraction)
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(n_classes), 40)  # a gathered batch, as on the benchmarks
    features = rng.standard_normal((len(labels), 32)).astype(np.float32)
    run = BalancedTripletEmbedder(latent_dim=8, episodes=5, random_state=0).trainer(
        features, labels
    )
    assert not run.state.full
    run.step()  # the first episode allocates Adam's state
    counter = _profile_script().Counter()
    with counter:
        run.step()
    count = sum(counter.ops.values())
    assert 40 < count <= MAX_EPISODE_OPERATIONS, count
