"""The dataset contract that every dataset passes in the runner (``zslbench.data.checks``).

Real AWA2 is built from the real split file (``../shared/data``) and the per-image labels
reconstructed there, with random features (there are no real ones): it must match the official
benchmark the xlsa17 plugin declares, and every alteration the fuzzer found (a permuted attribute
matrix, changed labels, a removed or cut val_loc, a leaky split) must not.
"""

from __future__ import annotations

import json
import textwrap
import warnings

import numpy as np
import pytest
import scipy.io

from tests.cli_helpers import run_cli
from zslbench.data.checks import check_dataset, content_parts, features_hash
from zslbench.data.dataset import Benchmark, ZSLData
from zslbench.errors import DataError, SplitError
from zslbench_plugins.xlsa17.loader import benchmark

AWA2 = benchmark("awa2")


def real_awa2(shared_data, dim: int = 4) -> ZSLData:
    mat = scipy.io.loadmat(shared_data / "AWA2" / "att_splits.mat")
    labels = np.load(shared_data / "AWA2" / "derived" / "labels_reconstructed_1based.npy")
    labels = labels.astype(np.int64) - 1
    loc = {
        k: mat[k].ravel().astype(np.int64) - 1
        for k in ("trainval_loc", "test_seen_loc", "test_unseen_loc", "val_loc")
    }
    feats = np.random.default_rng(0).random((labels.size, dim), dtype=np.float32)
    return ZSLData(
        name="awa2",
        features=feats,
        labels=labels,
        attributes=mat["att"].T.astype(np.float32),
        trainval_idx=loc["trainval_loc"],
        test_seen_idx=loc["test_seen_loc"],
        test_unseen_idx=loc["test_unseen_loc"],
        val_classes=np.unique(labels[loc["val_loc"]]),
    )


def test_the_real_awa2_split_is_the_official_benchmark(shared_data):
    verdict = check_dataset(real_awa2(shared_data, dim=2048), "real", benchmark=AWA2)
    # Every part the declaration pins matches; the features are not pinned (no real res101.mat).
    assert verdict.standard and verdict.official == "awa2" and verdict.unverified == ("features",)
    assert verdict.revision == "Split V2.0" and verdict.split_fingerprint == AWA2.split
    # A file claiming to be real, declaring nothing, is matched by its split among the declared.
    verdict = check_dataset(
        real_awa2(shared_data, dim=2048), "real", known=[benchmark("apy"), AWA2]
    )
    assert verdict.standard and verdict.official == "awa2"


def test_the_real_awa2_split_with_other_features_is_not_the_benchmark(shared_data):
    """Everything official but 4-d features (not ResNet-101's 2048): another benchmark."""
    with pytest.raises(
        SplitError, match="features are 4-d where the official awa2 features are 2048-d"
    ):
        check_dataset(real_awa2(shared_data, dim=4), "real", benchmark=AWA2)


def test_a_dataset_declared_as_one_benchmark_is_not_standard_as_another(shared_data):
    """The declaration names the benchmark: AWA2's content loaded under AWA1's declaration (same
    attributes, other split) is refused, where a split lookup would have called it AWA2."""
    with pytest.raises(
        SplitError,
        match="check 'fingerprint' failed: the index sets are not the "
        "official awa1 Split V2.0 ones",
    ):
        check_dataset(real_awa2(shared_data, dim=2048), "real", benchmark=benchmark("awa1"))


def _altered(shared_data, how: str) -> ZSLData:
    d = real_awa2(shared_data)
    if how == "attribute columns permuted":
        d.attributes = d.attributes[:, np.random.default_rng(1).permutation(d.attributes.shape[1])]
    elif how == "one attribute changed":
        d.attributes = d.attributes.copy()
        d.attributes[3, 7] += 0.01
    elif how == "labels of two seen classes swapped":
        a, b = d.seen_classes[:2]
        labels = d.labels.copy()
        labels[d.labels == a], labels[d.labels == b] = b, a
        d.labels = labels
    elif how == "val_loc removed":
        d.val_classes = None
    elif how == "val_loc cut (a class dropped)":
        d.val_classes = d.val_classes[1:]
    elif how == "test-seen images moved into trainval":
        d.trainval_idx = np.concatenate([d.trainval_idx, d.test_seen_idx[:10]])
    return d


