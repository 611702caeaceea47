"""The command line as a user meets it: a real run, records, and one-line errors."""

from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace

import pytest

from tests.cli_helpers import invoke_main, run_cli

RECORD_KEYS = {
    "dataset",
    "method",
    "seed",
    "metrics",
    "timings",
    "device",
    "split",
    "config",
    "environment",
    "git",
    "key",
    "run_id",
    "curve",
    "per_class",
}


def records_in(path):
    return sorted(p for p in path.glob("*.json"))


def assert_one_line_error(proc, *needles, progress: bool = False):
    """A failed command: non-zero, no traceback, and one error line. A command that was refused
    before any work prints that line alone; a grid with a failed run (``progress=True``) prints its
    plain progress lines too, and exactly one ``error`` line among them."""
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    if progress:
        lines = [ln for ln in lines if "error" in ln]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_krr_on_toy_writes_a_complete_record(tmp_path):
    proc = run_cli("run", "--method", "krr", "--dataset", "toy", "--results-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    recs = records_in(tmp_path)
    assert len(recs) == 1
    rec = json.loads(recs[0].read_text())
    assert RECORD_KEYS <= set(rec)
    assert rec["dataset"] == "toy" and rec["method"] == "krr" and rec["dataset_kind"] == "synthetic"
    assert set(rec["metrics"]) == {"A_T", "A_U", "A_S", "H", "AUSUC", "AUSUC_per_image"}
    # toy has 6 unseen classes: chance A_T is 100/6 = 16.7%; krr must clearly beat it. Its 480
    # unseen test images put the std of a chance-level A_T near 1.7 points: 5 points above chance
    # is about 3 std. (Generator v3's toy gives krr an A_T near 25; v2's gave 34-39, and the bound
    # was 30.)
    assert rec["metrics"]["A_T"] > 100 / 6 + 5
    assert rec["timings"]["train"] > 0
    assert {
        "embedder_fit",
        "regressor_fit",
        "search",
        "calibration",
        "fit_final",
        "evaluation",
    } <= set(rec["timings"])
    assert rec["search"]["chosen"].keys() == {"regressor.alpha", "regressor.width"}
    assert rec["load"]["cores"] >= 1 and rec["load"]["cpu_seconds"] > 0
    assert rec["device"]["type"] == "cpu"
    assert rec["split"]["standard"] is True and len(rec["split"]["fingerprint"]) == 64
    assert rec["environment"]["packages"]["torch"]
    assert "commit" in rec["git"]
    assert rec["config"]["components"]["regressor"]["name"] == "krr"
    assert "krr" in proc.stdout and "toy" in proc.stdout


#: krr's settings fixed (no search) for the tests that run it again and again: what they check
#: is the cache, not the search, and each search costs 1-2 s. The re-runs are made in this
#: process (``invoke_main``, the same ``cli.main``): a console-script process costs 2-4 s more.
FIXED_KRR = ("--set", "krr.alpha=0.1", "--set", "krr.width=1.0")


def test_second_run_is_cached_and_force_reruns(tmp_path):
    args = ("run", "--method", "krr", "--dataset", "toy", "--results-dir", str(tmp_path))
    args += FIXED_KRR
    assert run_cli(*args).returncode == 0
    first = records_in(tmp_path)[0].read_text()
    again = invoke_main(*args)
    assert again.exit_code == 0 and "cached" in again.stdout
    assert records_in(tmp_path)[0].read_text() == first
    forced = invoke_main(*args, "--force")
    assert forced.exit_code == 0 and "ran" in forced.stdout


def test_set_override_is_recorded_and_changes_the_key(tmp_path):
    base = ("run", "--method", "krr", "--dataset", "toy", "--results-dir", str(tmp_path))
    assert run_cli(*base).returncode == 0
    proc = run_cli(*base, "--set", "preprocessor.clip=5")
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(p.read_text()) for p in records_in(tmp_path)]
    assert len(recs) == 2
    changed = [r for r in recs if r["config"]["overrides"]]
    assert changed[0]["config"]["overrides"] == {"preprocessor.clip": 5}
    assert changed[0]["config"]["components"]["preprocessor"]["params"]["clip"] == 5
    assert len({r["key"] for r in recs}) == 2


