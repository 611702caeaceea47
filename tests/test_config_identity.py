"""Issue 41: a configuration's identity says what ran. A fixed hyperparameter and the same one
searched are two configurations; a ``--set`` or swept value that runs exactly what the default
runs is the default configuration (one id, one record, one name: the plain method)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import invoke_main
from zslbench.prepare import prepare_grid, prepare_method
from zslbench.registry import load_registry
from zslbench.request import GridRequest, parse_overrides, parse_sweeps
from zslbench_plugins.krr import ALPHA_GRID

pytestmark = pytest.mark.usefixtures("one_thread")

#: krr's default alpha grid as a --set/--sweep value: setting it changes nothing that runs.
DEFAULT_GRID = json.dumps(list(ALPHA_GRID))


def _krr(res: Path, *extra: str):
    return invoke_main(
        "run", "--method", "krr", "--dataset", "toy", "--results-dir", str(res), *extra
    )


def _configs(res: Path) -> list[dict]:
    return [json.loads(p.read_text())["config"] for p in sorted(res.glob("*.json"))]


def test_a_fixed_configuration_runs_beside_the_searched_default(tmp_path):
    """At 9344bbb the fixed run was answered with the searched run's record ("cached"), and
    plain krr after it with the fixed one's."""
    res = tmp_path / "res"
    assert _krr(res).exit_code == 0
    fixed = ("--set", "krr.alpha=0.1", "--set", "krr.width=1.0")  # krr's defaults, fixed
    plan = _krr(res, *fixed, "--dry-run")
    assert plan.stdout.splitlines()[-1].startswith("1 run(s): 0 cached, 1 to run"), plan.output
    assert "config changed" in plan.stdout
    assert _krr(res, *fixed).exit_code == 0
    configs = _configs(res)
    assert len(configs) == 2
    searched = {json.dumps(c["search"], sort_keys=True) for c in configs}
    assert len(searched) == 2 and {"regressor.alpha", "regressor.width"} in [
        set(c["search"]) for c in configs
    ]
    assert {} in [c["search"] for c in configs]
    again = _krr(res, "--dry-run")
    assert again.stdout.splitlines()[-1] == "1 run(s): 1 cached, 0 to run", again.output
    again = _krr(res, *fixed, "--dry-run")
    assert again.stdout.splitlines()[-1] == "1 run(s): 1 cached, 0 to run", again.output


def test_a_searched_hyperparameter_fixed_at_its_default_is_another_configuration():
    reg = load_registry()
    default = prepare_method(reg, "krr")
    fixed = prepare_method(reg, "krr", parse_overrides(["krr.alpha=0.1"]))
    assert default.params == fixed.params  # the same values ...
    assert "regressor.alpha" in default.search_space()
    assert "regressor.alpha" not in fixed.search_space()  # ... one searched, one fixed
    assert default.config_id() != fixed.config_id()


def test_a_swept_value_equal_to_an_unsearched_default_is_the_default_configuration(tmp_path):
    reg = load_registry()
    request = GridRequest(
        methods=["bt-gp"],
        datasets=["toy"],
        results_dir=tmp_path,
        sweeps=parse_sweeps(["embedder.margin=1,4,4.0"]),
    )
    grid = prepare_grid(request, reg)
    assert len(grid) == 2  # 4 and 4.0 are bt-gp's margin: one configuration, the default
    (one, combo_one, _), (four, combo_four, overrides_four) = grid
    assert combo_one == {"embedder.margin": 1.0} and combo_four == {} and not overrides_four
    default = prepare_method(reg, "bt-gp")
    assert four.config_id() == default.config_id() != one.config_id()
    assert four.config(overrides_four) == default.config(parse_overrides([]))


def test_a_sweep_through_the_default_shares_its_records_and_compare_pairs_them(tmp_path):
    res = tmp_path / "res"
    assert _krr(res, "--seeds", "2").exit_code == 0
    sweep = ("--seeds", "2", "--sweep", f"krr.alpha_grid=[{DEFAULT_GRID},[0.01,1.0]]")
    plan = _krr(res, *sweep, "--dry-run")
    lines = plan.stdout.splitlines()
    assert lines[-1].startswith("4 run(s): 2 cached, 2 to run"), plan.output
    assert _krr(res, *sweep).exit_code == 0
    assert len(list(res.glob("*.json"))) == 4
    assert sum(not c["overrides"] for c in _configs(res)) == 2  # the default's two records
    out = invoke_main(
        "compare",
        f"krr[krr.alpha_grid={DEFAULT_GRID}]",
        "krr[krr.alpha_grid=[0.01,1.0]]",
        "--dataset",
        "toy",
        "--results-dir",
        str(res),
    )
    assert out.exit_code == 0, out.output
    assert "paired by seed (2 seeds)" in out.output, out.output
