"""Helpers for the xlsa17 plugin tests: xlsa17-layout files built in the test, and the real split files.

Real data: the real ``att_splits.mat`` files live *outside* the repo, in ``../shared/data`` (the
repo root's sibling; ``$ZSLBENCH_SHARED_DATA`` overrides). Tests that need them skip with a
reason when they are absent; nothing from there is ever copied into the repo. ``res101.mat`` files
are never available, so every test generates its own features.

Miniature datasets: most tests use a tiny dataset written in the real layout (2048-d features,
1-based labels and indices, column vectors) into the ``AWA2`` folder, with the registry entry of
``awa2`` replaced (``mini`` fixture) by the miniature's counts and fingerprint, so every check of the
loader applies unchanged while files stay a few hundred KB.

Commands run in this process through ``zslbench.cli.main`` (:func:`data_cli`), so that what a
command raises is printed by the one error handler exactly as a user sees it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.io

from tests.cli_helpers import invoke_main
from zslbench.data import fingerprints, splits
from zslbench_plugins.xlsa17 import checks

SHARED_ENV = "ZSLBENCH_SHARED_DATA"
FOLDERS = {"awa1": "AWA1", "awa2": "AWA2", "apy": "APY", "cub": "CUB", "sun": "SUN"}
RES_KEYS = ("features", "labels")


def shared_data_dir() -> Path | None:
    """``$ZSLBENCH_SHARED_DATA`` or the repo root's sibling ``shared/data``, if it exists."""
    env = os.environ.get(SHARED_ENV)
    path = Path(env) if env else Path(__file__).resolve().parents[3].parent / "shared" / "data"
    return path if (path / "AWA2" / "att_splits.mat").is_file() else None


def require_shared() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip(
            "the real xlsa17 split files are not available (expected in ../shared/data "
            f"next to the repo, or ${SHARED_ENV})"
        )
    return path


@pytest.fixture
def shared() -> Path:
    return require_shared()


