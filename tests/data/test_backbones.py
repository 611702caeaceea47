"""A dataset's backbone as part of its identity: records carry it, the key includes it (only when
it is not the benchmark's own), the board labels it, and ``compare`` never pairs two backbones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.cli_helpers import invoke_main
from tests.plugins.test_npz import arrays
from zslbench.data import backbones
from zslbench.data.checks import check_dataset
from zslbench.data.dataset import Benchmark
from zslbench.data.fingerprints import content_fingerprint
from zslbench.leaderboard.collect import dataset_label, dataset_order
from zslbench_plugins import npz
from zslbench_plugins.xlsa17.loader import benchmark


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(path.glob("*.json"))]


def _bench(backbone: str | None) -> Benchmark:
    return Benchmark(
        name="tiny",
        title="tiny",
        revision="v1",
        split="0" * 64,
        feature_dim=16,
        features="1" * 64,
        backbone=backbone,
    )


def test_the_benchmarks_own_backbone_keeps_the_fingerprint_another_enters_it(
    tmp_path: Path,
) -> None:
    data = npz.load_npz(npz.save_npz(tmp_path / "mine.npz", **arrays()))
    verdict = check_dataset(data, "custom")
    # the benchmark's own backbone, or none named: the fingerprint records were keyed by
    assert backbones.named(verdict, "res101", _bench("res101")) is verdict
    assert backbones.named(verdict, None, _bench("res101")) is verdict
    other = backbones.named(verdict, "vit_b32_clip", _bench("res101"))
    assert other.parts["backbone"] == "vit_b32_clip"
    assert other.fingerprint not in (
        verdict.fingerprint,
        backbones.named(verdict, "dino_vitb16", None).fingerprint,
    )
    # the same formula as check_dataset's, so that zslbench.records.validation recomputes it
    assert content_fingerprint(verdict.parts, verdict.features_hash) == verdict.fingerprint


def test_another_backbone_is_compared_with_every_pin_but_the_features() -> None:
    awa2 = benchmark("awa2")
    assert awa2.backbone == "res101" and awa2.feature_dim == 2048
    assert backbones.for_backbone(awa2, "res101") is awa2
    clip = backbones.for_backbone(awa2, "vit_b32_clip")
    assert clip is not None and clip.feature_dim is None and clip.features is None
    assert clip.split == awa2.split and clip.attributes == awa2.attributes


def test_records_carry_the_backbone_and_two_backbones_are_two_runs(tmp_path: Path) -> None:
    """One file named mine.npz, written with features of two backbones: two records (two keys),
    each naming its backbone; the file without a backbone keeps the plain content fingerprint."""
    results = tmp_path / "results"
    a = arrays()
    plain = npz.save_npz(tmp_path / "plain" / "mine.npz", **a)
    res = invoke_main(
        "run", "--method", "krr", "--dataset", str(plain), "--results-dir", str(results)
    )
    assert res.exit_code == 0, res.output
    (rec,) = _records(results)
    assert "backbone" not in rec["data"]
    assert rec["data"]["fingerprint"] == check_dataset(npz.load_npz(plain), "custom").fingerprint

    keys = {rec["key"]}
    for backbone in ("resnet50", "vit_b32_clip"):
        file = npz.save_npz(tmp_path / backbone / "mine.npz", **a, backbone=backbone)
        res = invoke_main(
            "run", "--method", "krr", "--dataset", str(file), "--results-dir", str(results)
        )
        assert res.exit_code == 0, res.output
        assert "cached" not in res.stdout
        new = [r for r in _records(results) if r["key"] not in keys]
        assert len(new) == 1 and new[0]["data"]["backbone"] == backbone
        assert new[0]["split"]["parts"]["backbone"] == backbone
        keys.add(new[0]["key"])
    assert len(keys) == 3
    # every record passes the claims check on read (its fingerprint recomputed from its parts)
    import zslbench

    runs = zslbench.load_results(results)
    assert sorted(runs["backbone"]) == ["", "resnet50", "vit_b32_clip"]
    assert runs.attrs["refused"] == []


def test_compare_refuses_runs_on_two_backbones_with_one_line(tmp_path: Path) -> None:
    results = tmp_path / "results"
    a = arrays()
    for method, backbone in (("krr", "resnet50"), ("eszsl", "vit_b32_clip")):
        file = npz.save_npz(tmp_path / backbone / "mine.npz", **a, backbone=backbone)
        res = invoke_main(
            "run", "--method", method, "--dataset", str(file), "--results-dir", str(results)
        )
        assert res.exit_code == 0, res.output
    res = invoke_main("compare", "krr", "eszsl", "--dataset", "mine", "--results-dir", str(results))
    assert res.exit_code != 0
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert "krr ran on backbone resnet50 and eszsl on backbone vit_b32_clip" in lines[0]
    assert "never paired" in lines[0] and "Traceback" not in res.output

    # the board: one dataset on two feature sets, each row labelled with what differs
    board = invoke_main("leaderboard", "--results-dir", str(results), "--out", str(tmp_path / "b"))
    assert board.exit_code == 0, board.output
    md = (tmp_path / "b" / "custom.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| `")]
    assert any(r.startswith("| `krr · backbone resnet50, not compared`") for r in rows), rows
    assert "of backbones vit_b32_clip, resnet50" in board.stderr


def test_the_board_labels_a_benchmarks_feature_set_of_another_backbone() -> None:
    assert dataset_label("awa2@vit_b32_clip", "real") == "AWA2 · vit_b32_clip"
    assert dataset_label("awa2", "real") == "AWA2"  # unchanged: committed boards stay as they are
    assert dataset_label("mine", "custom") == "mine"
    names = ["sun", "awa2@vit_b32_clip", "cub", "awa2"]
    assert sorted(names, key=dataset_order) == ["cub", "sun", "awa2", "awa2@vit_b32_clip"]


def test_a_backbone_name_is_checked_where_it_comes_from(tmp_path: Path) -> None:
    import pytest

    from zslbench.data.dataset import check_backbone
    from zslbench.errors import DataError

    assert (
        check_backbone("vit_base_patch16_224.augreg_in21k", where="x")
        == "vit_base_patch16_224.augreg_in21k"
    )
    # "vit\n": `$` matched before a trailing newline, so re.match let it through into records
    for bad in ("ViT B/32", "", "../x", "a" * 65, 3, "vit\n", "vit_b32_clip\n"):
        with pytest.raises(DataError, match="is not a name"):
            check_backbone(bad, where="plugin dataset 'toyb'")
    a = arrays()  # in a file: one line naming the file and the key
    path = npz.save_npz(tmp_path / "ok.npz", **a)
    np_arrays = dict(np.load(path))
    np_arrays["backbone"] = np.asarray("ViT B/32")
    np.savez(tmp_path / "bad.npz", **np_arrays)
    with pytest.raises(DataError) as err:
        npz.load_npz(tmp_path / "bad.npz")
    assert "bad.npz: 'backbone'" in err.value.one_line()
    np_arrays["backbone"] = np.asarray("vit\n")
    np.savez(tmp_path / "newline.npz", **np_arrays)
    with pytest.raises(DataError, match="is not a name"):
        npz.load_npz(tmp_path / "newline.npz")
