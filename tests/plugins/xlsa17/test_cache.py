"""The binary cache: used when valid, never stale, damage detected by hash and rebuilt."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

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


def test_cached_load_does_not_parse_or_hash_sources(mini: Mini, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_changed_stat_rehashes_and_changed_content_rebuilds(mini: Mini, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_sampled_digest_on_large_files(tmp_path: Path) -> None:
    size = cache.FULL_DIGEST_LIMIT + 5 * cache.SAMPLE_BLOCK + 123
    p = tmp_path / "big.bin"
    p.write_bytes(np.random.default_rng(0).bytes(size))
    key = b"k" * 16
    d0 = cache.sampled_digest(p, key)
    assert d0 == cache.sampled_digest(p, key) and d0 != cache.sampled_digest(p, b"j" * 16)
    for offset in (0, size - 1):  # the first and the last block are always sampled
        _flip_byte(p, offset)
        assert cache.sampled_digest(p, key) != d0
        _flip_byte(p, offset)
    assert cache.sampled_digest(p, key) == d0
    with open(p, "ab") as fh:
        fh.write(b"\0")
    assert cache.sampled_digest(p, key) != d0  # the size is hashed


def test_full_check_catches_what_sampling_may_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flipped byte outside the sampled blocks passes a normal load but not `verify --full`."""
    a = mini_arrays(per_class=130, n_val_classes=1)  # 1170 images: features.npy about 9.6 MB
    write_dataset(tmp_path, "AWA2", a)
    patch_registry(monkeypatch, "awa2", registry_for(a, checks.registry_entry("awa2")))
    load_xlsa17("awa2", tmp_path)
    (entry,) = (tmp_path / ".cache" / "AWA2").glob("res101-*")
    meta = json.loads((entry / "meta.json").read_text())
    key = bytes.fromhex(meta["key"])
    npy = entry / "features.npy"
    size = npy.stat().st_size
    assert size > cache.FULL_DIGEST_LIMIT
    # find a byte in a block the sampled digest does not read
    offset = next(o for o in range(cache.SAMPLE_BLOCK, size - cache.SAMPLE_BLOCK, cache.SAMPLE_BLOCK)
                  if _digest_unchanged_after_flip(npy, key, o + 7))
    _flip_byte(npy, offset + 7)
    assert load_xlsa17("awa2", tmp_path).source["cache"]["res101"] == "hit"
    res = data_cli(["verify", "--dataset", "awa2", "--data-dir", str(tmp_path), "--full"])
    assert res.exit_code == 0, res.output
    assert "│ rebuilt │" in res.stdout
    assert "note: awa2 res101 cache: rebuilt (corrupt cache entry" in res.stdout
    assert "features.npy fails its sha256" in res.stdout
    d = load_xlsa17("awa2", tmp_path)
    np.testing.assert_array_equal(d.features, a["features"].T.astype(np.float32))


def _digest_unchanged_after_flip(path: Path, key: bytes, offset: int) -> bool:
    before = cache.sampled_digest(path, key)
    _flip_byte(path, offset)
    same = cache.sampled_digest(path, key) == before
    _flip_byte(path, offset)
    return same


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

    monkeypatch.setattr(cache, "sampled_digest", fail)
    with pytest.raises(OSError):
        cache.write_entry(target, {"a": np.arange(3)}, {})
    assert not target.exists() and list((tmp_path / "AWA2").iterdir()) == []
