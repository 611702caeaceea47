"""The binary cache: used when valid, never stale, damage detected by hash and rebuilt."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import invoke_main
from tests.plugins.xlsa17.helpers import (
    Mini,
    data_cli,
    mini_arrays,
    patch_registry,
    registry_for,
    write_dataset,
)
from zslbench_plugins.xlsa17 import cache, checks
from zslbench_plugins.xlsa17 import loader as xlsa17
from zslbench_plugins.xlsa17.loader import load_xlsa17


def _entry(mini: Mini, kind: str) -> Path:
    (entry,) = (mini.data_dir / ".cache" / "AWA2").glob(f"{kind}-*")
    return entry


def _count_calls(monkeypatch: pytest.MonkeyPatch, module, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_cached_load_does_not_parse_or_hash_sources(
    mini: Mini, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_xlsa17("awa2", mini.data_dir)
    entry = _entry(mini, "res101")
    assert entry.name == "res101-" + hashlib.sha256(mini.res101.read_bytes()).hexdigest()[:20]

    def boom(*_a, **_k):
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(xlsa17, "_convert_res101", boom)
    monkeypatch.setattr(xlsa17, "_convert_att_splits", boom)
    hashed = _count_calls(monkeypatch, cache, "sha256_file")
    d = load_xlsa17("awa2", mini.data_dir)
    assert hashed == [] and d.source["cache"]["res101"] == "hit"


def test_changed_stat_rehashes_and_changed_content_rebuilds(
    mini: Mini, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_xlsa17("awa2", mini.data_dir)
    old_entry = _entry(mini, "res101")
    hashed = _count_calls(monkeypatch, cache, "sha256_file")
    st = mini.res101.stat()
    os.utime(mini.res101, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched, same bytes
    assert load_xlsa17("awa2", mini.data_dir).source["cache"]["res101"] == "hit"
    assert len(hashed) == 1
    # new content, same size and mtime as before: the sha256 keys a new entry, the old one goes
    a = dict(mini.arrays, features=mini.arrays["features"] * 2)
    mini.rewrite(a)
    patch_registry(monkeypatch, "awa2", registry_for(a, mini.entry))
    d = load_xlsa17("awa2", mini.data_dir)
    assert d.source["cache"]["res101"] == "built"
    np.testing.assert_array_equal(d.features, a["features"].T.astype(np.float32))
    assert not old_entry.exists() and _entry(mini, "res101") != old_entry


def _flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ 0xFF]))


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete_meta", "garble_meta", "delete_npy"])
def test_damaged_entry_is_detected_and_rebuilt(mini: Mini, damage: str, caplog) -> None:
    load_xlsa17("awa2", mini.data_dir)
    entry = _entry(mini, "res101")
    npy = entry / "features.npy"
    if damage == "flip":
        _flip_byte(npy, npy.stat().st_size // 2)
    elif damage == "truncate":
        with open(npy, "r+b") as fh:
            fh.truncate(npy.stat().st_size - 4)
    elif damage == "delete_meta":
        (entry / "meta.json").unlink()
    elif damage == "garble_meta":
        (entry / "meta.json").write_text("{not json")
    else:
        npy.unlink()
    d = load_xlsa17("awa2", mini.data_dir)
    assert d.source["cache"]["res101"].startswith("rebuilt (corrupt cache entry")
    np.testing.assert_array_equal(d.features, mini.arrays["features"].T.astype(np.float32))
    assert load_xlsa17("awa2", mini.data_dir).source["cache"]["res101"] == "hit"
    assert "rebuilding it" in caplog.text


@pytest.mark.parametrize("kind", ["res101", "att_splits"])
def test_an_emptied_file_table_is_damage_for_run_verify_and_info(
    mini: Mini, kind: str, tmp_path: Path
) -> None:
    """Issue 18: a ``meta.json`` whose file table was emptied passed as a valid entry: ``run`` and
    ``data verify`` failed with "internal error: KeyError" while ``data info`` said "ok". All
    three now see a damaged entry; the two that load rebuild it."""
    load_xlsa17("awa2", mini.data_dir)

    def empty_table() -> Path:
        entry = _entry(mini, kind)
        meta = json.loads((entry / "meta.json").read_text())
        meta["files"] = {}
        (entry / "meta.json").write_text(json.dumps(meta))
        return entry

    entry = empty_table()
    info = data_cli(["info", "--data-dir", str(mini.data_dir)])
    assert info.exit_code == 0 and "damaged: meta.json lists no" in info.stdout
    res = data_cli(["verify", "--dataset", "awa2", "--data-dir", str(mini.data_dir)])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == [
        f"zslbench: warning: {entry}: meta.json lists no "
        f"{cache.REQUIRED_ARRAYS[kind][0]}.npy (its file table is "
        "incomplete); rebuilding it"
    ]
    empty_table()
    # (the flag: this process's command line keeps the datasets it registered first, which
    # declare the real AWA2, not the miniature the fixture declares)
    run = invoke_main(
        "run",
        "--method",
        "gp",
        "--dataset",
        "awa2",
        "--data-dir",
        str(mini.data_dir),
        "--results-dir",
        str(tmp_path / "res"),
        "--allow-nonstandard-split",
    )
    assert run.exit_code == 0, run.output
    assert "internal error" not in run.output and "rebuilding it" in run.stderr
    assert load_xlsa17("awa2", mini.data_dir).source["cache"][kind] == "hit"


BLOCK = 64 * 1024


def _zero_block(path: Path, start: int) -> bytes:
    """Overwrite the 64 KiB at ``start`` with zeros; return what was there."""
    with open(path, "r+b") as fh:
        fh.seek(start)
        old = fh.read(BLOCK)
        fh.seek(start)
        fh.write(b"\0" * len(old))
    return old


def _restore(path: Path, start: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(start)
        fh.write(data)


def test_zeroing_any_64k_block_is_detected(tmp_path: Path) -> None:
    """Issue "Trust": the integrity check read about 64 of the ~150 blocks of a 9.8 MB file (64 of
    ~1918 for AWA2), so zeroing another block went unnoticed and the entry was served. Every
    block now counts."""
    arr = np.random.default_rng(0).standard_normal((1200, 2048)).astype(np.float32)
    entry = cache.write_entry(
        tmp_path / "AWA2" / "res101-0123456789abcdef0123", {"features": arr}, {}
    )
    npy = entry / "features.npy"
    size = npy.stat().st_size
    assert size > 9 * 2**20
    for start in range(0, size, 3 * BLOCK):
        old = _zero_block(npy, start)
        with pytest.raises(cache.CacheCorrupt, match="features.npy fails its digest"):
            cache.open_entry(entry)
        _restore(npy, start, old)
    np.testing.assert_array_equal(cache.open_entry(entry)[1]["features"], arr)


def test_file_digest_is_the_documented_segment_hash(tmp_path: Path) -> None:
    """The digest is recomputable without zslbench: sha256 over a header line and the sha256 of
    each segment, whatever the number of threads."""
    data = np.random.default_rng(1).bytes(2 * cache.SEGMENT + 12345)
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    h = hashlib.sha256(f"{cache.DIGEST_SCHEME} {len(data)} {cache.SEGMENT}\n".encode())
    for start in range(0, len(data), cache.SEGMENT):
        h.update(hashlib.sha256(data[start : start + cache.SEGMENT]).digest())
    assert cache.file_digest(p) == h.hexdigest() == cache.file_digest(p, threads=1)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert (
        cache.file_digest(empty)
        == hashlib.sha256(f"{cache.DIGEST_SCHEME} 0 {cache.SEGMENT}\n".encode()).hexdigest()
    )


def test_a_zeroed_block_is_never_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader and `data verify` both notice a zeroed block in the middle of features.npy,
    rebuild the entry from the source, and never hand out the damaged bytes."""
    a = mini_arrays(per_class=130, n_val_classes=1)  # 1170 images: features.npy about 9.6 MB
    write_dataset(tmp_path, "AWA2", a)
    patch_registry(monkeypatch, "awa2", registry_for(a, checks.registry_entry("awa2")))
    load_xlsa17("awa2", tmp_path)
    (entry,) = (tmp_path / ".cache" / "AWA2").glob("res101-*")
    npy = entry / "features.npy"
    middle = (npy.stat().st_size // 2) // BLOCK * BLOCK
    _zero_block(npy, middle)
    d = load_xlsa17("awa2", tmp_path)
    assert d.source["cache"]["res101"].startswith("rebuilt (corrupt cache entry")
    assert "features.npy fails its digest" in d.source["cache"]["res101"]
    np.testing.assert_array_equal(d.features, a["features"].T.astype(np.float32))
    _zero_block(npy, middle)
    res = data_cli(["verify", "--dataset", "awa2", "--data-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "│ rebuilt │" in res.stdout
    assert "note: awa2 res101 cache: rebuilt (corrupt cache entry" in res.stdout
    assert load_xlsa17("awa2", tmp_path).source["cache"]["res101"] == "hit"


def test_verify_full_rehashes_the_sources(mini: Mini, monkeypatch: pytest.MonkeyPatch) -> None:
    """`verify --full` does not trust the remembered sha256 of the source files (a file changed
    behind an unchanged stat is hashed again); a plain verify does."""
    load_xlsa17("awa2", mini.data_dir)
    hashed = _count_calls(monkeypatch, cache, "sha256_file")
    assert data_cli(["verify", "-d", "awa2", "--data-dir", str(mini.data_dir)]).exit_code == 0
    assert hashed == []
    res = data_cli(["verify", "-d", "awa2", "--data-dir", str(mini.data_dir), "--full"])
    assert res.exit_code == 0, res.output
    assert len(hashed) == 2  # res101.mat and att_splits.mat


def test_hash_store_memo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "f.bin"
    f.write_bytes(b"abc")
    store = cache.HashStore(tmp_path / "memo.json")
    want = hashlib.sha256(b"abc").hexdigest()
    assert store.sha256(f) == want
    hashed = _count_calls(monkeypatch, cache, "sha256_file")
    assert cache.HashStore(tmp_path / "memo.json").sha256(f) == want and hashed == []
    f.write_bytes(b"abd")
    assert cache.HashStore(tmp_path / "memo.json").sha256(f) == hashlib.sha256(b"abd").hexdigest()
    assert len(hashed) == 1
    (tmp_path / "memo.json").write_text("garbage")
    assert cache.HashStore(tmp_path / "memo.json").sha256(f) == hashlib.sha256(b"abd").hexdigest()


def test_write_entry_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "AWA2" / "res101-x"

    def fail(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(cache, "file_digest", fail)
    with pytest.raises(OSError):
        cache.write_entry(target, {"a": np.arange(3)}, {})
    assert not target.exists() and list((tmp_path / "AWA2").iterdir()) == []
