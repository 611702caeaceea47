"""The generator of the embedded synthetic datasets (``toy`` and the full-size stand-ins
``synth-awa1 ... synth-sun``, whose shapes the ``synthetic`` plugin declares).

They exist so that the whole harness (and the speed targets) can be exercised without the
ResNet-101 features of xlsa17, which must be downloaded. They copy each benchmark's *shape and
imbalance* from the paper's Table 1 and the real Split V2.0 counts: seen/unseen classes, attribute
dimension, 2048-d features, total images, min/max images per class, trainval/test-seen/test-unseen
sizes, and for APY the unseen class names and frequencies of the paper's Table 4 (one class, "person", holds a
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

**The same bytes on every machine** (generator version 3). A dataset is identified by a hash of its
bytes, so a stand-in that came out different on another CPU would split one method's results into
rows that cannot be compared. Version 2 generated with float samplers and float matrix products:
the last bits depended on the BLAS kernel (OpenBLAS picks one per CPU family) and its thread
count, and pinning the threads could not fix the kernel. Version 3 is built so that rounding
order cannot matter:

* randomness comes only from the *integer* stream of ``numpy.random.Generator`` (``integers``,
  ``permutation``); the float samplers call libm and NumPy's SIMD transcendental loops, which may
  differ in the last bit between CPUs. Gaussians are approximated by centred binomials (the bit
  count of random 16-bit words, :func:`_gauss`);
* every matrix product multiplies integer-valued float64 matrices whose partial sums stay far below
  2**53, so any BLAS, in any order, with or without FMA, returns the exact integer;
* everything else is element-wise IEEE ``+ - * /`` and ``sqrt`` (correctly rounded everywhere),
  ``rint``, ``maximum`` and clipping; ``tanh`` is replaced by a rational function (:func:`_soft_clip`);
  no float reduction (``np.sum`` of floats) whose order NumPy may change: sums run over integers;
* features end on a grid of 2**-8 (an exact scaling), so they are float32 values with few
  significant bits and the cast to float32 is exact.

``tests/data/test_synthetic.py`` pins the hash of every stand-in under one and two BLAS threads and
under other OpenBLAS kernels.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass

import numpy as np

from zslbench.data.dataset import ZSLData

GENERATOR_VERSION = "3"
FEATURE_DIM = 2048
#: Images generated at a time: bounds the memory of the float64 temporaries. Part of the
#: definition of the data (the random draws are made block by block), so never change it without
#: a new :data:`GENERATOR_VERSION`.
BLOCK_ROWS = 2048
#: Features are multiples of 2**-FEATURE_GRID_BITS (exact in float32 below 2**(24 - 8)).
FEATURE_GRID_BITS = 8
#: One feature value in about this many gets a strong activation added (a "spike").
SPIKE_EVERY = 5000


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
    #: remove it, so it bounds the accuracy of every method (set per dataset by its plugin)
    hidden_noise: float = 1.2
    #: names of the unseen classes, when the benchmark's are given (``<name>(synth)`` each);
    #: else ``unseen_000``, ... Names are labels, not data: they are left out of the hash of
    #: the generator's parameters (:func:`generate`), which is the same with or without them.
    unseen_names: tuple[str, ...] | None = None

    @property
    def total(self) -> int:
        return self.trainval + self.test_seen + self.test_unseen


def _popcount16() -> np.ndarray:
    """Number of set bits of every 16-bit word, as float64 (a lookup table built with integer
    operations; float64 holds these small integers, and their sums, exactly)."""
    byte = np.zeros(256, dtype=np.int64)
    for i in range(1, 256):
        byte[i] = byte[i >> 1] + (i & 1)
    return (byte[:, None] + byte[None, :]).ravel().astype(np.float64)  # index hi * 256 + lo


_POPCOUNT16 = _popcount16()


def _gauss(rng: np.random.Generator, shape: tuple[int, ...], bits: int = 64) -> np.ndarray:
    """Integer-valued float64 draws of a centred binomial: the number of set bits among ``bits``
    random bits, minus ``bits / 2``. Mean 0, variance ``bits / 4`` (std 4 for 64 bits, 2 for 16),
    within ``+-bits / 2``: a Gaussian stand-in drawn from the integer stream only."""
    words = rng.integers(0, 2**16, size=(bits // 16, *shape), dtype=np.uint16)
    out = _POPCOUNT16[words[0]]
    for w in words[1:]:
        out += _POPCOUNT16[w]  # sums of small integers: exact
    out -= bits // 2
    return out


def _soft_clip(x: np.ndarray) -> np.ndarray:
    """tanh's (3, 2) Pade approximant, clipped to [-1, 1]: smooth, odd, saturating, and made of
    correctly rounded IEEE operations only (NumPy's SIMD ``tanh`` may differ by an ulp between
    CPUs). Within 0.02 of tanh everywhere."""
    x2 = x * x
    return np.clip(x * (27.0 + x2) / (27.0 + 9.0 * x2), -1.0, 1.0)


def _counts(
    rng: np.random.Generator, n: int, total: int, lo: int, hi: int, force_lo: bool, force_hi: bool
) -> np.ndarray:
    """Integer class sizes in [lo, hi] summing to ``total``, heavy-tailed when lo << hi.

    Sizes are proportional to integer weights (the cube of a uniform integer: a long right tail,
    the largest 64 times the smallest),
    scaled until the clipped sizes add up to ``total`` (a bisection on an integer scale: exact
    integer arithmetic throughout); the rounding remainder goes to the largest fractional parts.
    """
    if not lo * n <= total <= hi * n:
        raise ValueError(f"cannot split {total} images over {n} classes within [{lo}, {hi}]")
    if hi > 2 * lo:
        w = rng.integers(100, 401, size=n).astype(np.int64) ** 3
    else:  # a balanced benchmark: sizes within a few percent of each other
        w = rng.integers(95, 106, size=n).astype(np.int64)
    fixed = np.zeros(n, dtype=bool)
    base = np.zeros(n, dtype=np.int64)
    if force_hi and n > 1:
        base[0], fixed[0] = hi, True
    if force_lo and n > 2:
        base[1], fixed[1] = lo, True
    free = ~fixed
    shift = 32  # sizes are floor(w * scale / 2**shift), clipped to [lo, hi]

    def sizes(scale: int) -> np.ndarray:
        out = base.copy()
        out[free] = np.clip((w[free] * scale) >> shift, lo, hi)
        return out

    low, high = 0, 2**36  # w < 2**26, so w * scale < 2**62 (no int64 overflow); w >= 2**19
    # so sizes(high) >= 2**23: all hi
    while high - low > 1:  # the largest scale whose sizes do not exceed the total
        mid = (low + high) // 2
        if int(sizes(mid).sum()) <= total:
            low = mid
        else:
            high = mid
    out = sizes(low)
    remainder = (w * low) & ((1 << shift) - 1)
    order = np.argsort(-remainder, kind="stable")
    i = 0
    while out.sum() < total:
        j = order[i % n]
        if free[j] and out[j] < hi:
            out[j] += 1
        i += 1
    return out


def generate(shape: SynthShape) -> ZSLData:
    """Generate one synthetic dataset from ``shape`` (its ``data_seed`` included): the same bytes
    on every machine (see the module docstring)."""
    rng = np.random.default_rng(shape.data_seed)
    n_cls = shape.n_seen + shape.n_unseen
    d = shape.feature_dim

    # Images per class. Unseen classes come last (ids n_seen..n_cls-1).
    seen_total = shape.trainval + shape.test_seen
    # Put the extreme class sizes where the benchmark has them: APY's largest class is unseen.
    big_unseen = shape.unseen_freq is not None
    seen_counts = _counts(
        rng,
        shape.n_seen,
        seen_total,
        shape.min_per_class,
        shape.max_per_class,
        force_lo=True,
        force_hi=not big_unseen,
    )
    if shape.unseen_freq is not None:
        # The table's percentages in hundredths of a percent, then rounded shares: integers.
        basis_points = np.array([round(f * 100) for f in shape.unseen_freq], dtype=np.int64)
        unseen_counts = (basis_points * shape.test_unseen + 5000) // 10000
        # The table's percentages are rounded; absorb the difference in the most common small class.
        order = np.argsort(-unseen_counts, kind="stable")
        unseen_counts[order[1]] += shape.test_unseen - unseen_counts.sum()
    else:
        unseen_counts = _counts(
            rng,
            shape.n_unseen,
            shape.test_unseen,
            shape.min_per_class,
            shape.max_per_class,
            force_lo=False,
            force_hi=False,
        )
    counts = np.concatenate([seen_counts, unseen_counts])

    # Attributes: non-negative, l2-normalised read-outs of r latent concepts. ``read`` is
    # z @ r / (16 sqrt(r)) (std 1), as integers on a grid of 2**-10 (1 is the 1e-3 floor that
    # keeps every class vector non-zero), so that the products below are exact.
    r = 12
    z = _gauss(rng, (n_cls, r))
    read = (z @ _gauss(rng, (r, shape.att_dim))) / (16.0 * math.sqrt(r))
    raw = read + 0.3 + 0.15 * _gauss(rng, (n_cls, shape.att_dim)) / 4.0
    att_int = np.rint(np.maximum(raw, 0.0) * 1024.0) + 1.0
    norm = np.sqrt((att_int.astype(np.int64) ** 2).sum(axis=1).astype(np.float64))[:, None]
    att = (att_int / norm).astype(np.float32)

    # Class means: a smooth non-linear function of the attributes + an unpredictable part.
    # pre = 0.75 att . w1 with w1 ~ N(0, 1) (std 0.75, as v2's 1.5 sqrt(a / 4) att . w1 / sqrt(a));
    # the hidden layer is quantised to a grid of 1/64 so that its product with w2 is exact.
    hidden = 64
    pre = (att_int @ _gauss(rng, (shape.att_dim, hidden))) * (0.75 / 4.0) / norm
    h_int = np.rint(_soft_clip(pre) * 64.0)
    w2 = _gauss(rng, (hidden, d))  # std 4: w2 / 32 has v2's std 1 / sqrt(hidden)
    # h @ (w2 / 32) with h = h_int / 64 is (h_int @ w2) / 2048.
    means = (
        0.45 + 0.9 * ((h_int @ w2) / 2048.0) + shape.class_noise * (_gauss(rng, (n_cls, d)) / 4.0)
    )

    # Images in a shuffled order (indices carry no class information), generated block by block:
    # class mean + strong shared low-rank nuisance + isotropic noise, then ReLU.
    labels = rng.permutation(np.repeat(np.arange(n_cls), counts))
    n = labels.size
    rank = 24
    basis = _gauss(rng, (rank, d))
    c_nuisance = shape.nuisance / (16.0 * math.sqrt(rank))  # coefficient (std 4) @ basis (std 4)
    c_hidden = 0.9 * shape.hidden_noise / 128.0  # N(0,1) @ 0.9 w2 = (std 4) @ (w2 / 32) / 4
    c_noise = shape.noise / 2.0  # a 16-bit binomial has std 2
    grid = float(2**FEATURE_GRID_BITS)
    feats = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, BLOCK_ROWS):
        rows = min(BLOCK_ROWS, n - start)
        x = means[labels[start : start + rows]]
        x += c_nuisance * (_gauss(rng, (rows, rank)) @ basis)
        x += c_hidden * (_gauss(rng, (rows, hidden)) @ w2)
        x += c_noise * _gauss(rng, (rows, d), bits=16)
        np.maximum(x, 0.0, out=x)
        # A few strong activations above the clip value, as in pooled ResNet features: uniform
        # on the 1/8 grid in (0, 12] (mean 6, as v2's exponential).
        spikes = rng.integers(0, rows * d, size=rows * d // SPIKE_EVERY)
        np.add.at(x.reshape(-1), spikes, rng.integers(1, 97, size=spikes.size) / 8.0)
        feats[start : start + rows] = np.rint(x * grid) / grid  # exact in float32

    # Split: per seen class, its share (test_seen / seen_total) of images go to test_seen; the
    # totals are exact (integer quotas, the remainder to the largest fractional parts).
    seen_mask = labels < shape.n_seen
    seen_pos = np.flatnonzero(seen_mask)
    quota = seen_counts * shape.test_seen // seen_total
    remainder = seen_counts * shape.test_seen % seen_total
    quota[np.argsort(-remainder, kind="stable")[: shape.test_seen - quota.sum()]] += 1
    test_seen_parts = []
    for c in range(shape.n_seen):
        members = seen_pos[labels[seen_pos] == c]
        test_seen_parts.append(rng.permutation(members)[: quota[c]])
    test_seen_idx = np.sort(np.concatenate(test_seen_parts))
    trainval_idx = np.setdiff1d(seen_pos, test_seen_idx)
    test_unseen_idx = np.flatnonzero(~seen_mask)
    val_classes = np.sort(rng.permutation(shape.n_seen)[: shape.n_val_classes])

    names = [f"seen_{c:03d}" for c in range(shape.n_seen)]
    if shape.unseen_names is not None:
        names += [f"{u}(synth)" for u in shape.unseen_names]
    else:
        names += [f"unseen_{c:03d}" for c in range(shape.n_unseen)]

    params = asdict(shape)
    del params["unseen_names"]
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
        source={
            "generator": "zslbench.data.synthetic",
            "generator_version": GENERATOR_VERSION,
            "shape": params,
            "data_fingerprint": data_fp,
        },
        class_names=names,
    )