@pytest.mark.parametrize(
    "args, needles",
    [
        (("--method", "krrr", "--dataset", "toy"), ("unknown method 'krrr'", "did you mean 'krr'")),
        (("--method", "krr", "--dataset", "awa3"), ("unknown dataset 'awa3'", "did you mean")),
        (
            ("--method", "krr", "--dataset", "toy", "--set", "regressor.lamda=1"),
            ("regressor.lamda", "valid:"),
        ),
        (("--method", "krr", "--dataset", "toy", "--set", "nonsense"), ("component.param=value",)),
        (("--method", "krr", "--dataset", "toy", "--set", "gpp.x=1"), ("'gpp'",)),
        (("--method", ",", "--dataset", "toy"), ("names no method",)),
        (("--method", "krr", "--dataset", ","), ("names no dataset",)),
        (
            (
                "--method",
                "krr",
                "--dataset",
                "toy",
                "--set",
                "clip.clip=5",
                "--set",
                "preprocessor.clip=9",
            ),
            ("clip.clip=5", "preprocessor.clip=9", "different values"),
        ),
        (
            ("--method", "krr", "--dataset", "toy", "--set", "krr.alpha=banana"),
            ("krr.alpha='banana'", "finite number"),
        ),
        (("--method", "krr", "--dataset", "toy", "--set", "krr.width=-3"), ("krr.width=-3",)),
        (("--method", "krr", "--dataset", "toy", "--set", "krr.alpha=nan"), ("krr.alpha=nan",)),
        (
            ("--method", "krr", "--dataset", "toy", "--set", "preprocessor=nonesuch"),
            ("unknown preprocessor 'nonesuch'",),
        ),
        (("--method", "krr", "--dataset", "toy", "--set", "decoder=none"), ("no role 'decoder'",)),
        (
            ("--method", "krr", "--dataset", "toy", "--set", "foo.bar=1"),
            ("--set foo.bar: no selected method uses a component 'foo'",),
        ),
    ],
)
def test_bad_command_lines_get_one_line(tmp_path, args, needles):
    # Through ``main``'s one error handler in this process: a console-script process would spend
    # ~3 s importing torch for each of these lines. The script's own path is the next test's.
    res = invoke_main("run", *args, "--results-dir", str(tmp_path))
    proc = SimpleNamespace(returncode=res.exit_code, stdout=res.stdout, stderr=res.stderr)
    assert_one_line_error(proc, *needles)
    assert records_in(tmp_path) == []


