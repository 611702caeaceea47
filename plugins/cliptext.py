"""CLIP zero-shot as a GZSL baseline: class prompts through a CLIP text tower, cosine similarity.

The baseline users of CLIP features expect (Radford et al., ICML 2021, Sec. 3.1.2; TV-GZSL's
"off-the-shelf CLIP with prompt engineering"): each candidate class ``c`` is the text embedding
``t_c`` of its prompt (``prompt.format(name)``, default ``"a photo of a {}."``, CLIP's own
ImageNet prompt), and an image ``x`` scores ``cos(x, t_c)``. Nothing is trained on the seen
classes; the harness still applies the protocol's calibration (a seen-class penalty chosen on the
leak-free validation split), so its H is comparable with every other method's.

It runs on any feature set whose image features come from the image tower of the CLIP model whose
text tower is named (``zslbench features extract --backbone open_clip:ViT-B-32/openai`` with
``text_tower="open_clip:ViT-B-32/openai"``): the two embeddings must share their space.

Hyperparameters (``--set model.PARAM=V``):

* ``text_tower``: ``open_clip:ARCH/PRETRAINED`` (needs ``pip install "zslbench[clip]"``) or
  ``module:callable``, a callable returning ``encode(prompts: list[str]) -> (c, t)`` array;
* ``class_names``: where the class names are, row ``i`` for class ``i``: a text file (one name per
  line), an xlsa17 ``att_splits.mat`` (``allclasses_names``; ``"001.Black_footed_Albatross"``
  reads as "Black footed Albatross"), or an ``.npz`` file or folder (``class_names``). The model
  contract gives a model class ids, not names, so the names come from here. The run's key covers
  this path, not the file's content: edit the file and pass ``--force``;
* ``prompt``: the template (``{}`` is the class name).

Not registered in the built-in entry-point group: a built-in method must be in the golden file
(``tests/golden/toy.json``) and the per-method test tables, and ``toy`` has no class names or CLIP
features to run it on. Load it with ``zslbench -p zslbench_plugins.cliptext run --method
clip-text ...``.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from zslbench.errors import ConfigError, DataError
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench.model import Model

#: CLIP's ImageNet prompt (Radford et al. 2021, Sec. 3.1.4: "A photo of a {label}.").
PROMPT = "a photo of a {}."
#: CLIP ViT-B/32, the backbone TV-GZSL's CLIP rows most often use.
TEXT_TOWER = "open_clip:ViT-B-32/openai"


def clean_name(raw: str) -> str:
    """``"001.Black_footed_Albatross"`` -> ``"Black footed Albatross"``, ``"polar+bear"`` ->
    ``"polar bear"``: xlsa17's class names as words."""
    return re.sub(r"^\d+\.", "", raw.strip()).replace("_", " ").replace("+", " ").strip()


def read_class_names(location: str) -> list[str]:
    """The class names at ``location`` (see the module docstring), cleaned."""
    path = Path(location).expanduser()
    if not path.exists():
        raise ConfigError(
            f"clip-text: class_names {location!r} does not exist",
            hint="--set model.class_names=FILE (one name per line, or an "
            "att_splits.mat, or an .npz with class_names)",
        )
    if path.suffix == ".mat":
        from zslbench_plugins.xlsa17.loader import read_mat

        raw = read_mat(path, ("allclasses_names",))["allclasses_names"]
        names = [str(np.asarray(x).ravel()[0]) for x in np.asarray(raw).ravel()]
    elif path.suffix == ".npz" or path.is_dir():
        from zslbench_plugins.npz import load_npz

        names = list(load_npz(path).class_names or [])
    else:
        names = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not names:
        raise DataError(f"{path}: holds no class names", hint="one class name per line")
    return [clean_name(n) for n in names]


