"""``zslbench data download`` against an archive served from 127.0.0.1 (never beyond loopback).

The test builds a zip in the real xlsa17 layout (``xlsa17/data/<NAME>/...``) from miniature data,
serves it with ``http.server`` (with HTTP Range support, and the ability to cut a response
half-way), and drives the click command.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.plugins.xlsa17.helpers import (
    Mini,
    data_cli,
    mini_arrays,
    patch_registry,
    registry_for,
    write_dataset,
)
from zslbench.errors import DataError
from zslbench_plugins.xlsa17 import checks
from zslbench_plugins.xlsa17 import download as dl
from zslbench_plugins.xlsa17.loader import load_xlsa17


@dataclass
class ServerState:
    payload: bytes = b""
    cuts: list[int] = field(default_factory=list)  # per request: bytes to send before cutting
    honor_range: bool = True
    status: int = 200
    ranges: list[str | None] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        st: ServerState = self.server.state  # type: ignore[attr-defined]
        rng = self.headers.get("Range")
        st.ranges.append(rng)
        if st.status != 200 or self.path != "/xlsa17.zip":
            self.send_error(404 if st.status == 200 else st.status)
            return
        data, start = st.payload, 0
        m = re.fullmatch(r"bytes=(\d+)-", rng or "")
        if m and st.honor_range:
            start = int(m.group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        cut = st.cuts.pop(0) if st.cuts else None
        if cut is None:
            self.wfile.write(body)
            return
        self.wfile.write(body[:cut])  # then drop the connection mid-body
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.state = ServerState()  # type: ignore[attr-defined]
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    host, port = httpd.server_address[:2]
    assert host == "127.0.0.1"
    yield httpd.state, f"http://127.0.0.1:{port}/xlsa17.zip"
    httpd.shutdown()
    httpd.server_close()


def build_archive(tmp: Path, datasets: dict[str, dict]) -> bytes:
    """A zip in the real layout: xlsa17/data/<FOLDER>/{res101.mat, att_splits.mat, *.txt}."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("xlsa17/README.txt", "test archive")
        for folder, arrays in datasets.items():
            res, att = write_dataset(tmp / "src", folder, arrays)
            zf.write(res, f"xlsa17/data/{folder}/res101.mat")
            zf.write(att, f"xlsa17/data/{folder}/att_splits.mat")
            zf.writestr(
                f"xlsa17/data/{folder}/allclasses.txt", "\n".join(f"class{i}" for i in range(9))
            )
    return buf.getvalue()


@pytest.fixture
def archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server
) -> tuple[ServerState, str, bytes]:
    """Serve an archive holding miniature AWA2 and CUB (both registered as the official ones)."""
    state, url = server
    awa2, cub = mini_arrays(seed=1), mini_arrays(seed=2, n_seen=5, n_unseen=4)
    state.payload = build_archive(tmp_path, {"AWA2": awa2, "CUB": cub})
    reg = checks.load_registry()["datasets"]
    patch_registry(monkeypatch, "awa2", registry_for(awa2, reg["awa2"]))
    entry_cub = registry_for(cub, reg["cub"])
    real = checks.load_registry

    def both():
        r = real()
        r["datasets"]["cub"] = entry_cub
        return r

    monkeypatch.setattr(checks, "load_registry", both)
    return state, url, state.payload


def _run(*args: str):
    return data_cli(["download", *args])


def _one_error_line(res) -> str:
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.output
    return lines[0]


def test_good_download_extracts_only_what_was_asked_and_builds_the_cache(
    tmp_path: Path, archive
) -> None:
    state, url, payload = archive
    d = tmp_path / "data"
    res = _run("--dataset", "awa2", "--data-dir", str(d), "--url", url)
    assert res.exit_code == 0, res.output
    assert state.ranges == [None]
    sha = hashlib.sha256(payload).hexdigest()
    assert f"recorded sha256 {sha}" in res.stdout
    assert json.loads((d / ".downloads" / "known_archives.json").read_text())[url]["sha256"] == sha
    assert sorted(p.name for p in (d / "AWA2").iterdir()) == [
        "allclasses.txt",
        "att_splits.mat",
        "res101.mat",
    ]
    assert not (d / "CUB").exists()
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        assert (d / "AWA2" / "res101.mat").read_bytes() == zf.read("xlsa17/data/AWA2/res101.mat")
    assert len(list((d / ".cache" / "AWA2").glob("res101-*"))) == 1
    assert not list(d.glob(".*.extract")) and not list((d / ".downloads").glob("*.part"))
    assert load_xlsa17("awa2", d).source["cache"]["res101"] == "hit"


