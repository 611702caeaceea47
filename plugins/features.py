"""``zslbench features extract``: a feature set of a benchmark's images, from any backbone.

A feature set is one row of features per image of a benchmark, in the benchmark's image order,
named by the backbone that computed it. ``extract`` reads the images listed in ``--list`` (one
path per line, relative to ``--images``; line ``i`` is the benchmark's image ``i``), runs them
through the backbone in batches (on the GPU when there is one), and writes a folder that
``zslbench run --dataset FOLDER`` reads (the npz plugin's folder layout: one ``<key>.npy`` per
key): the features, the backbone's name, and the labels, class semantics and index sets of the
dataset named by ``--like`` (``awa2``, ``mine.npz``: any dataset ``zslbench run`` reads, with as
many images as the list has lines).

Backbones (``--backbone``):

* ``timm:NAME`` (``timm:vit_base_patch16_224``): a timm model, pooled features
  (``num_classes=0``), its own preprocessing; needs ``pip install "zslbench[timm]"``;
* ``open_clip:ARCH/PRETRAINED`` (``open_clip:ViT-B-32/openai``): the image tower of an OpenCLIP
  model; needs ``pip install "zslbench[clip]"``;
* ``module:callable`` (``mypkg.nets:make_backbone``): a callable that returns a torch module
  mapping a (batch, 3, H, W) float tensor to (batch, d) features, fed with images resized to
  ``--image-size`` and normalised with ImageNet's mean and std.

Weights come from the model's own hub (timm's, OpenCLIP's), downloaded by those libraries.

**Resume.** The features are written into ``features.npy.partial`` (a memory-mapped ``.npy``)
batch by batch, and ``extract.json`` says how many rows are done after each one. A killed run
continues where it stopped when the same command is given again; a run with another backbone,
image list or image size refuses to continue the folder. The finished folder's ``extract.json``
holds the sha256 of ``features.npy`` (the checksum printed at the end), the backbone, and the
image list's sha256. The command never writes into a folder holding files it did not write, and
never deletes any.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np

from zslbench.data.dataset import ZSLData, check_backbone
from zslbench.errors import ConfigError, DataError, UserError
from zslbench.files import atomic_write, sha256_file
from zslbench.hookspecs import hookimpl

MANIFEST = "extract.json"
PARTIAL = "features.npy.partial"
#: Every file this command writes in its output folder (anything else there is not its own).
OWN_FILES = (
    MANIFEST,
    PARTIAL,
    "features.npy",
    "labels.npy",
    "class_semantics.npy",
    "class_names.npy",
    "trainval_idx.npy",
    "test_seen_idx.npy",
    "test_unseen_idx.npy",
    "val_classes.npy",
    "kind.npy",
    "backbone.npy",
)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# -- backbones ----------------------------------------------------------------------------------
class Backbone:
    """A torch module and how images reach it: ``preprocess(PIL image) -> (3, H, W) tensor``."""

    def __init__(self, name: str, module: Any, preprocess: Callable[[Any], Any]) -> None:
        self.name, self.module, self.preprocess = name, module, preprocess


def _optional(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except Exception as exc:  # not installed, or broken beside this torch (torchvision)
        raise ConfigError(
            f"--backbone needs {module}, which cannot be imported here "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
            hint=f'pip install "zslbench[{extra}]" (with a torchvision that matches '
            "your torch), or give a module:callable",
        ) from None


def default_preprocess(size: int) -> Callable[[Any], Any]:
    """Shorter side to ``size``, centre crop ``size`` x ``size``, [0, 1], ImageNet normalisation."""
    import torch
    from PIL import Image

    mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(3, 1, 1)

    def preprocess(image: Any) -> Any:
        image = image.convert("RGB")
        w, h = image.size
        scale = size / min(w, h)
        image = image.resize(
            (max(size, round(w * scale)), max(size, round(h * scale))), Image.BICUBIC
        )
        w, h = image.size
        left, top = (w - size) // 2, (h - size) // 2
        image = image.crop((left, top, left + size, top + size))
        x = torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0).permute(2, 0, 1)
        return (x - mean) / std

    return preprocess


def load_backbone(spec: str, image_size: int, name: str | None = None) -> Backbone:
    """The backbone ``spec`` names (see the module docstring); ``name`` overrides its name."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ConfigError(
            f"--backbone {spec!r} is not timm:NAME, open_clip:ARCH/PRETRAINED or module:callable",
            hint="e.g. --backbone timm:resnet50",
        )
    if kind == "timm":
        timm = _optional("timm", "timm")
        model = timm.create_model(rest, pretrained=True, num_classes=0)
        config = timm.data.resolve_data_config({}, model=model)
        transform = timm.data.create_transform(**config)
        return Backbone(name or rest, model, transform)
    if kind == "open_clip":
        open_clip = _optional("open_clip", "clip")
        arch, _, pretrained = rest.partition("/")
        model, _, transform = open_clip.create_model_and_transforms(
            arch, pretrained=pretrained or None
        )

        class ImageTower:  # the image tower alone, as a module-like callable
            def __init__(self, clip: Any) -> None:
                self.clip = clip

            def __call__(self, x: Any) -> Any:
                return self.clip.encode_image(x)

            def to(self, device: Any) -> ImageTower:
                self.clip = self.clip.to(device)
                return self

            def eval(self) -> ImageTower:
                self.clip.eval()
                return self

        tag = f"clip_{arch}_{pretrained}" if pretrained else f"clip_{arch}"
        return Backbone(name or tag.replace("/", "_"), ImageTower(model), transform)
    module_name, attr = kind, rest
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"--backbone {spec}: cannot import {attr} from {module_name} ({exc})",
            hint="give an importable module:callable that returns a torch module",
        ) from None
    return Backbone(name or attr, factory(), default_preprocess(image_size))


