"""The in-memory form of a GZSL dataset that every loader returns."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np

from zslbench.data.splits import SplitNaming
from zslbench.errors import DataError

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

    ``features`` (n, d) float32, possibly a read-only memory map (the fingerprint hashes every
    dataset's features as float32, and each method casts to the precision it computes in);
    ``labels`` (n,) int64 class indices in ``[0, n_classes)``; ``attributes`` (n_classes, a)
    float32 class semantics.
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
    #: How messages about the index sets name them: the file that holds them, their keys there,
    #: 0- or 1-based (None: the dataset's name and its 0-based ``*_idx``). A format's loader sets
    #: it so that the runner's split checks, which run once per load, name the user's file.
    split_naming: SplitNaming | None = None
    #: The backbone that computed the features (``"res101"``, ``"vit_b32_clip"``); None for
    #: features that name none (synthetic data, a file without one). A dataset is its split and
    #: class data plus one feature set: records carry the backbone (``data.backbone``), and a
    #: backbone other than the benchmark's own (:attr:`Benchmark.backbone`) enters the data
    #: fingerprint, so its runs are cached, shown and compared apart.
    backbone: str | None = None

    @property
    def n_classes(self) -> int:
        return int(self.attributes.shape[0])

    @property
    def seen_classes(self) -> np.ndarray:
        return np.unique(self.labels[self.trainval_idx])

    @property
    def unseen_classes(self) -> np.ndarray:
        return np.unique(self.labels[self.test_unseen_idx])


#: The most characters a dataset name may have: it is part of every record's file name
#: (``<dataset>__<method>__...json``), and file names stop at 255 bytes.
MAX_NAME_LENGTH = 100


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a dataset, or None when it can.

    A dataset's name becomes part of a record's file name and of the record itself, so it must be
    a non-empty string without a path separator, control characters or a leading ``.`` (records
    of hidden files are skipped by design), and short enough for a file name. Other characters
    (spaces, ``#``, ``$``) are allowed: whatever shows a name escapes or quotes it.
    """
    if not isinstance(name, str) or not name:
        return "is empty"
    if name in (".", "..") or name.startswith("."):
        return "starts with '.'"
    if "/" in name or "\\" in name:
        return "contains a path separator ('/' or '\\')"
    bad = next((c for c in name if unicodedata.category(c)[0] == "C"), None)
    if bad is not None:
        return f"contains the control character {bad!r}"
    if len(name) > MAX_NAME_LENGTH:
        return f"has {len(name)} characters (at most {MAX_NAME_LENGTH})"
    return None


def printable(text: str) -> str:
    """``text`` with its control characters escaped (``\\n``, ``\\t``, ``\\x07``), so that a
    message quoting it stays one line."""
    return "".join(
        c.encode("unicode_escape").decode("ascii") if unicodedata.category(c)[0] == "C" else c
        for c in text
    )


def check_name(name: object, *, where: str, hint: str) -> str:
    """``name`` if it can name a dataset (:func:`name_problem`), else one :class:`DataError` line
    that says ``where`` the name came from and how to fix it."""
    problem = name_problem(name)
    if problem is not None:
        raise DataError(f"{printable(where)}: the dataset name {name!r} {problem}", hint=hint)
    return str(name)


_HEX64 = re.compile(r"[0-9a-f]{64}")
_BACKBONE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


def check_backbone(name: object, *, where: str) -> str:
    """``name`` if it can name a backbone (letters, digits, ``._+-``, at most 64 characters, as
    TV-GZSL's ``vit_b32_clip`` or timm's ``vit_base_patch16_224.augreg_in21k``), else one
    :class:`DataError` line saying ``where`` it came from."""
    if not isinstance(name, str) or not _BACKBONE.fullmatch(name):
        raise DataError(
            f"{printable(str(where))}: the backbone name {name!r} is not a name",
            hint="name a backbone with letters, digits, '.', '_', '+' or '-' "
            "(at most 64 characters), e.g. vit_b32_clip",
        )
    return name