def load_text_tower(spec: str) -> Callable[[list[str]], Any]:
    """``encode(prompts) -> (c, t)`` for ``open_clip:ARCH/PRETRAINED`` or ``module:callable``."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ConfigError(
            f"clip-text: text_tower {spec!r} is not open_clip:ARCH/PRETRAINED or module:callable",
            hint=f"e.g. --set model.text_tower={TEXT_TOWER}",
        )
    if kind == "open_clip":
        try:
            open_clip = importlib.import_module("open_clip")
        except Exception as exc:  # not installed, or torchvision broken beside this torch
            raise ConfigError(
                f"clip-text: text_tower {spec} needs open_clip, which cannot be "
                f"imported here ({type(exc).__name__})",
                hint='pip install "zslbench[clip]", or give a module:callable',
            ) from None
        import torch

        arch, _, pretrained = rest.partition("/")
        # Random weights (ARCH alone) are drawn from a fixed seed: one tower whatever ran before,
        # so that building it once per process (text_tower) cannot move a number.
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                model, _, _ = open_clip.create_model_and_transforms(
                    arch, pretrained=pretrained or None
                )
            tokenizer = open_clip.get_tokenizer(arch)
        except Exception as exc:  # offline without cached weights, an unknown ARCH or tag
            text = str(exc).strip().splitlines()
            raise ConfigError(
                f"clip-text: text_tower {spec} cannot be built ({type(exc).__name__}"
                f"{': ' + text[0] if text else ''})",
                hint="OpenCLIP downloads pretrained weights on first use and caches them: "
                "connect once, or give a checkpoint path as PRETRAINED",
            ) from None
        model.eval()

        def encode(prompts: list[str]) -> Any:
            with torch.no_grad():
                return model.encode_text(tokenizer(prompts)).float().cpu().numpy()

        return encode
    try:
        factory = getattr(importlib.import_module(kind), rest)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"clip-text: cannot import {rest} from {kind} ({exc})",
            hint="give an importable module:callable returning encode(prompts)",
        ) from None
    return factory()


@functools.lru_cache(maxsize=4)
def text_tower(spec: str) -> Callable[[list[str]], Any]:
    """:func:`load_text_tower`, built once per spec and process: a run fits its model for the
    validation split and again on trainval (clones, which keep no state), and the tower is the
    same for both (with random weights, building it twice drew two towers and warned twice)."""
    return load_text_tower(spec)


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


class ClipText(Model):
    """Cosine similarity between image features and the text embeddings of class prompts.

    Parameters: ``text_tower=TEXT_TOWER``, ``class_names=""`` (required: the names' file),
    ``prompt=PROMPT`` (see the module docstring for each and its source).

    Fitted state: ``text_`` (c x t) unit text embeddings of ``classes_``. Nothing is learned from
    the training images: they are only checked against the contract.
    """

    name = "clip-text"

    def __init__(
        self, text_tower: str = TEXT_TOWER, class_names: str = "", prompt: str = PROMPT
    ) -> None:
        self.text_tower = text_tower
        self.class_names = class_names
        self.prompt = prompt

    def check_params(self) -> None:
        for param in ("text_tower", "class_names", "prompt"):
            if not isinstance(getattr(self, param), str):
                raise ConfigError(
                    f"clip-text: {param} must be a string", hint=f"--set model.{param}=..."
                )
        if not self.class_names:
            raise ConfigError(
                "clip-text needs the class names (the model contract gives ids)",
                hint="--set model.class_names=FILE (one name per line, an "
                "att_splits.mat or an .npz with class_names)",
            )
        if "{}" not in self.prompt:
            raise ConfigError(
                f"clip-text: prompt {self.prompt!r} has no {{}} for the class name",
                hint='e.g. --set "model.prompt=a photo of a {}."',
            )

    def fit(self, features: Any, labels: Any, class_semantics: Any, classes: Any) -> ClipText:
        inp = self.check_fit_inputs(features, labels, class_semantics, classes, who="clip-text")
        names = read_class_names(self.class_names)
        if int(inp.classes.max()) >= len(names):
            raise DataError(
                f"{self.class_names}: {len(names)} class names, but class "
                f"{int(inp.classes.max())} is asked about",
                hint="one name per class of the dataset, in its class order",
            )
        text = np.asarray(
            text_tower(self.text_tower)([self.prompt.format(names[c]) for c in inp.classes]),
            dtype=np.float64,
        )
        if text.ndim != 2 or text.shape[0] != len(inp.classes):
            raise DataError(
                f"clip-text: the text tower {self.text_tower} returned shape "
                f"{text.shape} for {len(inp.classes)} prompts",
                hint="encode(prompts) must return one row per prompt",
            )
        if text.shape[1] != inp.features.shape[1]:
            raise DataError(
                f"clip-text: the text tower gives {text.shape[1]}-d embeddings but "
                f"the image features are {inp.features.shape[1]}-d",
                hint="use the image features of the same CLIP model as the text tower",
            )
        self.text_ = _unit(text)
        self.classes_ = inp.classes
        return self

    def decision_function(self, features: Any) -> np.ndarray:
        """``cos(x, t_c)`` for every image and every class of ``classes_`` (float64, (m, c))."""
        if not hasattr(self, "text_"):
            raise RuntimeError("ClipText.decision_function called before fit")
        return _unit(np.asarray(features, dtype=np.float64)) @ self.text_.T


@hookimpl
def zslbench_models() -> list[type[Model]]:
    return [ClipText]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return [
        MethodSpec(
            "clip-text",
            model="clip-text",
            preprocessor="none",
            paper_name="CLIP (zero-shot)",
            description="Class prompts through a CLIP text tower, cosine similarity with the image "
            "features (Radford et al. 2021)",
            citation="A. Radford et al. Learning Transferable Visual Models From Natural Language "
            "Supervision. ICML 2021.",
        )
    ]


__all__ = ["ClipText", "clean_name", "load_text_tower", "read_class_names", "text_tower"]
