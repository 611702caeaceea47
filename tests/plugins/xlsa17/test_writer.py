"""A loaded dataset written in the xlsa17 layout (and as .npz) reads back as the same content."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zslbench.data.checks import check_dataset
from zslbench.data.synthetic import generate
from zslbench_plugins import npz
from zslbench_plugins.synthetic import SHAPES
from zslbench_plugins.xlsa17.loader import read_xlsa17
from zslbench_plugins.xlsa17.writer import save_xlsa17


@pytest.fixture(scope="module")
def toy():
    return generate(SHAPES["toy"])


def test_toy_in_the_xlsa17_layout_reads_back_as_the_same_dataset(toy, tmp_path: Path) -> None:
    res, att = save_xlsa17(toy, tmp_path / "AWA2")  # read as the awa2 folder of a data dir
    assert (res.name, att.name) == ("res101.mat", "att_splits.mat")
    back = read_xlsa17("awa2", tmp_path)
    np.testing.assert_array_equal(back.features, toy.features)
    np.testing.assert_array_equal(back.labels, toy.labels)
    np.testing.assert_array_equal(back.attributes, toy.attributes)
    for key in ("trainval_idx", "test_seen_idx", "test_unseen_idx", "val_classes"):
        np.testing.assert_array_equal(getattr(back, key), getattr(toy, key))
    assert back.class_names == toy.class_names
    # the same content (index sets, labels, attributes, validation classes, every feature byte)
    assert (
        check_dataset(back, "custom").fingerprint
        == check_dataset(toy, "synthetic").fingerprint
        == check_dataset(
            npz.load_npz(npz.save_dataset(toy, tmp_path / "toy.npz")), "custom"
        ).fingerprint
    )


def test_locations_are_integers_as_in_the_released_files(toy, tmp_path: Path) -> None:
    """The official peer codes index with ``mat["trainval_loc"].squeeze() - 1`` (TF-VAEGAN's
    ``image_util.py:33-38``, FREE and CE-GZSL alike): the released files store uint16, and a
    float location array makes that indexing fail."""
    import scipy.io

    _, att = save_xlsa17(toy, tmp_path / "TOY")
    m = scipy.io.loadmat(att)
    features = np.zeros((len(toy.labels), 1))
    for key in ("trainval_loc", "test_seen_loc", "test_unseen_loc", "train_loc", "val_loc"):
        assert m[key].dtype == np.uint16
        assert len(features[m[key].squeeze() - 1]) == m[key].size
