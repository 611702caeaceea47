"""The GPU path (``pytest -m gpu``; every test here skips, saying why, without CUDA).

Every built-in method runs on ``toy`` with ``--device cuda`` and is compared with the golden
file's reference numbers through the same per-method bands as another CPU
(``tests/test_golden.py``): methods that are bit-identical across CPUs within 0.05 points, trained
ones within their seed-to-seed spread. The peak GPU memory and the train seconds of each method are
written to ``$ZSLBENCH_GPU_REPORT`` (JSON) when that is set; ``benchmarks/gpu_check.sh`` prints
them as a table.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.test_golden import GOLDEN, builtin_methods, compute, differences

pytestmark = pytest.mark.gpu


def test_cuda_start_up_is_paid_once_outside_the_timed_part():
    from zslbench import provenance

    provenance._WARM.discard("cuda")
    assert provenance.warm_device("cuda") > 0.0
    assert provenance.warm_device("cuda") == 0.0


def test_every_builtin_method_on_cuda_is_within_the_cpu_bands():
    import torch

    golden = json.loads(GOLDEN.read_text())
    got, report = {}, {}
    for method in builtin_methods():
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        got[method] = compute(device="cuda", methods=[method])[method]
        torch.cuda.synchronize()
        report[method] = {
            "seconds": round(time.perf_counter() - start, 2),
            "peak_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1),
            **got[method],
        }
    if os.environ.get("ZSLBENCH_GPU_REPORT"):
        Path(os.environ["ZSLBENCH_GPU_REPORT"]).write_text(
            json.dumps(
                {
                    "device": torch.cuda.get_device_name(0),
                    "torch": torch.__version__,
                    "methods": report,
                },
                indent=2,
            )
        )
    how, diffs = differences(golden, got, {"device": "cuda", "name": torch.cuda.get_device_name(0)})
    assert not diffs, f"cuda vs the CPU reference ({how}):\n  " + "\n  ".join(diffs)


def test_a_cuda_run_records_its_start_up_apart_from_its_train_time(tmp_path):
    from tests.cli_helpers import invoke_main
    from zslbench import provenance
    from zslbench.records import read_record

    provenance._WARM.discard("cuda")
    out = invoke_main(
        "run",
        "--method",
        "krr",
        "--dataset",
        "toy",
        "--device",
        "cuda",
        "--results-dir",
        str(tmp_path),
    )
    assert out.exit_code == 0, out.output
    (path,) = tmp_path.glob("*.json")
    record = read_record(path)
    assert record.device["type"] == "cuda" and record.device["startup_seconds"] > 0
    assert record.device["peak_memory_mib"] > 0