def test_second_call_is_a_no_op(tmp_path: Path, archive) -> None:
    state, url, _ = archive
    d = tmp_path / "data"
    assert _run("--dataset", "awa2", "--data-dir", str(d), "--url", url).exit_code == 0
    n_requests = len(state.ranges)
    res = _run("--dataset", "awa2", "--data-dir", str(d), "--url", url)
    assert res.exit_code == 0 and "nothing to download" in res.stdout
    assert len(state.ranges) == n_requests  # not even a request
    # another dataset comes out of the kept archive, again without the network
    res = _run("--dataset", "cub", "--data-dir", str(d), "--url", url)
    assert res.exit_code == 0, res.output
    assert len(state.ranges) == n_requests and (d / "CUB" / "res101.mat").is_file()


def test_wrong_checksum_deletes_the_file_and_extracts_nothing(tmp_path: Path, archive) -> None:
    _, url, _ = archive
    d = tmp_path / "data"
    res = _run("--dataset", "awa2", "--data-dir", str(d), "--url", url, "--sha256", "0" * 64)
    assert res.exit_code != 0
    line = _one_error_line(res)
    assert "checksum mismatch" in line and url in line and "--sha256" in line
    assert not (d / "AWA2").exists()
    assert list((d / ".downloads").glob("xlsa17.zip*")) == []


def test_a_partial_file_from_another_url_is_not_resumed(tmp_path: Path, archive) -> None:
    state, url, payload = archive
    d = tmp_path / "data"
    (d / ".downloads").mkdir(parents=True)
    (d / ".downloads" / "xlsa17.zip.part").write_bytes(b"bytes from some other mirror")
    (d / ".downloads" / "xlsa17.zip.part.url").write_text("http://127.0.0.1:9/xlsa17.zip\n")
    res = _run("--dataset", "awa2", "--data-dir", str(d), "--url", url)
    assert res.exit_code == 0, res.output
    assert state.ranges == [None]


def test_recorded_hash_is_enforced_afterwards(tmp_path: Path, archive) -> None:
    state, url, payload = archive
    d = tmp_path / "data"
    assert (
        _run("--dataset", "awa2", "--data-dir", str(d), "--url", url, "--delete-archive").exit_code
        == 0
    )
    state.payload = payload[:-1] + bytes([payload[-1] ^ 1])  # the server now serves other bytes
    res = _run("--dataset", "cub", "--data-dir", str(d), "--url", url)
    assert res.exit_code != 0
    assert "recorded by the first download" in _one_error_line(res)
    assert not (d / "CUB").exists()


def test_cut_connection_is_resumed_with_range(tmp_path: Path, archive) -> None:
    state, url, payload = archive
    half = len(payload) // 2
    state.cuts = [half]
    d = tmp_path / "data"
    res = _run("--dataset", "awa2", "--data-dir", str(d), "--url", url)
    assert res.exit_code == 0, res.output
    assert state.ranges == [None, f"bytes={half}-"]
    assert (d / "AWA2" / "res101.mat").is_file()
    assert (
        json.loads((d / ".downloads" / "known_archives.json").read_text())[url]["sha256"]
        == hashlib.sha256(payload).hexdigest()
    )


def test_interrupted_download_resumes_on_the_next_call(tmp_path: Path, archive) -> None:
    state, url, payload = archive
    third = len(payload) // 3
    state.cuts = [third]
    d = tmp_path / "data"
    res = _run("--dataset", "awa2", "--data-dir", str(d), "--url", url, "--retries", "0")
    assert res.exit_code != 0
    line = _one_error_line(res)
    assert "interrupted" in line and "re-run the same command to resume" in line
    part = d / ".downloads" / "xlsa17.zip.part"
    assert part.stat().st_size == third and not (d / "AWA2").exists()
    info = data_cli(["info", "--data-dir", str(d)])
    assert f"partial download (re-run download to resume): {part}" in info.stdout
    res = _run(
        "--dataset",
        "awa2",
        "--data-dir",
        str(d),
        "--url",
        url,
        "--sha256",
        hashlib.sha256(payload).hexdigest(),
    )
    assert res.exit_code == 0, res.output
    assert state.ranges == [None, f"bytes={third}-"]
    assert not part.exists() and (d / "AWA2" / "att_splits.mat").is_file()


def test_server_ignoring_range_restarts_cleanly(tmp_path: Path, archive) -> None:
    state, url, payload = archive
    state.cuts = [1000]
    state.honor_range = False
    d = tmp_path / "data"
    res = _run("--dataset", "awa2", "--data-dir", str(d), "--url", url)
    assert res.exit_code == 0, res.output
    assert state.ranges == [None, "bytes=1000-", None]
    assert (
        hashlib.sha256((d / ".downloads" / "xlsa17.zip").read_bytes()).hexdigest()
        == hashlib.sha256(payload).hexdigest()
    )


def test_http_error_and_unreachable_host_are_one_line(tmp_path: Path, server) -> None:
    state, url = server
    res = _run(
        "--dataset", "awa2", "--data-dir", str(tmp_path), "--url", url.replace("xlsa17", "nope")
    )
    assert res.exit_code != 0 and "HTTP 404" in _one_error_line(res)
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = _run(
        "--dataset", "awa2", "--data-dir", str(tmp_path), "--url", f"http://127.0.0.1:{port}/x.zip"
    )
    assert res.exit_code != 0 and "cannot reach" in _one_error_line(res)


