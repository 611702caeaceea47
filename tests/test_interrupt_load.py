"""Ctrl-C while a dataset loads stops a multi-dataset grid (issue 42 item 24); a loader that
raises ``KeyboardInterrupt`` itself only fails that dataset's runs."""

from __future__ import annotations

import os
import signal

import pytest

from zslbench.planning import plan
from zslbench.registry import load_registry
from zslbench.request import GridRequest, parse_overrides


def _grid(tmp_path, load):
    reg = load_registry()
    request = GridRequest(
        methods=["krr"],
        datasets=["synth-cub", "toy"],
        results_dir=tmp_path,
        overrides=parse_overrides(["krr.alpha=0.1", "krr.width=1.0"]),
    )
    return plan(request, reg, load, keep_going=True).datasets


def test_a_ctrl_c_while_a_dataset_loads_stops_the_grid(tmp_path):
    loaded = []

    def load(name):
        loaded.append(name)
        os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, during "loading synth-cub"
        raise AssertionError("SIGINT did not interrupt the load")

    with pytest.raises(KeyboardInterrupt):
        list(_grid(tmp_path, load))
    assert loaded == ["synth-cub"]  # toy was not loaded: the grid stopped


def test_a_loader_raising_keyboard_interrupt_fails_its_dataset_only(tmp_path):
    reg = load_registry()
    toy = reg.get("dataset", "toy").obj

    def load(name):
        if name == "synth-cub":
            raise KeyboardInterrupt  # plugin code, not the user
        return toy.load(None), toy.kind

    planned = list(_grid(tmp_path, load))
    assert [p.dataset for p in planned] == ["synth-cub", "toy"]
    assert "KeyboardInterrupt" in (planned[0].failure or "")
    assert planned[1].failure is None and planned[1].runs
