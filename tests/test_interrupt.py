"""A killed or interrupted run leaves only complete records, and re-running finishes the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zslbench.records import REQUIRED_KEYS

SEEDS = 12


def start(results: Path) -> subprocess.Popen[str]:
    exe = Path(sys.executable).with_name("zslbench")
    return subprocess.Popen([str(exe), "run", "--method", "krr", "--dataset", "toy", "--seeds", str(SEEDS),
                             "--results-dir", str(results)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_records(results: Path, n: int, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if results.exists() and len(list(results.glob("*.json"))) >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"run ended before {n} records: {proc.stderr.read()}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail("timed out waiting for records")


def assert_all_complete(results: Path) -> int:
    paths = list(results.glob("*.json"))
    for p in paths:
        rec = json.loads(p.read_text())  # a half-written file would fail here
        assert set(REQUIRED_KEYS) <= set(rec)
    return len(paths)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_interrupted_grid_keeps_complete_records_and_resumes(tmp_path, sig):
    results = tmp_path / "res"
    proc = start(results)
    wait_for_records(results, 2, proc)
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        assert "re-run the same command" in err and "Traceback" not in err
    else:
        assert proc.returncode == -signal.SIGKILL
    done = assert_all_complete(results)
    assert 2 <= done < SEEDS

    again = start(results)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert assert_all_complete(results) == SEEDS
    assert out.count("cached") == done
