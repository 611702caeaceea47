"""The CLIP text baseline (`clip-text`) on generated CLIP-like features with a random text tower:
image features near the text embedding of their class's prompt score high; the same features with
the class names shuffled do not."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import invoke_main
from tests.plugins.test_npz import arrays
from zslbench.errors import ConfigError, DataError
from zslbench.testing import check_model, toy_problem
from zslbench_plugins import npz
from zslbench_plugins.cliptext import ClipText, clean_name

DIM = 16
TOWER = "tests.plugins.test_cliptext:random_text_tower"
NAMES = ["zebra", "polar bear", "otter", "hamster", "lion", "moose", "dolphin", "mole", "bat"]


def random_text_tower(dim: int = DIM):
    """A random, fixed text tower: each prompt's embedding is drawn from a seed of its text."""

    def encode(prompts: list[str]) -> np.ndarray:
        return np.stack(
            [
                np.random.default_rng(
                    int.from_bytes(hashlib.sha256(p.encode()).digest()[:8], "big")
                ).standard_normal(dim)
                for p in prompts
            ]
        )

    return encode


def random_text_tower_32():
    return random_text_tower(32)


#: A file that counts the builds of counted_text_tower (the CLI may import this module anew).
BUILDS = "ZSLBENCH_TEST_TEXT_TOWER_BUILDS"


def counted_text_tower():
    with open(os.environ[BUILDS], "a") as fh:
        fh.write("built\n")
    return random_text_tower()


def _clip_set(tmp_path: Path) -> tuple[Path, Path]:
    a = arrays()
    text = random_text_tower()([f"a photo of a {n}." for n in NAMES])
    rng = np.random.default_rng(1)
    a["features"] = (text[a["labels"]] + 0.8 * rng.standard_normal((a["labels"].size, DIM))).astype(
        np.float32
    )  # signed, as CLIP features
    a["class_names"] = NAMES
    file = npz.save_npz(tmp_path / "clipset.npz", **a, backbone="random-clip")
    names = tmp_path / "names.txt"
    names.write_text("\n".join(NAMES) + "\n")
    return file, names


def _run(file: Path, results: Path, *sets: str, tower: str = TOWER):
    args = [
        "-p",
        "zslbench_plugins.cliptext",
        "run",
        "--method",
        "clip-text",
        "--dataset",
        str(file),
        "--results-dir",
        str(results),
        "--set",
        f"model.text_tower={tower}",
    ]
    for s in sets:
        args += ["--set", s]
    return invoke_main(*args)


def test_clip_text_scores_prompts_by_cosine_with_the_protocols_calibration(tmp_path: Path) -> None:
    file, names = _clip_set(tmp_path)
    res = _run(file, tmp_path / "results", f"model.class_names={names}")
    assert res.exit_code == 0, res.output
    (rec,) = [json.loads(p.read_text()) for p in (tmp_path / "results").glob("*.json")]
    assert rec["method"] == "clip-text" and rec["data"]["backbone"] == "random-clip"
    assert rec["metrics"]["H"] > 80 and rec["metrics"]["A_T"] > 80
    assert isinstance(rec["gamma"], float)  # calibrated on validation, as every method is

    shuffled = tmp_path / "shuffled.txt"  # the wrong prompt for every class: chance or below
    shuffled.write_text("\n".join(NAMES[1:] + NAMES[:1]) + "\n")
    res = _run(file, tmp_path / "results2", f"model.class_names={shuffled}")
    assert res.exit_code == 0, res.output
    (bad,) = [json.loads(p.read_text()) for p in (tmp_path / "results2").glob("*.json")]
    assert bad["metrics"]["H"] < 30


def test_clip_text_follows_the_model_contract(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("\n".join(f"class {i}" for i in range(9)) + "\n")
    problem = toy_problem(0)  # its labels and split; features near their class's prompt
    text = random_text_tower(32)([f"a photo of a class {i}." for i in range(9)])
    noise = np.random.default_rng(0).standard_normal(problem["features"].shape)
    problem["features"] = (text[problem["labels"]] + 0.5 * noise).astype(np.float32)
    check_model(
        ClipText(
            text_tower="tests.plugins.test_cliptext:random_text_tower_32", class_names=str(names)
        ),
        problem=problem,
    )


def test_what_clip_text_refuses_is_one_line(tmp_path: Path) -> None:
    file, names = _clip_set(tmp_path)
    res = _run(file, tmp_path / "r")
    assert res.exit_code != 0 and "clip-text needs the class names" in res.stderr
    assert "Traceback" not in res.output

    with pytest.raises(ConfigError, match="has no"):
        ClipText(class_names=str(names), prompt="a photo").check_params()
    model = ClipText(text_tower=TOWER, class_names=str(names))
    x = np.ones((4, DIM + 1), dtype=np.float32)
    with pytest.raises(DataError, match="17-d"):
        model.fit(x, np.array([0, 0, 1, 1]), np.ones((3, 2)), np.array([0, 1, 2]))


def test_xlsa17_class_names_read_as_words() -> None:
    assert clean_name("001.Black_footed_Albatross") == "Black footed Albatross"
    assert clean_name("polar+bear") == "polar bear"


def test_the_text_tower_is_built_once_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run fits clip-text on the validation split, then on trainval: one tower for both (with
    random weights, two builds were two different towers and two warnings)."""
    from zslbench_plugins import cliptext

    if hasattr(cliptext, "text_tower"):  # built by an earlier test of this process
        cliptext.text_tower.cache_clear()
    builds = tmp_path / "builds.txt"
    monkeypatch.setenv(BUILDS, str(builds))
    file, names = _clip_set(tmp_path)
    res = _run(
        file,
        tmp_path / "r",
        f"model.class_names={names}",
        tower="tests.plugins.test_cliptext:counted_text_tower",
    )
    assert res.exit_code == 0, res.output
    assert builds.read_text().splitlines() == ["built"]


def test_an_open_clip_tower_without_its_weights_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offline without cached weights (HF_HUB_OFFLINE=1), through a stand-in open_clip."""
    import sys
    import types

    from zslbench_plugins import cliptext

    def create(arch, pretrained=None):
        raise OSError("Cannot find the requested files in the disk cache (HF_HUB_OFFLINE=1)")

    monkeypatch.setitem(
        sys.modules, "open_clip", types.SimpleNamespace(create_model_and_transforms=create)
    )
    cliptext.text_tower.cache_clear()
    file, names = _clip_set(tmp_path)
    res = _run(
        file, tmp_path / "r", f"model.class_names={names}", tower="open_clip:ViT-B-32/openai"
    )
    assert res.exit_code != 0 and "internal error" not in res.output, res.output
    (line,) = [x for x in res.stderr.splitlines() if "cannot be built" in x]
    assert "clip-text: text_tower open_clip:ViT-B-32/openai cannot be built (OSError" in line
    assert "connect once, or give a checkpoint path" in res.stderr
