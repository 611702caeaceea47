"""The five real xlsa17 benchmarks (AWA1, AWA2, APY, CUB, SUN; Split V2.0) as zslbench datasets.

The data is read from disk (``zslbench data download`` fetches it); nothing here generates or
substitutes data. ``all`` names the five. A built-in plugin like any other: core zslbench imports
nothing from here.

* ``loader`` - ``<data-dir>/<NAME>/res101.mat`` + ``att_splits.mat`` in, ``ZSLData`` out;
* ``checks`` - what only the xlsa17 files have to pass, and ``registry.json`` (the known files,
  the archive, and each benchmark's identity: its split fingerprint and the other pins that the
  datasets declare to the runner, ``loader.benchmark``);
* ``cache`` - the float32 cache, checked byte for byte on every load, and its temporaries;
* ``download`` and ``cli`` - ``zslbench data download | verify | info``, added to the command line
  through the ``zslbench_commands`` hook.
"""

from __future__ import annotations

from pathlib import Path

from zslbench.data.dataset import DatasetSpec, ZSLData
from zslbench.hookspecs import hookimpl
from zslbench_plugins.xlsa17.checks import load_registry
from zslbench_plugins.xlsa17.loader import (
    DATASETS,
    benchmark,
    missing_files,
    read_xlsa17,
    resolve_data_dir,
)


def _loader(name: str):
    def load(data_dir: Path | None = None) -> ZSLData:
        # The loader refuses what cannot be read; the split checks and what is standard are the
        # runner's, once per load, against the benchmark declared below.
        return read_xlsa17(name, resolve_data_dir(data_dir))

    load.__doc__ = f"Read {name} from ``<data-dir>/{name.upper()}`` (the runner checks its split)."
    return load


def _missing(name: str):
    def missing(data_dir: Path | None = None) -> list[str]:
        return missing_files(name, resolve_data_dir(data_dir))

    return missing


@hookimpl
def zslbench_commands(cli) -> None:
    from zslbench_plugins.xlsa17.cli import data

    cli.add_command(data)


#: The paper's column order in tables (CUB, SUN, AWA2, AWA1, APY): each dataset declares its place
#: (``DatasetSpec.order``), and the leaderboard reads it (``zslbench.registry.dataset_order``).
TABLE_ORDER = ("cub", "sun", "awa2", "awa1", "apy")


@hookimpl
def zslbench_datasets() -> list[DatasetSpec]:
    registry = load_registry()["datasets"]
    specs = []
    for name in DATASETS:
        e = registry[name]
        desc = (
            f"{e['title']} (xlsa17 Split V2.0: {e['n_images']} images, {e['n_seen']}+"
            f"{e['n_unseen']} classes, {e['attribute_dim']}-d attributes, ResNet-101); "
            f"needs `zslbench data download`"
        )
        specs.append(
            DatasetSpec(
                name=name,
                load=_loader(name),
                kind="real",
                description=desc,
                groups=("all",),
                missing=_missing(name),
                benchmark=benchmark(name),
                order=TABLE_ORDER.index(name),
            )
        )
    return specs