def save_mat(path: Path, variables: dict[str, Any]) -> Path:
    """MATLAB v5 file as xlsa17 stores it (vectors as columns)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(str(path), variables, format="5", oned_as="column")
    return path


def mini_arrays(
    seed: int = 0,
    *,
    n_seen: int = 6,
    n_unseen: int = 3,
    per_class: int = 6,
    feature_dim: int = 2048,
    attr_dim: int = 12,
    n_val_classes: int = 2,
) -> dict[str, Any]:
    """A miniature xlsa17 dataset in file layout (1-based, d x N features, attr x classes att).

    Classes 1..n_seen are seen, the rest unseen; each seen class gives 2/3 of its images to
    trainval and 1/3 to test_seen; unseen classes go to test_unseen. train_loc/val_loc follow the
    2018 originals: class-disjoint, val = the first ``n_val_classes`` seen classes, and together
    they cover trainval plus test_seen (the leak the loader must not pass on).
    """
    rng = np.random.default_rng(seed)
    n_classes = n_seen + n_unseen
    labels = np.repeat(np.arange(1, n_classes + 1), per_class)
    rng.shuffle(labels)
    n = labels.size
    protos = rng.standard_normal((n_classes, feature_dim))
    features = np.abs(protos[labels - 1] + 0.3 * rng.standard_normal((n, feature_dim)))
    att = rng.uniform(0.05, 1.0, size=(attr_dim, n_classes))
    trainval, test_seen, test_unseen = [], [], []
    for c in range(1, n_classes + 1):
        idx = np.flatnonzero(labels == c) + 1
        if c > n_seen:
            test_unseen += idx.tolist()
        else:
            k = max(1, (2 * idx.size) // 3)
            trainval += idx[:k].tolist()
            test_seen += idx[k:].tolist()
    val_cls = set(range(1, n_val_classes + 1))
    seen_imgs = sorted(trainval + test_seen)
    val = [i for i in seen_imgs if labels[i - 1] in val_cls]
    train = [i for i in seen_imgs if labels[i - 1] not in val_cls]
    col = lambda v: np.asarray(sorted(v), dtype=np.uint16).reshape(-1, 1)  # noqa: E731
    names = np.empty((n_classes, 1), dtype=object)
    for i in range(n_classes):
        names[i, 0] = np.array([f"class{i + 1:03d}"])
    return {
        "features": features.T.copy(),
        "labels": labels.reshape(-1, 1).astype(np.float64),
        "att": att,
        "original_att": att.copy(),
        "trainval_loc": col(trainval),
        "test_seen_loc": col(test_seen),
        "test_unseen_loc": col(test_unseen),
        "train_loc": col(train),
        "val_loc": col(val),
        "allclasses_names": names,
    }


def write_dataset(
    root: Path, folder: str, arrays: dict[str, Any], *, drop: tuple[str, ...] = ()
) -> tuple[Path, Path]:
    """Write ``res101.mat`` and ``att_splits.mat`` of ``arrays`` into ``root/folder``."""
    res = {k: arrays[k] for k in RES_KEYS if k in arrays and k not in drop}
    att = {k: v for k, v in arrays.items() if k not in RES_KEYS and k not in drop}
    d = root / folder
    return save_mat(d / "res101.mat", res), save_mat(d / "att_splits.mat", att)


def loaded_split_fingerprint(d: Any) -> str:
    """The split fingerprint of a loaded ``ZSLData`` (0-based index sets, hashed 1-based)."""
    return splits.split_fingerprint(d.trainval_idx + 1, d.test_seen_idx + 1, d.test_unseen_idx + 1)


def loader_standard(d: Any) -> bool:
    """Whether ``load_xlsa17`` found the dataset standard (the runner's checks, against the
    benchmark the plugin declares)."""
    return bool(d.source["standard"])


def loader_reason(d: Any) -> str:
    return str(d.source["reason"])


def registry_for(arrays: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """A registry entry describing ``arrays`` (counts, dims, every pinned fingerprint), based on
    ``base``: the miniature declared as the official benchmark."""
    labels = np.asarray(arrays["labels"]).ravel().astype(int)
    tv, ts, tu = (np.asarray(arrays[k]).ravel().astype(int) for k in splits.SPLIT_KEYS)
    val_loc = np.asarray(arrays["val_loc"] if "val_loc" in arrays else [], dtype=int).ravel()
    val_classes = np.unique(labels[val_loc - 1] - 1)
    entry = dict(base)
    entry.update(
        n_images=int(labels.size),
        n_trainval=int(tv.size),
        n_test_seen=int(ts.size),
        n_test_unseen=int(tu.size),
        n_classes=int(np.asarray(arrays["att"]).shape[1]),
        n_seen=int(np.unique(labels[tv - 1]).size),
        n_unseen=int(np.unique(labels[tu - 1]).size),
        attribute_dim=int(np.asarray(arrays["att"]).shape[0]),
        feature_dim=int(np.asarray(arrays["features"]).shape[0]),
        split_fingerprint=splits.split_fingerprint(tv, ts, tu),
        attributes=fingerprints.attributes_fingerprint(np.asarray(arrays["att"]).T),
        labels=fingerprints.labels_fingerprint(labels - 1),
        val_classes=hashlib.sha256(fingerprints.val_classes_text(val_classes).encode()).hexdigest(),
        n_val_classes=int(val_classes.size),
    )
    return entry


def patch_registry(monkeypatch: pytest.MonkeyPatch, name: str, entry: dict[str, Any]) -> None:
    """Make ``checks.load_registry()`` return the real registry with ``name`` replaced by ``entry``."""
    real = checks.load_registry

    def patched() -> dict[str, Any]:
        reg = real()
        reg["datasets"][name] = entry
        return reg

    monkeypatch.setattr(checks, "load_registry", patched)


@dataclass
class Mini:
    """A miniature dataset written as ``<data_dir>/AWA2`` and registered as the official ``awa2``."""

    data_dir: Path
    arrays: dict[str, Any]
    res101: Path
    att_splits: Path
    entry: dict[str, Any] = field(default_factory=dict)

    def rewrite(self, arrays: dict[str, Any], drop: tuple[str, ...] = ()) -> None:
        write_dataset(self.data_dir, "AWA2", arrays, drop=drop)


@pytest.fixture
def mini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Mini:
    arrays = mini_arrays()
    res, att = write_dataset(tmp_path, "AWA2", arrays)
    entry = registry_for(arrays, checks.load_registry()["datasets"]["awa2"])
    patch_registry(monkeypatch, "awa2", entry)
    monkeypatch.delenv("ZSLBENCH_DATA", raising=False)
    return Mini(tmp_path, arrays, res, att, entry)


def awa2_like_labels(shared: Path) -> np.ndarray:
    """The real AWA2 per-image labels (1-based, 37322), reconstructed in ../shared/data."""
    return np.load(shared / "AWA2" / "derived" / "labels_reconstructed_1based.npy")


def write_awa2_res101(path: Path, labels_1based: np.ndarray, seed: int = 0) -> Path:
    """A full-size ``res101.mat`` for the given labels: 2048 x N float32 features (for AWA2, with
    the real labels, 2048 x 37322).

    Features are a class prototype scaled per image (cheap to generate, finite, non-negative like
    ReLU features); stored float32 to halve the file (the loader accepts any numeric class).
    """
    rng = np.random.default_rng(seed)
    protos = rng.uniform(0.0, 1.0, size=(int(labels_1based.max()), 2048)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, size=(labels_1based.size, 1)).astype(np.float32)
    feats = protos[labels_1based - 1] * scale  # (N, 2048) C-order == (2048, N) F-order
    return save_mat(
        path, {"features": feats.T, "labels": labels_1based.reshape(-1, 1).astype(np.float64)}
    )


@pytest.fixture(scope="session")
def awa2_full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with the REAL AWA2 att_splits.mat (linked, not copied) and a generated res101.mat.

    Built once per session, cache included; tests that vary the split link to it (see ``awa2_variant``).
    """
    shared = require_shared()
    root = tmp_path_factory.mktemp("awa2_full")
    (root / "AWA2").mkdir()
    write_awa2_res101(root / "AWA2" / "res101.mat", awa2_like_labels(shared))
    os.symlink(shared / "AWA2" / "att_splits.mat", root / "AWA2" / "att_splits.mat")
    from zslbench_plugins.xlsa17.loader import load_xlsa17

    load_xlsa17("awa2", root)  # builds the cache once
    return root


