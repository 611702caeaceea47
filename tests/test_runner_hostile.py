"""Issue 18's runner-side defects, each refused with one clear line or handled (the leaderboard's
are in tests/leaderboard/test_hostile.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli_helpers import invoke_main
from zslbench.records import Record, write_record

KRR = ("--set", "krr.alpha=0.1", "--set", "krr.width=1.0")


def _one_line(out, *needles: str) -> None:
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.exit_code == 2, out.output
    assert len(lines) == 1 and "internal error" not in lines[0], out.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("seeds", [0, -2])
def test_a_config_with_no_seeds_is_refused(tmp_path, seeds):
    conf = tmp_path / "grid.toml"
    conf.write_text(f'methods = ["krr"]\ndatasets = ["toy"]\nseeds = {seeds}\n')
    out = invoke_main("run", "--config", str(conf), "--results-dir", str(tmp_path / "res"))
    _one_line(out, str(conf), f"seeds = {seeds}", "at least 1")
    assert not (tmp_path / "res").exists()


def test_an_unknown_executor_in_a_config_is_refused_naming_the_valid_ones(tmp_path):
    conf = tmp_path / "grid.toml"
    conf.write_text('methods = ["krr"]\ndatasets = ["toy"]\nexecutor = "rey"\n')
    out = invoke_main("run", "--config", str(conf), "--results-dir", str(tmp_path / "res"))
    _one_line(out, "'rey'", "local, ray")


ESCAPING = """
    from zslbench.hookspecs import hookimpl
    from zslbench.methods import MethodSpec


    @hookimpl
    def zslbench_methods():
        return [MethodSpec(name, model="prototype", components={"embedder": "identity", "regressor": "krr"},
                           params={"regressor": {"alpha": 0.1, "width": 1.0}})
                for name in ("x/../../escaped", "..", "back\\\\slash", "fine")]
"""


def test_a_plugin_method_name_that_is_not_a_file_name_part_is_refused(tmp_path, monkeypatch):
    from zslbench.registry import load_registry

    (tmp_path / "zsl_escaping_plugin.py").write_text(textwrap.dedent(ESCAPING))
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = load_registry(["zsl_escaping_plugin"])
    assert "fine" in reg.names("method")
    for name in ("x/../../escaped", "..", "back\\slash"):
        assert name not in reg.names("method")
        assert any(repr(name) in p and "'zsl_escaping_plugin'" in p for p in reg.problems), (
            reg.problems
        )
    res = tmp_path / "a" / "b" / "res"
    out = invoke_main(
        "-p",
        "zsl_escaping_plugin",
        "run",
        "--method",
        "x/../../escaped",
        "--dataset",
        "toy",
        "--results-dir",
        str(res),
    )
    assert out.exit_code == 2 and "unknown method" in out.stderr
    assert [p for p in tmp_path.rglob("*") if p.suffix in (".json", ".failed")] == []


COMMA = """
    from zslbench.hookspecs import hookimpl
    from zslbench.methods import MethodSpec


    @hookimpl
    def zslbench_methods():
        return [MethodSpec(name, model="prototype", components={"embedder": "identity", "regressor": "krr"},
                           params={"regressor": {"alpha": 0.1, "width": 1.0}})
                for name in ("a,b", "fine")]
"""


def test_a_plugin_method_name_with_a_comma_is_refused_at_registration(tmp_path, monkeypatch):
    """Issue 27 item 11: ``--method a,b`` names two methods, so ``a,b`` could never be selected."""
    from zslbench.registry import load_registry

    (tmp_path / "zsl_comma_plugin.py").write_text(textwrap.dedent(COMMA))
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = load_registry(["zsl_comma_plugin"])
    assert "fine" in reg.names("method") and "a,b" not in reg.names("method")
    (line,) = [p for p in reg.problems if "'a,b'" in p]
    assert "'zsl_comma_plugin'" in line and "contains ','" in line and "rename it" in line


def test_a_file_named_dot_npz_is_refused_clearly(tmp_path):
    from tests.plugins.test_npz import arrays, write_raw

    path = write_raw(tmp_path / ".npz", arrays())
    out = invoke_main(
        "run", "--method", "krr", "--dataset", str(path), "--results-dir", str(tmp_path / "res")
    )
    assert out.exit_code == 2 and "internal error" not in out.output
    assert ".npz" in out.stderr and "rename" in out.stderr


# -- a damaged record where a run would go is re-run ----------------------------------------------


def _damage(path: Path, how: str) -> None:
    good = json.loads(path.read_text())
    if how == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
        return
    if how == "nan":  # NaN in a free-form field; the old digest stays
        good["config"]["overrides"] = {"krr.alpha": float("nan")}
        path.write_text(json.dumps(good))
        return
    changes = {
        "per_class": {"unseen": [{"class": "x", "accuracy": 1.0}]},
        "curve": {"A_U": [1.0, 2.0], "A_S": [1.0]},
        "overrides": {"config": {**good["config"], "overrides": "lr=1"}},
    }[how]
    if how != "overrides":
        changes = {how: changes}
    good.update(changes)
    record = Record(**{k: v for k, v in good.items() if k != "digest"})
    write_record(path.parent, record)  # sealed again: its digest is valid


@pytest.mark.parametrize("how", ["nan", "deep", "per_class", "curve", "overrides"])
def test_a_damaged_record_is_re_run_with_a_warning_naming_it(tmp_path, how):
    res = tmp_path / "res"
    args = ("run", "--method", "krr", "--dataset", "toy", *KRR, "--results-dir", str(res))
    assert invoke_main(*args).exit_code == 0
    (path,) = res.glob("*.json")
    _damage(path, how)
    out = invoke_main(*args)
    assert out.exit_code == 0, out.output
    assert "internal error" not in out.output
    assert f"{path}" in out.stderr and "re-running it" in out.stderr, out.stderr
    assert "done toy · krr" in out.stderr  # run again, not taken from the cache
    from zslbench.records.rows import run_row
    from zslbench.records.validation import read_one

    run_row(path, read_one(path), res)  # the new record is whole


# -- plugins -------------------------------------------------------------------------------------


def test_dash_p_finds_a_plugin_in_the_current_folder_without_pythonpath(tmp_path):
    """README: ``zslbench -p my_zsl.plugin run`` from the plugin's folder (as pytest puts its
    rootdir on sys.path)."""
    pkg = tmp_path / "my_zsl"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(
        textwrap.dedent("""
        from zslbench.hookspecs import hookimpl
        from zslbench.methods import MethodSpec

        @hookimpl
        def zslbench_methods():
            return [MethodSpec("here-krr", model="prototype", components={"embedder": "identity", "regressor": "krr"})]
    """)
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    exe = Path(sys.executable).with_name("zslbench")
    proc = subprocess.run(
        [str(exe), "-p", "my_zsl.plugin", "list"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "here-krr" in proc.stdout
