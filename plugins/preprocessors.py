"""Preprocessors: the paper's feature clipping ("Implementation Detail"), and per-dimension min-max
scaling.

ResNet-101 features are non-negative and unbounded; "a few feature vectors that have high values
may hinder the network learning from the triplet loss", so the paper clips them at 7 and scales
them to [0, 1]. Its hyperparameter study finds results stable for clip values in [4, 9].

``minmax`` is scikit-learn's ``MinMaxScaler`` fitted on the training images, which the official
codes of generative GZSL methods apply to the ResNet features (CADA-VAE's
``model/data_loader.py``: ``scaler.fit_transform(feature[trainval_loc])``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from zslbench import hyperparams as hp
from zslbench.components import Preprocessor
from zslbench.errors import DataError
from zslbench.hookspecs import hookimpl

#: Rows transformed per block: bounds the float32 temporaries to ~64 MB at 2048-d.
_BLOCK_ROWS = 8192


class ClipScale(Preprocessor):
    """Clip features to [0, ``clip``] and, with ``scale=True``, divide by ``clip`` (range [0, 1]).

    Output: ``min(f, clip) / clip`` as float32 (exactly that expression, evaluated in float32).
    Negative features are refused, not clipped: they mean features of another kind (CLIP, ViT),
    for which ``--set preprocessor=none`` is the right choice.

    Parameters: ``clip`` (7.0, paper), ``scale`` (True, paper: "scaling to range [0, 1]").
    Stateless: ``fit`` only checks its argument, so the same instance can transform any split.
    """

    name = "clip"

    def __init__(self, clip: float = 7.0, scale: bool = True) -> None:
        self.clip = clip
        self.scale = scale

    def check_params(self) -> None:
        hp.real("clip", "clip", self.clip)
        hp.boolean("clip", "scale", self.scale)

    def _checked_clip(self) -> np.float32:
        self.check_params()
        return np.float32(self.clip)

    def fit(self, features: np.ndarray) -> ClipScale:
        self._checked_clip()
        _check_matrix(features)
        self.n_features_in_ = int(features.shape[1])
        return self

    def transform(self, features: np.ndarray) -> np.ndarray:
        """A new float32 array; the input (possibly a read-only memmap) is never written to."""
        clip = self._checked_clip()
        _check_matrix(features)
        expected = getattr(self, "n_features_in_", None)
        if expected is not None and features.shape[1] != expected:
            raise DataError(
                f"features have {features.shape[1]} columns but the clip preprocessor "
                f"was fitted on {expected}",
                hint="transform features of the same kind as those it was fitted on",
            )
        out = np.empty(features.shape, dtype=np.float32)
        for start, block in _finite_blocks(features, np.float32, ": clipping would hide it"):
            if block.size and block.min() < 0:
                bad = start + int(np.flatnonzero((block < 0).any(axis=1))[0])
                raise DataError(
                    f"feature row {bad} has negative values (min {block.min():g}): the "
                    "clip preprocessor is for non-negative activations such as "
                    "ResNet-101's, and would zero them",
                    hint="use --set preprocessor=none for features such as CLIP's",
                )
            dest = out[start : start + _BLOCK_ROWS]
            np.clip(block, np.float32(0.0), clip, out=dest)
            if self.scale:
                np.divide(dest, clip, out=dest)
        return out


class NoPreprocessing(Preprocessor):
    """Pass the features through unchanged (as float32): for features that are already scaled,
    or that have negative values (CLIP, ViT), which the ``clip`` preprocessor refuses.
    ``--set preprocessor=none`` puts it in any method."""

    name = "none"

    def __init__(self) -> None:
        pass

    def fit(self, features: np.ndarray) -> NoPreprocessing:
        _check_matrix(features)
        self.n_features_in_ = int(features.shape[1])
        return self

    def transform(self, features: np.ndarray) -> np.ndarray:
        _check_matrix(features)
        return np.asarray(features, dtype=np.float32)


class MinMaxScale(Preprocessor):
    """Scale each feature dimension to [0, 1] over the training images: scikit-learn's
    ``MinMaxScaler()`` (``(f - min) / (max - min)`` per column, a constant column maps to
    ``f - min``), fitted on the images ``fit`` gets. It is what the official CADA-VAE
    (``model/data_loader.py:105-109``) and f-CLSWGAN (``util.py:132-150``, whose extra division by
    the largest scaled training value is 1 whenever a column varies) apply to ResNet features.

    The harness fits it on the training images of each fit (trainval for the final one), as the
    official codes fit theirs on trainval; test images may fall outside [0, 1], as there.
    Computed in float64 per block of rows and returned as float32 (scikit-learn returns float64).
    """

    name = "minmax"

    def __init__(self) -> None:
        pass

    def fit(self, features: np.ndarray) -> MinMaxScale:
        _check_matrix(features)
        if len(features) == 0:
            raise DataError(
                "the minmax preprocessor needs at least one training image",
                hint="check the split: the training set is empty",
            )
        lo = np.full(features.shape[1], np.inf)
        hi = np.full(features.shape[1], -np.inf)
        for _, block in _finite_blocks(features, np.float64):
            np.minimum(lo, block.min(axis=0), out=lo)
            np.maximum(hi, block.max(axis=0), out=hi)
        span = hi - lo
        span[span < 10 * np.finfo(np.float64).eps] = 1.0  # scikit-learn's _handle_zeros_in_scale
        self.data_min_ = lo
        self.scale_ = 1.0 / span
        self.n_features_in_ = int(features.shape[1])
        return self

    def transform(self, features: np.ndarray) -> np.ndarray:
        """A new float32 array; the input (possibly a read-only memmap) is never written to."""
        if not hasattr(self, "scale_"):
            raise RuntimeError("MinMaxScale.transform called before fit")
        _check_matrix(features)
        if features.shape[1] != self.n_features_in_:
            raise DataError(
                f"features have {features.shape[1]} columns but the minmax "
                f"preprocessor was fitted on {self.n_features_in_}",
                hint="transform features of the same kind as those it was fitted on",
            )
        out = np.empty(features.shape, dtype=np.float32)
        for start in range(0, len(features), _BLOCK_ROWS):
            block = np.asarray(features[start : start + _BLOCK_ROWS], dtype=np.float64)
            out[start : start + _BLOCK_ROWS] = (block - self.data_min_) * self.scale_
        return out


def _finite_blocks(
    features: np.ndarray, dtype: type, why: str = ""
) -> Iterator[tuple[int, np.ndarray]]:
    """``(first row, block)`` of ``_BLOCK_ROWS`` rows at a time as ``dtype`` (a memory-mapped
    file is never copied whole), refusing the first row that holds NaN or inf by its index."""
    for start in range(0, len(features), _BLOCK_ROWS):
        block = np.asarray(features[start : start + _BLOCK_ROWS], dtype=dtype)
        if not np.isfinite(block).all():
            bad = start + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
            raise DataError(
                f"feature row {bad} contains NaN or inf{why}",
                hint="regenerate or repair the feature file",
            )
        yield start, block


def _check_matrix(features: np.ndarray) -> None:
    if not isinstance(features, np.ndarray) or features.ndim != 2:
        raise DataError(
            f"features must be a 2-D array (images × features), got "
            f"{type(features).__name__} of shape {getattr(features, 'shape', None)}",
            hint="pass the feature matrix, one row per image",
        )
    if not (
        np.issubdtype(features.dtype, np.floating) or np.issubdtype(features.dtype, np.integer)
    ):
        raise DataError(
            f"features must be numeric, got dtype {features.dtype}",
            hint="load the features as float32",
        )


@hookimpl
def zslbench_preprocessors() -> list[type[Preprocessor]]:
    return [ClipScale, NoPreprocessing, MinMaxScale]
