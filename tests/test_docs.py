"""The documentation works as written: README.md and every page of docs/.

- Every ``python`` block runs: a page's blocks in order, in one namespace (as a reader types them
  one after another), in a scratch folder that sees the repository's ``configs/`` and
  ``leaderboards/``; a block whose first line is ``# path/to/file.py`` is also saved as that file
  there (so that ``-p my_zsl.plugin`` finds it), and the ``test_*`` functions a page defines with no
  arguments are called.
- Every ``zslbench ...`` line of a ``bash``/``sh`` block resolves as written: ``run`` lines plan
  their whole grid and run nothing (``planning_only``), other subcommands run for real. Lines that
  need the shell (``$head``) and ``zslbench data`` (a download) are left out; ``console`` blocks are
  transcripts of commands that need what a test cannot have (images, TV-GZSL's files, OpenCLIP).
- Every ``./setup MODE`` line names a mode that ``./setup`` has.
- The plugin guide's complete plugin runs its model and dataset through the command line, and the
  model passes ``check_model``.

The code is read from the pages themselves, so the docs cannot drift from what works.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import invoke_main, run_cli
from zslbench.testing import check_model

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]


def _name(page: Path) -> str:
    return str(page.relative_to(REPO))


def blocks(text: str, *languages: str) -> list[str]:
    """The fenced blocks of these languages that start a line (indented ones are not examples)."""
    pattern = r"^```(?:" + "|".join(languages) + r")\n(.*?)\n```"
    return re.findall(pattern, text, re.S | re.M)


def shell_commands(text: str, program: str = "zslbench") -> list[list[str]]:
    """Every ``PROGRAM ...`` line of the ``bash``/``sh`` blocks, as words (comments dropped,
    backslash continuations joined); lines that need the shell (``$head``) are left out."""
    out = []
    for block in blocks(text, "bash", "sh"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith(program + " ") and "$" not in line:
                out.append(shlex.split(line, comments=True))
    return out


def plugin_files(text: str) -> dict[str, str]:
    """The ``python`` blocks that say which file they are (``# my_zsl/plugin.py``)."""
    files = {}
    for code in blocks(text, "python"):
        first = code.splitlines()[0]
        if re.fullmatch(r"# [\w/]+\.py", first):
            files[first[2:]] = code
    return files


def _subcommand(words: list[str]) -> str:
    """``run`` in ``zslbench -p my_zsl.plugin run ...``."""
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] == "-p" else rest[1:]
    return rest[0] if rest else ""


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A folder like a clone's root (``configs/``, ``leaderboards/``) with the page's files."""
    (tmp_path / "configs").symlink_to(REPO / "configs")
    (tmp_path / "leaderboards").symlink_to(REPO / "leaderboards")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m == "my_zsl" or m.startswith("my_zsl.")]:
        del sys.modules[name]  # another page's my_zsl/plugin.py is another module


def _write_files(text: str, folder: Path) -> None:
    for rel, code in plugin_files(text).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(code + "\n")
    for name in [m for m in sys.modules if m == "my_zsl" or m.startswith("my_zsl.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


# -- every Python example ------------------------------------------------------------------------

PYTHON_PAGES = [p for p in PAGES if blocks(p.read_text(encoding="utf-8"), "python")]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=_name)
def test_every_python_example_runs(page, scratch):
    text = page.read_text(encoding="utf-8")
    _write_files(text, scratch)
    scope: dict = {"__name__": "docs_example"}
    for code in blocks(text, "python"):
        exec(compile(code, _name(page), "exec"), scope)  # noqa: S102 - our own docs
    for name, value in list(scope.items()):
        if name.startswith("test_") and callable(value) and not value.__code__.co_argcount:
            value()
    if "zslbench.run(" in text:  # two methods, one dataset, two seeds: a record each
        assert len(scope["records"]) == 4 and len(scope["runs"]) == 4, page


# -- every command line --------------------------------------------------------------------------


@pytest.fixture
def planning_only(monkeypatch):
    """``zslbench run`` resolves and checks its whole grid (methods, datasets, configs, --set,
    --sweep, seeds, executor; every hyperparameter, as a run does before loading data), then runs
    nothing: what a command would do, in milliseconds."""
    from zslbench import api
    from zslbench.prepare import prepare_grid

    planned = []

    def no_runs(request, registry, executor=None, on_event=None):
        prepare_grid(request, registry)  # an unknown or bad hyperparameter is refused here
        planned.append(request)
        return iter(())

    monkeypatch.setattr(api, "outcomes", no_runs)
    monkeypatch.setattr(api, "make_executor", lambda *a, **k: None)
    return planned


def _data_files(folder: Path) -> None:
    """``path/to/mine.npz`` and ``path/to/mine/``, the names the docs use for your own data."""
    from tests.plugins.test_npz import arrays, write_raw

    (folder / "path" / "to").mkdir(parents=True)
    write_raw(folder / "path" / "to" / "mine.npz", arrays())
    (folder / "path" / "to" / "mine").mkdir()  # the folder form: one <key>.npy per key
    for key, value in arrays().items():
        np.save(
            folder / "path" / "to" / "mine" / f"{key}.npy",
            np.asarray(value, dtype=str) if isinstance(value, list) else np.asarray(value),
        )


SHELL_PAGES = [p for p in PAGES if shell_commands(p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("page", SHELL_PAGES, ids=_name)
def test_every_command_line_works_as_written(page, scratch, monkeypatch, planning_only):
    text = page.read_text(encoding="utf-8")
    _write_files(text, scratch)
    _data_files(scratch)
    monkeypatch.setenv("ZSLBENCH_DATA", str(scratch / "no-real-data"))
    for words in shell_commands(text):
        command = _subcommand(words)
        if command == "data":
            continue  # the real data (a download); `zslbench data` has its own tests
        if command == "leaderboard" and "results" in words and "--check" not in words:
            continue  # renders the records a real run wrote: the README's own test below
        # the committed board's commands read it where it is; the others run in the scratch folder
        monkeypatch.chdir(REPO if "leaderboards/records" in words else scratch)
        before = len(planning_only)
        out = invoke_main(*words[1:])
        if out.exit_code == 2 and "--dataset all" in " ".join(words):  # real data not here
            lines = out.stderr.strip().splitlines()
            assert lines and all(
                "res101.mat" in ln or "att_splits.mat" in ln or "missing" in ln for ln in lines
            ), out.stderr
            continue
        assert out.exit_code == 0, (words, out.output)
        if command == "run":
            assert len(planning_only) == before + 1, words


def test_the_readme_first_command_then_its_board(scratch):
    """The README's first command for real (seconds), then its leaderboard command."""
    commands = shell_commands(README.read_text(encoding="utf-8"))
    assert commands[0] == ["zslbench", "run", "--method", "krr", "--dataset", "toy"]
    assert invoke_main(*commands[0][1:]).exit_code == 0
    board = next(w for w in commands if _subcommand(w) == "leaderboard")
    out = invoke_main(*board[1:])
    assert out.exit_code == 0, out.output
    assert (scratch / "results" / "leaderboard" / "index.html").is_file()


