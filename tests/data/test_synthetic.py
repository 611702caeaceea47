"""The synthetic stand-ins are the same bytes on every machine: whatever the BLAS kernel (another
CPU family) and its thread count, ``toy`` and ``synth-*`` have the pinned data fingerprints.

Generator v2 drew floats and multiplied float matrices: its bytes depended on the OpenBLAS kernel
and the thread count (on a Zen 4 host, SkylakeX kernel, ``synth-apy`` was ``893a2c91`` where the
board's was ``adccecbc``). v3 draws integers only and keeps every product exact
(``zslbench/data/synthetic.py``). The pins below are the fingerprints every record of a stand-in
carries (``data.fingerprint``, the runner's content fingerprint); they change only with a new
``GENERATOR_VERSION``, announced in ``CHANGES.md``.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from zslbench.data.checks import check_dataset
from zslbench.data.dataset import ZSLData
from zslbench.data.synthetic import GENERATOR_VERSION, _counts, _gauss, _soft_clip, generate
from zslbench_plugins.synthetic import SHAPES

#: The content fingerprint of every stand-in (generator v3), as records carry it.
PINNED = {
    "toy": "93b6124600162daed710d1d8a18f47ecd9dfc47a9769f6fef8cbe5bc7385c8d7",
    "synth-awa1": "57876861f1752c16fbb498da073d09f40f77af733c95d9520b815072d5ad14a0",
    "synth-awa2": "a840a8827756db84c63a6ed2a9bbd572edf230adea423f5eeba3c15b506a22c3",
    "synth-apy": "b65fe5b5b567bbbbb4d6c67b5e37e712ea8a5f69b4e1712853ac6718ff785106",
    "synth-cub": "47c2c38b57f6f0d8b88984c61ed8be1dd58a6e4cf5ba66173d1ed51b839a5e7d",
    "synth-sun": "2bbe26c9591e60a27985c677918fbb5db7fc975b475690f684dda811100f48ed",
}

#: The stand-ins generated again in subprocesses under other BLAS settings (toy and one
#: full-size one: every stand-in runs the same code, and each subprocess costs seconds).
ACROSS = ("toy", "synth-apy")

#: BLAS settings to compare with this process's: one and two threads, and OpenBLAS kernels of
#: other CPU families. OpenBLAS runs the kernel it is told to, if the CPU has its instructions
#: (a kernel this CPU lacks, SkylakeX's AVX-512 on an AVX2 machine, dies with SIGILL: skipped);
#: some names map to another kernel (Zen runs Haswell's, Prescott Katmai's).
SETTINGS = {
    "1 thread": {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    "2 threads": {"OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"},
    **{
        f"kernel {k}": {"OPENBLAS_CORETYPE": k}
        for k in ("Haswell", "Zen", "SkylakeX", "Sandybridge", "Prescott")
    },
}

_CHILD = """
import hashlib, json, sys
import numpy as np
from zslbench.data.checks import check_dataset
from zslbench.data.synthetic import generate
from zslbench_plugins.synthetic import SHAPES

try:  # which BLAS kernel runs (threadpoolctl comes with scikit-learn, a dev dependency)
    import threadpoolctl
    info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
except ImportError:
    info = []
# A float product, to show whether this kernel rounds differently from the parent's.
rng = np.random.default_rng(0)
a, b = rng.standard_normal((257, 300)), rng.standard_normal((300, 129))
out = {"kernel": [i.get("architecture") for i in info],
       "threads": [i.get("num_threads") for i in info],
       "float_product": hashlib.sha256((a @ b).tobytes()).hexdigest(),
       "fingerprints": {n: check_dataset(generate(SHAPES[n]), "synthetic").fingerprint
                        for n in sys.argv[1:]}}
