"""Embedded datasets: ``toy`` and the full-size stand-ins ``synth-awa1 ... synth-sun``.

Generated in-process (see ``zslbench.data.synthetic``); nothing is downloaded. ``synth-all`` names
the five stand-ins. They are *synthetic*: never compare their numbers with the paper's. Each
stand-in declares the real dataset whose shape it copies (``stand_in_for``); their shapes (the
paper's Table 1 and the real Split V2.0 counts, and for APY its unseen classes and their
frequencies from the paper's Table 4) are declared here, by the plugin that owns them.
"""

from __future__ import annotations

from pathlib import Path

from zslbench.data.dataset import DatasetSpec, ZSLData
from zslbench.data.synthetic import SynthShape, generate
from zslbench.hookspecs import hookimpl

# APY's unseen classes and their frequencies, from the paper's Table 4.
APY_UNSEEN_NAMES = (
    "cow",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "train",
    "tvmonitor",
    "donkey",
    "goat",
    "jetski",
    "statue",
)
APY_UNSEEN_FREQ = (2.48, 3.81, 3.75, 63.99, 5.50, 2.95, 2.22, 3.77, 1.75, 2.06, 5.04, 2.61)

#: The generator's parameters of every embedded dataset, by name (registered in this order).
SHAPES: dict[str, SynthShape] = {
    s.name: s
    for s in [
        SynthShape("synth-awa1", 40, 10, 85, 19832, 4958, 5685, 92, 1168, 13, data_seed=101),
        SynthShape("synth-awa2", 40, 10, 85, 23527, 5882, 7913, 100, 1645, 13, data_seed=102),
        SynthShape(
            "synth-apy",
            20,
            12,
            64,
            5932,
            1483,
            7924,
            51,
            5071,
            5,
            unseen_freq=APY_UNSEEN_FREQ,
            data_seed=103,
            unseen_names=APY_UNSEEN_NAMES,
        ),
        SynthShape(
            "synth-cub",
            150,
            50,
            312,
            7057,
            1764,
            2967,
            41,
            60,
            50,
            data_seed=104,
            nuisance=1.5,
            noise=0.45,
            hidden_noise=1.0,
        ),
        SynthShape(
            "synth-sun",
            645,
            72,
            102,
            10320,
            2580,
            1440,
            20,
            20,
            65,
            data_seed=105,
            nuisance=1.2,
            noise=0.35,
            hidden_noise=0.8,
        ),
        # Small enough to run every method end to end in seconds.
        SynthShape("toy", 12, 6, 24, 960, 240, 480, 40, 160, 4, feature_dim=256, data_seed=7),
    ]
}


def _loader(name: str):
    def load(data_dir: Path | None = None) -> ZSLData:
        return generate(SHAPES[name])

    return load


@hookimpl
def zslbench_datasets() -> list[DatasetSpec]:
    specs = []
    for name, shape in SHAPES.items():
        stand_in_for = None
        if name == "toy":
            desc = (
                f"tiny synthetic problem ({shape.n_seen}+{shape.n_unseen} classes, "
                f"{shape.feature_dim}-d), runs in seconds"
            )
            groups: tuple[str, ...] = ()
        else:
            stand_in_for = name.removeprefix("synth-")
            real = stand_in_for.upper()
            desc = (
                f"SYNTHETIC stand-in with {real}'s shape ({shape.n_seen}+{shape.n_unseen} classes, "
                f"{shape.att_dim}-d attributes, {shape.total} images); not the real {real}"
            )
            groups = ("synth-all",)
        specs.append(
            DatasetSpec(
                name=name,
                load=_loader(name),
                kind="synthetic",
                description=desc,
                groups=groups,
                stand_in_for=stand_in_for,
            )
        )
    return specs
