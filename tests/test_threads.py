"""The thread policy (zslbench.threads): the user's environment wins, and a subprocess run records
what was in force."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zslbench import threads


def test_defaults_fill_only_unset_variables() -> None:
    env: dict[str, str] = {}
    torch_loaded = "torch" in sys.modules
    applied = threads.apply_defaults(env)
    if torch_loaded:  # libgomp has read its environment already: a change would not be in force
        assert applied == {} and env == {}
    else:
        assert applied == env == {"OMP_WAIT_POLICY": "PASSIVE"}
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    threads.apply_defaults(env)
    assert env == {"OMP_WAIT_POLICY": "ACTIVE"}  # the user's value is kept
    off = {threads.POLICY_ENV: "off"}
    assert threads.apply_defaults(off) == {} and "OMP_WAIT_POLICY" not in off


def _run(tmp_path: Path, env_extra: dict[str, str]) -> dict:
    env = {
        k: v for k, v in os.environ.items() if k not in threads.WATCHED and k != threads.POLICY_ENV
    }
    env.update(env_extra)
    results = tmp_path / f"r{len(list(tmp_path.iterdir()))}"
    cmd = [
        sys.executable,
        "-c",
        "from zslbench.cli import main; main()",
        "run",
        "--method",
        "krr",
        "--dataset",
        "toy",
        # fixed settings: the record's load block is what is checked, not krr's search (1-2 s)
        "--set",
        "krr.alpha=0.1",
        "--set",
        "krr.width=1.0",
        "--results-dir",
        str(results),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (path,) = results.glob("*.json")
    return json.loads(path.read_text())["load"]


@pytest.mark.parametrize(
    "env_extra, policy, source",
    [
        ({}, "PASSIVE", "zslbench"),
        ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE", "user"),
        ({threads.POLICY_ENV: "off"}, None, None),
    ],
)
def test_a_run_records_the_policy_in_force(
    tmp_path: Path, env_extra: dict[str, str], policy: str | None, source: str | None
) -> None:
    load = _run(tmp_path, env_extra)
    assert load["wait_policy"] == policy
    assert load["thread_env_source"].get("OMP_WAIT_POLICY") == source
    assert load["threads"] >= 1
