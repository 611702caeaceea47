"""Split V2.0 checks on arrays: each check fires on its own input, and only then (brute force)."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zslbench.data import splits


def _fp_by_hand(tv: list[int], ts: list[int], tu: list[int]) -> str:
    text = "zslbench-split-fingerprint-v1\n"
    for key, vals in zip(splits.SPLIT_KEYS, (tv, ts, tu), strict=True):
        text += f"{key}:" + ",".join(str(v) for v in sorted(set(vals))) + "\n"
    return hashlib.sha256(text.encode()).hexdigest()


def test_fingerprint_is_the_documented_text_hash() -> None:
    assert splits.split_fingerprint([3, 1, 2], [5], [4, 6]) == _fp_by_hand([1, 2, 3], [5], [4, 6])


def test_fingerprint_ignores_order_shape_dtype_but_not_membership() -> None:
    base = splits.split_fingerprint(np.array([1, 2, 3]), np.array([5]), np.array([4, 6]))
    same = splits.split_fingerprint(
        np.array([[3], [1], [2]], dtype=np.uint16),
        np.array([5.0]),
        np.array([[6, 4]], dtype=np.int32),
    )
    assert same == base
    assert splits.split_fingerprint([1, 2], [3, 5], [4, 6]) != base  # image 3 moved to test_seen
    assert splits.split_fingerprint([1, 2, 3], [4, 6], [5]) != base  # test sets swapped in part
    assert splits.split_fingerprint([5], [1, 2, 3], [4, 6]) != base  # roles of the sets matter


def _labels(n_seen: int = 3, n_unseen: int = 2, per: int = 4) -> np.ndarray:
    return np.repeat(np.arange(n_seen + n_unseen), per)  # 0-based, images grouped by class


def _good(per: int = 4) -> tuple[np.ndarray, list[int], list[int], list[int]]:
    lab = _labels(per=per)
    tv, ts, tu = [], [], []
    for i, c in enumerate(lab, start=1):
        if c >= 3:
            tu.append(i)
        elif (i - 1) % per == per - 1:
            ts.append(i)
        else:
            tv.append(i)
    return lab, tv, ts, tu


def _checks(failures: list[splits.Failure]) -> list[str]:
    return [f.check for f in failures]


def test_good_split_passes() -> None:
    lab, tv, ts, tu = _good()
    assert splits.check_split("s.mat", lab.size, lab, tv, ts, tu) == []


@pytest.mark.parametrize(
    "mutate, check, structural, text",
    [
        (lambda tv, ts, tu: (tv + ts[:1], ts, tu), "disjoint", False, "V1-style or leaky"),
        (lambda tv, ts, tu: (tv, ts + tu[:1], tu), "disjoint", False, "test sets overlap"),
        (lambda tv, ts, tu: (tv + [tv[0]], ts, tu), "duplicates", True, "more than once"),
        (lambda tv, ts, tu: ([0] + tv, ts, tu), "index-range", True, "0-based"),
        (
            lambda tv, ts, tu: ([i - 1 for i in tv], [i - 1 for i in ts], [i - 1 for i in tu]),
            "index-range",
            True,
            "0-based",
        ),
        (lambda tv, ts, tu: (tv + [21], ts, tu), "index-range", True, "one past"),
        (lambda tv, ts, tu: (tv, [], tu), "empty", True, "test_seen_loc is empty"),
        (
            lambda tv, ts, tu: (tv + tu[:1], ts, tu[1:]),
            "unseen-classes",
            False,
            "unseen classes are not unseen",
        ),
        (lambda tv, ts, tu: (tv[1:], ts, tu), "coverage", False, "in no split"),
    ],
)
def test_each_check_fires(mutate, check, structural, text) -> None:
    lab, tv, ts, tu = _good()
    fails = splits.check_split("s.mat", lab.size, lab, *mutate(tv, ts, tu))
    assert check in _checks(fails)
    f = next(f for f in fails if f.check == check)
    assert f.structural is structural
    assert text in f.message + f.hint
    assert f.line().startswith("s.mat: ")


def test_seen_classes_check() -> None:
    lab, tv, ts, tu = _good()
    # move every trainval image of class 0 to test_seen: test_seen then has a class trainval lacks
    cls0 = [i for i in tv if lab[i - 1] == 0]
    fails = splits.check_split(
        "s.mat", lab.size, lab, [i for i in tv if i not in cls0], ts + cls0, tu
    )
    assert _checks(fails) == ["seen-classes"]


def test_val_classes_must_be_seen() -> None:
    lab, tv, ts, tu = _good()
    fails = splits.check_split("s.mat", lab.size, lab, tv, ts, tu, val=tu[:2])
    assert _checks(fails) == ["val-classes"]


def test_only_image_n_unused_hints_zero_based() -> None:
    lab, tv, ts, tu = _good()
    fails = splits.check_split("s.mat", lab.size, lab, tv, ts, [i for i in tu if i != lab.size])
    assert _checks(fails) == ["coverage"] and "0-based" in fails[0].hint


def test_uint16_zero_index_does_not_wrap() -> None:
    lab, tv, ts, tu = _good()
    fails = splits.check_split("s.mat", lab.size, lab, np.array([0] + tv, dtype=np.uint16), ts, tu)
    assert _checks(fails) == ["index-range"]


# ----------------------------------------------------------------------------- property tests


@st.composite
def split_problems(draw):
    """Random labels and three random index sets (1-based), often invalid on purpose."""
    n_seen = draw(st.integers(1, 4))
    n_unseen = draw(st.integers(1, 3))
    n = draw(st.integers(n_seen + n_unseen, 30))
    labels = np.array(draw(st.lists(st.integers(0, n_seen + n_unseen - 1), min_size=n, max_size=n)))
    idx = st.integers(-1, n + 1)  # out of range on purpose, 0 included
    sets = [draw(st.lists(idx, min_size=0, max_size=12)) for _ in range(3)]
    if draw(st.booleans()):  # a "nearly valid" draw: partition 1..n by class, then perturb a bit
        seen = set(range(n_seen))
        perm = draw(st.permutations(list(range(1, n + 1))))
        tv = [i for i in perm if labels[i - 1] in seen][::2]
        ts = [i for i in perm if labels[i - 1] in seen and i not in tv]
        tu = [i for i in perm if labels[i - 1] not in seen]
        sets = [tv, ts, tu]
        k = draw(st.integers(0, 2))
        if k and draw(st.booleans()):
            sets[k] = sets[k] + draw(st.lists(st.integers(1, n), max_size=2))
    return labels, n, sets


def _accepts_brute_force(labels: np.ndarray, n: int, sets: list[list[int]]) -> bool:
    """The invariants, written out with Python sets."""
    tv, ts, tu = sets
    for s in sets:
        if not s or len(set(s)) != len(s) or any(not 1 <= i <= n for i in s):
            return False
    if set(tv) & set(ts) or set(tv) & set(tu) or set(ts) & set(tu):
        return False
    cls = lambda s: {int(labels[i - 1]) for i in s}  # noqa: E731
    if not cls(ts) <= cls(tv) or cls(tu) & cls(tv):
        return False
    return set(tv) | set(ts) | set(tu) == set(range(1, n + 1))


@settings(max_examples=300, deadline=None)
@given(split_problems())
def test_random_index_sets_accepted_exactly_when_invariants_hold(problem) -> None:
    labels, n, sets = problem
    fails = splits.check_split("s.mat", n, labels, *sets)
    assert (fails == []) == _accepts_brute_force(labels, n, sets)
    if fails:  # every failure is one line naming the file
        assert all("\n" not in f.line() and f.line().startswith("s.mat: ") for f in fails)


@pytest.mark.parametrize(
    "dtype, value, shown",
    [
        (np.float64, 1e20, "1e+20"),
        (np.float32, 1e20, "1e+20"),
        (np.uint64, 2**64 - 1, str(2**64 - 1)),
    ],
)
def test_huge_index_is_reported_as_written(dtype, value, shown) -> None:
    """Issue "Trust": 1e20 used to be reported as -9223372036854775808 (an int64 wrap-around),
    with a RuntimeWarning on the way."""
    lab, tv, ts, tu = _good()
    tu = np.asarray(tu, dtype=dtype)
    tu[0] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fails = splits.check_split("s.mat", lab.size, lab, tv, ts, tu)
    assert _checks(fails) == ["index-range"]
    assert fails[0].structural
    assert fails[0].message == f"test_unseen_loc has 1 index outside 1..20 (e.g. {shown})"


def test_format_value_keeps_the_files_notation() -> None:
    assert splits.format_value(np.float64(1e20)) == "1e+20"
    assert splits.format_value(np.float32(1e20)) == "1e+20"  # not 1.0000000200408773e+20
    assert splits.format_value(np.float64(3.0)) == "3"
    assert splits.format_value(np.float64(2.5)) == "2.5"
    assert splits.format_value(np.int64(-7)) == "-7"
    assert splits.format_value(np.float64(np.nan)) == "nan"
