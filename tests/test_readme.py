"""The README's plugin guide works as written: its code block, saved as a module, adds a model and
a dataset that run through the command line, and the model passes ``check_model``.

The code is read from README.md itself (the block after ``<!-- README-PLUGIN-EXAMPLE -->``), so
the guide cannot drift from what works.
"""

from __future__ import annotations

import importlib
import json
import re
import sys

import pytest

from tests.cli_helpers import run_cli
from zslbench.testing import check_model

README = __import__("pathlib").Path(__file__).resolve().parents[1] / "README.md"


def example_code() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- README-PLUGIN-EXAMPLE -->\n```python\n(.*?)\n```", text, re.S)
    assert match, "README.md lost its plugin example block"
    return match.group(1)


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "readme_plugin.py").write_text(example_code())
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("readme_plugin", None)
    return tmp_path


def test_the_readme_model_follows_the_contract(plugin):
    module = importlib.import_module("readme_plugin")
    check_model(module.MyESZSL())


def test_the_readme_plugin_runs_its_model_and_dataset_through_the_cli(plugin):
    env = {"PYTHONPATH": str(plugin)}
    res = plugin / "res"
    proc = run_cli(
        "-p",
        "readme_plugin",
        "run",
        "--method",
        "my-eszsl,krr",
        "--dataset",
        "blobs",
        "--results-dir",
        str(res),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    records = {
        json.loads(p.read_text())["method"]: json.loads(p.read_text()) for p in res.glob("*.json")
    }
    assert set(records) == {"my-eszsl", "krr"}
    mine = records["my-eszsl"]
    assert mine["dataset_kind"] == "custom" and mine["split"]["standard"] is True
    assert mine["config"]["components"]["model"]["plugin"] == "readme_plugin"
    assert set(mine["search"]["chosen"]) == {"gamma", "lam"}
    assert mine["metrics"]["A_T"] > 100 / 3  # 3 unseen classes: far above chance


# -- the README's command lines and the board's Reproduce lines ---------------------------------

REPO = README.parent


def _shell_blocks(text: str) -> list[str]:
    return re.findall(r"```(?:bash|sh)\n(.*?)\n```", text, re.S)


def shell_commands(text: str) -> list[list[str]]:
    """Every ``zslbench ...`` line of the ``bash``/``sh`` blocks, as words (comments dropped,
    backslash continuations joined); lines that need the shell (``$head``) are left out."""
    import shlex

    out = []
    for block in _shell_blocks(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith("zslbench ") and "$" not in line:
                out.append(shlex.split(line, comments=True))
    return out


def python_example(text: str) -> str:
    match = re.search(
        r"```python\n(import zslbench\n\nrecords = zslbench\.run\(.*?)\n```", text, re.S
    )
    assert match, "README.md lost its zslbench.run example"
    return match.group(1)


@pytest.fixture
def planning_only(monkeypatch):
    """``zslbench run`` resolves and checks its whole grid (methods, datasets, configs, --set,
    --sweep, seeds, executor), then runs nothing: what a command would do, in milliseconds."""
    from zslbench import api

    planned = []

    def no_runs(request, registry, executor=None, on_event=None):
        planned.append(request)
        return iter(())

    monkeypatch.setattr(api, "outcomes", no_runs)
    monkeypatch.setattr(api, "make_executor", lambda *a, **k: None)
    return planned


def test_the_readme_command_lines_work_as_written(tmp_path, monkeypatch, planning_only):
    from tests.cli_helpers import invoke_main
    from tests.plugins.test_npz import arrays, write_raw

    commands = shell_commands(README.read_text(encoding="utf-8"))
    assert ["zslbench", "run", "--method", "krr", "--dataset", "toy"] in commands
    import numpy as np

    (tmp_path / "configs").symlink_to(REPO / "configs")
    (tmp_path / "path" / "to").mkdir(parents=True)
    write_raw(tmp_path / "path" / "to" / "mine.npz", arrays())
    (tmp_path / "path" / "to" / "mine").mkdir()  # the folder form: one <key>.npy per key
    for key, value in arrays().items():
        np.save(
            tmp_path / "path" / "to" / "mine" / f"{key}.npy",
            np.asarray(value, dtype=str) if isinstance(value, list) else np.asarray(value),
        )
    monkeypatch.setenv("ZSLBENCH_DATA", str(tmp_path / "no-real-data"))
    for words in commands:
        if words[1] == "data":
            continue  # the real data (a download); `zslbench data` has its own tests
        if words[1:4] == ["leaderboard", "--results-dir", "results"]:
            continue  # below, on records a real run wrote
        # the committed board's commands read it where it is; the others run in a scratch folder
        monkeypatch.chdir(REPO if "leaderboards/records" in words else tmp_path)
        out = invoke_main(*words[1:])
        if out.exit_code == 2 and "--dataset all" in " ".join(words):  # real data not here
            lines = out.stderr.strip().splitlines()
            assert lines and all(
                "res101.mat" in ln or "att_splits.mat" in ln or "missing" in ln for ln in lines
            ), out.stderr
            continue
        assert out.exit_code == 0, (words, out.output)
        assert planning_only, words

    monkeypatch.undo()  # the first command for real: it runs in seconds, then the board
    monkeypatch.chdir(tmp_path)
    assert invoke_main("run", "--method", "krr", "--dataset", "toy").exit_code == 0
    board = next(w for w in commands if w[1] == "leaderboard")
    out = invoke_main(*board[1:])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "results" / "leaderboard").is_dir()


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(python_example(README.read_text(encoding="utf-8")), scope)  # noqa: S102 - our README
    assert len(scope["records"]) == 4 and len(scope["runs"]) == 4


@pytest.mark.parametrize("page", ["synthetic.md", "real.md"])
def test_the_boards_reproduce_lines_plan_exactly_the_runs_on_the_page(
    page, monkeypatch, planning_only
):
    """Each Reproduce command resolves as written, and together they cover every (dataset,
    method) that has records on the page's board, and nothing else."""
    from tests.cli_helpers import invoke_main
    from zslbench.records.results import load_results

    text = (REPO / "leaderboards" / page).read_text(encoding="utf-8")
    section = text.split("## Reproduce", 1)
    if len(section) < 2:
        pytest.skip(f"{page} has no Reproduce section (no records)")
    commands = shell_commands(section[1].split("\n## ", 1)[0])
    monkeypatch.chdir(REPO)
    for words in commands:
        out = invoke_main(*words[1:])
        assert out.exit_code == 0, (words, out.output)
    planned = {(d, m) for r in planning_only for d in r.datasets for m in r.methods}
    folder = REPO / "leaderboards" / "records" / page.removesuffix(".md")
    runs = load_results(folder)
    assert planned == set(zip(runs["dataset"], runs["method"], strict=True))
