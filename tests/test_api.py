"""The Python API (issue 16 item 7): ``zslbench.run`` takes the CLI's path and returns the
records; ``zslbench.load_results`` is one tidy row per record; ``python -m zslbench`` works."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import zslbench
from tests.cli_helpers import invoke_main
from zslbench.api import RunsFailed
from zslbench.errors import ConfigError

SETS = {"krr.alpha": 0.1, "krr.width": 1.0, "eszsl.gamma": 1.0, "eszsl.lam": 1.0}


def test_run_returns_the_records_the_cli_writes_and_load_results_tabulates_them(tmp_path):
    records = zslbench.run(
        methods=["krr", "eszsl"], datasets=["toy"], seeds=2, results_dir=tmp_path / "api", sets=SETS
    )
    assert [(r.method, r.repetition) for r in records] == [
        ("krr", 0),
        ("krr", 1),
        ("eszsl", 0),
        ("eszsl", 1),
    ]
    on_disk = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "api").glob("*.json")}
    assert {r.run_id for r in records} == set(on_disk)

    # the same grid on the command line: the same runs, the same numbers
    cli = invoke_main(
        "run",
        "--method",
        "krr,eszsl",
        "--dataset",
        "toy",
        "--seeds",
        "2",
        *[a for k, v in SETS.items() for a in ("--set", f"{k}={v}")],
        "--results-dir",
        str(tmp_path / "cli"),
    )
    assert cli.exit_code == 0, cli.output
    from_cli = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "cli").glob("*.json")}
    assert from_cli.keys() == on_disk.keys()
    for run_id, rec in on_disk.items():
        assert (
            rec["metrics"] == from_cli[run_id]["metrics"] and rec["key"] == from_cli[run_id]["key"]
        )

    again = zslbench.run(
        methods="krr,eszsl", datasets="toy", seeds=2, results_dir=tmp_path / "api", sets=SETS
    )
    assert [r.digest for r in again] == [r.digest for r in records]  # cached, not re-run

    frame = zslbench.load_results(tmp_path / "api")
    assert len(frame) == 4
    for column in (
        "dataset",
        "method",
        "config",
        "seed",
        "A_T",
        "A_U",
        "A_S",
        "H",
        "AUSUC",
        "train_seconds",
        "device_type",
        "device_name",
        "data_fingerprint",
    ):
        assert column in frame.columns
    by_seed = frame.set_index(["method", "seed"])
    for r in records:
        row = by_seed.loc[(r.method, r.seed)]
        assert row["H"] == r.metrics["H"] and row["dataset"] == "toy"
        assert row["train_seconds"] == r.timings["train"]
        assert (
            row["data_fingerprint"] == r.data["fingerprint"]
            and r.data["fingerprint"][:8] in r.run_id
        )
        assert row["config"]["components"] == r.config["components"]


def test_a_config_file_and_keywords_combine_as_on_the_command_line(tmp_path):
    conf = tmp_path / "grid.toml"
    conf.write_text(
        'methods = ["krr"]\ndatasets = ["toy"]\nseeds = 3\n'
        '[set]\n"krr.alpha" = 10.0\n"krr.width" = 1.0\n'
    )
    records = zslbench.run(
        config=conf, seeds=1, sets={"krr.alpha": 0.1}, results_dir=tmp_path / "res"
    )
    assert len(records) == 1  # the keyword wins over the file's seeds
    params = records[0].config["components"]["regressor"]["params"]
    assert params["alpha"] == 0.1 and params["width"] == 1.0
    assert records[0].config["config_file"] == conf.as_posix()


def test_a_reduced_schedule_config_marks_every_record_and_the_board(tmp_path):
    """``schedule = "reduced"`` (configs/generative-reduced.toml) reaches each record's config,
    and the leaderboard badges the row as reduced."""
    from zslbench.records import read_record
    from zslbench.records.rows import run_row

    conf = tmp_path / "reduced.toml"
    conf.write_text(
        'methods = ["krr"]\ndatasets = ["toy"]\nschedule = "reduced"\n'
        '[set]\n"krr.alpha" = 10.0\n"krr.width" = 1.0\n'
    )
    (record,) = zslbench.run(config=conf, results_dir=tmp_path / "res")
    assert record.config["schedule"] == "reduced"
    (path,) = (tmp_path / "res").glob("*.json")
    assert run_row(path, read_record(path), tmp_path)["schedule"] == "reduced"
    full = zslbench.run(
        methods="krr",
        datasets="toy",
        results_dir=tmp_path / "full",
        sets={"krr.alpha": 10.0, "krr.width": 1.0},
    )
    assert "schedule" not in full[0].config
    conf.write_text('methods = ["krr"]\ndatasets = ["toy"]\nschedule = "short"\n')
    with pytest.raises(ConfigError, match="schedule = 'short' is not a schedule"):
        zslbench.run(config=conf, results_dir=tmp_path / "bad")


def test_narrowing_a_config_file_keeps_only_the_chosen_methods_settings(tmp_path):
    """``--method`` picks some of a config file's methods: the file's [set] for the others'
    components is theirs, not a typo (``configs/generative-reduced.toml --method free`` failed
    with "no selected method uses a component"); a record keeps only what applies to it, and
    the board shows only that."""
    from tests.leaderboard.lb_factory import make_record
    from zslbench.records import read_record
    from zslbench.records.rows import run_row

    conf = tmp_path / "two.toml"
    conf.write_text(
        'methods = ["krr", "sae"]\ndatasets = ["toy"]\n'
        '[set]\n"krr.alpha" = 10.0\n"krr.width" = 1.0\n"sae.lam" = 1.0\n'
    )
    (record,) = zslbench.run(config=conf, methods="krr", results_dir=tmp_path / "res")
    assert record.config["overrides"] == {"krr.alpha": 10.0, "krr.width": 1.0}
    with pytest.raises(ConfigError, match="no selected method uses a component 'saee'"):
        zslbench.run(config=conf, methods="krr", sets=["saee.lam=2"], results_dir=tmp_path / "x")
    # a record made before: another method's settings in its overrides are not shown
    old = make_record(overrides={"cada-vae.epochs": 20, "embedder.latent_dim": 64}).sealed()
    path = tmp_path / "old.json"
    path.write_text(old.to_json())
    assert run_row(path, read_record(path), tmp_path)["overrides_map"] == {
        "embedder.latent_dim": 64
    }


def test_grid_mistakes_raise_before_anything_runs(tmp_path):
    with pytest.raises(ConfigError, match="at least 1"):
        zslbench.run(methods="krr", datasets="toy", seeds=0, results_dir=tmp_path / "res")
    with pytest.raises(ConfigError, match="unknown method 'krrr'"):
        zslbench.run(methods="krrr", datasets="toy", results_dir=tmp_path / "res")
    assert not (tmp_path / "res").exists()


FAILING = """
    from zslbench.hookspecs import hookimpl
    from zslbench.methods import MethodSpec
    from zslbench_plugins.krr import KRRRegressor


    class Boom(KRRRegressor):
        name = "api-boom-krr"

        def fit(self, class_semantics, class_prototypes):
            raise ValueError("exploded on purpose")


    @hookimpl
    def zslbench_regressors():
        return [Boom]


    @hookimpl
    def zslbench_methods():
        return [MethodSpec("api-boom", model="prototype", components={"embedder": "identity", "regressor": "api-boom-krr"},
                           params={"regressor": {"alpha": 0.1, "width": 1.0}})]
