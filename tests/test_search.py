"""The harness-owned hyperparameter search: grid and successive refinement, on validation only."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from zslbench.errors import ConfigError
from zslbench.search import search

SPACE = {"a": tuple(range(9)), "b": (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4)}


def bowl(params):
    """A unimodal validation H with its maximum at a=5, b=0.8 (off the coarse grid in a)."""
    h = 60.0 - (params["a"] - 5) ** 2 - 3 * (np.log2(params["b"] / 0.8)) ** 2
    return h, ("model", params), np.zeros((1, 1))


def test_grid_tries_every_point_in_order_and_keeps_the_best():
    res = search(SPACE, "grid", bowl)
    assert len(res.tried) == 9 * 7
    assert [t["params"] for t in res.tried] == [
        {"a": a, "b": b} for a, b in itertools.product(SPACE["a"], SPACE["b"])]
    assert res.chosen == {"a": 5, "b": 0.8} and res.best_H == 60.0
    assert res.best_model == ("model", {"a": 5, "b": 0.8})


def test_refine_finds_the_grid_optimum_with_fewer_fits():
    res = search(SPACE, "refine", bowl)
    brute = max(itertools.product(SPACE["a"], SPACE["b"]),
                key=lambda p: bowl({"a": p[0], "b": p[1]})[0])
    assert (res.chosen["a"], res.chosen["b"]) == brute
    assert len(res.tried) < 9 * 7 / 2
    assert len({tuple(t["params"].items()) for t in res.tried}) == len(res.tried)  # no repeats


def test_a_choice_at_the_end_of_an_ordered_grid_is_flagged():
    res = search({"x": (1, 2, 3), "y": (1, 2, 3), "z": ("a", "b", "c")}, "grid",
                 lambda p: (p["x"] - abs(p["y"] - 2), p, None))
    assert res.chosen["x"] == 3 and res.at_edge == ["x"]
    assert res.as_record()["at_edge"] == ["x"]


def test_ties_go_to_the_first_candidate_tried():
    res = search({"x": (1, 2, 3)}, "grid", lambda p: (50.0, p["x"], None))
    assert res.chosen == {"x": 1}


def test_a_nan_H_never_wins():
    res = search({"x": (1, 2)}, "grid", lambda p: (float("nan") if p["x"] == 1 else 10.0, p, None))
    assert res.chosen == {"x": 2}


@pytest.mark.parametrize("space, strategy", [({"x": ()}, "grid"), ({"x": (1,)}, "random")])
def test_bad_spaces_are_config_errors(space, strategy):
    with pytest.raises(ConfigError):
        search(space, strategy, bowl)
