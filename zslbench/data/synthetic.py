"""Embedded synthetic datasets: ``toy`` and full-size stand-ins ``synth-awa1 ... synth-sun``.

They exist so that the whole harness (and the speed targets) can be exercised without the
ResNet-101 features of xlsa17, which must be downloaded. They copy each benchmark's *shape and
imbalance* from the paper's Table 1 and the real Split V2.0 counts: seen/unseen classes, attribute
dimension, 2048-d features, total images, min/max images per class, trainval/test-seen/test-unseen
sizes, and for APY the unseen class frequencies of the paper's Table 4 (one class, "person", holds a
third of all images). Their *numbers are not* the benchmarks': every record and leaderboard names
them ``synth-*`` and keeps them apart from real results.

Generative model (why it is informative but not trivial):

* each class has r latent "concepts" z_c; its attribute vector is a noisy non-negative, l2-normalised
  read-out of z_c (like xlsa17's continuous attributes);
* the class mean in feature space is a smooth non-linear function of the attributes plus a small
  class-specific part that attributes cannot predict, so zero-shot transfer works but is imperfect;
* image features add a strong low-rank "nuisance" component shared by all classes (a learned
  embedding can remove it), within-class spread along the class-separating directions (nothing can
  remove it, so accuracy stays well below 100%) and isotropic noise, then a ReLU, like pooled CNN
  activations (non-negative, a few values above the clip of 7).

A method that regresses prototypes well and suppresses the nuisance subspace (a learned embedding)
beats one that does not, and every reasonable method beats chance by a wide margin.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from zslbench.data.dataset import ZSLData

GENERATOR_VERSION = "2"
FEATURE_DIM = 2048

#: BLAS threads used while generating. The features come out of matrix products, and OpenBLAS
#: rounds a product differently with one thread than with two (it splits the work differently):
#: left to the environment, ``OMP_NUM_THREADS=1 zslbench run ... --dataset synth-apy`` (a one-CPU
#: SLURM job, say) generated other last bits than the default, so the same dataset got another
#: fingerprint and none of the committed board's records matched it. (Ray workers are not
#: affected either way: the driver generates the data and shares it.) A fixed count gives the
#: same bytes on any core count, a single core included. Why 2 and not 1: generator v2's committed
#: records were made with 2 threads, and 2 reproduces them; a different OpenBLAS kernel (another
#: CPU family) may still round differently, and ``features_hash`` in every record tells.
GENERATOR_BLAS_THREADS = 2


@dataclass(frozen=True)
class SynthShape:
    """Shape and imbalance of one benchmark (paper Table 1, real Split V2.0 counts)."""

    name: str
    n_seen: int
    n_unseen: int
    att_dim: int
    trainval: int
    test_seen: int
    test_unseen: int
    min_per_class: int
    max_per_class: int
    #: number of the seen classes that form the official validation classes (xlsa17 train/val split)
    n_val_classes: int
    feature_dim: int = FEATURE_DIM
    #: fixed unseen-class frequencies (fractions of the unseen images), when the paper gives them
    unseen_freq: tuple[float, ...] | None = None
    #: seed of the generator; fixed per dataset so the data is the same on every machine
    data_seed: int = 0
    #: scale of the shared low-rank nuisance and of the isotropic noise in feature space, set per
    #: dataset so that a raw-feature baseline lands at 20-50% ZSL accuracy and an oracle that removes
    #: the nuisance at 40-70%, near the paper's ablation range (more classes need less noise)
    nuisance: float = 2.2
    noise: float = 0.55
    #: scale of the part of each class mean that the attributes cannot predict
    class_noise: float = 0.25
    #: within-class spread along the same directions that separate classes; no projection can
    #: remove it, so it bounds the accuracy of every method (set per dataset, see ``SHAPES``)
    hidden_noise: float = 1.2

    @property
    def total(self) -> int:
        return self.trainval + self.test_seen + self.test_unseen


# APY's unseen classes and their frequencies, from the paper's Table 4.
APY_UNSEEN_NAMES = ("cow", "horse", "motorbike", "person", "pottedplant", "sheep", "train",
                    "tvmonitor", "donkey", "goat", "jetski", "statue")
APY_UNSEEN_FREQ = (2.48, 3.81, 3.75, 63.99, 5.50, 2.95, 2.22, 3.77, 1.75, 2.06, 5.04, 2.61)

SHAPES: dict[str, SynthShape] = {
    s.name: s
    for s in [
        SynthShape("synth-awa1", 40, 10, 85, 19832, 4958, 5685, 92, 1168, 13, data_seed=101),
        SynthShape("synth-awa2", 40, 10, 85, 23527, 5882, 7913, 100, 1645, 13, data_seed=102),
        SynthShape("synth-apy", 20, 12, 64, 5932, 1483, 7924, 51, 5071, 5,
                   unseen_freq=APY_UNSEEN_FREQ, data_seed=103),
        SynthShape("synth-cub", 150, 50, 312, 7057, 1764, 2967, 41, 60, 50, data_seed=104,
                   nuisance=1.5, noise=0.45, hidden_noise=1.0),
        SynthShape("synth-sun", 645, 72, 102, 10320, 2580, 1440, 20, 20, 65, data_seed=105,
                   nuisance=1.2, noise=0.35, hidden_noise=0.8),
        # Small enough to run every method end to end in seconds.
        SynthShape("toy", 12, 6, 24, 960, 240, 480, 40, 160, 4, feature_dim=256, data_seed=7),
    ]
}


def _counts(rng: np.random.Generator, n: int, total: int, lo: int, hi: int,
            force_lo: bool, force_hi: bool) -> np.ndarray:
    """Integer class sizes in [lo, hi] summing to ``total``, heavy-tailed when lo << hi."""
    if not lo * n <= total <= hi * n:
        raise ValueError(f"cannot split {total} images over {n} classes within [{lo}, {hi}]")
    w = rng.lognormal(0.0, 0.8 if hi > 2 * lo else 0.05, size=n)
    fixed = np.zeros(n, dtype=bool)
    counts = np.zeros(n)
    if force_hi and n > 1:
        counts[0], fixed[0] = hi, True
    if force_lo and n > 2:
        counts[1], fixed[1] = lo, True
    free = ~fixed
    for _ in range(200):  # scale the free classes until the clipped sizes hit the total
        remaining = total - counts[fixed].sum()
        counts[free] = np.clip(w[free] / w[free].sum() * remaining, lo, hi)
        if abs(counts.sum() - total) < 0.5:
            break
        w[free] = counts[free]
    out = np.floor(counts).astype(np.int64)
    order = np.argsort(-(counts - out))  # hand out the rounding remainder
    i = 0
    while out.sum() < total:
        j = order[i % n]
        if free[j] and out[j] < hi:
            out[j] += 1
        i += 1
    while out.sum() > total:
        j = order[i % n]
        if free[j] and out[j] > lo:
            out[j] -= 1
        i += 1
    return out


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


def generate(shape: SynthShape) -> ZSLData:
    """The dataset ``shape`` describes, the same bytes for the same shape whatever the thread
    settings (see :data:`GENERATOR_BLAS_THREADS`)."""
    with threadpool_limits(limits=GENERATOR_BLAS_THREADS, user_api="blas"):
        return _generate(shape)


def _generate(shape: SynthShape) -> ZSLData:
    """Generate one synthetic dataset deterministically from ``shape.data_seed``."""
    rng = np.random.default_rng(shape.data_seed)
    n_cls = shape.n_seen + shape.n_unseen
    d = shape.feature_dim

    # Images per class. Unseen classes come last (ids n_seen..n_cls-1).
    seen_total = shape.trainval + shape.test_seen
    # Put the extreme class sizes where the benchmark has them: APY's largest class is unseen.
    big_unseen = shape.unseen_freq is not None
    seen_counts = _counts(rng, shape.n_seen, seen_total, shape.min_per_class, shape.max_per_class,
                          force_lo=True, force_hi=not big_unseen)
    if shape.unseen_freq is not None:
        freq = np.asarray(shape.unseen_freq, dtype=float)
        unseen_counts = np.rint(freq / 100.0 * shape.test_unseen).astype(np.int64)
        # The table's percentages are rounded; absorb the difference in the most common small class.
        order = np.argsort(-unseen_counts)
        unseen_counts[order[1]] += shape.test_unseen - unseen_counts.sum()
    else:
        unseen_counts = _counts(rng, shape.n_unseen, shape.test_unseen, shape.min_per_class,
                                shape.max_per_class, force_lo=False, force_hi=False)
    counts = np.concatenate([seen_counts, unseen_counts])

    # Attributes: non-negative, l2-normalised read-outs of r latent concepts.
    r = 12
    z = rng.standard_normal((n_cls, r))
    read = rng.standard_normal((r, shape.att_dim)) / np.sqrt(r)
    att = np.maximum(z @ read + 0.3 + 0.15 * rng.standard_normal((n_cls, shape.att_dim)), 0.0)
    att = _unit_rows(att + 1e-3).astype(np.float32)

    # Class means: a smooth non-linear function of the attributes + an unpredictable part.
    hidden = 64
    a_in = att * np.sqrt(shape.att_dim / 4.0)
    w1 = rng.standard_normal((shape.att_dim, hidden)) / np.sqrt(shape.att_dim)
    h = np.tanh(a_in @ w1 * 1.5)
    w2 = rng.standard_normal((hidden, d)) / np.sqrt(hidden)
    means = 0.45 + 0.9 * (h @ w2) + shape.class_noise * rng.standard_normal((n_cls, d))

    # Images: class mean + strong shared low-rank nuisance + isotropic noise, then ReLU.
    labels = np.repeat(np.arange(n_cls), counts)
    n = labels.size
    rank = 24
    basis = rng.standard_normal((rank, d)).astype(np.float32) / np.sqrt(rank)
    feats = rng.standard_normal((n, rank), dtype=np.float32) @ (basis * np.float32(shape.nuisance))
    feats += rng.standard_normal((n, d), dtype=np.float32) * np.float32(shape.noise)
    feats += means.astype(np.float32)[labels]
    feats += (rng.standard_normal((n, hidden), dtype=np.float32) * np.float32(shape.hidden_noise)) @ (
        0.9 * w2).astype(np.float32)
    np.maximum(feats, 0.0, out=feats)
    # A few strong activations above the clip value, as in pooled ResNet features.
    spikes = rng.random((n, d), dtype=np.float32) < 2e-4
    feats[spikes] += rng.exponential(6.0, size=int(spikes.sum())).astype(np.float32)

    # Shuffle image order so indices carry no class information.
    perm = rng.permutation(n)
    feats = feats[perm]
    labels = labels[perm]

    # Split: per seen class, ~test_seen/seen_total of its images go to test_seen; exact totals.
    seen_mask = labels < shape.n_seen
    seen_pos = np.flatnonzero(seen_mask)
    frac = shape.test_seen / seen_total
    quota = np.floor(seen_counts * frac).astype(np.int64)
    quota[np.argsort(-(seen_counts * frac - quota))[: shape.test_seen - quota.sum()]] += 1
    test_seen_parts = []
    for c in range(shape.n_seen):
        members = seen_pos[labels[seen_pos] == c]
        test_seen_parts.append(rng.choice(members, size=quota[c], replace=False))
    test_seen_idx = np.sort(np.concatenate(test_seen_parts))
    trainval_idx = np.setdiff1d(seen_pos, test_seen_idx)
    test_unseen_idx = np.flatnonzero(~seen_mask)
    val_classes = np.sort(rng.choice(shape.n_seen, size=shape.n_val_classes, replace=False))

    names = [f"seen_{c:03d}" for c in range(shape.n_seen)]
    if shape.name == "synth-apy":
        names += [f"{u}(synth)" for u in APY_UNSEEN_NAMES]
    else:
        names += [f"unseen_{c:03d}" for c in range(shape.n_unseen)]

    params = asdict(shape)
    data_fp = hashlib.sha256(
        json.dumps({"generator": GENERATOR_VERSION, "shape": params}, sort_keys=True).encode()
    ).hexdigest()
    feats.setflags(write=False)
    return ZSLData(
        name=shape.name,
        features=feats,
        labels=labels.astype(np.int64),
        attributes=att,
        trainval_idx=trainval_idx,
        test_seen_idx=test_seen_idx,
        test_unseen_idx=test_unseen_idx,
        val_classes=val_classes,
        source={"generator": "zslbench.data.synthetic", "generator_version": GENERATOR_VERSION,
                "shape": params, "data_fingerprint": data_fp},
        class_names=names,
    )
