"""`zslbench features extract`, end to end on generated images with a small randomly initialised CNN
(a `module:callable` backbone), and `timm:NAME` through a stand-in `timm` module: the tests hold
whether or not the real timm imports here (it needs a torchvision matching this torch)."""

from __future__ import annotations

import errno
import json
import os
import re
import sys
import types
import zlib
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


def test_without_timm_a_timm_backbone_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "timm", None)  # as where timm is not installed
    like, images, listing = _benchmark(tmp_path)
    res = _extract_with(like, images, listing, tmp_path / "t", "timm:resnet18")
    assert res.exit_code != 0 and "zslbench[timm]" in res.stderr
    _assert_one_line(res)


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


# -- what extract refuses: one line naming the input, never "internal error" -------------------
PROGRESS = re.compile(r": \d+/\d+ images \(ETA \d+ s\)$")


def _assert_one_line(res) -> None:
    assert res.exit_code not in (0, 1), res.output  # 1 is the internal-error exit
    assert "internal error" not in res.output and "Traceback" not in res.output
    # the progress lines of the batches done before the failure are not part of the error
    lines = [x for x in res.stderr.strip().splitlines() if not PROGRESS.search(x)]
    assert len(lines) == 1, res.stderr


def _extract_with(like: Path, images: Path, listing: Path, out: Path, backbone: str, *extra: str):
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
        backbone,
        "--out",
        str(out),
        "--batch-size",
        "16",
        "--image-size",
        "16",
        *extra,
    )


class Misbehaving(torch.nn.Module):
    """The tiny CNN's output bent as a broken backbone would bend it."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.net, self.how, self.calls = TinyCNN(), how, 0

    def forward(self, x: torch.Tensor):
        self.calls += 1
        rows = self.net(x)
        if self.how == "raises":
            raise RuntimeError("shape mismatch in layer 3")
        if self.how == "fewer":
            return rows[:-1]
        if self.how == "more":
            return torch.cat([rows, rows[:1]])
        if self.how == "scalar":
            return rows.sum()
        if self.how == "string":
            return "features"
        if self.how == "nan":
            rows[2, 0] = float("nan")
            return rows
        if self.how == "width":  # another width from the second batch on
            return rows if self.calls == 1 else torch.cat([rows, rows], dim=1)
        return rows


def misbehaving(how: str):
    return lambda: Misbehaving(how)


raises, fewer, more, scalar, string, nan, width = (
    misbehaving(h) for h in ("raises", "fewer", "more", "scalar", "string", "nan", "width")
)


def broken_factory() -> torch.nn.Module:
    raise ValueError("no such layer")


def _bomb_png(path: Path, side: int = 20000) -> None:
    """A PNG whose header claims ``side`` x ``side`` pixels (Pillow refuses it when opened)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
        )

    ihdr = side.to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0"))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    ("backbone", "says"),
    [
        ("raises", "RuntimeError: shape mismatch in layer 3"),
        ("fewer", "returned shape (15, 8) for the 16 images"),
        ("more", "returned shape (17, 8) for the 16 images"),
        ("scalar", "returned shape () for the 16 images"),
        ("string", "returned a str, not a tensor"),
        ("nan", "NaN or infinite features (first for"),
        ("width", "returned 16-d rows after 8-d rows"),
        ("broken_factory", "ValueError: no such layer"),
    ],
)
def test_a_backbone_that_breaks_its_contract_is_one_line_and_leaves_no_features(
    tmp_path: Path, backbone: str, says: str
) -> None:
    """Fewer rows once wrote zero rows and a complete folder; more rows, another width, NaN,
    a scalar, a string or an exception were internal errors or silently stored."""
    like, images, listing = _benchmark(tmp_path)
    out = tmp_path / "out"
    res = _extract_with(like, images, listing, out, f"tests.plugins.test_features:{backbone}")
    _assert_one_line(res)
    assert (
        says in res.stderr
        and "tests.plugins.test_features" in res.stderr
        or backbone in (res.stderr)
    )
    assert not (out / "features.npy").exists()
    if (out / "extract.json").exists():
        assert json.loads((out / "extract.json").read_text())["complete"] is False