"""


def test_a_failed_run_raises_at_the_end_with_the_other_records(tmp_path, monkeypatch):
    (tmp_path / "zsl_api_failing.py").write_text(textwrap.dedent(FAILING))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RunsFailed) as info:
        zslbench.run(
            methods=["api-boom", "krr"],
            datasets="toy",
            results_dir=tmp_path / "res",
            sets={"krr.alpha": 0.1, "krr.width": 1.0},
            plugins=["zsl_api_failing"],
        )
    assert [r.method for r in info.value.records] == ["krr"]
    assert len(info.value.failures) == 1 and "exploded on purpose" in info.value.failures[0]
    assert "1 of 2 run(s) failed" in str(info.value)


def test_python_dash_m_zslbench_is_the_command_line():
    proc = subprocess.run(
        [sys.executable, "-m", "zslbench", "--version"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("zslbench, version ")


def test_a_string_sweep_value_is_one_value_or_a_comma_list_never_its_characters(tmp_path):
    """Issue 27 item 9: ``{"regressor.alpha": "0.1"}`` swept "0", "." and "1"."""
    from zslbench.request import _swept

    assert _swept("regressor.alpha", "0.1") == [0.1]
    assert _swept("regressor.alpha", "0.1, 1") == [0.1, 1]
    assert _swept("regressor.alpha", "[0.1, 1]") == [0.1, 1]
    assert _swept("regressor.alpha", 0.5) == [0.5]
    assert _swept("regressor.alpha", (0.1, 1.0)) == [0.1, 1.0]
    with pytest.raises(ConfigError, match="is not a list of values"):
        _swept("regressor.alpha", {"a": 1})
    records = zslbench.run(
        methods="krr",
        datasets="toy",
        results_dir=tmp_path / "res",
        sweeps={"regressor.alpha": "0.1"},
    )
    assert [r.config["sweep"] for r in records] == [{"regressor.alpha": 0.1}]


def test_load_results_does_not_warn_about_the_leaderboard_rendered_inside(tmp_path, recwarn):
    """Issue 27 item 10: ``manifest.json`` of ``RESULTS/leaderboard`` was warned about."""
    res = tmp_path / "res"
    zslbench.run(
        methods="krr", datasets="toy", results_dir=res, sets={"krr.alpha": 0.1, "krr.width": 1.0}
    )
    out = invoke_main("leaderboard", "--results-dir", str(res))
    assert out.exit_code == 0, out.output
    assert (res / "leaderboard" / "manifest.json").is_file()
    recwarn.clear()
    frame = zslbench.load_results(res)
    assert len(frame) == 1 and frame.attrs["refused"] == []
    assert [str(w.message) for w in recwarn if issubclass(w.category, UserWarning)] == []
    (res / "leaderboard" / "stray.json").write_text("{}")  # a file the board did not write is
    with pytest.warns(UserWarning, match="stray.json: skipped"):  # still named
        zslbench.load_results(res)


def test_the_reduced_schedule_of_cada_vae_learns_on_toy(tmp_path):
    """Issue 27: configs/generative-reduced.toml gave CADA-VAE H 0.0 on toy (20 epochs)."""
    (record,) = zslbench.run(
        config="configs/generative-reduced.toml",
        methods="cada-vae",
        seeds=1,
        results_dir=tmp_path / "res",
    )
    assert record.config["schedule"] == "reduced"
    assert record.config["components"]["generator"]["params"]["epochs"] == 50
    assert record.metrics["A_S"] > 20.0 and record.metrics["H"] > 10.0, record.metrics


def test_print_progress_says_each_dataset_and_run_and_board_run_uses_it(tmp_path, monkeypatch):
    import functools
    import io

    from zslbench import board
    from zslbench.api import print_progress

    buf = io.StringIO()
    (record,) = zslbench.run(
        methods="krr",
        datasets="toy",
        results_dir=tmp_path / "res",
        on_event=functools.partial(print_progress, file=buf),
    )
    lines = buf.getvalue().splitlines()
    assert lines[0] == "zslbench: loading toy"
    assert lines[1].startswith("zslbench: toy: 1 run(s): 0 cached, 1 to run; ETA ")
    assert lines[2:] == [
        f"zslbench: to run toy · krr · r0 (seed {record.seed}): new",
        "zslbench: run toy · krr · r0",
    ]
    # `zslbench board run` passes it: the board's grid is not silent.
    from types import SimpleNamespace

    seen = {}
    monkeypatch.setattr(zslbench, "run", lambda **kw: seen.update(kw) or [], raising=False)
    fake = SimpleNamespace(
        items={"method": {"mine": SimpleNamespace(distribution="my-zsl")}}, problems=[]
    )
    monkeypatch.setattr("zslbench.registry.load_registry", lambda *a, **k: fake)
    plugin = board.BoardPlugin(name="my-zsl", requirement="my-zsl", methods=("mine",))
    assert board.run([plugin], datasets="toy", seeds=1, results_dir=tmp_path / "b") == []
    assert seen["methods"] == ["mine"] and seen["on_event"] is print_progress