# -- the folder ---------------------------------------------------------------------------------
def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    atomic_write(
        out / MANIFEST,
        lambda fh: fh.write(json.dumps(manifest, indent=1, sort_keys=True) + "\n"),
        "w",
    )


def _mat_list(images: Path, list_file: Path) -> list[Path]:
    """The images an xlsa17 ``res101.mat`` lists (``image_files``: absolute paths on its authors'
    machine), found under ``images`` by the shortest prefix whose removal names an existing file
    for the first image (the same prefix for every image)."""
    from zslbench_plugins.xlsa17.loader import read_mat

    raw = read_mat(list_file, ("image_files",))["image_files"]
    entries = [str(np.asarray(x).ravel()[0]) for x in np.asarray(raw).ravel()]
    if not entries:
        raise DataError(f"{list_file}: image_files is empty", hint="give a text list instead")
    first = Path(entries[0].replace("\\", "/")).parts
    start = 1 if first and first[0] in ("/", "\\") or Path(entries[0]).is_absolute() else 0
    cut = next((k for k in range(start, len(first)) if images.joinpath(*first[k:]).is_file()), None)
    if cut is None:
        raise DataError(
            f"{list_file}: its first image {entries[0]!r} is not under {images}",
            hint="point --images at the folder that holds the benchmark's images",
        )
    paths = []
    for number, entry in enumerate(entries, 1):
        path = images.joinpath(*Path(entry.replace("\\", "/")).parts[cut:])
        if not path.is_file():
            raise DataError(
                f"{list_file}: image {number} ({entry!r}) is not {path}",
                hint="point --images at the folder that holds every listed image",
            )
        paths.append(path)
    return paths


def read_list(images: Path, list_file: Path) -> list[Path]:
    """The images of ``list_file`` (one path per line, relative to ``images``; blank lines and a
    second column, as CUB's ``images.txt`` has, are ignored), each checked to exist. An xlsa17
    ``res101.mat`` lists its images too (``image_files``, :func:`_mat_list`)."""
    if list_file.suffix.lower() == ".mat":
        return _mat_list(images, list_file)
    try:
        lines = list_file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(
            f"{list_file}: cannot read the image list ({exc.strerror})",
            hint="give a text file with one image path per line",
        ) from None
    paths = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        rel = (
            line.split()[0]
            if len(line.split()) > 1 and not (images / line.strip()).exists()
            else line.strip()
        )
        path = images / rel
        if not path.is_file():
            raise DataError(
                f"{list_file}:{number}: image {rel!r} is not a file under {images}",
                hint="list paths relative to --images, one per line, in the "
                "benchmark's image order",
            )
        paths.append(path)
    if not paths:
        raise DataError(f"{list_file}: lists no image", hint="one image path per line")
    return paths


