"""Seeds, overrides and determinism of the runner."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.cli_helpers import invoke_main
from zslbench import executors as executors_mod
from zslbench import runner as runner_mod
from zslbench.errors import ConfigError, UserError
from zslbench.identity import derive_seed
from zslbench.prepare import prepare_method
from zslbench.protocol import run_protocol
from zslbench.records import check_results_dir, read_record
from zslbench.records import store as store_mod
from zslbench.registry import load_registry
from zslbench.request import GridRequest, parse_overrides, split_names
from zslbench.runner import run_grid


def test_seed_depends_only_on_base_dataset_and_repetition():
    s = derive_seed(0, "synth-awa2", 0)
    assert s == derive_seed(0, "synth-awa2", 0)
    others = {
        derive_seed(0, "synth-awa2", 1),
        derive_seed(0, "synth-awa1", 0),
        derive_seed(1, "synth-awa2", 0),
    }
    assert s not in others and len(others) == 3
    assert 0 <= s < 2**31


def test_methods_share_seeds_so_they_pair_up(tmp_path):
    """Adding a method changes no other method's seeds, and two methods' runs pair by seed."""
    reg = load_registry()
    spec = reg.get("dataset", "toy").obj
    from zslbench.planning import plan_grid

    def seeds(methods):
        request = GridRequest(methods=methods, datasets=["toy"], results_dir=tmp_path, seeds=2)
        runs = plan_grid(request, reg, lambda name: (spec.load(None), spec.kind))
        return {(r.method, r.repetition): r.seed for r in runs}

    one, two = seeds(["krr"]), seeds(["krr", "sae"])
    assert one.items() <= two.items()
    assert [two[("krr", r)] for r in (0, 1)] == [two[("sae", r)] for r in (0, 1)]


def test_overrides_parse_values_as_literals_and_swaps_as_names():
    parsed = parse_overrides(
        [
            "embedder.latent_dim=64",
            "gp.optimizer=adam",
            "bt.margin=4.5",
            "calibrator.x=true",
            "krr.y=None",
            "preprocessor=none",
        ]
    )
    assert parsed.params == {
        "embedder": {"latent_dim": 64},
        "gp": {"optimizer": "adam"},
        "bt": {"margin": 4.5},
        "calibrator": {"x": True},
        "krr": {"y": None},
    }
    assert parsed.swaps == {"preprocessor": "none"}
    with pytest.raises(ConfigError, match="given twice"):
        parse_overrides(["bt.margin=1", "bt.margin=2"])
    with pytest.raises(ConfigError):
        parse_overrides(["=64"])


def test_split_names_accepts_commas_and_repeats():
    assert split_names(("bt-gp,gp", "krr", "gp")) == ["bt-gp", "gp", "krr"]


def test_override_reaches_the_component_by_role_or_by_name():
    reg = load_registry()
    by_role = prepare_method(reg, "bt-gp", parse_overrides(["embedder.episodes=7"]))
    by_name = prepare_method(reg, "bt-gp", parse_overrides(["bt.episodes=7"]))
    assert by_role.params["embedder"]["episodes"] == 7 == by_name.params["embedder"]["episodes"]
    assert by_role.config_id() == by_name.config_id()
    assert by_role.config_id() != prepare_method(reg, "bt-gp").config_id()
    method = by_role.instantiate(seed=5, device="cpu")
    assert method.model.embedder.episodes == 7 and method.model.embedder.random_state == 5


def test_a_fixed_hyperparameter_leaves_the_search_space():
    reg = load_registry()
    free = prepare_method(reg, "krr").instantiate(seed=0, device="cpu")
    assert set(free.search_space()) == {"regressor.alpha", "regressor.width"}
    pinned = prepare_method(reg, "krr", parse_overrides(["krr.alpha=0.5"])).instantiate(0, "cpu")
    assert set(pinned.search_space()) == {"regressor.width"}
    assert pinned.model.regressor.alpha == 0.5


def test_an_integer_and_its_float_are_one_configuration(tmp_path):
    """Issue 27: ``--set regressor.alpha=1`` and ``=1.0`` made two configurations, two records."""
    reg = load_registry()
    one, one_f = (
        prepare_method(reg, "krr", parse_overrides([f"regressor.alpha={v}"])) for v in ("1", "1.0")
    )
    assert one.params["regressor"]["alpha"] == 1.0 and isinstance(
        one.params["regressor"]["alpha"], float
    )
    assert one.config_id() == one_f.config_id()
    grids = [
        prepare_method(reg, "krr", parse_overrides([f"krr.alpha_grid={g}"]))
        for g in ("[1, 10]", "[1.0, 10.0]")
    ]
    assert grids[0].config_id() == grids[1].config_id()
    assert grids[0].params["regressor"]["alpha_grid"] == [1.0, 10.0]
    # an integer hyperparameter stays an integer
    assert (
        prepare_method(reg, "sje", parse_overrides(["compat.epochs=25"])).params["model"]["epochs"]
        == 25
    )

    from tests.cli_helpers import invoke_main

    res = tmp_path / "res"
    args = ("run", "--method", "krr", "--dataset", "toy", "--results-dir", str(res))
    assert invoke_main(*args, "--set", "regressor.alpha=1").exit_code == 0
    again = invoke_main(*args, "--set", "regressor.alpha=1.0", "--dry-run")
    assert again.stdout.splitlines()[-1] == "1 run(s): 1 cached, 0 to run", again.output
    assert len(list(res.glob("*.json"))) == 1


def test_conflicting_values_for_one_hyperparameter_are_refused():
    reg = load_registry()
    with pytest.raises(ConfigError, match="different values"):
        prepare_method(reg, "krr", parse_overrides(["clip.clip=5", "preprocessor.clip=9"]))
    same = prepare_method(reg, "krr", parse_overrides(["clip.clip=5", "preprocessor.clip=5"]))
    assert same.params["preprocessor"]["clip"] == 5


def test_a_fixed_seed_gives_identical_metrics_twice_on_cpu():
    reg = load_registry()
    data = reg.get("dataset", "toy").obj.load(None)
    prep = prepare_method(reg, "bt-gp", parse_overrides(["embedder.episodes=40"]))
    runs = [run_protocol(data, prep.instantiate(seed=11, device="cpu"), seed=11) for _ in range(2)]
    assert runs[0].timings["fit_final"] > 0
    a, b = (r.evaluation for r in runs)
    assert {k: a[k] for k in ("A_T", "A_U", "A_S", "H", "AUSUC")} == {
        k: b[k] for k in ("A_T", "A_U", "A_S", "H", "AUSUC")
    }
    assert runs[0].gamma == runs[1].gamma


# -- results dir: checked before any training, and a full disk loses no complete record ---------


def _toy_grid(results: Path, seeds: int = 2) -> list:
    reg = load_registry()
    spec = reg.get("dataset", "toy").obj
    request = GridRequest(
        methods=["krr"],
        datasets=["toy"],
        results_dir=results,
        seeds=seeds,
        overrides=parse_overrides(["krr.alpha=0.1", "krr.width=1.0"]),
    )
    return run_grid(request, reg, lambda name: (spec.load(None), spec.kind))


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda tmp: (tmp / "f").write_text("x") and tmp / "f", "is a file"),
        (lambda tmp: (tmp / "f").write_text("x") and tmp / "f" / "sub", "is under the file"),
    ],
)
def test_a_bad_results_dir_is_refused_before_training(tmp_path, make, needle):
    target = make(tmp_path)
    with pytest.raises(ConfigError, match=needle):
        check_results_dir(target)
    trained = []
    monkey = pytest.MonkeyPatch()
    monkey.setattr(executors_mod, "run_protocol", lambda *a, **k: trained.append(1))
    try:
        with pytest.raises(ConfigError, match=needle):
            list(_toy_grid(target))
    finally:
        monkey.undo()
    assert trained == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_results_dir_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    with pytest.raises(ConfigError, match="not writable"):
        check_results_dir(ro)


def test_a_nearly_full_disk_is_refused_up_front(tmp_path, monkeypatch):
    monkeypatch.setattr(store_mod.shutil, "disk_usage", lambda p: type("U", (), {"free": 1024})())
    with pytest.raises(ConfigError, match="KiB free"):
        check_results_dir(tmp_path)


def test_a_full_disk_mid_grid_names_the_path_and_keeps_complete_records(tmp_path, monkeypatch):
    results = tmp_path / "res"
    real_write = runner_mod.write_record
    calls = []

    def write_then_fill(directory, record):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(directory, record)

    monkeypatch.setattr(runner_mod, "write_record", write_then_fill)
    outcomes = []
    with pytest.raises(UserError, match="cannot write the record") as err:
        for outcome in _toy_grid(results):
            outcomes.append(outcome)
    assert str(results) in err.value.one_line() and "No space left" in err.value.one_line()
    (kept,) = list(results.glob("*.json"))
    assert read_record(kept).run_id == outcomes[0].record.run_id
    assert not list(results.glob(".*"))


def test_git_state_is_dirty_for_source_not_for_records(tmp_path: Path) -> None:
    """A changed record in the checkout is data: not dirty. A changed source file is."""
    import subprocess

    from zslbench import provenance

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "zslbench").mkdir()
    (tmp_path / "leaderboards").mkdir()
    (tmp_path / "zslbench" / "a.py").write_text("x = 1\n")
    (tmp_path / "leaderboards" / "r.json").write_text("{}\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    (tmp_path / "leaderboards" / "r.json").unlink()
    state = provenance.git_state(tmp_path)
    assert state["dirty"] is False and state["dirty_paths"] == [] and len(state["commit"]) == 40
    (tmp_path / "zslbench" / "a.py").write_text("x = 2\n")
    state = provenance.git_state(tmp_path)
    assert state["dirty"] is True and state["dirty_paths"] == ["zslbench/a.py"]


def test_a_search_warning_is_said_once_per_dataset_not_once_per_seed(tmp_path):
    """krr's search picks an end of its width grid on toy at four of six seeds: said once."""
    out = invoke_main(
        "run",
        "--method",
        "krr",
        "--dataset",
        "toy",
        "--seeds",
        "6",
        "--results-dir",
        str(tmp_path),
    )
    assert out.exit_code == 0, out.stderr
    edge = [line for line in out.stderr.splitlines() if "an end of its grid" in line]
    # once per (parameter, end): width=8 at four seeds was four lines
    assert edge and len(edge) == len(set(edge)), out.stderr
