"""Synthetic semantics-to-prototype regression problems shaped like the xlsa17 datasets.

The regressors' tests and benchmarks need problems that look like what the protocol hands a
regressor, without any dataset on disk:

* **class semantics** like xlsa17's ``att``: non-negative, rows l2-normalised, correlated across
  classes (classes share attributes). We draw six latent class factors, map them linearly to
  attributes, add a little independent noise, clip at zero and normalise. At the five datasets'
  shapes this gives 34-38% zeros and pairwise distances with median 1.04-1.07, minimum 0.13-0.36
  and maximum 1.38-1.41 (the real files: 29-46% zeros, 80% for APY; median 0.91-1.33, minimum
  0.04-0.30, maximum 1.25-1.41);
* **class prototypes** a smooth function of the semantics plus class-specific noise: per output
  a random-feature draw from an RBF-kernel GP whose lengthscale is about the median semantic
  distance, a linear term, a per-output offset (prototypes of non-negative features are not
  centred) and Gaussian noise.

Seen and unseen classes come from the same draw; the unseen prototypes are returned noise-free
(what a perfect regressor would predict) for measuring prediction error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: (seen classes, attribute dims, unseen classes) of the xlsa17 datasets, Split V2.0.
SHAPES = {
    "APY": (20, 64, 12),
    "AWA1": (40, 85, 10),
    "AWA2": (40, 85, 10),
    "CUB": (150, 312, 50),
    "SUN": (645, 102, 72),
}


@dataclass(frozen=True)
class RegressionProblem:
    seen_semantics: np.ndarray  # (c, a)
    seen_prototypes: np.ndarray  # (c, k)
    unseen_semantics: np.ndarray  # (m, a)
    unseen_prototypes: np.ndarray  # (m, k), noise-free


def make_problem(
    n_seen: int,
    n_attributes: int,
    n_unseen: int,
    n_outputs: int,
    *,
    seed: int = 0,
    noise: float = 0.3,
    lengthscale: float = 0.8,
    n_factors: int = 6,
    n_features: int = 256,
) -> RegressionProblem:
    """A problem of the given shape; see the module docstring for how it is drawn.

    ``noise`` is the class-noise standard deviation relative to the smooth part's (~1);
    ``lengthscale`` that of the smooth part, in units of the semantic distances.
    """
    rng = np.random.default_rng(seed)
    c = n_seen + n_unseen
    factors = rng.standard_normal((c, n_factors))
    mixing = rng.standard_normal((n_factors, n_attributes)) / np.sqrt(n_factors)
    att = np.maximum(factors @ mixing + 0.1 * rng.standard_normal((c, n_attributes)) + 0.3, 0.0)
    att /= np.maximum(np.linalg.norm(att, axis=1, keepdims=True), 1e-12)
    omega = rng.standard_normal((n_attributes, n_features)) / lengthscale
    phase = rng.uniform(0.0, 2.0 * np.pi, n_features)
    weights = rng.standard_normal((n_features, n_outputs)) * np.sqrt(2.0 / n_features)
    smooth = np.cos(att @ omega + phase) @ weights
    linear = att @ rng.standard_normal((n_attributes, n_outputs)) * 0.5
    offset = rng.standard_normal(n_outputs) * 0.5
    clean = smooth + linear + offset
    protos = clean + noise * rng.standard_normal((c, n_outputs))
    return RegressionProblem(att[:n_seen], protos[:n_seen], att[n_seen:], clean[n_seen:])


def make_shaped(dataset: str, n_outputs: int, **kwargs) -> RegressionProblem:
    """``make_problem`` at the shape of ``dataset`` (a key of ``SHAPES``)."""
    n_seen, n_att, n_unseen = SHAPES[dataset]
    return make_problem(n_seen, n_att, n_unseen, n_outputs, **kwargs)
