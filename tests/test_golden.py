"""Numbers never change silently: every built-in method's metrics on ``toy``, pinned.

``tests/golden/toy.json`` holds, for every method the built-in plugins register, the metrics
(A_T, A_U, A_S, H, AUSUC) and the calibrated gamma of one run on ``toy`` (seed 0, CPU) with the
small settings in :data:`SETTINGS` (fewer epochs and episodes, and the slow methods' searched
values fixed, so that the whole file is made in well under a minute; the numbers still go through
every component, the search of the methods that keep one, calibration and the metrics).

A change of any number fails this test. If the change is intended, re-write the file with
``pytest tests/test_golden.py --update-golden`` and say why in ``CHANGES.md``, in the same commit.

Exactness, as chosen: the file records the machine it was made on (:func:`environment`: CPU model,
BLAS library and kernel, thread counts, numpy/scipy/torch versions). On the same environment the
comparison is exact (float equality of every value; the runs are deterministic there). On another
one, BLAS kernels and thread counts may round differently, so the comparison allows
:data:`OTHER_MACHINE_TOLERANCE` percentage points on metrics and a relative 1e-3 on gamma, and the
failure message says the environments differ.
"""

from __future__ import annotations

import json
import math
import platform
from pathlib import Path
from typing import Any

from zslbench.protocol import run_protocol
from zslbench.registry import load_registry
from zslbench.runner import parse_overrides, prepare_method

GOLDEN = Path(__file__).parent / "golden" / "toy.json"
SEED = 0
METRICS = ("A_T", "A_U", "A_S", "H", "AUSUC")
OTHER_MACHINE_TOLERANCE = 0.05

#: Small settings per method (``--set`` syntax); methods not listed run at their defaults.
SETTINGS: dict[str, list[str]] = {
    "bt-gp": ["embedder.episodes=40"],
    "bt-krr": ["embedder.episodes=40"],
    "t-gp": ["embedder.episodes=40"],
    "f-clswgan": ["generator.ngh=128", "generator.ndh=128", "generator.nepoch=2", "generator.pretrain_epochs=2",
                  "model.syn_num=50", "model.classifier_epochs=3"],
    "tf-vaegan": ["generator.hidden=128", "generator.ngh=128", "generator.ndh=128",
                  "generator.nepoch=2", "model.syn_num=50", "model.classifier_epochs=3"],
    "free": ["generator.hidden=128", "generator.ngh=128", "generator.ndh=128",
             "generator.nepoch=2", "model.syn_num=50", "model.classifier_epochs=3"],
    "ce-gzsl": ["generator.ngh=128", "generator.ndh=128", "generator.embed_size=128",
                "generator.nhF=64", "generator.nepoch=5", "model.syn_num=50",
                "model.classifier_epochs=3"],
    "cada-vae": ["generator.image_encoder_hidden=128", "generator.image_decoder_hidden=128",
                 "generator.attribute_encoder_hidden=128", "generator.attribute_decoder_hidden=128",
                 "generator.epochs=3", "model.classifier_epochs=3"],
}


def environment() -> dict[str, Any]:
    """What can change the last bits of a float on CPU: the exact comparison needs all equal."""
    import numpy
    import scipy
    import torch

    from zslbench.provenance import cpu_name

    blas = []
    try:
        import threadpoolctl

        blas = sorted(f"{i.get('internal_api')}/{i.get('architecture')}/{i.get('num_threads')}"
                      for i in threadpoolctl.threadpool_info())
    except ImportError:  # pragma: no cover - threadpoolctl comes with the dependencies
        pass
    return {"cpu": cpu_name(), "machine": platform.machine(), "blas": blas,
            "torch_threads": torch.get_num_threads(), "numpy": numpy.__version__,
            "scipy": scipy.__version__, "torch": torch.__version__}


def compute() -> dict[str, dict[str, float]]:
    reg = load_registry()
    data = reg.get("dataset", "toy").obj.load(None)
    builtin = sorted(p.name for p in reg.items["method"].values()
                     if reg.plugins.get(p.plugin) == "zslbench")
    out = {}
    for name in builtin:
        prep = prepare_method(reg, name, parse_overrides(SETTINGS.get(name, [])))
        result = run_protocol(data, prep.instantiate(seed=SEED, device="cpu"), SEED)
        out[name] = {**{k: float(result.evaluation[k]) for k in METRICS},
                     "gamma": float(result.gamma)}
    return out


def test_every_builtin_method_on_toy_matches_the_golden_file(request):
    got = compute()
    env = environment()
    if request.config.getoption("--update-golden"):
        GOLDEN.parent.mkdir(exist_ok=True)
        body = {"about": "tests/test_golden.py; update with --update-golden and a CHANGES.md line",
                "seed": SEED, "settings": SETTINGS, "environment": env, "methods": got}
        GOLDEN.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
        return
    assert GOLDEN.exists(), f"{GOLDEN} is missing: run pytest {__file__} --update-golden"
    golden = json.loads(GOLDEN.read_text())
    assert golden["settings"] == SETTINGS, "SETTINGS changed: --update-golden, and CHANGES.md"
    same = golden["environment"] == env
    where = "" if same else (f" (environment differs from the golden file's, compared within "
                             f"{OTHER_MACHINE_TOLERANCE} points: {golden['environment']} vs {env})")
    assert sorted(got) == sorted(golden["methods"]), f"methods changed{where}"
    diffs = []
    for method, values in got.items():
        for key, value in values.items():
            want = golden["methods"][method][key]
            ok = value == want if same else (
                math.isclose(value, want, rel_tol=1e-3) if key == "gamma"
                else abs(value - want) <= OTHER_MACHINE_TOLERANCE)
            if not ok:
                diffs.append(f"{method} {key}: {want!r} -> {value!r}")
    assert not diffs, ("numbers changed" + where + ":\n  " + "\n  ".join(diffs) + "\nIf intended: "
                       "pytest tests/test_golden.py --update-golden, and a CHANGES.md section")