def test_every_setup_line_names_a_mode_of_the_script():
    modes = set(re.findall(r"^  \./setup (\w+)", _setup_help(), re.M))
    assert {"run", "test", "install"} <= modes
    for page in PAGES:
        for words in shell_commands(page.read_text(encoding="utf-8"), "./setup"):
            assert words[1] in modes, (page, words)


def _setup_help() -> str:
    proc = subprocess.run(
        ["sh", str(REPO / "setup"), "--help"], capture_output=True, text=True, check=True
    )
    return proc.stdout


def test_the_readme_gives_both_setup_commands():
    commands = shell_commands(README.read_text(encoding="utf-8"), "./setup")
    assert ["./setup", "run"] in commands and ["./setup", "test"] in commands
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "exec ./setup test" in ci  # CI runs exactly the README's test command


# -- the plugin guide's complete plugin ----------------------------------------------------------


def guide_plugin() -> str:
    files = plugin_files((REPO / "docs" / "plugins.md").read_text(encoding="utf-8"))
    assert "my_zsl/plugin.py" in files, "docs/plugins.md lost its complete plugin example"
    return files["my_zsl/plugin.py"]


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "guide_plugin.py").write_text(guide_plugin())
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("guide_plugin", None)
    return tmp_path


def test_the_guide_model_follows_the_contract(plugin):
    module = importlib.import_module("guide_plugin")
    check_model(module.MyESZSL())


def test_the_guide_plugin_runs_its_model_and_dataset_through_the_cli(plugin):
    env = {"PYTHONPATH": str(plugin)}
    res = plugin / "res"
    proc = run_cli(
        "-p",
        "guide_plugin",
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
    assert mine["config"]["components"]["model"]["plugin"] == "guide_plugin"
    assert set(mine["search"]["chosen"]) == {"gamma", "lam"}
    assert mine["metrics"]["A_T"] > 100 / 3  # 3 unseen classes: far above chance


# -- the board's Reproduce lines -----------------------------------------------------------------


@pytest.mark.parametrize("page", ["synthetic.md", "real.md"])
def test_the_boards_reproduce_lines_plan_exactly_the_runs_on_the_page(
    page, monkeypatch, planning_only
):
    """Each Reproduce command resolves as written, and together they cover every (dataset,
    method) that has records on the page's board, and nothing else."""
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
