"""The bad-input table (issue 5), file level: every case exits non-zero with ONE line naming the
file or value and the fix, no traceback — through ``zslbench data verify`` and through
``load_xlsa17`` (which must raise the right error class).

Each case damages the miniature dataset of the ``mini`` fixture (a valid xlsa17 layout registered
as the official ``awa2``), so the only thing wrong is what the case changes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.plugins.xlsa17.helpers import Mini, data_cli
from zslbench.errors import ConfigError, DataError, SplitError
from zslbench_plugins.xlsa17.loader import load_xlsa17


@dataclass(frozen=True)
class Case:
    id: str
    damage: Callable[[Mini], None]
    error: type[Exception]
    file: str  # which file the line must name ("res101.mat" / "att_splits.mat")
    says: str  # what the line must say


def _arrays(m: Mini, **changes) -> None:
    m.rewrite({**m.arrays, **changes})


def _features(m: Mini, fn) -> None:
    f = m.arrays["features"].copy()
    fn(f)
    _arrays(m, features=f)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _swap_same_class(m: Mini) -> None:
    """Move one image from trainval to test_seen and one back: every invariant holds, the
    index sets are not the official ones (only the fingerprint notices)."""
    a = m.arrays
    lab = a["labels"].ravel()
    tv, ts = a["trainval_loc"].copy(), a["test_seen_loc"].copy()
    j = int(np.flatnonzero(lab[ts.ravel() - 1] == lab[tv[0, 0] - 1])[0])
    tv[0, 0], ts[j, 0] = ts[j, 0], tv[0, 0]
    _arrays(m, trainval_loc=tv, test_seen_loc=ts)


def _label_1e20(m: Mini) -> None:
    labels = m.arrays["labels"].copy()  # float64 in the file, as MATLAB writes them
    labels[3, 0] = 1e20
    _arrays(m, labels=labels)


def _index_1e20(m: Mini) -> None:
    idx = m.arrays["test_unseen_loc"].astype(np.float64)
    idx[0, 0] = 1e20
    _arrays(m, test_unseen_loc=idx)


def _unseen_into_trainval(m: Mini) -> None:
    a = m.arrays
    _arrays(
        m,
        trainval_loc=np.concatenate([a["trainval_loc"], a["test_unseen_loc"][:3]]),
        test_unseen_loc=a["test_unseen_loc"][3:],
    )


CASES = [
    # files
    Case(
        "missing-file",
        lambda m: m.res101.unlink(),
        DataError,
        "res101.mat",
        "is missing: run `zslbench data download --dataset awa2",
    ),
    Case(
        "truncated-mat",
        lambda m: _truncate(m.res101),
        DataError,
        "res101.mat",
        "truncated or corrupt",
    ),
    Case(
        "corrupt-mat",
        lambda m: m.att_splits.write_bytes(b"\x07" * 4096),
        DataError,
        "att_splits.mat",
        "truncated or corrupt",
    ),
    Case(
        "empty-mat",
        lambda m: m.att_splits.write_bytes(b""),
        DataError,
        "att_splits.mat",
        "truncated or corrupt",
    ),
    Case(
        "hdf5-v7.3-mat",
        lambda m: m.res101.write_bytes(b"MATLAB 7.3 MAT-file".ljust(512) + b"\x89HDF"),
        DataError,
        "res101.mat",
        "v7.3 (HDF5)",
    ),
    Case(
        "missing-key-labels",
        lambda m: m.rewrite(m.arrays, drop=("labels",)),
        DataError,
        "res101.mat",
        "lacks the required key 'labels'",
    ),
    Case(
        "missing-key-test_unseen_loc",
        lambda m: m.rewrite(m.arrays, drop=("test_unseen_loc",)),
        DataError,
        "att_splits.mat",
        "lacks the required key 'test_unseen_loc'",
    ),
    # features
    # Other features on the official split: the runner's benchmark check (a policy failure, as
    # every difference from the declared benchmark), naming the features' file.
    Case(
        "2047-d-features",
        lambda m: _arrays(m, features=m.arrays["features"][:2047]),
        SplitError,
        "res101.mat",
        "features are 2047-d where the official awa2 features are 2048-d",
    ),
    Case(
        "nan-features",
        lambda m: _features(m, lambda f: f.__setitem__((5, 3), np.nan)),
        DataError,
        "res101.mat",
        "NaN or Inf (first at image 4, dimension 6",
    ),
    Case(
        "inf-features",
        lambda m: _features(m, lambda f: f.__setitem__((0, 0), np.inf)),
        DataError,
        "res101.mat",
        "NaN or Inf (first at image 1, dimension 1",
    ),
    # Issue "Trust": the loader refuses what the runner's contract refuses, in the same words
    # but naming the file (a MATLAB logical array loads as uint8 0/1 in scipy; only its class
    # in the file's header tells it apart).
    Case(
        "bool-features",
        lambda m: _arrays(m, features=m.arrays["features"] > 0.5),
        DataError,
        "res101.mat",
        "features are MATLAB logical (bool) values; they must be real numbers",
    ),
    Case(
        "constant-features",
        lambda m: _arrays(m, features=np.full_like(m.arrays["features"], 0.5)),
        DataError,
        "res101.mat",
        "every feature value is 0.5: the features are constant",
    ),
    # Issue "Trust": a finite 1e300 is not a NaN or Inf, and needs no RuntimeWarning to say so.
    Case(
        "feature-1e300",
        lambda m: _features(m, lambda f: f.__setitem__((5, 3), 1e300)),
        DataError,
        "res101.mat",
        "feature value 1e+300 (image 4, dimension 6, 1-based) does not fit in float32",
    ),
    Case(
        "features-labels-count",
        lambda m: _arrays(m, features=m.arrays["features"][:, :-1]),
        DataError,
        "res101.mat",
        "features hold 53 images but labels hold 54",
    ),
    # labels and splits
    Case(
        "label-out-of-range",
        lambda m: _arrays(m, labels=np.where(m.arrays["labels"] == 9, 10, m.arrays["labels"])),
        DataError,
        "res101.mat",
        "label 10 is out of range 1..9",
    ),
    # Issue "Trust": the value as written in the file, not "label -9223372036854775808".
    Case("label-1e20", _label_1e20, DataError, "res101.mat", "label 1e+20 is out of range 1..9"),
    Case(
        "labels-0-based",
        lambda m: _arrays(m, labels=m.arrays["labels"] - 1),
        DataError,
        "res101.mat",
        "label 0 is out of range 1..9",
    ),
    Case(
        "duplicated-indices",
        lambda m: _arrays(m, test_seen_loc=np.vstack([m.arrays["test_seen_loc"]] * 2)),
        SplitError,
        "att_splits.mat",
        "test_seen_loc lists",
    ),
    Case(
        "0-based-indices",
        lambda m: _arrays(
            m,
            **{
                k: m.arrays[k].astype(np.int64) - 1
                for k in ("trainval_loc", "test_seen_loc", "test_unseen_loc")
            },
        ),
        SplitError,
        "att_splits.mat",
        "indices look 0-based",
    ),
    Case(
        "index-out-of-range",
        lambda m: _arrays(m, test_unseen_loc=m.arrays["test_unseen_loc"] + 100),
        SplitError,
        "att_splits.mat",
        "test_unseen_loc has 18 indices outside 1..54",
    ),
    Case(
        "index-1e20",
        _index_1e20,
        SplitError,
        "att_splits.mat",
        "test_unseen_loc has 1 index outside 1..54 (e.g. 1e+20)",
    ),
    Case(
        "empty-split",
        lambda m: _arrays(m, test_seen_loc=np.zeros((0, 1), np.uint16)),
        SplitError,
        "att_splits.mat",
        "test_seen_loc is empty",
    ),
    # attributes
    Case(
        "att-fewer-classes",
        lambda m: _arrays(m, att=m.arrays["att"][:, :-1]),
        DataError,
        "res101.mat",
        "the attribute matrix does not match the number of classes",
    ),
    Case(
        "att-more-classes",
        lambda m: _arrays(m, att=np.hstack([m.arrays["att"], m.arrays["att"][:, :1]])),
        SplitError,
        "att_splits.mat",
        "att has 10 class columns but the labels",
    ),
    Case(
        "att-all-zero-row",
        lambda m: _arrays(m, att=m.arrays["att"] * (np.arange(9) != 4)),
        SplitError,
        "att_splits.mat",
        "all-zero attribute row for class 5",
    ),
    # splits
    Case(
        "v1-split-test-seen-in-trainval",
        lambda m: _arrays(
            m, trainval_loc=np.vstack([m.arrays["trainval_loc"], m.arrays["test_seen_loc"]])
        ),
        SplitError,
        "att_splits.mat",
        "V1-style or leaky split",
    ),
    Case(
        "leaky-unseen-classes-in-trainval",
        _unseen_into_trainval,
        SplitError,
        "att_splits.mat",
        "test-unseen classes have trainval images",
    ),
    Case(
        "altered-split",
        _swap_same_class,
        SplitError,
        "att_splits.mat",
        "Split V2.0 check 'fingerprint' failed",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_via_verify(mini: Mini, case: Case) -> None:
    case.damage(mini)
    res = data_cli(["verify", "--dataset", "awa2", "--data-dir", str(mini.data_dir)])
    assert res.exit_code != 0
    assert "Traceback" not in res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("zslbench: error: ")
    assert str(mini.data_dir / "AWA2" / case.file) in lines[0]
    assert case.says in lines[0]
    assert (
        " — " in lines[0] or ": run `zslbench data download" in lines[0]
    )  # ... and says how to fix it


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_via_loader(mini: Mini, case: Case) -> None:
    case.damage(mini)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a user's mistake is one line, nothing else
        with pytest.raises(case.error) as info:
            load_xlsa17("awa2", mini.data_dir)
    line = str(info.value)
    assert "\n" not in line and case.says in line
    assert str(mini.data_dir / "AWA2" / case.file) in line
    if case.error is DataError:
        assert not isinstance(info.value, SplitError)


def test_corrupted_cache_entry_is_detected_and_rebuilt(mini: Mini) -> None:
    """Not an error: the damaged entry is found by its digest, rebuilt, and verify says so."""
    load_xlsa17("awa2", mini.data_dir)
    (entry,) = (mini.data_dir / ".cache" / "AWA2").glob("res101-*")
    npy = entry / "features.npy"
    raw = bytearray(npy.read_bytes())
    raw[200:208] = b"\xff" * 8
    npy.write_bytes(bytes(raw))
    res = data_cli(["verify", "--dataset", "awa2", "--data-dir", str(mini.data_dir)])
    assert res.exit_code == 0
    # one prefixed warning line (the same one `run` prints), no traceback
    assert res.stderr.splitlines() == [
        f"zslbench: warning: {entry}: features.npy fails its digest; rebuilding it"
    ]
    assert "note: awa2 res101 cache: rebuilt (corrupt cache entry" in res.stdout
    d = load_xlsa17("awa2", mini.data_dir)
    assert d.source["cache"]["res101"] == "hit"
    np.testing.assert_array_equal(d.features, mini.arrays["features"].T.astype(np.float32))


@pytest.mark.parametrize(
    "args, says",
    [
        (["verify", "--dataset", "awa3"], "unknown xlsa17 dataset 'awa3' — did you mean 'awa2'?"),
        (["verify", "--dataset", "synth-awa2"], "'synth-awa2' is an embedded synthetic dataset"),
        (["download", "--dataset", "cbu"], "did you mean 'cub'?"),
        (["download", "--sha256", "abc"], "--sha256 'abc' is not a sha256"),
    ],
)
def test_bad_command_line_values(tmp_path: Path, args: list[str], says: str) -> None:
    res = data_cli([*args, "--data-dir", str(tmp_path)])
    assert res.exit_code == ConfigError.exit_code
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in res.output
