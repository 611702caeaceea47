"""Load time of an AWA2-size xlsa17 dataset: cold (no cache) and cached.

AWA2-size: ``res101.mat`` with 2048 x 37322 float64 features (612 MB, the real file's layout) and
the real AWA2 ``att_splits.mat`` from ../shared/data (with its reconstructed per-image labels)
when present; otherwise a split of the same sizes, loaded as non-standard.

"Cold" means no zslbench cache and no remembered file hash (sha256 of the source, MATLAB parsing,
float32 conversion, cache write); the operating system's page cache is warm in both cases, as it
is for a user who just downloaded the files. A cached load checks every byte of the cache
(``features.npy`` is 306 MB for AWA2); the integrity check alone, and the candidate hashes for it,
are timed on a file of that size. Run with::

    pytest benchmarks/test_bench_data.py --benchmark-only
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from tests.plugins.xlsa17.helpers import awa2_like_labels, shared_data_dir
from zslbench_plugins.xlsa17 import cache
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
        tv = perm[seen][:23527]
        ts = perm[seen][23527:]
        tu = perm[~seen]
        scipy.io.savemat(
            str(folder / "att_splits.mat"),
            {
                "att": rng.uniform(0.1, 1, (85, 50)),
                "trainval_loc": tv,
                "test_seen_loc": ts,
                "test_unseen_loc": tu,
            },
            oned_as="column",
        )
        allow = True
    protos = rng.uniform(0, 1, (50, 2048))
    feats = protos[labels - 1] * rng.uniform(0.5, 1.5, (N_AWA2, 1))  # float64, like the real file
    scipy.io.savemat(
        str(folder / "res101.mat"), {"features": feats.T, "labels": labels.reshape(-1, 1)}
    )
    del feats
    yield root, allow
    shutil.rmtree(root, ignore_errors=True)


def test_load_awa2_cold(benchmark, awa2_dir) -> None:
    root, allow = awa2_dir

    def clear() -> None:
        shutil.rmtree(root / ".cache", ignore_errors=True)

    data = benchmark.pedantic(
        lambda: load_xlsa17("awa2", root, allow_nonstandard=allow),
        setup=clear,
        rounds=3,
        iterations=1,
    )
    assert data.features.shape == (N_AWA2, 2048) and data.source["cache"]["res101"] == "built"


def test_load_awa2_cached(benchmark, awa2_dir) -> None:
    root, allow = awa2_dir
    load_xlsa17("awa2", root, allow_nonstandard=allow)
    data = benchmark.pedantic(
        lambda: load_xlsa17("awa2", root, allow_nonstandard=allow), rounds=9, iterations=1
    )
    assert data.source["cache"]["res101"] == "hit" and isinstance(data.features, np.memmap)
    assert benchmark.stats.stats.median < 1.0  # the target: well under a second


@pytest.fixture(scope="module")
def features_300mb(tmp_path_factory: pytest.TempPathFactory):
    """A cache entry holding an AWA2-size features.npy (37322 x 2048 float32, 306 MB)."""
    root = tmp_path_factory.mktemp("bench_entry")
    rng = np.random.default_rng(0)
    feats = rng.random((N_AWA2, 2048), dtype=np.float32)
    entry = cache.write_entry(
        root / "AWA2" / "res101-0123456789abcdef0123", {"features": feats}, {}
    )
    del feats
    yield entry
    shutil.rmtree(root, ignore_errors=True)


def test_verify_awa2_size_entry_every_byte(benchmark, features_300mb) -> None:
    """What a cached load adds to check the cache: every byte of the 306 MB features.npy."""
    meta, arrays = benchmark.pedantic(
        lambda: cache.open_entry(features_300mb, mmap=("features",)), rounds=5, iterations=1
    )
    assert arrays["features"].shape == (N_AWA2, 2048)


def _plain(name: str | None, path: Path) -> str:
    """One hash over the file, read in 4 MiB chunks (``None``: only read it)."""
    h = hashlib.new(name) if name else None
    buf = bytearray(4 * 2**20)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            if h is not None:
                h.update(view[:n])
    return h.hexdigest() if h is not None else ""


@pytest.mark.parametrize(
    "how",
    [
        "sha256-segments-threads",
        "sha256-segments-1-thread",
        "sha256-plain",
        "blake2b-plain",
        "read-only",
    ],
)
def test_hash_300mb(benchmark, features_300mb, how: str) -> None:
    """The candidates for the integrity check, on the same 306 MB file (page cache warm)."""
    path = features_300mb / "features.npy"
    run = {
        "sha256-segments-threads": lambda: cache.file_digest(path),
        "sha256-segments-1-thread": lambda: cache.file_digest(path, threads=1),
        "sha256-plain": lambda: _plain("sha256", path),
        "blake2b-plain": lambda: _plain("blake2b", path),
        "read-only": lambda: _plain(None, path),
    }[how]
    benchmark.pedantic(run, rounds=5, iterations=1)
