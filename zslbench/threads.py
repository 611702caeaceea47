"""How many BLAS/OpenMP threads a run uses and how idle ones wait: set before torch is imported.

torch's CPU kernels and its BLAS (MKL, GNU OpenMP threading in the pip wheels) share one OpenMP
runtime, libgomp, which reads ``OMP_NUM_THREADS``, ``OMP_WAIT_POLICY`` and ``GOMP_SPINCOUNT`` once,
when torch is loaded. So the CLI calls :func:`apply_defaults` first thing in ``zslbench.cli.main``,
before any plugin (and therefore torch) is imported; it only fills in variables the user has not
set, so the user's own environment always wins, and ``ZSLBENCH_THREAD_POLICY=off`` turns it off.
What was in force is written into every record (``load.threads``, ``load.wait_policy``: see
:func:`report`).

The decision: leave the thread count alone (torch's default, one per core) and make idle OpenMP
threads sleep, ``OMP_WAIT_POLICY=PASSIVE``. Measured with ``benchmarks/thread_policy.py`` on this
project's shared 2-core machine (bt-gp on synth-apy, ``train`` seconds, median of 2 interleaved
rounds; a "hog" is one busy-looping process holding a core):

==========================  =========  ===========
configuration               no hog     one hog
==========================  =========  ===========
1 thread                    10.7       10.0
2 threads, libgomp default  10.4       24.2 (2.4x)
2 threads, PASSIVE          10.5       11.2
==========================  =========  ===========

On synth-sun (``--set embedder.episodes=100``, one round, no hog) the two threads do pay: 1
thread 62.8 s, 2 threads PASSIVE 38.9 s, 2 threads libgomp default 40.0 s; hence two threads, not
one. On synth-apy, on a quiet machine, the three are equal (the spin buys nothing measurable); with one other busy
process, libgomp's default spin-wait (300 000 rounds before sleeping) makes each of the two
threads wait spinning for the one that shares its core with the hog, and ``train`` more than
doubles. ``PASSIVE`` keeps the quiet-machine time and most of the loaded one, and still gives two
threads to the large matrix products when both cores are free. The record keeps what was in force
(``load.wait_policy``), and ``load.oversubscribed`` still marks runs taken beside other work: the
policy makes such runs less wrong, not comparable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from typing import Any

#: Set to ``off`` to leave every thread-related variable exactly as the environment has it.
POLICY_ENV = "ZSLBENCH_THREAD_POLICY"

#: What zslbench sets when the user has not set the variable (see the module docstring for why).
DEFAULTS: dict[str, str] = {"OMP_WAIT_POLICY": "PASSIVE"}

#: The variables that decide threading (read by libgomp / MKL / OpenBLAS at load time).
WATCHED = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
)

#: Filled by :func:`apply_defaults`: each watched variable's value, and who set it.
_state: dict[str, dict[str, str | None]] = {}


def apply_defaults(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Fill in :data:`DEFAULTS` for the variables the user left unset; returns what it set.

    Does nothing when ``ZSLBENCH_THREAD_POLICY=off``, or when torch is already imported (libgomp
    has then read its environment, and a change would be recorded but not in force).
    """
    env = os.environ if environ is None else environ
    if env.get(POLICY_ENV, "").strip().lower() == "off" or "torch" in sys.modules:
        applied: dict[str, str] = {}
    else:
        applied = {k: v for k, v in DEFAULTS.items() if k not in env}
        env.update(applied)
    if environ is None:
        _state.clear()
        for name in WATCHED:
            source = "zslbench" if name in applied else ("user" if name in env else None)
            _state[name] = {"value": env.get(name), "source": source}
    return applied


def report() -> dict[str, Any]:
    """What governs threading in this process, for a run's record.

    ``threads``: torch's intra-op threads; ``wait_policy``: ``OMP_WAIT_POLICY`` as libgomp read it
    (``None``: unset, libgomp's default of spinning ``GOMP_SPINCOUNT`` = 300 000 rounds, then
    sleeping); ``spincount``: ``GOMP_SPINCOUNT``; ``thread_env_source``: who set each variable
    that is set (``user``, ``zslbench``, or ``environment`` where this process did not set up the
    policy itself, e.g. a Ray worker that inherits the driver's environment).
    """
    import torch

    # Not set up by apply_defaults in this process (a Ray worker, a library caller): whatever the
    # environment holds, inherited from the driver or the user.
    state = _state or {
        name: {
            "value": os.environ.get(name),
            "source": "environment" if name in os.environ else None,
        }
        for name in WATCHED
    }
    return {
        "threads": torch.get_num_threads(),
        "wait_policy": state["OMP_WAIT_POLICY"]["value"],
        "spincount": state["GOMP_SPINCOUNT"]["value"],
        "thread_env_source": {k: v["source"] for k, v in state.items() if v["source"]},
    }
