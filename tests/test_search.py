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
    return h, np.full((1, 1), params["a"] * 10 + params["b"])


def test_grid_tries_every_point_in_order_and_keeps_the_best():
    res = search(SPACE, "grid", bowl)
    assert len(res.tried) == 9 * 7
    assert [t["params"] for t in res.tried] == [
        {"a": a, "b": b} for a, b in itertools.product(SPACE["a"], SPACE["b"])
    ]
    assert res.chosen == {"a": 5, "b": 0.8} and res.best_H == 60.0
    assert res.best_scores[0, 0] == 5 * 10 + 0.8  # the winner's scores, not the last tried


def test_refine_finds_the_grid_optimum_with_fewer_fits():
    res = search(SPACE, "refine", bowl)
    brute = max(
        itertools.product(SPACE["a"], SPACE["b"]), key=lambda p: bowl({"a": p[0], "b": p[1]})[0]
    )
    assert (res.chosen["a"], res.chosen["b"]) == brute
    assert len(res.tried) < 9 * 7 / 2
    assert len({tuple(t["params"].items()) for t in res.tried}) == len(res.tried)  # no repeats


def test_a_choice_at_the_end_of_an_ordered_grid_is_flagged():
    res = search(
        {"x": (1, 2, 3), "y": (1, 2, 3), "z": ("a", "b", "c")},
        "grid",
        lambda p: (p["x"] - abs(p["y"] - 2), None),
    )
    assert res.chosen["x"] == 3 and res.at_edge == ["x"]
    assert res.as_record()["at_edge"] == ["x"]


def test_ties_go_to_the_first_candidate_tried():
    res = search({"x": (1, 2, 3)}, "grid", lambda p: (50.0, None))
    assert res.chosen == {"x": 1}


def test_a_nan_H_never_wins():
    res = search({"x": (1, 2)}, "grid", lambda p: (float("nan") if p["x"] == 1 else 10.0, None))
    assert res.chosen == {"x": 2}


@pytest.mark.parametrize("space, strategy", [({"x": ()}, "grid"), ({"x": (1,)}, "random")])
def test_bad_spaces_are_config_errors(space, strategy):
    with pytest.raises(ConfigError):
        search(space, strategy, bowl)


def _neighbours(point, shape):
    ranges = [range(max(0, c - 1), min(n, c + 2)) for c, n in zip(point, shape, strict=True)]
    return list(itertools.product(*ranges))


def _surfaces(kind, n=150):
    """Random H surfaces on a 9 x 7 grid: rotated, stretched bowls (unimodal, not separable) or
    noise (many local optima)."""
    rng = np.random.default_rng(0)
    for _ in range(n):
        if kind == "bowl":
            c = rng.uniform([-1, -1], [9, 7])
            a = rng.normal(size=(2, 2))
            m = a @ a.T + 0.05 * np.eye(2)
            table = np.array(
                [
                    [-(np.array([i, j]) - c) @ m @ (np.array([i, j]) - c) for j in range(7)]
                    for i in range(9)
                ]
            )
        else:
            table = rng.normal(size=(9, 7))
        yield table


@pytest.mark.parametrize("kind", ["bowl", "noise"])
def test_refine_against_exhaustive_grid_on_random_surfaces(kind):
    """What the docstring promises, checked against brute force: on any H, no full-resolution
    neighbour of refine's pick is better; where the grid has one such local optimum (a unimodal
    H), refine picks the exhaustive grid's optimum."""
    space = {"a": list(range(9)), "b": list(range(7))}
    unimodal = 0
    for table in _surfaces(kind):
        res = search(space, "refine", lambda p, t=table: (t[p["a"], p["b"]], None))
        best = (res.chosen["a"], res.chosen["b"])
        assert res.best_H == table[best]
        assert all(table[q] <= table[best] for q in _neighbours(best, table.shape))
        local_optima = [
            p
            for p in itertools.product(range(9), range(7))
            if all(table[q] <= table[p] for q in _neighbours(p, table.shape))
        ]
        if len(local_optima) == 1:
            unimodal += 1
            assert res.best_H == table.max()
        assert len(res.tried) == len({tuple(t["params"].values()) for t in res.tried})
    assert unimodal >= (100 if kind == "bowl" else 0)


def test_the_search_names_each_candidate_to_the_progress_listener():
    from zslbench.progress import listening

    seen = []
    with listening(lambda event, info: seen.append(info) if event == "candidate" else None):
        res = search({"x": (1, 2, 3)}, "grid", lambda p: (p["x"], None))
    assert [(i["params"], i["done"], i["total"]) for i in seen] == [
        ({"x": 1}, 1, 3),
        ({"x": 2}, 2, 3),
        ({"x": 3}, 3, 3),
    ]
    assert res.chosen == {"x": 3}
