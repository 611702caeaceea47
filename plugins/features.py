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
  ``--image-size`` (at most :data:`MAX_IMAGE_SIZE`) and normalised with ImageNet's mean and std.

Weights: timm's and OpenCLIP's come from those libraries' hubs, downloaded on first use and
cached. OpenCLIP names its weights in the spec (PRETRAINED is a tag or a checkpoint path; ARCH
alone is random); a timm spec is a model name only, so ``--weights`` says the same for it:
``--weights random`` (random initialisation, named ``NAME+random``) or ``--weights PATH`` (a local
checkpoint, named ``NAME+ckpt-`` and the first 8 hex digits of its sha256). Without network and
without cached weights, the command says so in one line naming the model.

A backbone must return one finite row per image, of one width for the whole run; anything else
(fewer or more rows, a scalar, another width, NaN) is refused in one line naming the backbone
before it reaches the feature set.

**The image list.** One path per line, relative to ``--images`` and inside it: an absolute path,
or one that leaves ``--images`` with ``..``, is refused (the list names the benchmark's images,
not any file of the machine). A line that does not name a file whole is read by its columns:
``<id> <path>`` (CUB's ``images.txt``: an integer, then the path) by the second, ``<path>
<label>`` by the first.

**Resume.** The features are written into ``features.npy.partial`` (a memory-mapped ``.npy``)
batch by batch, and ``extract.json`` says how many rows are done after each one. A killed run
continues where it stopped when the same command is given again; a run with another backbone,
image list or image size refuses to continue the folder. The finished folder's ``extract.json``
holds the sha256 of ``features.npy`` (the checksum printed at the end), the backbone, and the
image list's sha256. The command never writes into a folder holding files it did not write, nor
through a link (a link or special file in ``--out`` is refused), and never deletes any.

**Errors.** Each failure of what the user gave (the backbone's code, an image file, the
``--out`` folder's disk) is one line naming it, through one guard, :func:`failing_input`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
#: The largest ``--image-size``: twice the largest input of common backbones (DINOv2's 518); a
#: batch of 64 crops of this side is 800 MB of float32, where 60000 would ask for terabytes.
MAX_IMAGE_SIZE = 1024
#: ``--weights`` of a timm backbone: its hub's pretrained weights (the default), random ones, or
#: a local checkpoint's path.
PRETRAINED, RANDOM = "pretrained", "random"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


@contextmanager
def failing_input(
    what: str, hint: str, kinds: tuple[type[BaseException], ...] = (Exception,)
) -> Iterator[None]:
    """Turn a failure of what the user gave into one line naming it (``what``: the backbone, the
    image, ``--out``). The one place this command's expected failures become one line: a
    backbone is foreign code that may raise anything, Pillow raises many kinds for a bad image
    (``DecompressionBombError`` is no ``OSError``), and ``--out`` may be read-only or full. A
    :class:`UserError` raised inside already names its input and passes unchanged."""
    try:
        yield
    except UserError:
        raise
    except kinds as exc:
        raise DataError(f"{what}: {_first_line(exc)}", hint=hint) from None


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
            f"--backbone needs {module}, which cannot be imported here ({_first_line(exc)})",
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


def _timm(spec: str, model_name: str, weights: str | None, name: str | None) -> Backbone:
    """A timm model with the ``weights`` the module docstring lists (None: its hub's)."""
    timm = _optional("timm", "timm")
    kwargs: dict[str, Any] = {"pretrained": weights != RANDOM}
    tag = "" if weights in (None, PRETRAINED) else "+random"
    if weights not in (None, PRETRAINED, RANDOM):
        checkpoint = Path(weights).expanduser()
        if not checkpoint.is_file():
            raise ConfigError(
                f"--weights {weights}: no such checkpoint file",
                hint=f"give a local checkpoint of {model_name} (.pth, .safetensors), "
                "or --weights random",
            )
        # timm's own way to a local file: its loader then drops a classifier num_classes=0 lacks
        kwargs["pretrained_cfg_overlay"] = {"file": str(checkpoint)}
        tag = f"+ckpt-{sha256_file(checkpoint)[:8]}"
    hint = (
        "timm downloads pretrained weights on first use and caches them: connect once, or give "
        "--weights PATH (a local checkpoint) or --weights random"
        if weights in (None, PRETRAINED)
        else f"give a checkpoint of {model_name}, or check the model name (timm.list_models())"
    )
    where = f"--backbone {spec}" + (f" --weights {weights}" if weights else "")
    with failing_input(where, hint):
        model = timm.create_model(model_name, num_classes=0, **kwargs)
        config = timm.data.resolve_data_config({}, model=model)
        transform = timm.data.create_transform(**config)
    return Backbone(name or f"{model_name}{tag}", model, transform)


class _ImageTower:
    """An OpenCLIP model's image tower alone, as a module-like callable."""

    def __init__(self, clip: Any) -> None:
        self.clip = clip

    def __call__(self, x: Any) -> Any:
        return self.clip.encode_image(x)

    def to(self, device: Any) -> _ImageTower:
        self.clip = self.clip.to(device)
        return self

    def eval(self) -> _ImageTower:
        self.clip.eval()
        return self


def load_backbone(
    spec: str, image_size: int, name: str | None = None, weights: str | None = None
) -> Backbone:
    """The backbone ``spec`` names (see the module docstring); ``name`` overrides its name;
    ``weights`` (timm only) is ``pretrained``, ``random`` or a checkpoint's path."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest or not kind:
        raise ConfigError(
            f"--backbone {spec!r} is not timm:NAME, open_clip:ARCH/PRETRAINED or module:callable",
            hint="e.g. --backbone timm:resnet50",
        )
    if weights is not None and kind != "timm":
        raise ConfigError(
            f"--weights is for timm:NAME, not --backbone {spec}",
            hint="open_clip:ARCH/PRETRAINED names its weights (a tag or a checkpoint path; "
            "ARCH alone is random); a module:callable builds its own",
        )
    if kind == "timm":
        return _timm(spec, rest, weights, name)
    if kind == "open_clip":
        open_clip = _optional("open_clip", "clip")
        arch, _, pretrained = rest.partition("/")
        with failing_input(
            f"--backbone {spec}",
            hint="OpenCLIP downloads pretrained weights on first use and caches them: connect "
            "once, or give a checkpoint path as PRETRAINED, or ARCH alone for random weights",
        ):
            model, _, transform = open_clip.create_model_and_transforms(
                arch, pretrained=pretrained or None
            )
        tag = f"clip_{arch}_{pretrained}" if pretrained else f"clip_{arch}"
        return Backbone(name or tag.replace("/", "_"), _ImageTower(model), transform)
    # A module:callable is the user's code: importing or calling it may raise anything.
    with failing_input(
        f"--backbone {spec}",
        hint="give an importable module:callable that returns a torch module",
    ):
        factory = getattr(importlib.import_module(kind), rest)
        module = factory()
    return Backbone(name or rest, module, default_preprocess(image_size))


def resolve_device(device: str) -> Any:
    """``--device`` as a torch device: ``auto`` is the GPU when there is one; ``cuda`` without
    one is refused in the line ``zslbench run --device`` gives."""
    import torch

    from zslbench.hyperparams import torch_device

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch_device("--device", device)


def backbone_rows(output: Any, backbone: str, paths: list[Path], width: int | None) -> np.ndarray:
    """What ``backbone`` returned for the images ``paths`` as a (len(paths), d) float32 matrix,
    ``d == width`` when earlier batches set it. Anything else is refused, never stored: fewer rows
    would leave zero rows in a feature set marked complete, and NaN would surface only in a
    later ``run``."""
    import torch

    def refuse(what: str) -> DataError:
        return DataError(
            f"backbone {backbone} returned {what} for the {len(paths)} images from {paths[0]}",
            hint="a backbone maps a (batch, 3, H, W) tensor to finite (batch, d) features, "
            "of one d for every batch",
        )

    if isinstance(output, torch.Tensor):
        rows = output.detach().float().cpu().numpy()
    elif isinstance(output, np.ndarray) and output.dtype.kind in "fiu":
        rows = output.astype(np.float32)
    else:
        raise refuse(f"a {type(output).__name__}, not a tensor")
    if rows.ndim < 2 or rows.shape[0] != len(paths) or rows[0].size == 0:
        raise refuse(f"shape {tuple(rows.shape)}")
    rows = rows.reshape(len(paths), -1)  # (batch, d, 1, 1) pooled maps are rows too
    if width is not None and rows.shape[1] != width:
        raise refuse(f"{rows.shape[1]}-d rows after {width}-d rows for earlier images")
    bad = np.flatnonzero(~np.isfinite(rows).all(axis=1))
    if len(bad):
        raise refuse(f"NaN or infinite features (first for {paths[int(bad[0])]})")
    return rows


# -- the folder ---------------------------------------------------------------------------------
def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    atomic_write(
        out / MANIFEST,
        lambda fh: fh.write(json.dumps(manifest, indent=1, sort_keys=True) + "\n"),
        "w",
    )


def _inside(images: Path, rel: str, where: str) -> Path:
    """``images / rel``, refused when ``rel`` is absolute or leaves ``images`` with ``..``: a list
    names the benchmark's images, and its lines are read as paths under ``--images`` only."""
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        raise DataError(
            f"{where}: image {rel!r} is not a path inside --images {images}",
            hint="list paths relative to --images, without a leading / and without '..'",
        )
    return images.joinpath(*parts)


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
        rest = Path(entry.replace("\\", "/")).parts[cut:]
        path = _inside(images, str(Path(*rest)) if rest else "", f"{list_file}: image {number}")
        if not path.is_file():
            raise DataError(
                f"{list_file}: image {number} ({entry!r}) is not {path}",
                hint="point --images at the folder that holds every listed image",
            )
        paths.append(path)
    return paths


def _list_entry(images: Path, line: str) -> str:
    """The path a line of a list names: the whole line when it names a file (a path with
    spaces), else by its columns: ``<id> <path>`` (CUB's ``images.txt``) or ``<path> <label>``."""
    whole = line.strip()
    cols = whole.split()
    if len(cols) < 2 or (images / whole).is_file():
        return whole
    return cols[1] if cols[0].isdigit() else cols[0]


def read_list(images: Path, list_file: Path) -> list[Path]:
    """The images of ``list_file`` (one path per line, relative to ``images`` and inside it; blank
    lines ignored; a line of columns read as :func:`_list_entry` says), each checked to exist. An
    xlsa17 ``res101.mat`` lists its images too (``image_files``, :func:`_mat_list`)."""
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
        rel = _list_entry(images, line)
        path = _inside(images, rel, f"{list_file}:{number}")
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
    for entry in sorted(out.iterdir()):
        # never through a link (a planted features.npy.partial would take the matrix)
        if not stat.S_ISREG(entry.lstat().st_mode):
            raise UserError(
                f"--out {out} holds {entry.name}, a link or special file, not a file this "
                "command wrote",
                hint="name a new or empty folder; nothing there is overwritten or deleted",
            )
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


def _no_link(path: Path) -> Path:
    """``path``, refused when it is a link or special file: checked again just before the partial
    file is opened or renamed, as the folder check may be minutes old."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise UserError(
            f"{path} is a link or special file, not a file this command wrote",
            hint="name a new or empty folder; nothing there is overwritten or deleted",
        )
    return path


def _read_image(path: Path, preprocess: Callable[[Any], Any]) -> Any:
    from PIL import Image

    with failing_input(str(path), hint="replace or re-download the image"), Image.open(path) as im:
        return preprocess(im)


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
    weights: str | None = None,
) -> dict[str, Any]:
    """Extract, resume, finish; returns the finished manifest (see the module docstring). A
    failure to write ``out`` (read-only, full) is one line naming it."""
    with failing_input(
        f"--out {out}",
        hint="give a writable folder with room for the features (the same command continues)",
        kinds=(OSError,),
    ):
        return _extract(
            images=images,
            list_file=list_file,
            like=like,
            backbone=backbone,
            out=out,
            spec=spec,
            image_size=image_size,
            batch_size=batch_size,
            device=device,
            kind=kind,
            say=say,
            weights=weights,
        )


def _extract(
    *,
    images: Path,
    list_file: Path,
    like: ZSLData,
    backbone: Backbone,
    out: Path,
    spec: str,
    image_size: int,
    batch_size: int,
    device: str,
    kind: str,
    say: Callable[[str], None],
    weights: str | None,
) -> dict[str, Any]:
    import torch

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
    expected: dict[str, Any] = {
        "backbone": backbone.name,
        "backbone_spec": spec,
        "images_sha256": list_sha,
        "n_images": n,
        "image_size": image_size,
        "like": like.name,
        # None (the hub's) reads as absent: the folders of earlier versions still continue
        "weights": weights,
    }
    manifest = _check_folder(out, expected)
    if manifest is not None and manifest.get("complete"):
        say(
            f"{out}: already extracted ({n} images, {backbone.name}); features sha256 "
            f"{manifest['features_sha256']}"
        )
        return manifest
    dev = resolve_device(device)
    out.mkdir(parents=True, exist_ok=True)
    name = backbone.name
    with failing_input(f"backbone {name}", hint="its module must move to the device (.to)"):
        module = backbone.module.to(dev)
        module.eval()
    done = int(manifest["done"]) if manifest else 0
    partial = out / PARTIAL
    feats = None
    if done and partial.exists():
        feats = np.lib.format.open_memmap(_no_link(partial), mode="r+")
    else:
        done = 0
    if done:
        say(f"{out}: continuing at image {done + 1} of {n}")
    manifest = {**expected, "done": done, "complete": False}
    _write_manifest(out, manifest)
    started = time.monotonic()
    with torch.no_grad():
        for start in range(done, n, batch_size):
            chunk = paths[start : start + batch_size]
            batch = [_read_image(path, backbone.preprocess) for path in chunk]
            with failing_input(
                f"backbone {name} on the {len(chunk)} images from {chunk[0]}",
                hint="fix the backbone, or give another --backbone",
            ):
                output = module(torch.stack(batch).to(dev))
            rows = backbone_rows(output, name, chunk, None if feats is None else feats.shape[1])
            if feats is None:
                feats = np.lib.format.open_memmap(
                    _no_link(partial), mode="w+", dtype=np.float32, shape=(n, rows.shape[1])
                )
            feats[start : start + len(rows)] = rows
            feats.flush()
            manifest["done"] = start + len(rows)
            _write_manifest(out, manifest)
            rate = (manifest["done"] - done) / max(time.monotonic() - started, 1e-9)
            say(
                f"{name}: {manifest['done']}/{n} images "
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
        ("backbone", np.asarray(name)),
        ("kind", np.asarray(kind)),
    ):
        _save(out / f"{key}.npy", np.asarray(value))
    if like.val_classes is not None:
        _save(out / "val_classes.npy", np.asarray(like.val_classes))
    os.replace(_no_link(partial), out / "features.npy")
    manifest.update(
        complete=True,
        features_sha256=sha256_file(out / "features.npy"),
        feature_dim=int(np.load(out / "features.npy", mmap_mode="r").shape[1]),
    )
    _write_manifest(out, manifest)
    say(
        f"wrote {out} ({n} images, {manifest['feature_dim']}-d {name} features); "
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
    help="One image path per line, inside --images, in the benchmark's image order "
    "(CUB's `<id> <path>` images.txt, or an xlsa17 res101.mat).",
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
    "--weights",
    default=None,
    metavar="random|PATH",
    help="For timm:NAME: random weights, or a local checkpoint [default: pretrained, "
    "from timm's hub].",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The feature set's folder (new, or one this command started: it continues).",
)
@click.option("--batch-size", type=click.IntRange(1), default=64, show_default=True)
@click.option(
    "--image-size",
    type=click.IntRange(8, MAX_IMAGE_SIZE),
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
    weights: str | None,
    out: Path,
    batch_size: int,
    image_size: int,
    device: str,
    data_dir: Path | None,
) -> None:
    """Extract a feature set that `zslbench run --dataset OUT` reads; resumable, checksummed."""
    _optional("PIL", "features")
    resolve_device(device)  # before the backbone and the data load: the cheapest check first
    weights = None if weights == PRETRAINED else weights  # one manifest for the default
    backbone = load_backbone(spec, image_size, name, weights)
    check_backbone(backbone.name, where="--name" if name is not None else f"--backbone {spec}")
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
            weights=weights,
        )
    except KeyboardInterrupt:
        click.echo(f"zslbench: interrupted; the same command continues {out}", err=True)
        sys.exit(130)


@hookimpl
def zslbench_commands(cli: click.Group) -> None:
    cli.add_command(features)


__all__ = [
    "Backbone",
    "backbone_rows",
    "extract",
    "failing_input",
    "features",
    "load_backbone",
    "read_list",
    "resolve_device",
    "zslbench_commands",
]
