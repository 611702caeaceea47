"""`zslbench features extract`, end to end on generated images with a small randomly initialised CNN
(a `module:callable` backbone: timm and open_clip need a torchvision that does not import beside
this project's CPU torch, so they are not exercised here)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.cli_helpers import invoke_main
from tests.plugins.test_npz import arrays
from zslbench_plugins import npz

pytest.importorskip("PIL", reason="features extract reads images with Pillow (zslbench[features])")
from PIL import Image  # noqa: E402

#: Batches after which the CNN stops once, as a Ctrl-C would (the CLI imports this module by its
#: own name, so the flag goes through the environment, not a module global).
FAIL_AFTER = "ZSLBENCH_TEST_TINY_CNN_FAIL_AFTER"


class TinyCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3)
        with torch.no_grad():
            self.conv.weight.copy_(torch.randn(self.conv.weight.shape, generator=gen))
            self.conv.bias.zero_()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if os.environ.get(FAIL_AFTER) and self.calls > int(os.environ[FAIL_AFTER]):
            del os.environ[FAIL_AFTER]
            raise KeyboardInterrupt  # as a Ctrl-C in the middle of the run
        return torch.relu(self.conv(x)).mean(dim=(2, 3))


def tiny_cnn() -> torch.nn.Module:
    return TinyCNN()


def _benchmark(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A custom benchmark (npz) and one generated image per row: a colour per class, plus noise."""
    a = arrays()
    like = npz.save_npz(tmp_path / "bench.npz", **a)
    images = tmp_path / "images"
    rng = np.random.default_rng(0)
    colours = rng.integers(0, 256, size=(int(a["labels"].max()) + 1, 3))
    lines = []
    for i, label in enumerate(a["labels"]):
        pixels = np.clip(colours[label] + rng.normal(0, 20, size=(20, 24, 3)), 0, 255)
        rel = f"class{label}/img{i:04d}.png"
        (images / f"class{label}").mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels.astype(np.uint8)).save(images / rel)
        lines.append(rel)
    listing = tmp_path / "images.txt"
    listing.write_text("\n".join(lines) + "\n")
    return like, images, listing


def _extract(like: Path, images: Path, listing: Path, out: Path, *extra: str):
    return invoke_main(
        "features",
        "extract",
        "--images",
        str(images),
        "--list",
        str(listing),
        "--like",
        str(like),
        "--backbone",
        "tests.plugins.test_features:tiny_cnn",
        "--name",
        "tiny-cnn",
        "--out",
        str(out),
        "--batch-size",
        "16",
        "--image-size",
        "16",
        *extra,
    )


def test_extract_then_run_a_method_on_the_feature_set(tmp_path: Path) -> None:
    like, images, listing = _benchmark(tmp_path)
    out = tmp_path / "bench-tiny"
    res = _extract(like, images, listing, out)
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "extract.json").read_text())
    import hashlib

    assert manifest["complete"] is True and manifest["done"] == 108
    assert (
        manifest["features_sha256"]
        == hashlib.sha256((out / "features.npy").read_bytes()).hexdigest()
    )
    assert manifest["features_sha256"] in res.stderr
    feats = np.load(out / "features.npy")
    assert feats.shape == (108, 8) and np.isfinite(feats).all()

    results = tmp_path / "results"
    run = invoke_main(
        "run", "--method", "krr", "--dataset", str(out), "--results-dir", str(results)
    )
    assert run.exit_code == 0, run.output
    (rec,) = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert rec["dataset"] == "bench-tiny" and rec["data"]["backbone"] == "tiny-cnn"
    assert rec["data"]["feature_dim"] == 8 and rec["split"]["standard"] is True
    assert 0 <= rec["metrics"]["H"] <= 100  # random images and weights: any number, but measured

    again = _extract(like, images, listing, out)  # finished: nothing is redone
    assert again.exit_code == 0 and "already extracted" in again.stderr


def test_an_interrupted_extraction_continues_and_gives_the_same_features(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    like, images, listing = _benchmark(tmp_path)
    whole = tmp_path / "whole"
    assert _extract(like, images, listing, whole).exit_code == 0

    out = tmp_path / "cut"
    monkeypatch.setenv(FAIL_AFTER, "3")
    first = _extract(like, images, listing, out)
    assert first.exit_code == 130
    assert json.loads((out / "extract.json").read_text())["done"] == 48
    assert not (out / "features.npy").exists()
    second = _extract(like, images, listing, out)
    assert second.exit_code == 0, second.output
    assert "continuing at image 49 of 108" in second.stderr
    assert np.array_equal(np.load(out / "features.npy"), np.load(whole / "features.npy"))
    assert (
        json.loads((out / "extract.json").read_text())["features_sha256"]
        == json.loads((whole / "extract.json").read_text())["features_sha256"]
    )


def test_what_extract_refuses_is_one_line(tmp_path: Path) -> None:
    like, images, listing = _benchmark(tmp_path)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    res = _extract(like, images, listing, foreign)
    assert res.exit_code != 0 and "holds files this command did not write (notes.txt)" in res.stderr
    assert (foreign / "notes.txt").read_text() == "mine" and len(list(foreign.iterdir())) == 1

    short = tmp_path / "short.txt"
    short.write_text("\n".join(listing.read_text().splitlines()[:10]))
    res = _extract(like, images, short, tmp_path / "x")
    assert res.exit_code != 0 and "lists 10 images; dataset 'bench' has 108" in res.stderr

    out = tmp_path / "other"
    assert _extract(like, images, listing, out).exit_code == 0
    res = _extract(like, images, listing, out, "--name", "other-cnn")
    assert res.exit_code != 0 and "was extracted with backbone 'tiny-cnn'" in res.stderr

    res = invoke_main(
        "features",
        "extract",
        "--images",
        str(images),
        "--list",
        str(listing),
        "--like",
        str(like),
        "--backbone",
        "timm:resnet18",
        "--out",
        str(tmp_path / "t"),
    )
    assert res.exit_code != 0 and "zslbench[timm]" in res.stderr
    for out_text in (res.stderr,):
        assert "Traceback" not in out_text and len(out_text.strip().splitlines()) <= 2


def test_an_xlsa17_res101_mat_lists_the_images_in_the_benchmarks_order(tmp_path: Path) -> None:
    """``--list res101.mat``: its ``image_files`` are paths on the authors' machine; the shortest
    prefix that finds the first image under --images is dropped from every path."""
    import scipy.io

    like, images, listing = _benchmark(tmp_path)
    rel = listing.read_text().split()
    files = np.empty((len(rel), 1), dtype=object)
    for i, r in enumerate(rel):
        files[i, 0] = np.array([f"/BS/xian/work/data/Bench/images/{r}"])
    scipy.io.savemat(tmp_path / "res101.mat", {"image_files": files})
    by_txt, by_mat = tmp_path / "txt", tmp_path / "mat"
    assert _extract(like, images, listing, by_txt).exit_code == 0
    res = _extract(like, images, tmp_path / "res101.mat", by_mat)
    assert res.exit_code == 0, res.output
    assert np.array_equal(np.load(by_mat / "features.npy"), np.load(by_txt / "features.npy"))

    files[3, 0] = np.array(["/BS/xian/work/data/Bench/images/class0/missing.png"])
    scipy.io.savemat(tmp_path / "res101.mat", {"image_files": files})
    res = _extract(like, images, tmp_path / "res101.mat", tmp_path / "bad")
    assert res.exit_code != 0 and "image 4" in res.stderr and "missing.png" in res.stderr
