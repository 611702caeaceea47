"""The in-memory form of a GZSL dataset that every loader returns."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

#: Environment variable naming the data dir (after ``--data-dir``, before the default).
DATA_ENV = "ZSLBENCH_DATA"


def resolve_data_dir(cli_value: str | Path | None) -> Path:
    """The data dir: ``--data-dir``, else ``$ZSLBENCH_DATA``, else ``$XDG_CACHE_HOME/zslbench/data``.

    The default follows the XDG base-directory convention (``~/.cache/zslbench/data`` when
    ``XDG_CACHE_HOME`` is unset): the data can be re-downloaded, so it is cache, not config.
    """
    if cli_value not in (None, ""):
        return Path(cli_value).expanduser()
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "zslbench" / "data"


@dataclass
class ZSLData:
    """A dataset as every loader returns it: 0-based labels and indices.

    Whether it is standard, and its fingerprint, are not the loader's to say: the runner decides
    both from the content (``zslbench.data.checks``).

    ``features`` (n, d) float32, possibly a read-only memory map (the synthetic generator, v2,
    gives float64; the fingerprint hashes every dataset's features as float32, and each method
    casts to the precision it computes in); ``labels`` (n,) int64 class
    indices in ``[0, n_classes)``; ``attributes`` (n_classes, a) float32 class semantics.
    The three evaluation index sets follow Split V2.0. ``val_classes`` are the classes of the
    official validation split (``val_loc``), used only to build the leak-free validation split;
    the official ``train_loc``/``val_loc`` *images* are never used.
    """

    name: str
    features: np.ndarray
    labels: np.ndarray
    attributes: np.ndarray
    trainval_idx: np.ndarray
    test_seen_idx: np.ndarray
    test_unseen_idx: np.ndarray
    val_classes: np.ndarray | None = None
    #: Provenance: source file paths and sha256, generator version for synthetic data, ...
    source: dict[str, Any] = field(default_factory=dict)
    class_names: list[str] | None = None

    @property
    def n_classes(self) -> int:
        return int(self.attributes.shape[0])

    @property
    def seen_classes(self) -> np.ndarray:
        return np.unique(self.labels[self.trainval_idx])

    @property
    def unseen_classes(self) -> np.ndarray:
        return np.unique(self.labels[self.test_unseen_idx])


@dataclass(frozen=True)
class DatasetSpec:
    """What a ``zslbench_datasets`` hook returns.

    ``load(data_dir)`` returns a :class:`ZSLData`; the runner calls it exactly so. ``kind`` is
    ``"real"`` for a published benchmark (standard only when its content is the official one),
    ``"synthetic"`` for generated data and ``"custom"`` for a user's own benchmark; each kind has its
    own leaderboard page and they are never mixed.
    ``groups`` names the aliases that include this dataset (``"all"``, ``"synth-all"``).
    """

    name: str
    load: Callable[[Path | None], ZSLData]
    kind: Literal["real", "synthetic", "custom"] = "real"
    description: str = ""
    groups: tuple[str, ...] = ()
    #: ``missing(data_dir)`` -> one line per required file that is absent, saying how to get it.
    #: The runner calls it for every requested dataset before any work, and never substitutes data.
    missing: Callable[[Path | None], list[str]] | None = None
