"""The in-memory form of a GZSL dataset that every loader returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np


@dataclass
class ZSLData:
    """A dataset in the xlsa17 layout, converted to 0-based indices.

    ``features`` (n, d) float32, possibly a read-only memory map; ``labels`` (n,) int64 class
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
    kind: Literal["real", "synthetic"] = "real"
    #: Content fingerprint of the split (see ``zslbench.data.splits.split_fingerprint``).
    split_fingerprint: str = ""
    #: True when the split passed every Split V2.0 check, fingerprint included.
    standard: bool = False
    #: Why the split is non-standard, when it is (empty otherwise).
    nonstandard_reason: str = ""
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

    ``load(data_dir)`` returns a :class:`ZSLData`. ``kind`` is ``"real"`` for benchmark data read
    from disk and ``"synthetic"`` for data generated in-process; leaderboards never mix the two.
    ``groups`` names the aliases that include this dataset (``"all"``, ``"synth-all"``).
    """

    name: str
    load: Callable[[Path | None], ZSLData]
    kind: Literal["real", "synthetic"] = "real"
    description: str = ""
    groups: tuple[str, ...] = ()
    #: ``missing(data_dir)`` -> one line per required file that is absent, saying how to get it.
    #: The runner calls it for every requested dataset before any work, and never substitutes data.
    missing: Callable[[Path | None], list[str]] | None = None
