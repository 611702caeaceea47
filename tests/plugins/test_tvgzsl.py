"""TV-GZSL's per-backbone feature files (``<backbone>_<dataset>_data.p``) and ``.mat`` feature files in
xlsa17's layout, on the real AWA2 split file (read from ../shared/data; skipped when absent)."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from tests.cli_helpers import invoke_main
from tests.plugins.xlsa17.helpers import require_shared
from zslbench.data.checks import check_dataset
from zslbench.errors import DataError, SplitError
from zslbench_plugins import tvgzsl


def _awa2(tmp_path: Path, *, layout: str = "tv-gzsl") -> tuple[Path, np.ndarray]:
    """TV-GZSL's data folder: the real AWA2 att_splits.mat under RN101/AWA2, and its labels."""
    shared = require_shared()
    labels = np.load(shared / "AWA2" / "derived" / "labels_reconstructed_1based.npy")
    folder = tmp_path / "data" / "RN101" / "AWA2"
    folder.mkdir(parents=True)
    shutil.copy(shared / "AWA2" / "att_splits.mat", folder / "att_splits.mat")
    return tmp_path / "data", labels


def _features(labels: np.ndarray, dim: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(int(labels.max()), dim))
    return (means[labels - 1] + 0.3 * rng.normal(size=(labels.size, dim))).astype(np.float32)


def test_a_tvgzsl_file_is_the_benchmark_with_that_backbones_features(tmp_path: Path) -> None:
    data_dir, labels = _awa2(tmp_path)
    file = data_dir / "vit_b32_clip_awa2_data.p"
    with open(file, "wb") as fh:
        pickle.dump({"features": _features(labels), "labels": labels.reshape(-1, 1)}, fh)
    data = tvgzsl.read_tvgzsl(file)
    assert data.name == "awa2@vit_b32_clip" and data.backbone == "vit_b32_clip"
    assert data.features.shape == (37322, 8) and data.labels.min() == 0
    assert len(data.trainval_idx) == 23527 and len(data.test_unseen_idx) == 7913

    results = tmp_path / "results"
    res = invoke_main(
        "run",
        "--method",
        "eszsl",
        "--dataset",
        str(file),
        "--results-dir",
        str(results),
        "--set",
        "eszsl.gamma=1",
        "--set",
        "eszsl.lam=1",
    )
    assert res.exit_code == 0, res.output
    (path,) = results.glob("*.json")
    import json

    rec = json.loads(path.read_text())
    # the official AWA2 split, checked against every pin of the benchmark but the features'
    assert rec["dataset"] == "awa2@vit_b32_clip" and rec["dataset_kind"] == "real"
    assert rec["split"]["standard"] is True and rec["split"]["official"] == "awa2"
    assert rec["data"]["backbone"] == "vit_b32_clip" and rec["data"]["feature_dim"] == 8
    assert rec["split"]["parts"]["backbone"] == "vit_b32_clip"


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_a_pickle_that_asks_for_code_is_refused_not_run(tmp_path: Path) -> None:
    file = tmp_path / "vit_b32_clip_awa2_data.p"
    file.write_bytes(pickle.dumps({"features": _Evil(), "labels": np.ones(3)}))
    with pytest.raises(DataError) as err:
        tvgzsl.read_pickle(file)
    assert "posix.system" in str(err.value) or "os.system" in str(err.value)
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


@pytest.mark.parametrize(
    "name, says",
    [
        ("vit_b32_clip_imagenet_data.p", "is not <backbone>_<dataset>_data.p"),
        ("_awa2_data.p", "is not <backbone>_<dataset>_data.p"),
        ("vit/b32_awa2_data.p", None),
    ],
)
def test_file_names_that_do_not_name_a_backbone_and_benchmark(
    tmp_path: Path, name: str, says: str | None
) -> None:
    path = tmp_path / name
    if says is None:
        assert tvgzsl.parse_name(path) == ("awa2", "b32")  # the folder is not the name
        return
    with pytest.raises(DataError, match=says):
        tvgzsl.parse_name(path)