def test_hostile_inputs_of_extract_are_one_line_naming_the_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    like, images, listing = _benchmark(tmp_path)
    rel = listing.read_text().splitlines()

    def with_line(i: int, line: str) -> Path:
        lines = list(rel)
        lines[i] = line
        path = tmp_path / f"list{i}.txt"
        path.write_text("\n".join(lines) + "\n")
        return path

    def tiny(listing_: Path, out: str, *extra: str):
        return _extract(like, images, listing_, tmp_path / out, *extra)

    _bomb_png(images / rel[5])
    res = tiny(listing, "bomb")
    _assert_one_line(res)
    assert rel[5] in res.stderr and "DecompressionBombError" in res.stderr

    _bomb_png(images / rel[5], side=20)  # a damaged image (its pixels are missing)
    res = tiny(listing, "damaged")
    _assert_one_line(res)
    assert rel[5] in res.stderr
    Image.fromarray(np.zeros((20, 24, 3), np.uint8)).save(images / rel[5])

    outside = tmp_path / "secret.png"
    Image.fromarray(np.zeros((20, 24, 3), np.uint8)).save(outside)
    for i, line in ((0, str(outside)), (3, "../secret.png")):
        res = tiny(with_line(i, line), f"escape{i}")
        _assert_one_line(res)
        assert f":{i + 1}: image {line!r} is not a path inside --images" in res.stderr

    res = _extract_with(like, images, listing, tmp_path / "m", ":make")
    _assert_one_line(res)
    assert "--backbone ':make' is not" in res.stderr

    res = tiny(listing, "nl", "--name", "vit\n")
    _assert_one_line(res)
    assert "--name: the backbone name 'vit\\n' is not a name" in res.stderr

    res = tiny(listing, "w", "--weights", "random")
    _assert_one_line(res)
    assert "--weights is for timm:NAME" in res.stderr

    if not torch.cuda.is_available():
        res = tiny(listing, "gpu", "--device", "cuda")
        _assert_one_line(res)
        assert "--device cuda: this torch build sees no CUDA device" in res.stderr

    res = tiny(listing, "big", "--image-size", "60000")  # click's usage error: exit 2, no trace
    assert res.exit_code == 2 and "internal error" not in res.output
    assert "Invalid value for '--image-size': 60000 is not in the range 8<=x<=1024" in res.stderr

    from zslbench_plugins import features

    for code, where in ((errno.EROFS, "manifest"), (errno.ENOSPC, "memmap")):

        def fail(*args, code=code, **kwargs):
            raise OSError(code, os.strerror(code))

        with monkeypatch.context() as m:
            if where == "manifest":
                m.setattr(features, "_write_manifest", fail)
            else:
                m.setattr(np.lib.format, "open_memmap", fail)
            res = tiny(listing, f"disk{code}")
        _assert_one_line(res)
        assert f"--out {tmp_path / f'disk{code}'}: OSError" in res.stderr
        assert os.strerror(code) in res.stderr


def test_a_link_planted_as_the_partial_file_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    like, images, listing = _benchmark(tmp_path)
    out = tmp_path / "cut"
    monkeypatch.setenv(FAIL_AFTER, "1")
    assert _extract(like, images, listing, out).exit_code == 130
    target = tmp_path / "victim.txt"
    target.write_text("mine")
    (out / "features.npy.partial").unlink()
    (out / "features.npy.partial").symlink_to(target)
    res = _extract(like, images, listing, out)
    _assert_one_line(res)
    assert "features.npy.partial, a link or special file" in res.stderr
    assert target.read_text() == "mine" and (out / "features.npy.partial").is_symlink()
    assert not (out / "features.npy").exists()


def test_cubs_images_txt_is_read_by_its_path_column(tmp_path: Path) -> None:
    """CUB's ``images.txt`` is ``<id> <path>``: the id column was read as the path."""
    like, images, listing = _benchmark(tmp_path)
    cub = tmp_path / "cub_images.txt"
    cub.write_text("".join(f"{i} {r}\n" for i, r in enumerate(listing.read_text().split(), 1)))
    by_txt, by_cub = tmp_path / "txt", tmp_path / "cub"
    assert _extract(like, images, listing, by_txt).exit_code == 0
    res = _extract(like, images, cub, by_cub)
    assert res.exit_code == 0, res.output
    assert np.array_equal(np.load(by_cub / "features.npy"), np.load(by_txt / "features.npy"))


