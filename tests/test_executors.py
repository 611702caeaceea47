"""The Ray executor on a real local Ray cluster: the same records as the sequential executor.

Records from Ray must equal sequential ones in everything but the timings, the load report, the
host and the timestamps (the issue's "done when": ``zslbench run --method krr,bt-gp --dataset toy
--seeds 2 --executor ray`` writes the same metrics as the sequential run).
"""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import run_cli

pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")

#: Fields that legitimately differ between two runs of the same plan on different processes.
VOLATILE = {"timings", "load", "device", "environment", "started_at", "finished_at", "digest"}
ARGS = (
    "run",
    "--method",
    "krr,bt-gp",
    "--dataset",
    "toy",
    "--seeds",
    "2",
    "--set",
    "bt.episodes=60",
    "--set",
    "krr.alpha=0.1",
    "--set",
    "krr.width=1.0",
)


def _records(path):
    return {p.name: json.loads(p.read_text()) for p in sorted(path.glob("*.json"))}


def test_ray_records_equal_sequential_ones_but_for_timings_and_host(tmp_path):
    seq = run_cli(*ARGS, "--results-dir", str(tmp_path / "seq"))
    assert seq.returncode == 0, seq.stderr
    ray = run_cli(*ARGS, "--executor", "ray", "--results-dir", str(tmp_path / "ray"), timeout=900)
    assert ray.returncode == 0, ray.stderr
    a, b = _records(tmp_path / "seq"), _records(tmp_path / "ray")
    assert len(a) == 4 and a.keys() == b.keys()  # same run ids: same configs, data, seeds
    for name in a:
        left = {k: v for k, v in a[name].items() if k not in VOLATILE}
        right = {k: v for k, v in b[name].items() if k not in VOLATILE}
        assert left == right, name
    assert "submitted to Ray" in ray.stderr

    again = run_cli(*ARGS, "--executor", "ray", "--results-dir", str(tmp_path / "ray"), timeout=900)
    assert again.returncode == 0 and again.stderr.count("cached toy") == 4
    assert "submitted to Ray" not in again.stderr  # cached runs never reach the cluster


def test_ray_options_need_the_ray_executor(tmp_path):
    proc = run_cli(
        "run",
        "--method",
        "krr",
        "--dataset",
        "toy",
        "--gpus-per-run",
        "0.25",
        "--results-dir",
        str(tmp_path),
    )
    assert proc.returncode == 2 and "need --executor ray" in proc.stderr
