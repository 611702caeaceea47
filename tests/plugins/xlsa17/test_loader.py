"""The xlsa17 loader on miniature files in the real layout: conversion, provenance, policy, paths."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.plugins.xlsa17.helpers import (
    Mini,
    loaded_split_fingerprint,
    loader_reason,
    loader_standard,
    mini_arrays,
    patch_registry,
    registry_for,
    write_dataset,
)
from zslbench.errors import ConfigError, DataError, SplitError
from zslbench_plugins.xlsa17 import checks
from zslbench_plugins.xlsa17 import loader as xlsa17
from zslbench_plugins.xlsa17.loader import load_xlsa17, missing_files, resolve_data_dir


def test_mini_round_trip(mini: Mini) -> None:
    a = mini.arrays
    d = load_xlsa17("awa2", mini.data_dir)
    assert d.name == "awa2" and loader_standard(d) and loader_reason(d) == ""
    assert isinstance(d.features, np.memmap) and d.features.dtype == np.float32
    assert not d.features.flags.writeable
    np.testing.assert_array_equal(d.features, a["features"].T.astype(np.float32))
    np.testing.assert_array_equal(d.labels, a["labels"].ravel().astype(int) - 1)
    assert d.labels.dtype == np.int64
    np.testing.assert_array_equal(d.attributes, a["att"].T.astype(np.float32))
    for key, got in (
        ("trainval_loc", d.trainval_idx),
        ("test_seen_loc", d.test_seen_idx),
        ("test_unseen_loc", d.test_unseen_idx),
    ):
        np.testing.assert_array_equal(got, a[key].ravel().astype(int) - 1)
    np.testing.assert_array_equal(d.val_classes, [0, 1])  # the first two seen classes, 0-based
    assert d.class_names == [f"class{i:03d}" for i in range(1, 10)]
    assert loaded_split_fingerprint(d) == mini.entry["split_fingerprint"]
    for key, path in (("res101", mini.res101), ("att_splits", mini.att_splits)):
        assert d.source[f"{key}_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert d.source[f"{key}_path"] == str(path)
    assert d.source["cache"] == {"res101": "built", "att_splits": "built"}
    assert load_xlsa17("awa2", mini.data_dir).source["cache"] == {
        "res101": "hit",
        "att_splits": "hit",
    }


def test_name_is_case_insensitive_and_unknown_names_suggest(mini: Mini) -> None:
    assert load_xlsa17("AWA2", mini.data_dir).name == "awa2"
    with pytest.raises(ConfigError, match="did you mean 'awa2'"):
        load_xlsa17("awa3", mini.data_dir)


def test_no_val_loc_gives_no_val_classes(mini: Mini) -> None:
    mini.rewrite(mini.arrays, drop=("train_loc", "val_loc"))
    # The official benchmark has validation classes: a file without them is not the benchmark.
    with pytest.raises(SplitError, match="validation classes differ from the official awa2"):
        load_xlsa17("awa2", mini.data_dir)
    d = load_xlsa17("awa2", mini.data_dir, allow_nonstandard=True)
    assert d.val_classes is None and not loader_standard(d)


def test_transposed_features_are_accepted(mini: Mini) -> None:
    a = dict(mini.arrays, features=mini.arrays["features"].T.copy())  # N x d instead of d x N
    mini.rewrite(a)
    d = load_xlsa17("awa2", mini.data_dir)
    np.testing.assert_array_equal(d.features, mini.arrays["features"].T.astype(np.float32))
    assert d.source["features_transposed"] is True


def test_allow_nonstandard_loads_leaky_split_marked(mini: Mini) -> None:
    a = dict(mini.arrays)
    a["trainval_loc"] = np.concatenate([a["trainval_loc"], a["test_seen_loc"][:2]])
    mini.rewrite(a)
    with pytest.raises(SplitError, match="'disjoint' failed"):
        load_xlsa17("awa2", mini.data_dir)
    d = load_xlsa17("awa2", mini.data_dir, allow_nonstandard=True)
    assert loader_standard(d) is False
    assert "'disjoint' failed" in loader_reason(d) and "'fingerprint' failed" in loader_reason(d)
    assert loaded_split_fingerprint(d) != mini.entry["split_fingerprint"]


def test_allow_nonstandard_never_passes_structural_failures(mini: Mini) -> None:
    a = dict(mini.arrays)
    a["test_seen_loc"] = a["test_seen_loc"].astype(np.int64) + 1000
    mini.rewrite(a)
    with pytest.raises(SplitError, match="outside 1..54"):
        load_xlsa17("awa2", mini.data_dir, allow_nonstandard=True)


def test_other_feature_dim_is_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = mini_arrays(feature_dim=16)
    write_dataset(tmp_path, "AWA2", a)
    patch_registry(
        monkeypatch, "awa2", dict(registry_for(a, checks.registry_entry("awa2")), feature_dim=2048)
    )
    with pytest.raises(
        SplitError, match="features are 16-d where the official awa2 features are 2048-d"
    ):
        load_xlsa17("awa2", tmp_path)
    d = load_xlsa17("awa2", tmp_path, allow_nonstandard=True)
    assert d.features.shape == (54, 16) and not loader_standard(d)


def test_resolve_data_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZSLBENCH_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resolve_data_dir(tmp_path / "flag") == tmp_path / "flag"
    assert resolve_data_dir(str(tmp_path / "flag")) == tmp_path / "flag"
    assert resolve_data_dir(None) == tmp_path / "env"
    monkeypatch.delenv("ZSLBENCH_DATA")
    assert resolve_data_dir(None) == tmp_path / "xdg" / "zslbench" / "data"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_data_dir(None) == tmp_path / "home" / ".cache" / "zslbench" / "data"


def test_missing_files_lines(tmp_path: Path) -> None:
    lines = missing_files("cub", tmp_path)
    assert len(lines) == 2
    assert str(tmp_path / "CUB" / "res101.mat") in lines[0]
    assert str(tmp_path / "CUB" / "att_splits.mat") in lines[1]
    for line in lines:
        assert f"zslbench data download --dataset cub --data-dir {tmp_path}" in line
        assert "synth-all" in line and "\n" not in line
    (tmp_path / "CUB").mkdir()
    (tmp_path / "CUB" / "att_splits.mat").write_bytes(b"x")
    assert len(missing_files("cub", tmp_path)) == 1
    with pytest.raises(DataError, match="res101.mat is missing"):
        load_xlsa17("cub", tmp_path)


def test_read_only_cache_falls_back_to_memory(mini: Mini) -> None:
    d = load_xlsa17("awa2", mini.data_dir, use_cache=False)
    assert d.source["cache"] == {"res101": "disabled", "att_splits": "disabled"}
    assert not d.features.flags.writeable and not (mini.data_dir / ".cache").exists()
    np.testing.assert_array_equal(d.features, mini.arrays["features"].T.astype(np.float32))


def test_mat_reader_is_not_fooled_by_v73(tmp_path: Path) -> None:
    p = tmp_path / "x.mat"
    p.write_bytes(
        b"MATLAB 7.3 MAT-file, Platform: GLNXA64".ljust(128, b" ") + b"\x89HDF\r\n\x1a\n" * 8
    )
    with pytest.raises(DataError, match="v7.3"):
        xlsa17.read_mat(p, ("features",))


# -------------------------------------------------------------------------- property: round trip


@st.composite
def layouts(draw):
    n_seen = draw(st.integers(1, 4))
    n_unseen = draw(st.integers(1, 3))
    per = draw(st.lists(st.integers(2, 5), min_size=n_seen + n_unseen, max_size=n_seen + n_unseen))
    attr_dim = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    label_dtype = draw(st.sampled_from([np.float64, np.uint8, np.int32]))
    idx_dtype = draw(st.sampled_from([np.uint16, np.float64, np.int32]))
    with_val = draw(st.booleans()) and n_seen > 1  # validation classes leave a class to train on
    return n_seen, n_unseen, per, attr_dim, seed, label_dtype, idx_dtype, with_val


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(layouts())
def test_random_valid_layouts_round_trip_through_loader_and_cache(monkeypatch, layout) -> None:
    n_seen, n_unseen, per, attr_dim, seed, label_dtype, idx_dtype, with_val = layout
    rng = np.random.default_rng(seed)
    n_classes = n_seen + n_unseen
    labels = rng.permutation(np.repeat(np.arange(1, n_classes + 1), per))
    n = labels.size
    feats = rng.standard_normal((2048, n)) * 10
    att = rng.uniform(0.1, 1.0, size=(attr_dim, n_classes))
    tv, ts, tu = [], [], []
    for c in range(1, n_classes + 1):
        idx = rng.permutation(np.flatnonzero(labels == c) + 1).tolist()
        if c > n_seen:
            tu += idx
        else:
            tv += idx[:-1]
            ts += idx[-1:]
    a = {
        "features": feats,
        "labels": labels.astype(label_dtype).reshape(-1, 1),
        "att": att,
        "trainval_loc": np.array(tv, dtype=idx_dtype),
        "test_seen_loc": np.array(ts, dtype=idx_dtype),
        "test_unseen_loc": np.array(tu, dtype=idx_dtype),
    }
    if with_val:
        a["val_loc"] = np.array(tv[:1], dtype=idx_dtype)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_dataset(root, "AWA2", a)
        patch_registry(monkeypatch, "awa2", registry_for(a, checks.registry_entry("awa2")))
        for expected_cache in ("built", "hit"):
            d = load_xlsa17("awa2", root)
            assert loader_standard(d) and d.source["cache"]["res101"] == expected_cache
            np.testing.assert_array_equal(d.features, feats.T.astype(np.float32))
            np.testing.assert_array_equal(d.labels, labels - 1)
            np.testing.assert_array_equal(d.attributes, att.T.astype(np.float32))
            np.testing.assert_array_equal(d.trainval_idx, np.array(tv) - 1)
            np.testing.assert_array_equal(d.test_seen_idx, np.array(ts) - 1)
            np.testing.assert_array_equal(d.test_unseen_idx, np.array(tu) - 1)
            if with_val:
                assert d.val_classes.tolist() == [labels[tv[0] - 1] - 1]
            else:
                assert d.val_classes is None
