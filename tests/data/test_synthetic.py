"""The synthetic stand-ins are the same bytes whatever the thread settings, and they are the data
the committed synthetic board was made from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from zslbench.data.checks import features_hash
from zslbench.data.synthetic import SHAPES, generate

BOARD = Path(__file__).resolve().parents[2] / "leaderboards" / "records" / "synthetic"

#: The OpenBLAS kernel the committed board's synthetic data was generated with. Another kernel
#: (another CPU family) may round the generator's matrix products differently.
BOARD_BLAS_KERNEL = "Haswell"


def test_features_do_not_depend_on_the_blas_thread_count() -> None:
    # Before the generator pinned its BLAS threads, one and two threads gave synth-apy features
    # that differed in their last bits: a run under OMP_NUM_THREADS=1 got another fingerprint.
    with threadpool_limits(limits=1, user_api="blas"):
        one = generate(SHAPES["synth-apy"]).features
    with threadpool_limits(limits=2, user_api="blas"):
        two = generate(SHAPES["synth-apy"]).features
    assert one.tobytes() == two.tobytes()


def test_generation_leaves_the_callers_thread_limit_alone() -> None:
    with threadpool_limits(limits=1, user_api="blas"):
        generate(SHAPES["toy"])
        counts = {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}
    assert counts == {1}


@pytest.mark.parametrize("name", ["toy", "synth-apy"])
def test_generator_makes_the_committed_boards_data(name: str) -> None:
    kernels = {info.get("architecture") for info in threadpool_info()
               if info.get("internal_api") == "openblas"}
    if kernels != {BOARD_BLAS_KERNEL}:
        pytest.skip(f"the board's data was generated with OpenBLAS's {BOARD_BLAS_KERNEL} kernel; "
                    f"this machine's BLAS is {sorted(map(str, kernels))}, which may round differently")
    hashes = {json.loads(p.read_text())["data"]["features_hash"]
              for p in BOARD.glob(f"{name}__*.json")}
    if not hashes:
        pytest.skip(f"no committed {name} records under {BOARD}")
    data = generate(SHAPES[name])
    assert hashes == {features_hash(np.asarray(data.features))}