def test_missing_real_data_is_one_line_naming_every_file_and_pointing_to_synth_all(tmp_path):
    proc = run_cli(
        "run",
        "--method",
        "krr",
        "--dataset",
        "all",
        "--data-dir",
        str(tmp_path / "nodata"),
        "--results-dir",
        str(tmp_path / "res"),
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    # One line for the ten files (two for each of the five datasets), then the fix.
    root = tmp_path / "nodata"
    files = ", ".join(
        f"{d}/{f}"
        for d in ("AWA1", "AWA2", "APY", "CUB", "SUN")
        for f in ("res101.mat", "att_splits.mat")
    )
    assert lines == [
        f"zslbench: error: 10 data files are missing under {root} ({files}); run "
        "`zslbench data download --dataset awa1,awa2,apy,cub,sun "
        f"--data-dir {root}` to fetch the xlsa17 benchmark "
        "(about 879 MB for all five), or use `--dataset synth-awa1,synth-awa2,synth-apy,synth-cub,"
        "synth-sun` / `--dataset synth-all` for the embedded SYNTHETIC stand-ins (not the real "
        "benchmark)"
    ]
    assert not (tmp_path / "res").exists()


THIRD_PARTY = """
    import numpy as np
    from zslbench_plugins.prototype_kinds import Regressor
    from zslbench.hookspecs import hookimpl
    from zslbench.methods import MethodSpec


    class LinearRegressor(Regressor):
        '''Least-squares linear map from attributes to prototypes.'''

        name = "linear"

        def __init__(self, ridge=1e-3, explode=False):
            self.ridge = ridge
            self.explode = explode

        def fit(self, class_semantics, class_prototypes):
            if self.explode:
                raise ValueError("exploded on purpose")
            s = np.asarray(class_semantics, dtype=float)
            gram = s.T @ s + self.ridge * np.eye(s.shape[1])
            self.coef_ = np.linalg.solve(gram, s.T @ np.asarray(class_prototypes, dtype=float))
            return self

        def predict(self, class_semantics):
            return np.asarray(class_semantics, dtype=float) @ self.coef_


    @hookimpl
    def zslbench_regressors():
        return [LinearRegressor]


    @hookimpl
    def zslbench_methods():
        return [MethodSpec("linear-proto", model="prototype", components={"embedder": "identity", "regressor": "linear"},
                           paper_name="third-party linear prototypes")]
"""


def test_a_third_party_plugin_adds_a_method_run_with_dash_p(tmp_path):
    (tmp_path / "my_zsl_plugin.py").write_text(textwrap.dedent(THIRD_PARTY))
    env = {"PYTHONPATH": str(tmp_path)}
    listing = run_cli("-p", "my_zsl_plugin", "list", env=env)
    assert listing.returncode == 0 and "linear-proto" in listing.stdout
    res = tmp_path / "res"
    proc = run_cli(
        "-p",
        "my_zsl_plugin",
        "run",
        "--method",
        "linear-proto,krr",
        "--dataset",
        "toy",
        "--results-dir",
        str(res),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    recs = {json.loads(p.read_text())["method"]: json.loads(p.read_text()) for p in records_in(res)}
    assert set(recs) == {"linear-proto", "krr"}
    rec = recs["linear-proto"]
    assert rec["config"]["components"]["regressor"] == {
        "name": "linear",
        "plugin": "my_zsl_plugin",
        "params": {"ridge": 0.001, "explode": False},
    }
    assert rec["metrics"]["A_T"] > 16.7  # chance on toy's 6 unseen classes


def test_a_plugin_raising_inside_fit_is_one_line_and_leaves_no_record(tmp_path):
    (tmp_path / "my_zsl_plugin.py").write_text(textwrap.dedent(THIRD_PARTY))
    res = tmp_path / "res"
    proc = run_cli(
        "-p",
        "my_zsl_plugin",
        "run",
        "--method",
        "linear-proto",
        "--dataset",
        "toy",
        "--set",
        "linear.explode=true",
        "--results-dir",
        str(res),
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert_one_line_error(
        proc,
        "linear-proto on toy",
        "regressor 'linear' in fit (validation fit)",
        "ValueError: exploded on purpose",
        progress=True,
    )
    assert not res.exists() or records_in(res) == []


def test_preprocessor_can_be_swapped_with_set(tmp_path):
    proc = run_cli(
        "run",
        "--method",
        "krr",
        "--dataset",
        "toy",
        "--set",
        "preprocessor=none",
        "--results-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(records_in(tmp_path)[0].read_text())
    assert rec["config"]["components"]["preprocessor"]["name"] == "none"
    assert rec["config"]["overrides"] == {"preprocessor": "none"}


CLASH = """
    from zslbench.hookspecs import hookimpl
    from zslbench.methods import MethodSpec


    @hookimpl
    def zslbench_methods():
        return [MethodSpec("krr", model="prototype", components={"embedder": "bt", "regressor": "gp"})]
"""


def test_a_plugin_cannot_replace_a_builtin_silently(tmp_path):
    (tmp_path / "clash_plugin.py").write_text(textwrap.dedent(CLASH))
    env = {"PYTHONPATH": str(tmp_path)}
    proc = run_cli("-p", "clash_plugin", "list", env=env)
    assert proc.returncode == 0
    warning = [ln for ln in proc.stderr.splitlines() if ln.startswith("zslbench: warning:")]
    assert len(warning) == 1 and "'clash_plugin'" in warning[0] and "built-in" in warning[0]
    strict = run_cli("--strict-plugins", "-p", "clash_plugin", "list", env=env)
    assert_one_line_error(strict, "'clash_plugin'", "krr")


def test_list_shows_every_paper_method_with_its_plugin():
    proc = run_cli("list")
    assert proc.returncode == 0, proc.stderr
    for name in ("bt-gp", "t-gp", "gp", "krr", "bt-krr", "synth-sun", "awa2", "gamma", "identity"):
        assert name in proc.stdout


def test_an_edited_or_foreign_record_is_rerun_with_one_warning(tmp_path):
    """A record whose content fails its digest (edited), or a file at a record's path that is not
    a record, is never served as cached: `run` names the file, re-runs, and writes a valid one."""
    args = ("run", "--method", "krr", "--dataset", "toy", "--results-dir", str(tmp_path))
    args += FIXED_KRR
    assert run_cli(*args).returncode == 0
    (path,) = records_in(tmp_path)
    rec = json.loads(path.read_text())
    rec["metrics"]["H"] = 99.9
    for content, why in (
        (json.dumps(rec), "does not match its digest"),
        ("5", "holds a JSON int, not a record object"),
    ):
        path.write_text(content)
        again = invoke_main(*args)
        assert again.exit_code == 0, again.stderr
        warnings = [ln for ln in again.stderr.splitlines() if ln.startswith("zslbench: warning:")]
        assert (
            warnings
            == [
                ln
                for ln in warnings
                if f"{path}: " in ln and why in ln and ln.endswith("re-running it")
            ]
            and len(warnings) == 1
        ), again.stderr
        assert "cached" not in again.stdout and "99.9" not in again.stdout
        fresh = json.loads(path.read_text())
        assert fresh["metrics"]["H"] != 99.9 and "digest" in fresh


def test_warnings_logged_by_a_plugin_are_one_prefixed_line(monkeypatch):
    """A plugin's ``logging`` warning (the xlsa17 cache's "rebuilding it") reaches the user as a
    ``zslbench: warning:`` line, not through Python's unformatted last-resort handler."""
    import logging

    from zslbench import cli

    said = []
    monkeypatch.setattr(cli, "say_error", lambda text, prefix="": said.append(prefix + text))
    cli._route_warnings()
    cli._route_warnings()  # idempotent: one handler
    logging.getLogger("zslbench.data").warning("%s: bad; rebuilding it", "entry")
    logging.getLogger("zslbench.data").info("not shown")
    assert said == ["zslbench: warning: entry: bad; rebuilding it"]


@pytest.mark.parametrize("argv", [["run", "--help"], ["leaderboard", "--help"], ["data", "--help"]])
def test_a_command_help_imports_no_torch_scipy_or_pandas(argv):
    """Every command's help loads only the plugins that may add a command (issue 44 item 4)."""
    import subprocess
    import sys

    code = (
        f"import sys\nfrom zslbench.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'pandas', 'scipy', 'matplotlib', 'gpytorch') if m in sys.modules),"
        " file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"
    assert "Usage: zslbench " + argv[0] in proc.stdout


def test_top_level_help_lists_plugin_commands_without_importing_torch_scipy_or_pandas():
    """``zslbench --help`` imports no built-in that adds no command (they import torch), and the
    leaderboard commands import scipy.stats, pandas and matplotlib only when they run (issue 30;
    its time is measured by benchmarks/cli_latency.py, not here)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom zslbench.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'pandas', 'scipy.stats', 'matplotlib', 'gpytorch') if m in sys.modules),"
        " file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"
    commands = proc.stdout.split("Commands:", 1)[1].split()
    assert {"compare", "data", "leaderboard", "list", "run"} <= set(commands)


def test_the_builtins_that_add_commands_are_exactly_those_help_imports():
    from zslbench.registry import BUILTIN_COMMAND_PLUGINS, BUILTIN_DISTRIBUTION, load_registry

    reg = load_registry()
    adding = {
        name
        for name, module in reg.modules.items()
        if reg.plugins.get(name) == BUILTIN_DISTRIBUTION and hasattr(module, "zslbench_commands")
    }
    assert adding == set(BUILTIN_COMMAND_PLUGINS)


def test_list_summaries_are_first_sentences_without_rst():
    from zslbench.listing import summary

    assert (
        summary(
            "Closed-form bilinear compatibility ``x^T V s_c`` (see the module\n    docstring).\n\n"
            "    More."
        )
        == "Closed-form bilinear compatibility x^T V s_c (see the module docstring)."
    )
    assert (
        summary(
            "CE-GZSL's generator stage (module docstring). Parameters\n    (``CE_GZSL.py`` argparse,"
            " lines 10-20) follow."
        )
        == "CE-GZSL's generator stage (module docstring)."
    )
    assert (
        summary("A map trained with L_BT (eq. 3). Uses :class:`~zslbench.model.Model`.")
        == "A map trained with L_BT (eq. 3)."
    )
    assert summary("Fits :func:`numpy.linalg.solve` on it") == "Fits solve on it"
    assert summary(None) == ""


def test_list_method_shows_its_hyperparameters_and_their_defaults():
    from tests.cli_helpers import invoke_main

    out = invoke_main("list", "--method", "bt-gp")
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert (
        lines[0]
        == "bt-gp: L_BT + GP (ours) — model prototype, preprocessor=clip model=prototype embedder=bt "
        "regressor=gp calibrator=gamma"
    )
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    rows = {(c[2]): c[3:5] for c in cells}
    assert rows["margin"] == ["4.0", "(same)"] and rows["latent_dim"] == ["64", "(same)"]
    assert rows["optimizer"] == ["'newton'", "(same)"] and rows["clip"] == ["7.0", "(same)"]
    assert cells[0][:2] == ["preprocessor", "clip"]
    out = invoke_main("list", "--method", "eszsl")
    assert out.stdout.splitlines()[1:3] == [
        "citation: Bernardino Romera-Paredes, Philip H. S. Torr. An embarrassingly simple "
        "approach to zero-shot learning. ICML 2015. "
        "https://proceedings.mlr.press/v37/romera-paredes15.html",
        "code: https://github.com/bernard24/Embarrassingly-simple-ZSL",
    ]
    out = invoke_main("list", "--method", "nope")
    assert out.exit_code == 2 and out.stderr.startswith("zslbench: error: unknown method 'nope'")


def test_device_cuda_without_a_gpu_names_the_option_as_typed(tmp_path):
    import torch

    from tests.cli_helpers import invoke_main
    from zslbench.errors import ConfigError
    from zslbench.hyperparams import torch_device

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = invoke_main(
        "run",
        "--method",
        "krr",
        "--dataset",
        "toy",
        "--device",
        "cuda",
        "--results-dir",
        str(tmp_path / "res"),
    )
    assert out.exit_code == 2
    assert out.stderr.splitlines() == [
        "zslbench: error: --device cuda: this torch build sees no CUDA device — run "
        "with --device cpu, or install a CUDA build of torch"
    ]
    with pytest.raises(
        ConfigError, match=r"^gp\.device='cuda': this torch build sees no CUDA device"
    ):
        torch_device("gp", "cuda")


# -- `zslbench list` from the built-ins' catalog, without importing them (issue 44 item 4) -------
def test_the_listing_catalog_is_what_the_builtins_register():
    """plugins/listing.json must be regenerated (`python -m zslbench.listing`) whenever a built-in
    plugin changes: `zslbench list` reads it instead of importing the built-ins (torch)."""
    import json

    from zslbench.listing import CATALOG, _builtin_folder, catalog_sources, table_rows
    from zslbench.registry import BUILTIN_DISTRIBUTION, load_registry

    data = json.loads((_builtin_folder() / CATALOG).read_text())
    fix = "run `python -m zslbench.listing` and commit plugins/listing.json"
    assert data["sources"] == catalog_sources(), f"the catalog is stale: {fix}"
    rows = table_rows(load_registry(), BUILTIN_DISTRIBUTION)
    assert {k: data[k] for k in rows} == rows, f"the catalog differs from the registry: {fix}"


def test_list_imports_no_builtin_plugin_and_no_torch():
    import subprocess
    import sys

    code = (
        "import sys\nfrom zslbench.cli import main\ntry:\n    main(['list'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'pandas', 'scipy', 'matplotlib', 'gpytorch',"
        " 'zslbench_plugins.krr') if m in sys.modules), file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"
    assert "bt-gp" in proc.stdout and "synth-cub" in proc.stdout and "Components" in proc.stdout


def test_list_loads_the_plugins_when_the_catalog_cannot_stand_in(tmp_path, monkeypatch):
    """A -p module (or a third-party plugin, or edited built-ins) is listed from the registry."""
    (tmp_path / "zsl_listed_extra.py").write_text(
        "from zslbench.hookspecs import hookimpl\n"
        "from zslbench.methods import MethodSpec\n\n"
        "@hookimpl\n"
        "def zslbench_methods():\n"
        "    return [MethodSpec('listed-extra', model='prototype',"
        " components={'embedder': 'identity', 'regressor': 'krr'})]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from zslbench import listing

    assert listing.cached_rows(()) is not None
    assert listing.cached_rows(("zsl_listed_extra",)) is None
    out = invoke_main("-p", "zsl_listed_extra", "list")
    assert out.exit_code == 0 and "listed-extra" in out.stdout and "bt-gp" in out.stdout
    monkeypatch.setattr(listing, "catalog_sources", lambda: "edited")
    assert listing.cached_rows(()) is None