# -- timm:NAME through a stand-in timm module -----------------------------------------------
@pytest.fixture
def stand_in_timm(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """A ``timm`` whose ``create_model`` records its arguments and gives the tiny CNN (its
    classifier already removed), or raises as timm does offline for ``offline*`` names."""
    from zslbench_plugins.features import default_preprocess

    calls: list[dict] = []

    def create_model(name: str, **kwargs):
        calls.append({"name": name, **kwargs})
        if name.startswith("offline") and kwargs.get("pretrained"):
            raise OSError(
                "We couldn't connect to 'https://huggingface.co' to load the files, and "
                "couldn't find them in the cached files.\nCheck your internet connection."
            )
        return TinyCNN()

    data = types.SimpleNamespace(
        resolve_data_config=lambda args, model: {"size": 16},
        create_transform=lambda size: default_preprocess(size),
    )
    monkeypatch.setitem(
        sys.modules, "timm", types.SimpleNamespace(create_model=create_model, data=data)
    )
    return calls


def test_timm_backbones_with_hub_random_or_local_weights(
    tmp_path: Path, stand_in_timm: list[dict]
) -> None:
    import hashlib

    like, images, listing = _benchmark(tmp_path)
    res = _extract_with(like, images, listing, tmp_path / "hub", "timm:tiny")
    assert res.exit_code == 0, res.output
    assert stand_in_timm[-1] == {"name": "tiny", "num_classes": 0, "pretrained": True}
    assert str(np.load(tmp_path / "hub" / "backbone.npy")) == "tiny"

    res = _extract_with(like, images, listing, tmp_path / "rnd", "timm:tiny", "--weights", "random")
    assert res.exit_code == 0, res.output
    assert stand_in_timm[-1] == {"name": "tiny", "num_classes": 0, "pretrained": False}
    assert str(np.load(tmp_path / "rnd" / "backbone.npy")) == "tiny+random"
    assert json.loads((tmp_path / "rnd" / "extract.json").read_text())["weights"] == "random"

    ckpt = tmp_path / "tiny.pth"
    torch.save(TinyCNN().state_dict(), ckpt)
    res = _extract_with(like, images, listing, tmp_path / "ck", "timm:tiny", "--weights", str(ckpt))
    assert res.exit_code == 0, res.output
    assert stand_in_timm[-1]["pretrained_cfg_overlay"] == {"file": str(ckpt)}
    sha = hashlib.sha256(ckpt.read_bytes()).hexdigest()[:8]
    assert str(np.load(tmp_path / "ck" / "backbone.npy")) == f"tiny+ckpt-{sha}"

    # one folder, other weights: refused, not mixed
    res = _extract_with(
        like, images, listing, tmp_path / "rnd", "timm:tiny", "--name", "tiny+random"
    )
    _assert_one_line(res)
    assert "was extracted with" in res.stderr

    res = _extract_with(
        like, images, listing, tmp_path / "x", "timm:tiny", "--weights", str(tmp_path / "no.pth")
    )
    _assert_one_line(res)
    assert "no such checkpoint file" in res.stderr


def test_timm_weights_missing_offline_are_one_line_naming_the_model_and_the_fix(
    tmp_path: Path, stand_in_timm: list[dict]
) -> None:
    like, images, listing = _benchmark(tmp_path)
    res = _extract_with(like, images, listing, tmp_path / "o", "timm:offline_net")
    _assert_one_line(res)
    assert "--backbone timm:offline_net: OSError: We couldn't connect" in res.stderr
    assert "--weights PATH (a local checkpoint) or --weights random" in res.stderr
    assert not (tmp_path / "o").exists()
    res = _extract_with(
        like, images, listing, tmp_path / "o", "timm:offline_net", "--weights", "random"
    )
    assert res.exit_code == 0, res.output


def test_open_clip_weights_missing_offline_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def create(arch, pretrained=None):
        raise OSError("Cannot find the requested files in the disk cache (HF_HUB_OFFLINE=1)")

    monkeypatch.setitem(
        sys.modules, "open_clip", types.SimpleNamespace(create_model_and_transforms=create)
    )
    like, images, listing = _benchmark(tmp_path)
    res = _extract_with(like, images, listing, tmp_path / "o", "open_clip:ViT-B-32/openai")
    _assert_one_line(res)
    assert "--backbone open_clip:ViT-B-32/openai: OSError: Cannot find" in res.stderr
    assert "connect once, or give a checkpoint path as PRETRAINED" in res.stderr


def test_a_real_timm_model_with_random_weights_where_timm_imports(tmp_path: Path) -> None:
    """The real timm, where a torchvision matching this torch is installed (the stand-in tests
    above hold everywhere): random weights need no network."""
    try:
        import timm  # noqa: F401
    except Exception as exc:  # not installed, or PyPI's torchvision beside a CPU torch
        pytest.skip(f"timm does not import here ({type(exc).__name__})")
    like, images, listing = _benchmark(tmp_path)
    out = tmp_path / "r10"
    res = _extract_with(like, images, listing, out, "timm:resnet10t", "--weights", "random")
    assert res.exit_code == 0, res.output
    assert str(np.load(out / "backbone.npy")) == "resnet10t+random"
    feats = np.load(out / "features.npy")
    assert feats.shape[0] == 108 and np.isfinite(feats).all()