ALTERATIONS = [
    "attribute columns permuted",
    "one attribute changed",
    "labels of two seen classes swapped",
    "val_loc removed",
    "val_loc cut (a class dropped)",
    "test-seen images moved into trainval",
]


@pytest.mark.parametrize("how", ALTERATIONS)
def test_altered_benchmark_data_is_refused_or_marked_nonstandard(shared_data, how):
    with pytest.raises(SplitError) as err:
        check_dataset(_altered(shared_data, how), "real", benchmark=AWA2)
    assert "--allow-nonstandard-split" in err.value.one_line()
    verdict = check_dataset(
        _altered(shared_data, how), "real", benchmark=AWA2, allow_nonstandard=True
    )
    assert not verdict.standard and verdict.reason


def test_a_leaky_split_is_refused_whatever_kind_a_plugin_claims(shared_data):
    leaky = _altered(shared_data, "test-seen images moved into trainval")
    for kind in ("synthetic", "custom"):
        with pytest.raises(SplitError, match="disjoint"):
            check_dataset(leaky, kind)


def _small(features: np.ndarray) -> ZSLData:
    labels = np.repeat(np.arange(6), 10)
    idx = np.arange(60)
    return ZSLData(
        name="tiny",
        features=features,
        labels=labels,
        attributes=np.eye(6, dtype=np.float32) + 0.1,
        trainval_idx=idx[labels < 4][::2],
        test_seen_idx=idx[labels < 4][1::2],
        test_unseen_idx=idx[labels >= 4],
        val_classes=np.array([0]),
    )


@pytest.mark.parametrize(
    "features, needle",
    [
        (np.ones((60, 3), dtype=bool), "dtype bool"),
        (np.full((60, 3), 0.5, dtype=np.float32), "constant"),
        (np.where(np.eye(60, 3) > 0, np.nan, 1.0).astype(np.float32), "NaN or Inf"),
        (np.where(np.eye(60, 3) > 0, 1e300, 1.0), "1e\\+300 .* does not fit in float32"),
    ],
)
def test_bool_constant_or_non_finite_features_are_refused(features, needle):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning may leak on the way to the message
        with pytest.raises(DataError, match=needle):
            check_dataset(_small(features), "custom")


def test_validation_classes_that_leave_no_training_class_are_refused():
    feats = np.random.default_rng(0).random((60, 3), dtype=np.float32)
    data = _small(feats)
    data.val_classes = np.arange(4)
    with pytest.raises(DataError, match="validation classes are all 4 seen classes"):
        check_dataset(data, "custom")


def test_a_custom_benchmark_is_standard_and_its_fingerprint_covers_every_part():
    feats = np.random.default_rng(0).random((60, 3), dtype=np.float32)
    base = check_dataset(_small(feats), "custom")
    assert base.standard and base.official is None
    other = _small(feats.copy())
    other.features[5, 1] += 1e-3
    assert check_dataset(other, "custom").fingerprint != base.fingerprint
    other = _small(feats)
    other.val_classes = np.array([1])
    assert check_dataset(other, "custom").fingerprint != base.fingerprint


def test_a_real_claim_that_matches_no_benchmark_is_nonstandard():
    feats = np.random.default_rng(0).random((60, 3), dtype=np.float32)
    with pytest.raises(SplitError, match=r"not those of any declared benchmark \(awa2\)"):
        check_dataset(_small(feats), "real", known=[AWA2])
    with pytest.raises(
        SplitError, match=r"not those of any declared benchmark \(none is declared\)"
    ):
        check_dataset(_small(feats), "real")