def _check_folder(out: Path, expected: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest of a run to continue (None: a new folder); refuse a folder that holds what
    this command did not write, or a run of other settings."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise UserError(f"--out {out} is a file", hint="name a new or empty folder")
    foreign = sorted(
        p.name
        for p in out.iterdir()
        if p.name not in OWN_FILES and not (p.name.startswith(".") and p.name.endswith(".tmp"))
    )
    names = {p.name for p in out.iterdir()}
    if foreign or (names and MANIFEST not in names):
        raise UserError(
            f"--out {out} holds files this command did not write "
            f"({', '.join(foreign or sorted(names))[:120]})",
            hint="name a new or empty folder; nothing there is overwritten or deleted",
        )
    if not names:
        return None
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        raise UserError(
            f"{out / MANIFEST} is not a readable manifest",
            hint="name a new folder (this one is left as it is)",
        ) from None
    for key, value in expected.items():
        if manifest.get(key) != value:
            raise UserError(
                f"{out} was extracted with {key} {manifest.get(key)!r}, not {value!r}",
                hint="give the same options to continue it, or name a new --out",
            )
    return manifest


def _like(name: str, data_dir: Path | None, plugins: tuple[str, ...]) -> tuple[ZSLData, str]:
    """The dataset whose labels, classes and split the feature set takes (``--like``), and its
    kind (a feature set of a real benchmark stays ``real``: matched with it by its split)."""
    from zslbench.registry import load_registry
    from zslbench.request import expand_datasets

    registry = load_registry(plugins)
    resolved = expand_datasets([name], registry)
    if len(resolved) != 1:
        raise ConfigError(f"--like {name} names {len(resolved)} datasets", hint="name one dataset")
    spec = registry.items["dataset"][resolved[0]].obj
    return spec.load(data_dir), spec.kind


def _save(path: Path, value: Any) -> None:
    atomic_write(path, lambda fh: np.save(fh, value))


def extract(
    *,
    images: Path,
    list_file: Path,
    like: ZSLData,
    backbone: Backbone,
    out: Path,
    spec: str,
    image_size: int,
    batch_size: int = 64,
    device: str = "auto",
    kind: str = "custom",
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Extract, resume, finish; returns the finished manifest (see the module docstring)."""
    import torch
    from PIL import Image, UnidentifiedImageError

    paths = read_list(images, list_file)
    n = len(paths)
    if n != like.features.shape[0]:
        raise DataError(
            f"{list_file} lists {n} images; dataset {like.name!r} has {like.features.shape[0]}",
            hint="list every image of the benchmark, "
            "in its order (row i of its features is line i)",
        )
    list_sha = hashlib.sha256(
        "\n".join(str(p.relative_to(images)) for p in paths).encode()
    ).hexdigest()
    expected = {
        "backbone": backbone.name,
        "backbone_spec": spec,
        "images_sha256": list_sha,
        "n_images": n,
        "image_size": image_size,
        "like": like.name,
    }
    manifest = _check_folder(out, expected)
    if manifest is not None and manifest.get("complete"):
        say(
            f"{out}: already extracted ({n} images, {backbone.name}); features sha256 "
            f"{manifest['features_sha256']}"
        )
        return manifest
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device(
        "cuda"
        if device == "auto" and torch.cuda.is_available()
        else ("cpu" if device == "auto" else device)
    )
    module = backbone.module.to(dev)
    module.eval()
    done = int(manifest["done"]) if manifest else 0
    partial = out / PARTIAL
    feats = None
    if done and partial.exists():
        feats = np.lib.format.open_memmap(partial, mode="r+")
    else:
        done = 0
    if done:
        say(f"{out}: continuing at image {done + 1} of {n}")
    manifest = {**expected, "done": done, "complete": False}
    _write_manifest(out, manifest)
    started = time.monotonic()
    with torch.no_grad():
        for start in range(done, n, batch_size):
            batch = []
            for path in paths[start : start + batch_size]:
                try:
                    with Image.open(path) as image:
                        batch.append(backbone.preprocess(image))
                except (UnidentifiedImageError, OSError) as exc:
                    raise DataError(
                        f"{path}: cannot read it as an image ({exc})",
                        hint="replace or re-download the image",
                    ) from None
            rows = module(torch.stack(batch).to(dev))
            rows = rows.reshape(rows.shape[0], -1).float().cpu().numpy()
            if feats is None:
                feats = np.lib.format.open_memmap(
                    partial, mode="w+", dtype=np.float32, shape=(n, rows.shape[1])
                )
            feats[start : start + len(rows)] = rows
            feats.flush()
            manifest["done"] = start + len(rows)
            _write_manifest(out, manifest)
            rate = (manifest["done"] - done) / max(time.monotonic() - started, 1e-9)
            say(
                f"{backbone.name}: {manifest['done']}/{n} images "
                f"(ETA {int((n - manifest['done']) / max(rate, 1e-9))} s)"
            )
    del feats
    for key, value in (
        ("labels", like.labels),
        ("class_semantics", like.attributes),
        (
            "class_names",
            np.asarray(like.class_names or [f"class{i}" for i in range(like.n_classes)]),
        ),
        ("trainval_idx", like.trainval_idx),
        ("test_seen_idx", like.test_seen_idx),
        ("test_unseen_idx", like.test_unseen_idx),
        ("backbone", np.asarray(backbone.name)),
        ("kind", np.asarray(kind)),
    ):
        _save(out / f"{key}.npy", np.asarray(value))
    if like.val_classes is not None:
        _save(out / "val_classes.npy", np.asarray(like.val_classes))
    os.replace(partial, out / "features.npy")
    manifest.update(
        complete=True,
        features_sha256=sha256_file(out / "features.npy"),
        feature_dim=int(np.load(out / "features.npy", mmap_mode="r").shape[1]),
    )
    _write_manifest(out, manifest)
    say(
        f"wrote {out} ({n} images, {manifest['feature_dim']}-d {backbone.name} features); "
        f"features sha256 {manifest['features_sha256']}"
    )
    return manifest


# -- command line -------------------------------------------------------------------------------
@click.group("features")
def features() -> None:
    """Build feature sets of a benchmark's images (any backbone)."""


@features.command("extract")
@click.option(
    "--images",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    required=True,
    help="Folder the image list is relative to.",
)
@click.option(
    "--list",
    "list_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    required=True,
    help="One image path per line, in the benchmark's image order.",
)
@click.option(
    "--like",
    required=True,
    metavar="DATASET",
    help="The dataset whose labels, classes and split the feature set takes "
    "(awa2, path/to/mine.npz).",
)
@click.option(
    "--backbone",
    "spec",
    required=True,
    metavar="SPEC",
    help="timm:NAME, open_clip:ARCH/PRETRAINED or module:callable.",
)
@click.option("--name", default=None, help="The backbone's name in records [default: from SPEC].")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The feature set's folder (new, or one this command started: it continues).",
)
@click.option("--batch-size", type=click.IntRange(1), default=64, show_default=True)
@click.option(
    "--image-size",
    type=click.IntRange(8),
    default=224,
    show_default=True,
    help="Side of the centre crop fed to a module:callable backbone.",
)
@click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda.")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Data folder of --like [default: $ZSLBENCH_DATA, else $XDG_CACHE_HOME/zslbench/data].",
)
def extract_cmd(
    images: Path,
    list_file: Path,
    like: str,
    spec: str,
    name: str | None,
    out: Path,
    batch_size: int,
    image_size: int,
    device: str,
    data_dir: Path | None,
) -> None:
    """Extract a feature set that `zslbench run --dataset OUT` reads; resumable, checksummed."""
    _optional("PIL", "features")
    if device not in ("auto", "cpu") and not device.startswith("cuda"):
        raise ConfigError(f"--device {device!r} is not auto, cpu or cuda", hint="--device auto")
    backbone = load_backbone(spec, image_size, name)
    check_backbone(backbone.name, where=f"--backbone {spec}")
    data, kind = _like(like, data_dir, ())
    try:
        extract(
            images=images,
            list_file=list_file,
            like=data,
            backbone=backbone,
            out=out,
            spec=spec,
            image_size=image_size,
            batch_size=batch_size,
            device=device,
            kind=kind,
            say=lambda s: click.echo(s, err=True),
        )
    except KeyboardInterrupt:
        click.echo(f"zslbench: interrupted; the same command continues {out}", err=True)
        sys.exit(130)


@hookimpl
def zslbench_commands(cli: click.Group) -> None:
    cli.add_command(features)


__all__ = ["Backbone", "extract", "features", "load_backbone", "read_list", "zslbench_commands"]
