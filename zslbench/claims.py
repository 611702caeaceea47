"""What a record claims about its run, checked against itself and against the datasets' declarations.

A record's digest only shows that nobody edited it by accident: anyone can recompute it. So, when
a record is read (for the cache, the leaderboard, ``compare`` and :func:`zslbench.load_results`),
every claim that can be recomputed is, and a record whose claims disagree is refused with one line
naming what disagrees (:func:`check`):

- its ``key`` is the key of its ``identity`` (:func:`zslbench.identity.run_key`);
- its ``config_id`` is the id of its own ``config`` (method, components and hyperparameters), and
  the identity's; its method is its configuration's;
- its seed is the one its base seed, dataset and repetition derive
  (:func:`zslbench.identity.derive_seed`);
- its data fingerprint, seed and device type are the identity's, and the fingerprint is the one
  its split's content parts give;
- its ``run_id`` is one of the two names of such a run (:func:`zslbench.records.run_name`);
- where its dataset is registered: its ``dataset_kind`` is the one the dataset declares, and a
  standard split of a declared benchmark has the benchmark's pinned fingerprints.

A record made before run identities were stored (no ``identity``) has no key to recompute: the
board still reads it, but the cache never serves it (``zslbench.planning``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from zslbench import identity as ident
from zslbench.records import Record, RecordError, config_id, run_name
from zslbench.registry import installed_datasets

#: The name of a dataset -> its declaration (a ``zslbench.data.dataset.DatasetSpec``: ``kind``,
#: ``benchmark``).
Declarations = Mapping[str, Any]


def declared_datasets(registry: Any = None) -> Declarations:
    """The datasets' declarations: the ``registry``'s, else those of the installed plugins (loaded
    once per process)."""
    if registry is not None:
        return {name: p.obj for name, p in registry.items["dataset"].items()}
    return installed_datasets()


def _content_fingerprint(parts: Mapping[str, Any], features_hash: str) -> str:
    from zslbench.data.checks import CONTENT_SCHEME

    text = (
        CONTENT_SCHEME
        + "\n"
        + "\n".join(f"{k}:{v}" for k, v in sorted(parts.items()))
        + f"\nfeatures:{features_hash}\n"
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _short(value: Any) -> str:
    return str(value)[:12]


def check(record: Record, datasets: Declarations | None = None) -> None:
    """Raise :class:`RecordError` naming the first claim of ``record`` that disagrees with another
    (see the module docstring); ``datasets`` defaults to :func:`declared_datasets`."""
    config = record.config
    if config.get("method", record.method) != record.method:
        raise RecordError(
            f"claims method {record.method!r} but its config ran {config.get('method')!r}"
        )
    data_fp = record.data.get("fingerprint")
    dev_type = record.device.get("type")
    if record.identity:
        _check_identity(record, data_fp, dev_type)
    _check_dataset(record, declared_datasets() if datasets is None else datasets)


def _check_identity(record: Record, data_fp: Any, dev_type: Any) -> None:
    idn = record.identity
    try:
        key = ident.run_key(idn, record.schema)
    except (TypeError, ValueError):
        raise RecordError("its identity is not JSON data") from None
    if key != record.key:
        raise RecordError(
            f"its key {_short(record.key)} is not the key of its identity "
            f"({_short(key)}): the record claims another run"
        )
    comps = record.config.get("components")
    if not isinstance(comps, dict) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in comps.values()
    ):
        raise RecordError("config.components is not an object of named components")
    own = config_id(
        record.method, {role: (c["name"], c.get("params", {})) for role, c in comps.items()}
    )
    if own != record.config_id:
        raise RecordError(
            f"its config_id {_short(record.config_id)} is not the id of its own "
            f"configuration ({_short(own)}): the record claims another configuration"
        )
    seed = ident.derive_seed(record.base_seed, record.dataset, record.repetition)
    if record.seed != seed:
        raise RecordError(
            f"its seed {record.seed} is not the seed of repetition {record.repetition} of base "
            f"seed {record.base_seed} on {record.dataset!r} ({seed})"
        )
    for name, claimed, own_value in (
        ("config_id", idn.get("config_id"), record.config_id),
        ("data", idn.get("data"), data_fp),
        ("seed", idn.get("seed"), record.seed),
        ("device_type", idn.get("device_type"), dev_type),
    ):
        if claimed != own_value:
            raise RecordError(
                f"its identity's {name} {_short(claimed)!r} differs from the "
                f"record's ({_short(own_value)!r})"
            )
    names = {
        run_name(
            record.dataset,
            record.method,
            record.config_id,
            str(data_fp),
            str(dev_type),
            record.seed,
            full=full,
        )
        for full in (False, True)
    }
    if record.run_id not in names:
        raise RecordError(
            f"its run_id {record.run_id!r} does not name its dataset, method, "
            "configuration, data, device and seed"
        )
    parts, fhash = record.split.get("parts"), record.data.get("features_hash")
    if isinstance(parts, dict) and isinstance(fhash, str):
        if _content_fingerprint(parts, fhash) != data_fp:
            raise RecordError(
                f"its data fingerprint {_short(data_fp)} is not the one its split's "
                "content parts give"
            )
        if parts.get("split") != record.split.get("fingerprint"):
            raise RecordError("its split fingerprint is not its content parts' split")


def _check_dataset(record: Record, datasets: Declarations) -> None:
    spec = datasets.get(record.dataset)
    if spec is None:  # a dataset opened from a file, or a plugin not installed here
        return
    kind = getattr(spec, "kind", None)
    if kind is not None and record.dataset_kind != kind:
        raise RecordError(
            f"claims dataset_kind {record.dataset_kind!r}, but dataset "
            f"{record.dataset!r} is declared {kind!r}"
        )
    bench = getattr(spec, "benchmark", None)
    if bench is None or not record.standard:
        return
    if record.split.get("fingerprint") != bench.split:
        raise RecordError(
            f"claims the standard {bench.name} split, but its split fingerprint "
            f"{_short(record.split.get('fingerprint'))} is not the official "
            f"{_short(bench.split)}"
        )
    parts = record.split.get("parts")
    if isinstance(parts, dict):
        for part in ("attributes", "labels", "val_classes"):
            pin = getattr(bench, part, None)
            if pin is not None and part in parts and parts[part] != pin:
                raise RecordError(
                    f"claims the standard {bench.name} data, but its {part} "
                    f"fingerprint {_short(parts[part])} is not the official "
                    f"{_short(pin)}"
                )
    backbone = record.data.get("backbone")
    if backbone is not None and backbone != getattr(bench, "backbone", None):
        return  # another backbone's features: the benchmark's feature pin is not theirs
    pin = getattr(bench, "features", None)
    fhash = record.data.get("features_hash")
    if pin is not None and fhash is not None and fhash != pin:
        raise RecordError(
            f"claims the standard {bench.name} data, but its features hash "
            f"{_short(fhash)} is not the official {_short(pin)}"
        )
