"""Load time of an AWA2-size xlsa17 dataset: cold (no cache) and cached.

AWA2-size: ``res101.mat`` with 2048 x 37322 float64 features (612 MB, the real file's layout) and
the real AWA2 ``att_splits.mat`` from ../shared/data (with its reconstructed per-image labels)
when present; otherwise a split of the same sizes, loaded as non-standard.

"Cold" means no zslbench cache and no remembered file hash (sha256 of the source, MATLAB parsing,
float32 conversion, cache write); the operating system's page cache is warm in both cases, as it
is for a user who just downloaded the files. Run with::

    pytest benchmarks/test_bench_data.py --benchmark-only
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import scipy.io

from tests.plugins.xlsa17.helpers import awa2_like_labels, shared_data_dir
from zslbench_plugins.xlsa17.loader import load_xlsa17

N_AWA2 = 37322


@pytest.fixture(scope="module")
def awa2_dir(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("bench_awa2")
    folder = root / "AWA2"
    folder.mkdir()
    shared = shared_data_dir()
    rng = np.random.default_rng(0)
    if shared is not None:
        labels = awa2_like_labels(shared)
        shutil.copyfile(shared / "AWA2" / "att_splits.mat", folder / "att_splits.mat")
        allow = False
    else:  # same sizes, not the official split
        labels = np.repeat(np.arange(1, 51), -(-N_AWA2 // 50))[:N_AWA2]
        perm = rng.permutation(N_AWA2) + 1
        seen = labels[perm - 1] <= 40
        tv = perm[seen][: 23527]
        ts = perm[seen][23527:]
        tu = perm[~seen]
        scipy.io.savemat(str(folder / "att_splits.mat"),
                         {"att": rng.uniform(0.1, 1, (85, 50)), "trainval_loc": tv, "test_seen_loc": ts,
                          "test_unseen_loc": tu}, oned_as="column")
        allow = True
    protos = rng.uniform(0, 1, (50, 2048))
    feats = protos[labels - 1] * rng.uniform(0.5, 1.5, (N_AWA2, 1))  # float64, like the real file
    scipy.io.savemat(str(folder / "res101.mat"), {"features": feats.T, "labels": labels.reshape(-1, 1)})
    del feats
    yield root, allow
    shutil.rmtree(root, ignore_errors=True)


def test_load_awa2_cold(benchmark, awa2_dir) -> None:
    root, allow = awa2_dir

    def clear() -> None:
        shutil.rmtree(root / ".cache", ignore_errors=True)

    data = benchmark.pedantic(lambda: load_xlsa17("awa2", root, allow_nonstandard=allow),
                              setup=clear, rounds=3, iterations=1)
    assert data.features.shape == (N_AWA2, 2048) and data.source["cache"]["res101"] == "built"


def test_load_awa2_cached(benchmark, awa2_dir) -> None:
    root, allow = awa2_dir
    load_xlsa17("awa2", root, allow_nonstandard=allow)
    data = benchmark.pedantic(lambda: load_xlsa17("awa2", root, allow_nonstandard=allow),
                              rounds=9, iterations=1)
    assert data.source["cache"]["res101"] == "hit" and isinstance(data.features, np.memmap)
    assert benchmark.stats.stats.median < 1.0  # the target: well under a second
