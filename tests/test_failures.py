"""A grid survives its failed runs (issue 16 item 6, issue 18): whatever failed in a run (its data,
a component, the model, a plugin calling ``sys.exit`` or raising ``KeyboardInterrupt``), that run
is recorded as failed with a one-line reason in ``<run_id>.failed`` next to where its record would
go, the other runs go on, and the exit status is non-zero with a summary at the end. A real Ctrl-C
still stops the grid (tests/test_interrupt.py).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import invoke_main
from tests.plugins.test_npz import arrays, write_raw

FAILING = """
    import os
    import sys

    from zslbench.hookspecs import hookimpl
    from zslbench.methods import MethodSpec
    from zslbench_plugins.krr import KRRRegressor


    class Boom(KRRRegressor):
        name = "boom-krr"

        def fit(self, class_semantics, class_prototypes):
            if os.environ.get("ZSL_BOOM", "1") == "1":
                raise ValueError("exploded on purpose")
            return super().fit(class_semantics, class_prototypes)


    class ExitZero(KRRRegressor):
        name = "exit0-krr"

        def fit(self, class_semantics, class_prototypes):
            sys.exit(0)


    class ExitThree(KRRRegressor):
        name = "exit3-krr"

        def fit(self, class_semantics, class_prototypes):
            sys.exit(3)


    class Interrupting(KRRRegressor):
        name = "kbint-krr"

        def fit(self, class_semantics, class_prototypes):
            raise KeyboardInterrupt


    @hookimpl
    def zslbench_regressors():
        return [Boom, ExitZero, ExitThree, Interrupting]


    @hookimpl
    def zslbench_methods():
        fixed = {"regressor": {"alpha": 0.1, "width": 1.0}}
        return [MethodSpec(n, model="prototype", components={"embedder": "identity", "regressor": f"{n}-krr"}, params=fixed)
                for n in ("boom", "exit0", "exit3", "kbint")]
