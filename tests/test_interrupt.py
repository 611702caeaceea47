"""A killed or interrupted run leaves only complete records, and re-running finishes the rest.

The grid is ``krr`` (two seeds), then a ``gated`` method whose fit waits for a gate file. The
signal is sent while the gated run waits, so the outcome never depends on how fast the machine
is: under load the old version of this test sometimes saw the whole grid finish before its
SIGINT arrived (exit 0 instead of 130).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from zslbench.records import read_record

GATED = """
    import os
    import time

    from zslbench.hookspecs import hookimpl
    from zslbench.methods import MethodSpec
    from zslbench_plugins.krr import KRRRegressor


    class GatedRegressor(KRRRegressor):
        '''KRR whose fit announces itself, then waits until the gate file exists.'''

        name = "gated-krr"

        def fit(self, class_semantics, class_prototypes):
            open(os.environ["ZSL_GATE_WAITING"], "w").close()
            while not os.path.exists(os.environ["ZSL_GATE"]):
                time.sleep(0.01)
            return super().fit(class_semantics, class_prototypes)


    @hookimpl
    def zslbench_regressors():
        return [GatedRegressor]


    @hookimpl
    def zslbench_methods():
        return [MethodSpec("gated", model="prototype", components={"embedder": "identity", "regressor": "gated-krr"},
                           params={"regressor": {"alpha": 0.1, "width": 1.0}})]
"""


def start(tmp: Path, results: Path) -> subprocess.Popen[str]:
    exe = Path(sys.executable).with_name("zslbench")
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp),
        "ZSL_GATE": str(tmp / "gate"),
        "ZSL_GATE_WAITING": str(tmp / "waiting"),
    }
    return subprocess.Popen(
        [
            str(exe),
            "-p",
            "zsl_gated_plugin",
            "run",
            "--method",
            "krr,gated",
            "--dataset",
            "toy",
            "--seeds",
            "2",
            "--results-dir",
            str(results),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    """The child takes Ctrl-C as a terminal's foreground job does, even when this test runs in a
    background job (``nohup pytest &``), whose processes inherit SIGINT ignored: Python then
    installs no KeyboardInterrupt handler, and the SIGINT case would wait forever."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return
        if proc.poll() is not None:
            pytest.fail(f"run ended before {path.name}: {proc.stderr.read()}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"timed out waiting for {path.name}")


def complete_records(results: Path) -> int:
    paths = list(results.glob("*.json"))
    for p in paths:
        read_record(p)  # a half-written or damaged file raises here
    assert not list(results.glob(".*")), "a temporary file was left behind"
    return len(paths)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_interrupted_grid_keeps_complete_records_and_resumes(tmp_path, sig):
    (tmp_path / "zsl_gated_plugin.py").write_text(textwrap.dedent(GATED))
    results = tmp_path / "res"
    proc = start(tmp_path, results)
    wait_for(tmp_path / "waiting", proc)  # both krr records are written; gated is inside fit
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=60)
    if sig in (signal.SIGINT, signal.SIGTERM):  # kill and Ctrl-C unwind the same way
        assert proc.returncode == 130, err
        assert "re-run the same command" in err and "Traceback" not in err
    else:
        assert proc.returncode == -signal.SIGKILL
    assert complete_records(results) == 2

    (tmp_path / "gate").touch()
    again = start(tmp_path, results)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert complete_records(results) == 4
    assert err.count("cached toy · krr") == 2