print(json.dumps(out))
"""


def _in_subprocess(env: dict[str, str]) -> dict | None:
    """What ``_CHILD`` reports under ``env``; None when this CPU cannot run that kernel."""
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE")
    }
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *ACROSS],
        env={**full, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode == -signal.SIGILL:
        return None
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reports() -> dict[str, dict | None]:
    """What ``_CHILD`` reports under each of :data:`SETTINGS` (None for a kernel this CPU cannot
    run); this process's own settings are :func:`test_every_stand_in_has_its_pinned_fingerprint`'s."""
    return {s: _in_subprocess(e) for s, e in SETTINGS.items()}


@functools.cache
def _stand_in(name: str) -> ZSLData:
    """``toy`` and ``synth-apy``, generated once for the tests of this module (read-only)."""
    return generate(SHAPES[name])


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_stand_in_has_its_pinned_fingerprint(name: str) -> None:
    data = _stand_in(name) if name in ACROSS else generate(SHAPES[name])
    assert data.source["generator_version"] == GENERATOR_VERSION == "3"
    assert check_dataset(data, "synthetic").fingerprint == PINNED[name]


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_the_same_bytes_under_other_blas_threads_and_kernels(setting: str, reports) -> None:
    got = reports[setting]
    if got is None:
        pytest.skip(f"{setting}: this CPU lacks the kernel's instructions (SIGILL)")
    assert got["fingerprints"] == {n: PINNED[n] for n in ACROSS}, (setting, got["kernel"])


def test_the_settings_run_other_kernels_that_round_float_products_differently(reports) -> None:
    """The comparison above can fail: on this CPU at least one other kernel ran, and it rounds a
    float matrix product differently (what made generator v2's bytes depend on the machine)."""
    ran = [r for r in reports.values() if r is not None]
    kernels = {tuple(r["kernel"]) for r in ran}
    if len(kernels) < 2:
        pytest.skip(f"this CPU runs only the OpenBLAS kernels {sorted(kernels)}")
    assert len({r["float_product"] for r in ran}) > 1
    assert {tuple(r["threads"]) for r in (reports["1 thread"], reports["2 threads"])} == {
        (1,),
        (2,),
    }


# ----------------------------------------------------------------- the exact-arithmetic pieces


def test_gauss_draws_are_centred_binomials_of_the_integer_stream() -> None:
    g = _gauss(np.random.default_rng(0), (200_000,))
    assert g.dtype == np.float64 and np.array_equal(g, np.rint(g))
    assert g.min() >= -32 and g.max() <= 32
    # Binomial(64, 1/2) - 32: mean 0, variance 16 (4 sigma bounds on the sample moments)
    assert abs(g.mean()) < 4 * 4 / np.sqrt(g.size)
    assert abs(g.var() - 16) < 4 * np.sqrt(2 * 16**2 / g.size)
    h = _gauss(np.random.default_rng(0), (200_000,), bits=16)
    assert h.min() >= -8 and h.max() <= 8 and abs(h.var() - 4) < 4 * np.sqrt(2 * 4**2 / h.size)


def test_soft_clip_is_close_to_tanh_and_saturates() -> None:
    x = np.linspace(-6, 6, 10001)
    y = _soft_clip(x)
    assert np.max(np.abs(y - np.tanh(x))) < 0.025
    assert y.min() == -1.0 and y.max() == 1.0 and np.all(np.diff(y) >= 0)


@pytest.mark.parametrize(
    "n, total, lo, hi, force_lo, force_hi",
    [
        (12, 1200, 40, 160, True, True),
        (20, 7415, 51, 5071, True, False),
        (150, 8821, 41, 60, True, True),
        (645, 12900, 20, 20, True, True),
        (6, 480, 40, 160, False, False),
    ],
)
def test_class_sizes_are_in_bounds_and_add_up(n, total, lo, hi, force_lo, force_hi) -> None:
    sizes = _counts(np.random.default_rng(1), n, total, lo, hi, force_lo, force_hi)
    assert sizes.sum() == total and sizes.min() >= lo and sizes.max() <= hi
    if force_hi and n > 1:
        assert sizes[0] == hi
    if force_lo and n > 2:
        assert sizes[1] == lo


def test_features_are_exact_float32_on_a_grid_of_2_to_the_minus_8() -> None:
    f = np.asarray(_stand_in("toy").features)
    assert f.dtype == np.float32 and f.min() == 0.0
    scaled = f.astype(np.float64) * 256
    assert np.array_equal(scaled, np.rint(scaled))


def test_the_stand_ins_keep_what_they_are_for() -> None:
    """APY's shape: one unseen class ("person") holds a third of all images; attributes are
    non-negative and l2-normalised; a few activations exceed the clip value 7."""
    d = _stand_in("synth-apy")
    counts = np.bincount(d.labels)
    person = 20 + 3
    assert d.class_names[person] == "person(synth)"
    assert abs(counts[person] / counts.sum() - 1 / 3) < 0.01
    assert d.attributes.min() >= 0
    np.testing.assert_allclose(
        np.linalg.norm(d.attributes.astype(np.float64), axis=1), 1, atol=1e-6
    )
    above = float(np.mean(np.asarray(d.features) > 7))
    assert 1e-4 < above < 0.02
