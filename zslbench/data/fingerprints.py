"""What identifies a dataset's content: fingerprints of its index sets, labels, attribute matrix
and validation classes (:func:`content_parts`), and a hash of every feature byte
(:func:`features_hash`). :mod:`zslbench.data.checks` combines them into a dataset's fingerprint
and matches them against a declared benchmark's pins."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np

from zslbench.data.dataset import ZSLData
from zslbench.data.splits import split_fingerprint

#: Prefix of the content fingerprint's text; bump it if the definition changes.
CONTENT_SCHEME = "zslbench-content-fingerprint-v1"
#: Bytes hashed per block when fingerprinting features (keeps memory flat on memory maps).
HASH_BLOCK = 64 * 2**20


def sha_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_fingerprint(parts: Mapping[str, str], features_hash: str) -> str:
    """A dataset's fingerprint: its content ``parts`` (:func:`content_parts`, with a backbone's
    part where one is named) and its features hash, under :data:`CONTENT_SCHEME`. The one
    formula: ``check_dataset`` forms it, a named backbone re-forms it and a record's claims
    recompute it."""
    lines = "\n".join(f"{k}:{v}" for k, v in sorted(parts.items()))
    return sha_hex(f"{CONTENT_SCHEME}\n{lines}\nfeatures:{features_hash}\n".encode())


def attributes_fingerprint(attributes: np.ndarray) -> str:
    """sha256 of the (classes x dims) attribute matrix as little-endian float32, with its shape."""
    att = np.ascontiguousarray(np.asarray(attributes, dtype="<f4"))
    return sha_hex(f"{att.shape}".encode() + att.tobytes())


def labels_fingerprint(labels: np.ndarray) -> str:
    """sha256 of the per-image 0-based labels as little-endian int64."""
    return sha_hex(np.ascontiguousarray(np.asarray(labels, dtype="<i8")).tobytes())


def val_classes_text(val_classes: np.ndarray | None) -> str:
    """The validation classes as sorted 0-based ids, ``"none"`` when the dataset has none."""
    if val_classes is None or len(val_classes) == 0:
        return "none"
    return ",".join(map(str, np.unique(np.asarray(val_classes, dtype=np.int64)).tolist()))


def content_parts(data: ZSLData) -> dict[str, str]:
    """Fingerprint of each part of a dataset's content that defines the benchmark."""
    return {
        "split": split_fingerprint(
            data.trainval_idx + 1, data.test_seen_idx + 1, data.test_unseen_idx + 1
        ),
        "labels": labels_fingerprint(data.labels),
        "attributes": attributes_fingerprint(data.attributes),
        "val_classes": sha_hex(val_classes_text(data.val_classes).encode()),
    }


def features_hash(features: np.ndarray) -> str:
    """blake2b over every byte of the features (float32, C order) and their shape.

    Every byte counts: a damaged cache or a re-extracted feature file gives another value, so a
    record made from other features is never taken for this one's. Hashing goes block by block,
    so a memory-mapped AWA2 (300 MB) is never copied whole.
    """
    h = hashlib.blake2b(digest_size=32)
    h.update(f"{tuple(features.shape)}|float32".encode())
    rows = max(1, HASH_BLOCK // max(1, features.shape[1] * 4))
    for start in range(0, features.shape[0], rows):
        block = np.ascontiguousarray(features[start : start + rows], dtype=np.float32)
        h.update(block.data.cast("B"))
    return h.hexdigest()
