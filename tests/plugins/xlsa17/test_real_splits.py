"""The registry against the REAL xlsa17 split files in ../shared/data (skipped when absent).

Pins: the official V2.0 fingerprints and counts of all five datasets; that re-saved copies with the
same index sets match; that every real split passes every check; the known leak of the 2018
train_loc/val_loc (exact counts); and the real AWA2 split through the full loader.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.plugins.xlsa17.helpers import (
    FOLDERS,
    awa2_like_labels,
    awa2_variant,
    data_cli,
    load_split_file,
    loaded_split_fingerprint,
    loader_reason,
    loader_standard,
    plausible_labels,
    require_shared,
    shared_data_dir,
)
from zslbench.data import splits
from zslbench.data.checks import check_dataset
from zslbench.data.dataset import ZSLData
from zslbench.errors import SplitError
from zslbench_plugins.xlsa17 import checks
from zslbench_plugins.xlsa17.loader import benchmark, load_xlsa17

REGISTRY = checks.load_registry()["datasets"]
NAMES = list(FOLDERS)


def _alt_files() -> list[tuple[str, str]]:
    root = shared_data_dir()
    if root is None:
        return [("awa2", "<shared data absent>")]
    return [
        (name, str(p.relative_to(root)))
        for name, folder in FOLDERS.items()
        for p in sorted((root / folder / "alt").glob("*/att_splits*.mat"))
    ]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _readme_shas(root: Path) -> dict[str, str]:
    text = (root / "README.md").read_text()
    return {m.group(2): m.group(1) for m in re.finditer(r"^([0-9a-f]{64})  \./(\S+)$", text, re.M)}


@pytest.mark.parametrize("name", NAMES)
def test_registry_matches_primary_file(name: str) -> None:
    root = require_shared()
    e = REGISTRY[name]
    path = root / e["folder"] / "att_splits.mat"
    m = load_split_file(path)
    tv, ts, tu = (m[k].ravel().astype(int) for k in splits.SPLIT_KEYS)
    assert splits.split_fingerprint(tv, ts, tu) == e["split_fingerprint"]
    assert (tv.size, ts.size, tu.size) == (e["n_trainval"], e["n_test_seen"], e["n_test_unseen"])
    assert m["att"].shape == (e["attribute_dim"], e["n_classes"])
    assert max(tv.max(), ts.max(), tu.max()) == e["n_images"] == tv.size + ts.size + tu.size
    sha = _sha(path)
    assert sha == _readme_shas(root)[f"{e['folder']}/att_splits.mat"]
    assert e["known_files"]["att_splits.mat"][sha]["original"] is True


def test_registry_counts_are_the_papers() -> None:
    # Table 1 of the paper / Xian et al.: seen+unseen classes and attribute dims.
    got = {
        n: (REGISTRY[n]["n_seen"], REGISTRY[n]["n_unseen"], REGISTRY[n]["attribute_dim"])
        for n in NAMES
    }
    assert got == {
        "awa1": (40, 10, 85),
        "awa2": (40, 10, 85),
        "apy": (20, 12, 64),
        "cub": (150, 50, 312),
        "sun": (645, 72, 102),
    }


@pytest.mark.parametrize("name, rel", _alt_files())
def test_alt_resaves_have_the_official_fingerprint(name: str, rel: str) -> None:
    root = require_shared()
    m = load_split_file(root / rel)
    fp = splits.split_fingerprint(*(m[k] for k in splits.SPLIT_KEYS))
    assert fp == REGISTRY[name]["split_fingerprint"]
    sha = _sha(root / rel)
    assert sha == _readme_shas(root)[rel]
    known = REGISTRY[name]["known_files"]["att_splits.mat"][sha]
    assert known["path_in_shared_data"] == rel and known["same_index_sets"] is True
    assert known["original"] is False


def test_alt_differences_are_recorded() -> None:
    """Which re-saves differ from the primary file, and how (they differ only outside the 3 sets)."""
    require_shared()
    differs = {
        v["path_in_shared_data"]: v["differs"]
        for n in NAMES
        for v in REGISTRY[n]["known_files"]["att_splits.mat"].values()
        if not v["original"]
    }
    assert differs["AWA2/alt/e96031413_tfvaegan/att_splits.mat"].startswith(
        "train_loc/val_loc regenerated"
    )
    assert differs["AWA1/alt/StefanDurhamUK_SG-ZSL/att_splits.mat"].startswith(
        "train_loc/val_loc as in the primary file (overlap with test_seen_loc: 4958)"
    )
    assert (
        differs["SUN/alt/cetinsamet_attribute-label-embedding/att_splits.mat"]
        == "no train_loc/val_loc"
    )


@pytest.mark.parametrize("name, leak", [("awa1", 4958), ("awa2", 5882), ("sun", 2580)])
def test_2018_train_val_contain_test_seen_images(name: str, leak: int) -> None:
    root = require_shared()
    m = load_split_file(root / FOLDERS[name] / "att_splits.mat")
    trval = set(m["train_loc"].ravel().tolist()) | set(m["val_loc"].ravel().tolist())
    assert len(trval & set(m["test_seen_loc"].ravel().tolist())) == leak
    assert REGISTRY[name]["train_val_overlap_with_test_seen"] == leak
    # ... while test_seen and trainval themselves are disjoint (that is what V2.0 fixed)
    assert not set(m["trainval_loc"].ravel().tolist()) & set(m["test_seen_loc"].ravel().tolist())


@pytest.mark.parametrize("name", NAMES)
def test_real_splits_pass_every_check_against_the_declared_benchmark(name: str) -> None:
    """Every real split file, as the runner sees it, is the benchmark the plugin declares: the
    files' own checks pass, and the runner's checks find every pinned part (split, attribute
    matrix, counts, dims; labels and validation classes where pinned) equal."""
    root = require_shared()
    e = REGISTRY[name]
    path = root / e["folder"] / "att_splits.mat"
    m = load_split_file(path)
    labels = (
        awa2_like_labels(root) - 1
        if name == "awa2"
        else plausible_labels(m, e["n_seen"], e["n_unseen"], e["n_val_classes"])
    )
    assert checks.check_attributes(str(path), m["att"]) == []
    assert checks.check_labels("res101.mat", labels + 1, m["att"].shape[1], str(path)) == []
    loc = {k: m[k].ravel().astype(np.int64) - 1 for k in (*splits.SPLIT_KEYS, "val_loc") if k in m}
    data = ZSLData(
        name=name,
        features=np.ones((labels.size, 2048), np.float32)
        + np.eye(labels.size, 2048, dtype=np.float32),
        labels=labels,
        attributes=m["att"].T.astype(np.float32),
        trainval_idx=loc["trainval_loc"],
        test_seen_idx=loc["test_seen_loc"],
        test_unseen_idx=loc["test_unseen_loc"],
        val_classes=np.unique(labels[loc["val_loc"]]) if "val_loc" in loc else None,
        split_naming=replace(splits.XLSA17_NAMING, file=str(path)),
    )
    declared = benchmark(name)
    verdict = check_dataset(data, "real", benchmark=declared, allow_nonstandard=True)
    assert verdict.official == name and verdict.revision == "Split V2.0"
    # The one CUB file there is a 2019 re-save without train_loc/val_loc: it has no validation
    # classes, where the benchmark has 50, so it runs only as non-standard.
    assert [f.check for f in verdict.problems] == (["val-classes"] if name == "cub" else [])
    # What the declaration pins was recomputed here from the real file; what it does not pin is
    # what no real res101.mat could tell (labels of four datasets, their validation classes).
    assert declared.attributes == verdict.parts["attributes"] == e["attributes"]
    pinned = ("attributes", "labels", "val_classes") if name == "awa2" else ("attributes",)
    assert verdict.unverified == tuple(
        p for p in ("attributes", "labels", "val_classes", "features") if p not in pinned
    )


# ------------------------------------------------------------ the real AWA2 split, full loader

AWA2_VAL_CLASSES_1BASED = [4, 5, 12, 15, 16, 20, 21, 25, 26, 29, 39, 40, 48]


def test_real_awa2_loads_as_standard(awa2_full: Path) -> None:
    d = load_xlsa17("awa2", awa2_full)
    assert loader_standard(d) and loader_reason(d) == ""
    assert loaded_split_fingerprint(d) == REGISTRY["awa2"]["split_fingerprint"]
    assert d.features.shape == (37322, 2048) and d.features.dtype == np.float32
    assert (d.trainval_idx.size, d.test_seen_idx.size, d.test_unseen_idx.size) == (
        23527,
        5882,
        7913,
    )
    assert len(d.seen_classes) == 40 and len(d.unseen_classes) == 10
    assert d.val_classes.tolist() == [c - 1 for c in AWA2_VAL_CLASSES_1BASED]
    assert set(d.val_classes) <= set(d.seen_classes)
    assert not np.intersect1d(d.trainval_idx, d.test_seen_idx).size
    assert d.class_names[0] == "antelope" and len(d.class_names) == 50
    assert "Hanzy1996/CE-GZSL" in d.source["att_splits_known"]
    # the 0-based indices point at the same images as the file's 1-based ones
    m = load_split_file(awa2_full / "AWA2" / "att_splits.mat")
    assert np.array_equal(d.test_unseen_idx, m["test_unseen_loc"].ravel().astype(int) - 1)
    # ... and the runner's contract takes it for the official AWA2, every pinned part equal (the
    # generated features are not the real ones, and the declaration does not pin features)
    verdict = check_dataset(d, "real", benchmark=benchmark("awa2"))
    assert verdict.standard and verdict.official == "awa2" and verdict.unverified == ("features",)


def _real_awa2_split() -> dict:
    return load_split_file(require_shared() / "AWA2" / "att_splits.mat")


def _leaky(m: dict) -> dict:
    m = dict(m)
    m["trainval_loc"] = np.concatenate([m["trainval_loc"], m["test_seen_loc"]])
    return m


def _altered(m: dict) -> dict:
    """Swap one trainval and one test_seen image of the same class: every invariant still holds."""
    labels = awa2_like_labels(require_shared())
    m = dict(m)
    tv, ts = m["trainval_loc"].copy(), m["test_seen_loc"].copy()
    i = 0
    j = int(np.flatnonzero(labels[ts.ravel() - 1] == labels[tv[i, 0] - 1])[0])
    tv[i, 0], ts[j, 0] = ts[j, 0], tv[i, 0]
    m["trainval_loc"], m["test_seen_loc"] = tv, ts
    return m


@pytest.mark.parametrize("variant, check", [(_leaky, "disjoint"), (_altered, "fingerprint")])
def test_real_awa2_leaky_or_altered_copy_is_refused(
    awa2_full: Path, tmp_path: Path, variant, check
) -> None:
    root = awa2_variant(awa2_full, tmp_path / "d", variant(_real_awa2_split()))
    with pytest.raises(SplitError) as info:
        load_xlsa17("awa2", root)
    line = str(info.value)
    assert f"check '{check}' failed" in line and "att_splits.mat" in line and "\n" not in line
    assert "--allow-nonstandard-split" in line
    d = load_xlsa17("awa2", root, allow_nonstandard=True)
    assert not loader_standard(d) and f"check '{check}' failed" in loader_reason(d)
    res = data_cli(["verify", "--dataset", "awa2", "--data-dir", str(root)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    errs = res.stderr.strip().splitlines()
    assert len(errs) == 1 and f"check '{check}' failed" in errs[0]


def test_verify_real_awa2_prints_a_clean_table(awa2_full: Path) -> None:
    res = data_cli(["verify", "--dataset", "awa2", "--data-dir", str(awa2_full)])
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    assert (
        "✓ official 86a28169976b" in res.stdout
        and "37322×2048" in res.stdout
        and "OK" in res.stdout
    )
    assert "23527/5882/7913" in res.stdout and "85×50" in res.stdout


def test_verify_all_five_real_split_files_says_what_run_would(xlsa17_all: Path) -> None:
    """The real split files of all five datasets, with generated full-size features."""
    res = data_cli(["verify", "--data-dir", str(xlsa17_all)])
    assert res.exit_code == 1, res.output
    for name in NAMES:
        e = REGISTRY[name]
        assert f"✓ official {e['split_fingerprint'][:12]}" in res.stdout
        assert f"{e['n_images']}×2048" in res.stdout
        assert f"{e['attribute_dim']}×{e['n_classes']}" in res.stdout
    # verify makes the checks `run` makes: the CUB file there lacks val_loc (see above), so it is
    # not the complete benchmark; the other four are.
    assert res.stdout.count(" OK ") == 4 and "FAIL: val-classes" in res.stdout
    assert res.stderr.strip().splitlines() == [
        f"zslbench: error: {xlsa17_all / 'CUB' / 'att_splits.mat'}: 0 validation classes where the "
        "official cub has 50 (removed or cut?) — use the official data, or pass "
        "--allow-nonstandard-split to run it as non-standard (a non-standard run's records are "
        "kept off the standard leaderboard)"
    ]
