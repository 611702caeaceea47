"""Embedded datasets: ``toy`` and the full-size stand-ins ``synth-awa1 ... synth-sun``.

Generated in-process (see ``zslbench.data.synthetic``); nothing is downloaded. ``synth-all`` names
the five stand-ins. They are *synthetic*: never compare their numbers with the paper's.
"""

from __future__ import annotations

from pathlib import Path

from zslbench.data.dataset import DatasetSpec, ZSLData
from zslbench.data.synthetic import SHAPES, generate
from zslbench.hookspecs import hookimpl


def _loader(name: str):
    def load(data_dir: Path | None = None) -> ZSLData:
        return generate(SHAPES[name])

    return load


@hookimpl
def zslbench_datasets() -> list[DatasetSpec]:
    specs = []
    for name, shape in SHAPES.items():
        if name == "toy":
            desc = (f"tiny synthetic problem ({shape.n_seen}+{shape.n_unseen} classes, "
                    f"{shape.feature_dim}-d), runs in seconds")
            groups: tuple[str, ...] = ()
        else:
            real = name.removeprefix("synth-").upper()
            desc = (f"SYNTHETIC stand-in with {real}'s shape ({shape.n_seen}+{shape.n_unseen} classes, "
                    f"{shape.att_dim}-d attributes, {shape.total} images); not the real {real}")
            groups = ("synth-all",)
        specs.append(DatasetSpec(name=name, load=_loader(name), kind="synthetic",
                                 description=desc, groups=groups))
    return specs
