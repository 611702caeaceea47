"""Issue "Trust": a cache build killed half-way must not leak its temporary for ever.

A SIGKILL or SIGTERM during the first load used to leave a 100-120 MB hidden
``.res101-*.tmp`` folder in the cache that nothing removed and ``data info`` did not show. The
next load now removes a temporary whose writer is gone (its lock is free), never one a live
process is writing, and never anything that is not zslbench's own; ``data info`` lists them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.plugins.xlsa17.helpers import Mini, data_cli
from zslbench_plugins.xlsa17 import cache
from zslbench_plugins.xlsa17.loader import load_xlsa17

#: A child that starts the first load of the miniature AWA2 and stops for good once the first
#: cache file is written, so that the test can kill it in the middle of the build.
CHILD = """
import sys, time
import numpy.lib.format as fmt

real = fmt.write_array

def stalled(fp, array, *args, **kwargs):
    real(fp, array, *args, **kwargs)
    print("WRITING", flush=True)
    time.sleep(600)

fmt.write_array = stalled
from zslbench_plugins.xlsa17.loader import load_xlsa17
load_xlsa17("awa2", sys.argv[1])
"""


def _start_writer(data_dir: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = child.stdout.readline() if child.stdout else ""
    if line.strip() != "WRITING":
        child.kill()
        pytest.fail(
            f"the writer did not start: {line!r} {child.stderr.read() if child.stderr else ''}"
        )
    return child


def _temporaries(data_dir: Path) -> list[Path]:
    return sorted((data_dir / ".cache" / "AWA2").glob(".res101-*.tmp"))


def _kill(child: subprocess.Popen[str], sig: int) -> None:
    os.kill(child.pid, sig)
    child.wait(timeout=30)
    for stream in (child.stdout, child.stderr):
        if stream:
            stream.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_build_leaves_a_temporary_that_info_lists_and_the_next_load_removes(
    mini: Mini, sig: int
) -> None:
    child = _start_writer(mini.data_dir)
    _kill(child, sig)
    (tmp,) = _temporaries(mini.data_dir)
    assert cache.disk_usage(tmp) > 0
    info = data_cli(["info", "--data-dir", str(mini.data_dir)])
    assert info.exit_code == 0, info.output
    assert tmp.name in info.stdout and "stale: its writer is gone" in info.stdout

    d = load_xlsa17("awa2", mini.data_dir)
    assert _temporaries(mini.data_dir) == []
    assert d.source["cache"]["res101"] == "built"
    assert d.source["cache_cleaned"] == [str(tmp)]
    assert "stale" not in data_cli(["info", "--data-dir", str(mini.data_dir)]).stdout


def test_a_temporary_a_live_process_is_writing_is_left_alone(mini: Mini) -> None:
    child = _start_writer(mini.data_dir)
    try:
        (tmp,) = _temporaries(mini.data_dir)
        d = load_xlsa17("awa2", mini.data_dir)  # builds its own entry beside the live one
        assert d.source["cache"]["res101"] == "built" and "cache_cleaned" not in d.source
        assert _temporaries(mini.data_dir) == [tmp]
        info = data_cli(["info", "--data-dir", str(mini.data_dir)])
        assert f"being written by a running zslbench (pid {child.pid})" in info.stdout
    finally:
        _kill(child, signal.SIGKILL)
    load_xlsa17("awa2", mini.data_dir)
    assert _temporaries(mini.data_dir) == []


def test_only_zslbench_temporaries_are_ever_removed(mini: Mini, tmp_path: Path) -> None:
    load_xlsa17("awa2", mini.data_dir)
    folder = mini.data_dir / ".cache" / "AWA2"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("not zslbench's")
    hour_ago = time.time() - 2 * 3600
    keep = [
        folder / ".res101-0123456789abcdef0123.mine.tmp",  # not the pattern
        folder / ".res101-0123456789abcdef0123.zslbench-1-abcdefgh.tmp",  # the pattern, but a file
        folder / ".att_splits-0123456789abcdef0123.zslbench-2-abcdefgh.tmp",  # a symbolic link
        folder / ".res101-0123456789abcdef0124.abcdefgh.tmp",  # an older zslbench's, written now
    ]
    keep[0].mkdir()
    keep[1].write_text("a file")
    keep[2].symlink_to(outside, target_is_directory=True)
    keep[3].mkdir()
    (keep[3] / "features.npy").write_bytes(b"x" * 10)
    old = folder / ".res101-0123456789abcdef0125.ijklmnop.tmp"  # an older zslbench's, 2 h old
    old.mkdir()
    (old / "features.npy").write_bytes(b"x" * 10)
    for p in (old / "features.npy", old):
        os.utime(p, (hour_ago, hour_ago))
    d = load_xlsa17("awa2", mini.data_dir)
    assert d.source["cache_cleaned"] == [str(old)]
    assert not old.exists()
    for p in keep:
        assert p.exists() or p.is_symlink(), p
    assert (outside / "precious.txt").read_text() == "not zslbench's"
