"""A dataset's backbone: which network computed its features, as part of the dataset's identity.

A dataset is a benchmark's split and class data plus one feature set, and a feature set names the
backbone that computed it (``res101`` for xlsa17, ``vit_b32_clip`` for a TV-GZSL file,
``resnet50`` for ``zslbench features extract``). The runner applies the same checks to every
feature set (:mod:`zslbench.data.checks`); this module decides what the backbone changes:

* a backbone other than the benchmark's own (:attr:`~zslbench.data.dataset.Benchmark.backbone`)
  is compared with every pin of the benchmark but the features' (``feature_dim``, ``features``),
  which belong to the benchmark's own backbone: a CLIP feature set of AWA2 is the official AWA2
  split with other features, not a corrupted AWA2;
* such a backbone enters the data fingerprint as one more content part (``backbone``), so that the
  run key, the record's file name and the board tell the feature sets apart by name, not only by
  their bytes. The benchmark's own backbone adds nothing, and nor does a dataset that names none:
  every record made before backbones were named keeps its key (and stays cached).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from zslbench.data.checks import DataCheck
from zslbench.data.dataset import Benchmark
from zslbench.data.fingerprints import content_fingerprint

#: The content part that holds a backbone in the data fingerprint.
PART = "backbone"


def is_foreign(backbone: str | None, benchmark: Benchmark | None) -> bool:
    """Whether ``backbone`` names features other than the benchmark's own (a named backbone on a
    dataset without a declared backbone counts as foreign: nothing recorded before names it)."""
    if backbone is None:
        return False
    return benchmark is None or benchmark.backbone != backbone


def for_backbone(benchmark: Benchmark | None, backbone: str | None) -> Benchmark | None:
    """``benchmark`` as a feature set of ``backbone`` is compared with it: without the feature
    pins when the backbone is not the benchmark's own."""
    if benchmark is None or not is_foreign(backbone, benchmark) or benchmark.backbone is None:
        return benchmark
    return replace(benchmark, feature_dim=None, features=None)


def relax_all(benchmarks: Iterable[Benchmark], backbone: str | None) -> list[Benchmark]:
    """:func:`for_backbone` of each (what a real file that declares no benchmark is matched with)."""
    return [b for b in (for_backbone(b, backbone) for b in benchmarks) if b is not None]


def named(verdict: DataCheck, backbone: str | None, benchmark: Benchmark | None) -> DataCheck:
    """The verdict with ``backbone`` in its content parts and fingerprint, when it is foreign
    (:func:`is_foreign`); unchanged otherwise."""
    if not is_foreign(backbone, benchmark):
        return verdict
    parts = {**verdict.parts, PART: str(backbone)}
    return replace(
        verdict, parts=parts, fingerprint=content_fingerprint(parts, verdict.features_hash)
    )