def awa2_variant(awa2_full: Path, target: Path, att_splits: dict[str, Any] | Path) -> Path:
    """A data dir sharing ``awa2_full``'s res101.mat and cache, with another ``att_splits.mat``."""
    (target / "AWA2").mkdir(parents=True)
    os.symlink(awa2_full / "AWA2" / "res101.mat", target / "AWA2" / "res101.mat")
    os.symlink(awa2_full / ".cache", target / ".cache")
    if isinstance(att_splits, Path):
        shutil.copyfile(att_splits, target / "AWA2" / "att_splits.mat")
    else:
        save_mat(target / "AWA2" / "att_splits.mat", att_splits)
    return target


def plausible_labels(
    split: dict[str, Any], n_seen: int, n_unseen: int, n_val: int = 0
) -> np.ndarray:
    """0-based labels consistent with a real split file whose per-image labels are unknown.

    Seen classes cycle over trainval and over test_seen, unseen classes over test_unseen, so
    every class has images and every Split V2.0 invariant that holds for the real labels holds.
    With ``n_val``, the images of ``val_loc`` cycle over the first ``n_val`` seen classes and the
    other seen images over the rest, so that the file's validation images make ``n_val``
    validation classes, as with the real labels.
    """
    tv, ts, tu = (np.asarray(split[k]).ravel().astype(int) - 1 for k in splits.SPLIT_KEYS)
    labels = np.empty(tv.size + ts.size + tu.size, dtype=np.int64)
    in_val = np.zeros(labels.size, dtype=bool)
    if n_val and split.get("val_loc") is not None:
        in_val[np.asarray(split["val_loc"]).ravel().astype(int) - 1] = True
    else:
        n_val = 0
    for idx in (tv, ts):
        val, other = idx[in_val[idx]], idx[~in_val[idx]]
        if n_val:
            labels[val] = np.arange(val.size) % n_val
        labels[other] = n_val + np.arange(other.size) % (n_seen - n_val)
    labels[tu] = n_seen + np.arange(tu.size) % n_unseen
    return labels


@pytest.fixture
def xlsa17_all(awa2_full: Path):
    """``awa2_full`` plus the other four REAL split files (linked) with generated features.

    Added to the session's AWA2 data dir (sharing its cache) and removed again afterwards, since
    the four generated res101.mat files and their cache take about 1.2 GB of temporary disk.
    """
    shared = require_shared()
    added = []
    try:
        for name, folder in FOLDERS.items():
            if name == "awa2":
                continue
            e = checks.registry_entry(name)
            split = load_split_file(shared / folder / "att_splits.mat")
            (awa2_full / folder).mkdir()
            added.append(folder)
            write_awa2_res101(
                awa2_full / folder / "res101.mat",
                plausible_labels(split, e["n_seen"], e["n_unseen"], e["n_val_classes"]) + 1,
            )
            os.symlink(shared / folder / "att_splits.mat", awa2_full / folder / "att_splits.mat")
        yield awa2_full
    finally:
        for folder in added:
            shutil.rmtree(awa2_full / folder, ignore_errors=True)
            shutil.rmtree(awa2_full / ".cache" / folder, ignore_errors=True)


def load_split_file(path: Path) -> dict[str, Any]:
    return {k: v for k, v in scipy.io.loadmat(str(path)).items() if not k.startswith("__")}


def data_cli(args: list[str]) -> Any:
    """``zslbench data ARGS``, in this process, through ``zslbench.cli.main``."""
    return invoke_main("data", *args)
