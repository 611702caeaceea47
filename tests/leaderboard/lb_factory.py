"""Hand-made result records (:class:`zslbench.records.Record`), sealed by ``write_record``.

The leaderboard reads nothing but records, so its tests build records directly: every number in
them is chosen by the test, which makes the expected medians, means, spreads and best marks exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zslbench import identity as ident
from zslbench import records
from zslbench.records import Record, write_record

PAPER_NAMES = {
    "bt-gp": "L_BT + GP (ours)",
    "t-gp": "L_T + GP",
    "gp": "GP",
    "krr": "KRR",
    "bt-krr": "L_BT + KRR",
}


def _split_fingerprint(dataset: str, kind: str) -> str:
    """The official split fingerprint of a declared benchmark (``apy``), which a record claiming
    its standard split must hold (``zslbench.records.validation``); a made-up one for any other dataset."""
    from zslbench.records.validation import declared_datasets

    spec = declared_datasets().get(dataset)
    bench = getattr(spec, "benchmark", None)
    return bench.split if bench is not None and kind == "real" else f"split-{dataset}"


def make_record(
    dataset: str = "synth-apy",
    method: str = "bt-gp",
    repetition: int = 0,
    *,
    seed: int | None = None,
    metrics: dict[str, float] | None = None,
    train: float = 2.0,
    standard: bool = True,
    kind: str | None = None,
    overrides: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    sweep: dict[str, Any] | None = None,
    config_file: str | None = None,
    oversubscribed: bool | None = False,
    device_type: str = "cpu",
    device_name: str = "Test CPU",
    finished_at: str = "2025-01-02T03:04:05+00:00",
    version: str = "0.1.0",
    commit: str = "0123456789abcdef0123456789abcdef01234567",
    per_class_acc: list[float] | None = None,
    frequencies: list[float] | None = None,
    class_names: list[str] | None = None,
    with_curve: bool = True,
    data_fp: str = "datafp",
    selection_audit: dict[str, Any] | None = None,
) -> Record:
    """A complete record. Unspecified metrics derive from fixed defaults; ``oversubscribed=None``
    gives a record without a ``load`` report (load unknown)."""
    # a record's seed is its repetition's under its base seed (a claim the reader checks): a test
    # that names a seed gets it as the base seed, so equal names still pair and others do not
    base_seed = 0 if seed is None else seed
    seed = ident.derive_seed(base_seed, dataset, repetition)
    kind = kind or ("synthetic" if dataset == "toy" or dataset.startswith("synth-") else "real")
    m = {"A_T": 50.0, "A_U": 40.0, "A_S": 60.0, "H": 48.0, "AUSUC": 30.0}
    m.update(metrics or {})
    params = dict(params or {"latent_dim": 64})
    regressor: dict[str, Any] = {}
    # what the run set, as the resolved hyperparameters it ran with (the configuration id is
    # computed from those, as zslbench.prepare does)
    for key, value in {**(overrides or {}), **(sweep or {})}.items():
        target, _, param = key.partition(".")
        (regressor if target in ("regressor", "gp") else params)[param or key] = value
    config: dict[str, Any] = {
        "method": method,
        "components": {
            "embedder": {"name": "bt", "plugin": "embedders", "params": params},
            "regressor": {"name": "gp", "plugin": "gp", "params": regressor},
        },
        "search": {},
        "overrides": overrides or {},
    }
    if sweep is not None:
        config["sweep"] = sweep
    if config_file is not None:
        config["config_file"] = config_file
    cid = records.config_id(
        method,
        {role: (c["name"], c["params"]) for role, c in config["components"].items()},
        config["search"],
    )
    components = {
        role: {
            "component": c["name"],
            "module": f"zslbench_plugins.{c['plugin']}",
            "digest": "0" * 16,
            "modules": {},
        }
        for role, c in config["components"].items()
    }
    identity = ident.run_identity(cid, data_fp, seed, device_type, components)
    key = ident.run_key(identity, records.SCHEMA_VERSION)
    gammas = [0.0, 0.5, 1.0, 2.0]
    curve = (
        {
            "gamma": gammas,
            "A_U": [m["A_U"] * 1.5, m["A_U"], m["A_U"] / 2, 0.0],
            "A_S": [0.0, m["A_S"], m["A_S"] * 1.2, m["A_S"] * 1.3],
        }
        if with_curve
        else None
    )
    acc = per_class_acc or [m["A_U"] - 10, m["A_U"], m["A_U"] + 10]
    freqs = frequencies or [0.02, 0.05, 0.13][: len(acc)]
    names = class_names or [f"class{i}" for i in range(len(acc))]
    unseen = [
        {
            "class": 10 + i,
            "name": names[i],
            "accuracy": a,
            "n_test": 20 * (i + 1),
            "frequency": freqs[i],
        }
        for i, a in enumerate(acc)
    ]
    load = (
        {}
        if oversubscribed is None
        else {
            "cpu_seconds": train * 1.5,
            "wall_seconds": train,
            "load_start": 9.0 if oversubscribed else 0.5,
            "load_end": 0.5,
            "cores": 2,
            "threads": 2,
            "oversubscribed": oversubscribed,
        }
    )
    return Record(
        run_id=records.run_name(dataset, method, cid, data_fp, device_type, seed),
        key=key,
        config_id=cid,
        code_fingerprint="code",
        dataset=dataset,
        dataset_kind=kind,
        method=method,
        paper_name=PAPER_NAMES.get(method, method),
        repetition=repetition,
        base_seed=base_seed,
        seed=seed,
        metrics=m,
        gamma=0.5,
        timings={
            "train": train,
            "embedder_fit": train / 2,
            "regressor_fit": train / 4,
            "calibration": train / 4,
            "evaluation": 0.1,
        },
        load=load,
        curve=curve,
        operating_point={"A_U": m["A_U"], "A_S": m["A_S"]},
        per_class={"unseen": unseen, "seen": []},
        config=config,
        split={
            "fingerprint": _split_fingerprint(dataset, kind),
            "standard": standard,
            "reason": "" if standard else "split fingerprint differs from Split V2.0",
        },
        data={
            "fingerprint": data_fp,
            "n_images": 1000,
            "n_seen": 5,
            "n_unseen": len(acc),
            "source": {},
        },
        device={"type": device_type, "name": device_name, "threads": 2},
        environment={"python": "3.11.0", "platform": "test", "packages": {"zslbench": version}},
        git={"commit": commit, "dirty": False},
        zslbench_version=version,
        started_at=finished_at,
        finished_at=finished_at,
        selection_audit=selection_audit,
        identity=identity,
    )


def write_records(results_dir: Path, records: list[Record]) -> list[Path]:
    return [write_record(results_dir, r) for r in records]


def small_grid(results_dir: Path) -> list[Path]:
    """A tiny but complete grid: 2 synthetic datasets × 2 methods × 2 seeds, plus 2 real runs."""
    records = []
    for dataset, base in (("synth-apy", 40.0), ("synth-cub", 30.0)):
        for method, bonus in (("gp", 0.0), ("bt-gp", 5.0)):
            for rep in range(2):
                h = base + bonus + rep
                records.append(
                    make_record(
                        dataset,
                        method,
                        rep,
                        train=1.0 + bonus / 10 + rep,
                        metrics={"H": h, "A_U": h - 5, "A_S": h + 5, "A_T": h + 2, "AUSUC": h / 2},
                    )
                )
    for rep in range(2):
        records.append(
            make_record(
                "apy",
                "bt-gp",
                rep,
                metrics={"H": 60.0 + rep},
                class_names=["person", "cow", "goat"],
                frequencies=[0.3, 0.01, 0.02],
                per_class_acc=[12.0, 15.0, 48.0],
            )
        )
    return write_records(results_dir, records)


APY_CLASSES = [
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
]
#: (unseen classes, test images per class) shaped like the stand-ins' (APY's person holds a third).
SHAPES = {
    "synth-cub": [60] * 40 + [55] * 10,
    "synth-sun": [20] * 72,
    "synth-awa2": [121, 267, 390, 461, 775, 911, 1029, 1059, 640, 300],
    "synth-awa1": [115, 117, 156, 199, 734, 745, 1168, 400, 380, 250],
    "synth-apy": [197, 302, 176, 1996, 139, 163, 297, 299, 207, 234, 20, 58],
}


def showcase_grid(results_dir: Path) -> list[Path]:
    """A board shaped like the committed one, for the browser test and for looking at: the five
    stand-ins × the paper's five methods × 3 seeds with each stand-in's class counts, a sweep, runs
    on an oversubscribed machine, real runs beside reported rows, and a custom dataset."""
    records = []
    methods = {"krr": 0.0, "bt-krr": 14.0, "gp": 0.5, "t-gp": 9.0, "bt-gp": 15.0}
    for d, (dataset, counts) in enumerate(SHAPES.items()):
        total = sum(counts)
        names = (
            [f"{c}(synth)" for c in APY_CLASSES]
            if dataset == "synth-apy"
            else [f"unseen_{i:03d}" for i in range(len(counts))]
        )
        for m, (method, bonus) in enumerate(methods.items()):
            for rep in range(3):
                h = 30.0 + 3 * d + bonus + rep * 0.4
                acc = [
                    min(95.0, h - 15 + ((i * 37 + m * 11 + rep * 5) % 30))
                    for i in range(len(counts))
                ]
                records.append(
                    make_record(
                        dataset,
                        method,
                        rep,
                        train=(2.0 + 3 * d) * (1 + m / 2) * (1 + rep / 10),
                        with_curve=dataset in ("synth-apy", "synth-sun"),
                        oversubscribed=(method == "t-gp" and rep == 2),
                        metrics={
                            "H": h,
                            "A_U": h - 6,
                            "A_S": h + 8,
                            "A_T": h + 5,
                            "AUSUC": h * 0.7,
                            "AUSUC_per_image": h * 0.75,
                        },
                        per_class_acc=acc,
                        frequencies=[c / total for c in counts],
                        class_names=names,
                    )
                )
    for margin, h in ((0.5, 55.0), (1.0, 58.0), (2.0, 61.0), (4.0, 57.0)):
        for dataset in ("synth-apy", "synth-cub"):
            for rep in range(3):
                h_ds = h + rep - (dataset == "synth-cub") * 10
                records.append(
                    make_record(
                        dataset,
                        "bt-gp",
                        rep,
                        sweep={"embedder.margin": margin},
                        metrics={
                            "H": h_ds,
                            "A_U": h_ds - 8 + margin,
                            "A_S": h_ds + 9 - margin,
                            "A_T": h_ds + 4,
                            "AUSUC": h_ds * 0.7,
                        },
                        train=3.0 + rep,
                    )
                )
    for method in ("bt-gp", "ale"):
        for dataset in ("apy", "cub"):
            for rep in range(2):
                records.append(
                    make_record(
                        dataset,
                        method,
                        rep,
                        metrics={"H": 40.0 + rep + (method == "bt-gp") * 9},
                        class_names=["person", "cow", "goat"],
                        frequencies=[0.3, 0.01, 0.02],
                        with_curve=dataset == "apy",
                    )
                )
    for method in ("gp", "bt-gp"):
        for rep in range(2):
            records.append(
                make_record(
                    "my-npz",
                    method,
                    rep,
                    kind="custom",
                    oversubscribed=None,
                    with_curve=False,
                    metrics={"H": 30.0 + rep + (method == "bt-gp") * 5},
                )
            )
    return write_records(results_dir, records)


def fake_render_figure(spec: Any) -> dict[str, bytes]:
    """A stand-in for ``figures.render_figure`` that skips drawing (seconds per figure) but embeds
    the data hash exactly as the real one does, for tests about files rather than pixels."""
    import io

    from PIL import Image, PngImagePlugin

    from zslbench.leaderboard.figures import HASH_KEY

    info = PngImagePlugin.PngInfo()
    info.add_text(HASH_KEY, spec.data_sha256)
    png = io.BytesIO()
    Image.new("RGB", (4, 4)).save(png, "PNG", pnginfo=info)
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg"><desc>{HASH_KEY}={spec.data_sha256}</desc></svg>'
    )
    png_name, svg_name = spec.files
    return {png_name: png.getvalue(), svg_name: svg.encode()}
