"""The paper's preprocessing: clip at 7, scale to [0, 1]."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zslbench_plugins.preprocessors as preprocessors
from zslbench.errors import ConfigError, DataError
from zslbench_plugins.preprocessors import ClipScale, NoPreprocessing, zslbench_preprocessors


def test_hook_registers_clip_none_and_minmax() -> None:
    assert [c.name for c in zslbench_preprocessors()] == ["clip", "none", "minmax"]
    assert ClipScale().get_params() == {"clip": 7.0, "scale": True}  # the paper's values


def _features(rng: np.random.Generator, n: int = 50, d: int = 16) -> np.ndarray:
    # Non-negative like ResNet activations: some zeros, most in range, some above the clip.
    return np.maximum(rng.standard_normal((n, d)) * 5 + 2, 0).astype(np.float32)


@pytest.mark.parametrize("clip", [7.0, 4, 9.5])
def test_output_is_min_max_over_clip_exactly_in_float32(clip: float) -> None:
    f = _features(np.random.default_rng(0))
    assert (f == 0).any() and (f > clip).any()
    out = ClipScale(clip=clip).fit(f).transform(f)
    c = np.float32(clip)
    assert out.dtype == np.float32
    assert np.array_equal(out, np.minimum(f, c) / c)
    assert out.min() == 0.0 and out.max() == 1.0


def test_float64_input_gives_float32_within_one_rounding() -> None:
    f = _features(np.random.default_rng(1)).astype(np.float64) * 1.0000001
    out = ClipScale().transform(f)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.minimum(np.maximum(f, 0), 7) / 7, rtol=2e-7, atol=1e-7)


def test_scale_false_only_clips() -> None:
    f = _features(np.random.default_rng(2))
    out = ClipScale(clip=7, scale=False).transform(f)
    assert np.array_equal(out, np.clip(f, 0, 7))


def test_blocks_cover_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preprocessors, "_BLOCK_ROWS", 7)
    f = _features(np.random.default_rng(3), n=50)
    assert np.array_equal(ClipScale().transform(f), np.minimum(np.maximum(f, 0), 7) / np.float32(7))


def test_read_only_memmap_is_not_written(tmp_path) -> None:
    f = _features(np.random.default_rng(4))
    np.save(tmp_path / "f.npy", f)
    mapped = np.load(tmp_path / "f.npy", mmap_mode="r")
    out = ClipScale().fit(mapped).transform(mapped)
    assert type(out) is np.ndarray and out.flags.writeable
    assert np.array_equal(np.load(tmp_path / "f.npy"), f)


@settings(max_examples=50, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=2, max_dims=2, max_side=8),
        elements=st.floats(0, 1e6, width=32),
    ),
    st.floats(0.5, 20),
)
def test_output_lies_in_unit_interval_and_keeps_order(f: np.ndarray, clip: float) -> None:
    out = ClipScale(clip=clip).transform(f)
    assert out.shape == f.shape
    assert ((out >= 0) & (out <= 1)).all()
    flat_in, flat_out = f.ravel(), out.ravel()
    order = np.argsort(flat_in, kind="stable")
    assert (np.diff(flat_out[order]) >= 0).all()  # monotone: clipping never reorders features


@pytest.mark.parametrize("clip", [0, -7.0, float("nan"), float("inf"), "7", True])
def test_bad_clip_is_a_config_error(clip: object) -> None:
    with pytest.raises(ConfigError, match="clip.clip"):
        ClipScale(clip=clip).fit(np.zeros((2, 2), np.float32))


def test_negative_features_are_refused_with_the_fix() -> None:
    f = np.ones((5, 3), np.float32)
    f[2, 1] = -0.5
    with pytest.raises(DataError, match="row 2 has negative values") as err:
        ClipScale().transform(f)
    assert "--set preprocessor=none" in err.value.one_line()
    assert np.array_equal(NoPreprocessing().fit(f).transform(f), f)


def test_non_finite_features_are_a_data_error_naming_the_row() -> None:
    f = np.zeros((5, 3), np.float32)
    f[3, 1] = np.inf
    with pytest.raises(DataError, match="row 3"):
        ClipScale().transform(f)


def test_wrong_shapes_are_data_errors() -> None:
    with pytest.raises(DataError, match="2-D"):
        ClipScale().fit(np.zeros(4, np.float32))
    pre = ClipScale().fit(np.zeros((2, 4), np.float32))
    with pytest.raises(DataError, match="4"):
        pre.transform(np.zeros((2, 5), np.float32))
