"""``./setup``, the README's two commands, without installing anything: a stand-in ``python`` in a
stand-in venv records every pip call, and the torch index is a local socket.

Issue 44: where only a package index mirror answers, ``pip install torch --extra-index-url
https://download.pytorch.org/whl/cpu`` retried that host for minutes. ``./setup`` asks the index
once (3 s at most) and then installs from the package index alone, saying so.
"""

from __future__ import annotations

import http.server
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FAKE_PYTHON = """#!/bin/sh
# pip calls are written down, torch is absent, everything else is the real Python
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> "{log}"; exit 0; fi
if [ "$1" = "-c" ] && [ "$2" = "import torch" ]; then exit 1; fi
exec "{real}" "$@"
"""


@pytest.fixture
def venv(tmp_path):
    """A folder that ``./setup`` takes for its venv: ``bin/python`` and ``bin/activate``."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "pip.log"
    python = bin_dir / "python"
    python.write_text(FAKE_PYTHON.format(log=log, real=sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"; export PATH\n')
    return tmp_path


def setup(venv: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "VENV": str(venv / "venv"), "PYTHON": sys.executable, **env}
    return subprocess.run(
        ["sh", str(REPO / "setup"), *args], env=full, capture_output=True, text=True, timeout=60
    )


def pip_calls(venv: Path) -> list[str]:
    return (venv / "pip.log").read_text().splitlines()


def test_an_unreachable_torch_index_costs_one_probe_then_the_package_index(venv):
    with socket.socket() as silent:  # accepts connections, never answers: a filtered host
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/whl/cpu"
        start = time.monotonic()
        proc = setup(venv, "install", TORCH_INDEX_URL=url)
        elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 15  # one probe of 3 s, not pip's minutes of retries
    assert f"setup: {url} cannot be reached" in proc.stderr
    assert pip_calls(venv) == [
        "-m pip install -q --upgrade pip",
        "-m pip install -q torch==2.13.0",
        "-m pip install -q -e .[dev,ray,docs]",
    ]


def test_a_reachable_torch_index_is_given_to_pip(venv):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
        # BaseHTTPRequestHandler answers HEAD with 501: the index answered, so it is used
        proc = setup(venv, "install", TORCH_INDEX_URL=url)
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr
    assert f"-m pip install -q torch==2.13.0 --extra-index-url {url}" in pip_calls(venv)
    assert "cannot be reached" not in proc.stderr


def test_an_empty_torch_index_means_the_package_index_alone(venv):
    proc = setup(venv, "install", TORCH_INDEX_URL="")
    assert proc.returncode == 0, proc.stderr
    assert "-m pip install -q torch==2.13.0" in pip_calls(venv)


def test_a_python_outside_3_10_to_3_13_is_one_line(tmp_path):
    old = tmp_path / "python3.9"
    old.write_text(
        '#!/bin/sh\ncase "$2" in *platform*) echo 3.9.18;; *) exit 1;; esac\n', encoding="utf-8"
    )
    old.chmod(0o755)
    proc = setup(tmp_path, "install", PYTHON=str(old))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"setup: {old} is Python 3.9.18; zslbench needs 3.10-3.13: give one, e.g. "
        "PYTHON=python3.12 ./setup install"
    ]
    assert not (tmp_path / "venv").exists()


def test_an_unknown_mode_says_so_and_shows_the_modes(tmp_path):
    proc = setup(tmp_path, "tset")
    assert proc.returncode == 2
    assert proc.stderr.startswith("setup: unknown mode 'tset': run, test or install\n")
    assert "./setup test [ARGS]" in proc.stderr