LEAKY_PLUGIN = """
    import numpy as np
    from zslbench.data.dataset import DatasetSpec, ZSLData
    from zslbench.hookspecs import hookimpl


    def load(data_dir):
        # Called exactly as the hook documents it: spec.load(data_dir).
        rng = np.random.default_rng(0)
        labels = np.repeat(np.arange(8), 30)
        idx = np.arange(len(labels))
        seen = idx[labels < 5]
        return ZSLData(name="leaky", features=rng.random((len(labels), 16), dtype=np.float32) + labels[:, None] * 0.1,
                       labels=labels, attributes=rng.random((8, 6)).astype(np.float32) + 0.1,
                       trainval_idx=seen, test_seen_idx=seen[::3], test_unseen_idx=idx[labels >= 5],
                       val_classes=np.array([0, 1]))


    @hookimpl
    def zslbench_datasets():
        return [DatasetSpec(name="leaky", load=load, kind="real", description="test-seen inside trainval")]
"""


def test_a_plugin_dataset_with_a_leaky_split_never_runs_as_standard(tmp_path):
    (tmp_path / "leaky_plugin.py").write_text(textwrap.dedent(LEAKY_PLUGIN))
    env = {"PYTHONPATH": str(tmp_path)}
    args = (
        "-p",
        "leaky_plugin",
        "run",
        "--method",
        "krr",
        "--dataset",
        "leaky",
        "--results-dir",
        str(tmp_path / "res"),
    )
    refused = run_cli(*args, env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "disjoint" in refused.stderr and not (tmp_path / "res").exists()
    flagged = run_cli(*args, "--allow-nonstandard-split", env=env)
    assert flagged.returncode == 0, flagged.stderr
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "res").glob("*.json")]
    assert record["split"]["standard"] is False and "disjoint" in record["split"]["reason"]


def _data(features: np.ndarray) -> ZSLData:
    """Four classes (two seen, two unseen) of three images each."""
    labels = np.repeat(np.arange(4), 3)
    return ZSLData(
        name="mine",
        features=features,
        labels=labels,
        attributes=np.eye(4, 3, dtype=np.float32) + 0.1,
        trainval_idx=np.array([0, 1, 3, 4]),
        test_seen_idx=np.array([2, 5]),
        test_unseen_idx=np.arange(6, 12),
    )


def test_finite_value_beyond_float32_is_named_without_warnings() -> None:
    """Issue "Trust": a float64 1e300 is finite; it used to overflow in the float32 cast with a
    RuntimeWarning and be reported as 'NaN or Inf'."""
    f = np.random.default_rng(0).standard_normal((12, 5))
    f[7, 2] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(DataError) as info:
            check_dataset(_data(f), "custom")
    line = str(info.value)
    assert line.startswith(
        "mine: feature value 1e+300 (image 7, dimension 2, 0-based) does not fit in float32"
    )
    assert "NaN" not in line and "\n" not in line


def _declaration(d: ZSLData, **pins) -> Benchmark:
    """A benchmark declaring ``d``'s own content, every part pinned (``pins`` override)."""
    parts = content_parts(d)
    return Benchmark(
        **{
            "name": "mini",
            "title": "a miniature",
            "revision": "v1",
            "split": parts["split"],
            "attributes": parts["attributes"],
            "labels": parts["labels"],
            "val_classes": parts["val_classes"],
            "features": features_hash(d.features),
            "n_images": 12,
            "n_val_classes": 0,
            "n_classes": 4,
            "n_seen": 2,
            "n_unseen": 2,
            "attribute_dim": 3,
            "feature_dim": 5,
            **pins,
        }
    )