@dataclass(frozen=True)
class Benchmark:
    """Which published benchmark a dataset is, and what pins its content.

    The MTEB pattern: a dataset names its revision. A dataset plugin declares it in its
    :class:`DatasetSpec` (``benchmark=``), so that a third party can add a standard real benchmark
    without touching the core. The runner's checks (``zslbench.data.checks``) compare every load
    with it: the dataset is *standard* only when every pinned part equals the published one; a
    pin left ``None`` is not compared and records list it as unverified. Fingerprints are the
    functions of ``zslbench.data.checks`` (``split_fingerprint`` of the 1-based index sets,
    ``attributes_fingerprint``, ``labels_fingerprint``, sha256 of ``val_classes_text``,
    ``features_hash``).
    """

    #: Short name of the published benchmark (``"awa2"``); records name it as ``official``.
    name: str
    #: Its full title (``"Animals with Attributes 2"``).
    title: str
    #: The published version of its splits that the pins describe (``"Split V2.0"``).
    revision: str
    #: The split fingerprint of the official index sets: the one pin every benchmark has.
    split: str
    #: Where it is published (a citation or URL), for people.
    source: str = ""
    n_images: int | None = None
    n_classes: int | None = None
    n_seen: int | None = None
    n_unseen: int | None = None
    #: Number of classes of the official validation split (``val_classes``).
    n_val_classes: int | None = None
    attribute_dim: int | None = None
    feature_dim: int | None = None
    #: Fingerprints of the content parts, when known.
    attributes: str | None = None
    labels: str | None = None
    val_classes: str | None = None
    features: str | None = None
    #: The backbone of the published features (``"res101"`` for xlsa17): the one ``feature_dim``
    #: and ``features`` pin. Feature sets of another backbone are compared with every other pin
    #: but not these, and their backbone enters the data fingerprint.
    backbone: str | None = None

    def __post_init__(self) -> None:
        for key in ("name", "title", "revision"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key):
                raise ValueError(f"Benchmark.{key} must be a non-empty string")
        for key in ("split", "attributes", "labels", "val_classes", "features"):
            value = getattr(self, key)
            if (value is not None or key == "split") and not (
                isinstance(value, str) and _HEX64.fullmatch(value)
            ):
                raise ValueError(
                    f"Benchmark {self.name!r}: {key} must be a sha256 hex digest "
                    f"(64 lower-case hex digits), got {value!r}"
                )
        for key in (
            "n_images",
            "n_classes",
            "n_seen",
            "n_unseen",
            "n_val_classes",
            "attribute_dim",
            "feature_dim",
        ):
            value = getattr(self, key)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 0
            ):
                raise ValueError(
                    f"Benchmark {self.name!r}: {key} must be a non-negative "
                    f"integer or None, got {value!r}"
                )

    @classmethod
    def from_mapping(cls, entry: dict[str, Any]) -> Benchmark:
        """A declaration from a mapping that may hold other keys too (a plugin's registry)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in entry.items() if k in names})

    def pins(self) -> dict[str, Any]:
        """Every pinned value, by name (what records and ``zslbench list`` show)."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }


@dataclass(frozen=True)
class DatasetSpec:
    """What a ``zslbench_datasets`` hook returns.

    ``load(data_dir)`` returns a :class:`ZSLData`; the runner calls it exactly so. ``kind`` is
    ``"real"`` for a published benchmark (standard only when its content is the official one),
    ``"synthetic"`` for generated data and ``"custom"`` for a user's own benchmark; each kind has its
    own leaderboard page and they are never mixed.
    ``groups`` names the aliases that include this dataset (``"all"``, ``"synth-all"``).
    ``benchmark`` declares which published benchmark a ``real`` dataset is and what pins it
    (:class:`Benchmark`); a ``real`` dataset without one (a file that says ``kind="real"``) is
    matched by its split against every declared benchmark.
    ``order`` is the dataset's place in tables (the paper's columns: lower first); datasets
    without one follow by name (:func:`zslbench.registry.dataset_order`). ``stand_in_for`` names
    the real dataset whose shape a synthetic stand-in copies (``synth-apy`` -> ``apy``).
    """

    name: str
    load: Callable[[Path | None], ZSLData]
    kind: Literal["real", "synthetic", "custom"] = "real"
    description: str = ""
    groups: tuple[str, ...] = ()
    #: ``missing(data_dir)`` -> one line per required file that is absent, saying how to get it.
    #: The runner calls it for every requested dataset before any work, and never substitutes data.
    missing: Callable[[Path | None], list[str]] | None = None
    benchmark: Benchmark | None = None
    order: int | None = None
    stand_in_for: str | None = None

    def __post_init__(self) -> None:
        check_name(
            self.name,
            where=f"dataset {self.name!r}",
            hint="name datasets with printable characters, no '/' and no leading '.'",
        )
        if self.benchmark is not None and self.kind != "real":
            raise ValueError(
                f"dataset {self.name!r}: only a real dataset declares a published "
                f"benchmark (kind is {self.kind!r})"
            )
