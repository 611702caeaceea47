"""Result records: the one type (:class:`Record`) that every number zslbench prints comes from.

One JSON file per run (dataset, method, configuration, seed), written atomically by
:func:`write_record` and read back only through :func:`read_record`, which checks the schema
version, the types of the fields that leaderboards and the cache rely on, and the record's digest
of its own content. A record that fails any of these is refused with the reason: ``run`` re-runs
it, ``leaderboard`` skips it with a warning naming the file.

The digest (``sha256`` of the canonical JSON of every other field) detects accidental edits and
damage; it is integrity, not security: anyone can recompute it after editing a record.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

SCHEMA_VERSION = 3
KINDS = ("real", "synthetic", "custom")


@dataclass(frozen=True)
class MetricSpec:
    """One metric of a record, declared once: the record's check, the run that measures it,
    :func:`zslbench.load_results`' columns and ``compare`` all derive from its declaration in
    :data:`METRIC_SPECS` (MTEB's ``TaskMetadata`` declares its scores the same way)."""

    name: str
    #: What it measures, in one line (percent unless said otherwise).
    about: str
    higher_is_better: bool = True
    #: Compared across seeds by paired tests (``compare``, the board's significance marks).
    tested: bool = False
    #: Where the board shows it: ``main`` (the per-dataset tables), ``sweep``, ``cite``, ``csv``.
    shown: tuple[str, ...] = ("csv",)
    #: In every record; an optional one may be absent (not measured: NaN in the table).
    required: bool = True
    #: How a run computes it from its evaluation (``zslbench.metrics.evaluate``'s dict); None
    #: takes the evaluation's entry of the same name.
    compute: Callable[[Mapping[str, Any]], float] | None = None

    def measure(self, evaluation: Mapping[str, Any]) -> float | None:
        """Its value in ``evaluation``, or None when the evaluation does not give it."""
        if self.compute is not None:
            return float(self.compute(evaluation))
        value = evaluation.get(self.name)
        return None if value is None else float(value)


#: Every metric a record carries, declared once (a new metric is its function and one entry here).
METRIC_SPECS: list[MetricSpec] = [
    MetricSpec(
        "A_T",
        "unseen accuracy, conventional ZSL",
        tested=True,
        shown=("main", "cite", "sweep", "csv"),
    ),
    MetricSpec("A_U", "unseen accuracy in GZSL", shown=("main", "sweep", "csv")),
    MetricSpec("A_S", "seen accuracy in GZSL", shown=("main", "sweep", "csv")),
    MetricSpec(
        "H", "harmonic mean of A_U and A_S", tested=True, shown=("main", "cite", "sweep", "csv")
    ),
    MetricSpec(
        "AUSUC",
        "area under the seen-unseen curve, per-class accuracies (Chao et al.)",
        tested=True,
        shown=("main", "cite", "sweep", "csv"),
    ),
    # not in schema 1: AUSUC averaged per image, as CNZSL's code computes it
    MetricSpec("AUSUC_per_image", "AUSUC with per-image accuracies (CNZSL)", required=False),
]


def metric_names(*, required: bool | None = None, tested: bool | None = None) -> tuple[str, ...]:
    """The names of the declared metrics (:data:`METRIC_SPECS`, read now), in order; only the
    required (or optional) ones, only the tested (or untested) ones when asked."""
    return tuple(
        m.name
        for m in METRIC_SPECS
        if (required is None or m.required == required) and (tested is None or m.tested == tested)
    )


def metric_spec(name: str) -> MetricSpec:
    """The declaration of metric ``name`` (``KeyError`` when none)."""
    for m in METRIC_SPECS:
        if m.name == name:
            return m
    raise KeyError(name)


#: The metrics every record carries, and the optional ones, as first declared (the board's
#: modules read these; the core's readers call :func:`metric_names`).
METRICS = metric_names(required=True)
EXTRA_METRICS = metric_names(required=False)


class RecordError(Exception):
    """A file that is not a valid, intact zslbench record (the message says why)."""


def config_id(
    method: str, components: dict[str, tuple[str, Any]], search: dict[str, list[Any]]
) -> str:
    """The configuration id: sha256 of the method, per role its component's name and
    hyperparameters (``{"model": ("krr", {"alpha": 0.1})}``), and the search space the harness
    searches (``{"alpha": [0.01, 0.1, 1.0]}``), as JSON data. The space is part of it because a
    hyperparameter fixed at its default and the same one searched are two different runs."""
    body = {role: [name, params] for role, (name, params) in components.items()}
    text = json.dumps({"method": method, "components": body, "search": search}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def run_name(
    dataset: str,
    method: str,
    config_id: str,
    data_fingerprint: str,
    device_type: str,
    seed: int,
) -> str:
    """A run's id, its record's file name without ``.json``: 12 hex digits of the configuration
    id and of the data fingerprint (48 bits each; the planner still refuses to write a run over
    the record of another configuration or data, ``zslbench.planning``)."""
    return f"{dataset}__{method}__{config_id[:12]}__{data_fingerprint[:12]}__{device_type}__s{seed}"


@dataclass
class Record:
    """One run. Every field is JSON data; docs/records.md says what they mean."""

    run_id: str
    key: str
    config_id: str
    code_fingerprint: str
    dataset: str
    dataset_kind: str
    method: str
    repetition: int
    base_seed: int
    seed: int
    metrics: dict[str, float]
    gamma: float
    timings: dict[str, float]
    config: dict[str, Any]
    split: dict[str, Any]
    data: dict[str, Any]
    device: dict[str, Any]
    environment: dict[str, Any]
    git: dict[str, Any]
    zslbench_version: str
    started_at: str
    finished_at: str
    paper_name: str = ""
    load: dict[str, Any] = field(default_factory=dict)
    curve: dict[str, Any] | None = None
    operating_point: dict[str, Any] | None = None
    per_class: dict[str, Any] | None = None
    search: dict[str, Any] | None = None
    validation: dict[str, Any] = field(default_factory=dict)
    #: What the run's key covers, per component (:mod:`zslbench.identity`); a record without one
    #: is refused (``zslbench.records.validation``).
    identity: dict[str, Any] = field(default_factory=dict)
    #: What the official code's selection on test would have reported
    #: (``zslbench.protocol.selection_audit``); None for a method that has no such rule.
    selection_audit: dict[str, Any] | None = None
    schema: int = SCHEMA_VERSION
    digest: str = ""

    # -- integrity -------------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:
        """The fields the digest covers, as a new top-level dict that shares the record's values
        (do not mutate them). Not ``dataclasses.asdict``: its deep copy of every curve and
        per-class list was most of the time of reading a results folder, and the fields already
        hold plain JSON values, so the digest is the same."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.pop("digest")
        return out

    def compute_digest(self) -> str:
        text = json.dumps(self.body(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def sealed(self) -> Record:
        self.digest = self.compute_digest()
        return self

    def to_json(self) -> str:
        out = self.body()
        out["digest"] = self.digest
        return json.dumps(out, indent=2, sort_keys=True, allow_nan=False) + "\n"

    @property
    def standard(self) -> bool:
        return bool(self.split.get("standard"))


def is_finite(value: Any) -> bool:
    """Whether ``value`` is a finite JSON number (an int or a float, not a bool): the one test
    of a number in a record, used by the schema checks here and by :mod:`zslbench.records.results`."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def jsonable(value: Any) -> Any:
    """``value`` as JSON data for a record: NumPy arrays and scalars as lists and numbers,
    tuples as lists, a non-finite float as its text (``"nan"``), anything else as its repr."""
    import numpy as np  # only when a record is made: reading records needs no NumPy

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)