def test_real_data_with_other_features_is_not_the_official_benchmark() -> None:
    """A dataset of kind ``real`` whose split, labels and semantics are the official ones but whose
    features have another dimension (CLIP instead of ResNet-101) is not the benchmark: it runs
    only as non-standard."""
    d = _data(np.random.default_rng(0).standard_normal((12, 5)))
    verdict = check_dataset(d, "real", benchmark=_declaration(d))
    assert verdict.standard and verdict.official == "mini" and verdict.unverified == ()
    other = _declaration(d, feature_dim=2048, features=None)
    with pytest.raises(
        SplitError, match="features are 5-d where the official mini features are 2048-d"
    ):
        check_dataset(d, "real", benchmark=other)
    verdict = check_dataset(d, "real", benchmark=other, allow_nonstandard=True)
    assert not verdict.standard and "5-d" in verdict.reason and verdict.unverified == ("features",)


@pytest.mark.parametrize(
    "pin, says",
    [
        ({"features": "0" * 64}, "the features differ from the official mini data"),
        ({"n_images": 13}, "12 images where the official mini has 13"),
        ({"attribute_dim": 4}, "attributes are 3-d where the official mini attributes are 4-d"),
        ({"n_val_classes": 2}, "0 validation classes where the official mini has 2"),
        (
            {"n_seen": 3, "n_unseen": 1},
            r"2\+2 seen\+unseen classes where the official mini has 3\+1",
        ),
    ],
)
def test_every_pin_of_a_declaration_is_compared(pin, says) -> None:
    d = _data(np.random.default_rng(0).standard_normal((12, 5)))
    with pytest.raises(SplitError, match=says):
        check_dataset(d, "real", benchmark=_declaration(d, **pin))


@pytest.mark.parametrize(
    "bad, says",
    [
        ({"split": "abc"}, "split must be a sha256"),
        ({"labels": "XYZ"}, "labels must be a sha256"),
        ({"n_images": -1}, "n_images must be a non-negative integer"),
        ({"revision": ""}, "revision must be a non-empty string"),
    ],
)
def test_a_malformed_declaration_is_refused_when_made(bad, says) -> None:
    d = _data(np.random.default_rng(0).standard_normal((12, 5)))
    with pytest.raises(ValueError, match=says):
        _declaration(d, **bad)


@pytest.mark.parametrize(
    "change, error, says",
    [
        (
            lambda d: setattr(d, "test_seen_idx", np.array([2, 5, 1])),
            SplitError,
            "mine: Split V2.0 check 'disjoint' failed: 1 test_seen_idx indices are also in trainval_idx "
            "(e.g. 1), a V1-style or leaky split",
        ),
        (
            lambda d: setattr(d, "trainval_idx", np.array([0, 0, 1, 3, 4])),
            DataError,
            "mine: trainval_idx lists 1 index more than once (e.g. 0) — each image may appear once; fix "
            "the dataset's loader or file",
        ),
        (
            lambda d: setattr(d, "test_unseen_idx", np.arange(6, 13)),
            DataError,
            "mine: test_unseen_idx has 1 index outside 0..11 (e.g. 12) — index 12 is one past the 12 "
            "images: off by one? (indices are 0-based)",
        ),
        (
            lambda d: setattr(d, "trainval_idx", np.array([0, 1, 3, 4, 6])),
            SplitError,
            "mine: Split V2.0 check 'unseen-classes' failed: 1 test-unseen classes have trainval images "
            "(e.g. class 2, 0-based)",
        ),
    ],
)
def test_split_messages_speak_of_the_datasets_own_0_based_index_sets(change, error, says) -> None:
    """The runner's split checks name a dataset's ``*_idx`` sets and 0-based indices (they used
    to speak of xlsa17's 1-based ``*_loc``: 'test_seen_loc ... (e.g. 2)' for index 1)."""
    d = _data(np.random.default_rng(0).standard_normal((12, 5)))
    change(d)
    with pytest.raises(error) as info:
        check_dataset(d, "custom")
    assert says in str(info.value)