"""

KRR = ("--set", "krr.alpha=0.1", "--set", "krr.width=1.0")


@pytest.fixture()
def failing_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "zsl_failing_plugin.py").write_text(textwrap.dedent(FAILING))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "zsl_failing_plugin"


def _records(res: Path) -> dict[str, dict]:
    return {
        json.loads(p.read_text())["method"]: json.loads(p.read_text()) for p in res.glob("*.json")
    }


def _notes(res: Path) -> dict[str, str]:
    return {p.name.split("__")[1]: p.read_text() for p in res.glob("*.failed")}


@pytest.mark.parametrize(
    "method, reason",
    [
        ("boom", "regressor 'boom-krr' in fit (validation fit): ValueError: exploded on purpose"),
        ("exit0", "called sys.exit(0)"),
        ("exit3", "called sys.exit(3)"),
        ("kbint", "raised KeyboardInterrupt"),
    ],
)
def test_a_failing_method_fails_its_run_only_and_the_grid_exits_non_zero(
    tmp_path, failing_plugin, method, reason
):
    res = tmp_path / "res"
    out = invoke_main(
        "-p",
        failing_plugin,
        "run",
        "--method",
        f"{method},krr",
        "--dataset",
        "toy",
        *KRR,
        "--results-dir",
        str(res),
    )
    assert out.exit_code == 1, out.output
    assert set(_records(res)) == {"krr"}  # the run after the failed one went on
    notes = _notes(res)
    assert set(notes) == {method}
    note = notes[method]
    assert note.count("\n") == 1 and reason in note, note  # one line, naming what failed
    assert f"{method} on toy" in note
    assert "1 of 2 run(s) failed" in out.stderr and "Results" in out.stdout
    assert not list(res.glob(".*")), "a temporary file was left behind"


def test_a_data_failure_in_one_method_leaves_the_others_running(tmp_path):
    """The ``clip`` preprocessor (krr's) refuses negative features; eszsl's takes them."""
    a = arrays()
    a["features"] = a["features"] - np.float32(1.0)
    path = write_raw(tmp_path / "neg.npz", a)
    res = tmp_path / "res"
    out = invoke_main(
        "run",
        "--method",
        "krr,eszsl",
        "--dataset",
        str(path),
        *KRR,
        "--set",
        "eszsl.gamma=1.0",
        "--set",
        "eszsl.lam=1.0",
        "--allow-nonstandard-split",
        "--results-dir",
        str(res),
    )
    assert out.exit_code == 1, out.output
    assert set(_records(res)) == {"eszsl"}
    note = _notes(res)["krr"]
    assert "negative values" in note and note.count("\n") == 1


def test_a_failed_run_is_retried_and_its_note_removed_when_it_succeeds(
    tmp_path, failing_plugin, monkeypatch
):
    res = tmp_path / "res"
    args = (
        "-p",
        failing_plugin,
        "run",
        "--method",
        "boom",
        "--dataset",
        "toy",
        "--results-dir",
        str(res),
    )
    assert invoke_main(*args).exit_code == 1
    (note,) = res.glob("*.failed")
    monkeypatch.setenv("ZSL_BOOM", "0")
    out = invoke_main(*args)
    assert out.exit_code == 0, out.output
    assert not note.exists() and (res / note.name.replace(".failed", ".json")).exists()


def test_on_ray_a_plugin_calling_sys_exit_fails_its_run_only(tmp_path):
    """The same failure, note and exit status as the local executor (the worker runs the same
    ``execute``; the driver writes the note)."""
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")
    from tests.cli_helpers import run_cli

    (tmp_path / "zsl_failing_plugin.py").write_text(textwrap.dedent(FAILING))
    res = tmp_path / "res"
    proc = run_cli(
        "-p",
        "zsl_failing_plugin",
        "run",
        "--method",
        "exit0,krr",
        "--dataset",
        "toy",
        *KRR,
        "--executor",
        "ray",
        "--results-dir",
        str(res),
        env={"PYTHONPATH": str(tmp_path)},
        timeout=900,
    )
    assert proc.returncode == 1, proc.stderr
    assert set(_records(res)) == {"krr"}
    assert "called sys.exit(0)" in _notes(res)["exit0"]
    assert "1 of 2 run(s) failed" in proc.stderr


def test_a_dataset_that_fails_its_split_checks_fails_its_runs_and_the_grid_goes_on(tmp_path):
    """A leaking file (a test-unseen image also in trainval) is refused by the split checks when
    its turn comes; its runs fail with that line, the next dataset still runs, and the exit
    status is 1 with the summary."""
    a = arrays()
    a["trainval_idx"] = np.concatenate([a["trainval_idx"], a["test_unseen_idx"][:1]])
    bad = write_raw(tmp_path / "leaky.npz", a)
    res = tmp_path / "res"
    out = invoke_main(
        "run",
        "--method",
        "krr",
        "--dataset",
        f"{bad},toy",
        *KRR,
        "--seeds",
        "2",
        "--allow-nonstandard-split",
        "--results-dir",
        str(res),
    )
    assert out.exit_code == 1, out.output
    recs = [json.loads(p.read_text()) for p in res.glob("*.json")]
    assert {r["dataset"] for r in recs} == {"toy"} and len(recs) == 2
    assert "2 of 4 run(s) failed" in out.stderr, out.stderr
    assert "leaky" in out.stderr and "its runs fail, the grid goes on" in out.stderr
    assert "Traceback" not in out.output + out.stderr


def test_a_data_problem_is_said_once_and_its_notes_go_when_another_configuration_succeeds(tmp_path):
    a = arrays()
    a["features"] = a["features"] - np.float32(1.0)
    path = write_raw(tmp_path / "neg.npz", a)
    res = tmp_path / "res"
    args = (
        "run",
        "--method",
        "krr",
        "--dataset",
        str(path),
        *KRR,
        "--seeds",
        "3",
        "--allow-nonstandard-split",
        "--results-dir",
        str(res),
    )
    out = invoke_main(*args)
    assert out.exit_code == 1, out.output
    errors = [
        line for line in out.stderr.splitlines() if line.startswith("zslbench: error: krr on neg")
    ]
    seeds = [int(line.split("(seed ", 1)[1].split(")", 1)[0]) for line in errors]
    assert len(errors) == 3 and "negative values" in errors[0]
    assert errors[1:] == [
        f"zslbench: error: krr on neg (seed {s}): failed as seed {seeds[0]} did (the same reason, "
        "above)"
        for s in seeds[1:]
    ]
    notes = sorted(res.glob("*.failed"))
    assert len(notes) == 3
    # Not the harness's notes: another name, or more than one line.
    (res / "mine.failed").write_text("my own notes\n")
    other = res / notes[0].name.replace("__krr__", "__eszsl__")
    other.write_text("eszsl on neg (seed 1): boom\n")
    out = invoke_main(*args, "--set", "preprocessor=none")
    assert out.exit_code == 0, out.output
    assert not any(n.exists() for n in notes)
    assert sorted(p.name for p in res.glob("*.failed")) == sorted(["mine.failed", other.name])
    assert len(list(res.glob("*.json"))) == 3


def test_a_dataset_that_cannot_load_fails_its_runs_without_naming_a_note_never_written(tmp_path):
    """Issue 42 item 24: the summary named `<run_id>.failed` files for a dataset whose load
    failed, and none is written for those runs (only a run that started leaves a note)."""
    a = arrays()
    a["features"] = a["features"].copy()
    a["features"][0, 0] = np.nan
    path = write_raw(tmp_path / "nan.npz", a)
    res = tmp_path / "res"
    out = invoke_main(
        "run", "--method", "krr", "--dataset", f"toy,{path}", *KRR, "--results-dir", str(res)
    )
    assert out.exit_code == 1, out.stderr
    assert set(_records(res)) == {"krr"} and not list(res.glob("*.failed"))
    summary = [line for line in out.stderr.splitlines() if "run(s) failed" in line]
    assert len(summary) == 1 and ".failed" not in summary[0], out.stderr