def test_the_split_checks_apply_labels_that_do_not_fit_the_split_file(tmp_path: Path) -> None:
    data_dir, labels = _awa2(tmp_path)
    file = data_dir / "resnet50_awa2_data.p"
    with open(file, "wb") as fh:  # 0-based labels: one line naming the file and the fix
        pickle.dump({"features": _features(labels), "labels": labels - 1}, fh)
    with pytest.raises(DataError) as err:
        tvgzsl.read_tvgzsl(file)
    assert str(file) in str(err.value) and "0-based" in err.value.one_line()

    with open(file, "wb") as fh:  # features of another image count than the split file's
        pickle.dump({"features": _features(labels)[:-5], "labels": labels[:-5]}, fh)
    with pytest.raises(DataError) as err:
        tvgzsl.read_tvgzsl(file)
    line = err.value.one_line()
    assert "att_splits.mat" in line and "37317 images" in line and "belong together" in line

    bad = labels.copy()  # a test-unseen image labelled with a seen class: the runner's split check
    unseen_image = (
        int(
            scipy.io.loadmat(data_dir / "RN101" / "AWA2" / "att_splits.mat")[
                "test_unseen_loc"
            ].ravel()[0]
        )
        - 1
    )
    bad[unseen_image] = labels[
        int(
            scipy.io.loadmat(data_dir / "RN101" / "AWA2" / "att_splits.mat")[
                "trainval_loc"
            ].ravel()[0]
        )
        - 1
    ]
    with open(file, "wb") as fh:
        pickle.dump({"features": _features(labels), "labels": bad}, fh)
    with pytest.raises(SplitError) as err:
        check_dataset(tvgzsl.read_tvgzsl(file), "real")
    assert "att_splits.mat" in err.value.one_line()


def test_a_missing_split_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZSLBENCH_DATA", str(tmp_path / "nothing"))
    file = tmp_path / "vit_b32_clip_cub_data.p"
    file.write_bytes(pickle.dumps({"features": np.ones((3, 2)), "labels": np.ones(3)}))
    with pytest.raises(DataError, match="no att_splits.mat for CUB"):
        tvgzsl.read_tvgzsl(file)


def test_a_mat_feature_file_in_xlsa17s_layout(tmp_path: Path) -> None:
    data_dir, labels = _awa2(tmp_path)
    file = data_dir / "RN101" / "AWA2" / "res101_finetuned.mat"
    scipy.io.savemat(
        file,
        {
            "features": _features(labels).T.astype(np.float64),
            "labels": labels.reshape(-1, 1).astype(np.float64),
        },
    )
    spec = tvgzsl.zslbench_open_dataset(str(file))
    assert spec is not None and spec.name == "awa2@res101_finetuned"
    data = spec.load(None)
    assert data.backbone == "res101_finetuned" and data.features.shape == (37322, 8)
    with pytest.raises(DataError, match="benchmark's own feature set"):
        tvgzsl.zslbench_open_dataset(str(file.with_name("res101.mat")))


def _hostile(tmp_path: Path) -> dict[str, tuple[bytes, str]]:
    """Files that once were internal errors, a 27.8 GiB array, or the wrong diagnosis."""
    row = [0.5] * 2048
    good = pickle.dumps({"features": [[1.0, 2.0], [3.0, 1.0]], "labels": [1, 2]})
    zipped = tmp_path / "x.zip"
    import zipfile

    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("features", "1")
    return {
        # 800 KB of pickle: 200000 references to one row of 2048 numbers (3.3 GB as float64)
        "shared": (
            pickle.dumps({"features": [row] * 200_000, "labels": [1] * 200_000}),
            "'features' is lists that would expand to 409600000 numbers from a",
        ),
        "nested": (
            pickle.dumps({"features": [[row] * 1000] * 10, "labels": [1] * 10}),
            "'features' nests lists deeper than rows of numbers",
        ),
        "ragged": (
            pickle.dumps({"features": [[1.0, 2.0], [3.0]], "labels": [1, 2]}),
            "'features' has rows of different lengths",
        ),
        "strings": (
            pickle.dumps({"features": [[1.0, 2.0], [3.0, 1.0]], "labels": ["a", "b"]}),
            "'labels' holds <U1 values, not numbers",
        ),
        "scalar": (
            pickle.dumps({"features": 3.0, "labels": [1]}),
            "'features' is a float, not an array of numbers",
        ),
        "truncated": (good[: len(good) // 2], "cannot read it as a pickle (UnpicklingError"),
        "zip": (zipped.read_bytes(), "cannot read it as a pickle (UnpicklingError"),
    }


@pytest.mark.parametrize(
    "case", ["shared", "nested", "ragged", "strings", "scalar", "truncated", "zip"]
)
def test_a_hostile_or_damaged_pickle_is_one_line_from_run(tmp_path: Path, case: str) -> None:
    data_dir, _ = _awa2(tmp_path)
    content, says = _hostile(tmp_path)[case]
    file = data_dir / f"{case}_awa2_data.p"
    file.write_bytes(content)
    res = invoke_main(
        "run", "--method", "krr", "--dataset", str(file), "--results-dir", str(tmp_path / "r")
    )
    assert res.exit_code == 2 and "internal error" not in res.output, res.output
    (line,) = [x for x in res.stderr.strip().splitlines() if not x.startswith("loading ")]
    assert line.startswith("zslbench: error: ") and str(file) in line
    assert says in res.stderr
    if case in ("truncated", "zip"):  # a damaged file, not a refused global: re-download it
        assert "re-download" in res.stderr and "never runs its code" not in res.stderr