def test_progress_bar_renders(tmp_path: Path, archive, monkeypatch: pytest.MonkeyPatch) -> None:
    _, url, _ = archive
    monkeypatch.setenv("ZSLBENCH_PROGRESS", "1")
    res = _run("--dataset", "awa2", "--data-dir", str(tmp_path), "--url", url)
    assert res.exit_code == 0, res.output
    assert "xlsa17" in res.stderr and "eta" in res.stderr


def test_extract_keeps_the_users_other_files_and_is_atomic(tmp_path: Path, mini: Mini) -> None:
    payload = build_archive(tmp_path, {"AWA2": mini.arrays})
    zpath = tmp_path / "a.zip"
    zpath.write_bytes(payload)
    d = tmp_path / "data"
    (d / "AWA2").mkdir(parents=True)
    (d / "AWA2" / "att_splits.mat").write_bytes(b"stale")
    (d / "AWA2" / "my_notes.txt").write_text("keep me")
    dl.extract_dataset(zpath, "AWA2", d)
    assert (d / "AWA2" / "my_notes.txt").read_text() == "keep me"
    with zipfile.ZipFile(zpath) as zf:  # (savemat stamps the time: compare with the member itself)
        assert (d / "AWA2" / "att_splits.mat").read_bytes() == zf.read(
            "xlsa17/data/AWA2/att_splits.mat"
        )
    assert sorted(p.name for p in d.iterdir()) == ["AWA2"]  # no temporary folders left
    with pytest.raises(DataError, match="has no folder SUN/"):
        dl.extract_dataset(zpath, "SUN", d)
    assert sorted(p.name for p in d.iterdir()) == ["AWA2"]


def test_extract_never_writes_outside_the_dataset_folder(tmp_path: Path) -> None:
    zpath = tmp_path / "evil.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("xlsa17/data/AWA2/../../../escaped.txt", "x")
        zf.writestr("../AWA2/res101.mat", "y")
    d = tmp_path / "data"
    d.mkdir()
    dl.extract_dataset(zpath, "AWA2", d)
    assert (d / "AWA2" / "res101.mat").read_text() == "y"
    assert not list(tmp_path.rglob("escaped.txt"))


def test_fetch_resumes_a_partial_file_and_returns_its_sha256(tmp_path: Path) -> None:
    """fetch() alone: the returned sha256 is the file's, resuming from a partial file."""
    payload = b"0123456789" * 100_000
    part = tmp_path / "x.part"
    part.write_bytes(payload[:12345])
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.state = ServerState(payload=payload)  # type: ignore[attr-defined]
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/xlsa17.zip"
        report = dl.DownloadReport()
        assert dl.fetch(url, part, report=report) == hashlib.sha256(payload).hexdigest()
        assert report.resumed_from == [12345] and report.downloaded_bytes == len(payload) - 12345
        assert dl.fetch(url, part) == hashlib.sha256(payload).hexdigest()  # complete: 416 -> done
        assert httpd.state.ranges[-1] == f"bytes={len(payload)}-"
    finally:
        httpd.shutdown()
        httpd.server_close()


EXTRACT_CHILD = """
import shutil, sys, time
from pathlib import Path

real = shutil.copyfileobj

def stalled(src, dst, *args):
    real(src, dst, *args)
    dst.flush()
    print("WRITING", flush=True)
    time.sleep(600)

shutil.copyfileobj = stalled
from zslbench_plugins.xlsa17.download import extract_dataset
extract_dataset(Path(sys.argv[1]), "AWA2", Path(sys.argv[2]))
"""


def test_a_killed_extraction_is_listed_and_removed_by_the_next_download(
    tmp_path: Path, archive
) -> None:
    """Issue "Trust": the temporary of a killed extraction (up to the size of res101.mat) is
    listed by `data info` and removed by the next download, which then extracts afresh."""
    _, url, payload = archive
    zpath = tmp_path / "x.zip"
    zpath.write_bytes(payload)
    d = tmp_path / "data"
    d.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", EXTRACT_CHILD, str(zpath), str(d)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "WRITING"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    child.stderr.close()  # type: ignore[union-attr]
    (tmp,) = d.glob(".AWA2.zslbench-*.extract")
    info = data_cli(["info", "--data-dir", str(d)])
    assert f"temporary: {tmp} (" in info.stdout and "stale: its writer is gone" in info.stdout
    assert "unfinished extractions" in info.stdout
    res = _run("--dataset", "awa2", "--data-dir", str(d), "--url", url)
    assert res.exit_code == 0, res.output
    assert f"removed {tmp}, the temporary of a killed extraction" in res.stdout
    assert not tmp.exists() and (d / "AWA2" / "res101.mat").is_file()
    assert sorted(p.name for p in d.iterdir() if p.name.startswith(".AWA2")) == []
