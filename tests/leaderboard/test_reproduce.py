"""Every Reproduce line of a board, run as printed, finds its runs cached: a plugin's dataset by
name (with ``-p`` for a ``-p`` plugin), a file opened by its path, ``--set`` and ``--sweep`` runs
(issue 30 item 3)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from lb_factory import fake_render_figure

from tests.cli_helpers import invoke_main
from zslbench.data.synthetic import generate
from zslbench_plugins import npz
from zslbench_plugins.synthetic import SHAPES

PLUGIN = """
from pathlib import Path

from zslbench.hookspecs import hookimpl
from zslbench_plugins.npz import npz_dataset


@hookimpl
def zslbench_datasets():
    return [npz_dataset("blobs", Path(__file__).parent / "blobs.npz", description="blobs shipped in my_ncm")]
"""


def _commands(md: str) -> list[list[str]]:
    block = md.split("## Reproduce", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [shlex.split(line) for line in block.splitlines()]


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """A clone with a ``-p`` plugin that ships its dataset as an ``.npz`` in its package, and a
    file of the user's own."""
    package = tmp_path / "my_ncm"
    package.mkdir()
    (package / "__init__.py").write_text(PLUGIN)
    toy = generate(SHAPES["toy"])
    npz.save_dataset(toy, package / "blobs.npz")
    npz.save_dataset(toy, tmp_path / "data" / "mine.npz")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("zslbench.leaderboard.build.render_figure", fake_render_figure)
    yield tmp_path
    sys.modules.pop("my_ncm", None)


def test_every_reproduce_line_of_a_board_finds_its_runs_cached(project: Path) -> None:
    for args in (
        ["-p", "my_ncm", "run", "--method", "krr", "--dataset", "blobs", "--seeds", "2"],
        ["run", "--method", "krr", "--dataset", "data/mine.npz", "--seeds", "2"],
        ["run", "--method", "krr", "--dataset", "toy", "--set", "krr.width=2.0"],
        ["run", "--method", "krr", "--dataset", "toy", "--sweep", "krr.width=0.5,1"],
    ):
        result = invoke_main(*args, "--results-dir", "res")
        assert result.exit_code == 0, result.output
    result = invoke_main("leaderboard", "--results-dir", "res", "--out", "lb")
    assert result.exit_code == 0, result.output
    commands = [
        words
        for page in ("custom.md", "synthetic.md")
        for words in _commands((project / "lb" / page).read_text())
    ]
    datasets = {words[words.index("--dataset") + 1] for words in commands}
    assert datasets == {"blobs", "data/mine.npz", "toy"}
    blobs = next(words for words in commands if "blobs" in words)
    assert blobs[:4] == ["zslbench", "-p", "my_ncm", "run"]
    assert all(words[1] == "run" for words in commands if words is not blobs)
    planned = 0
    for words in commands:
        assert words[0] == "zslbench"
        result = invoke_main(*words[1:], "--dry-run")
        assert result.exit_code == 0, (words, result.output)
        lines = result.stdout.splitlines()
        runs = lines[:-1]
        assert runs and all(line.startswith("cached  ") for line in runs), (words, result.stdout)
        assert lines[-1] == f"{len(runs)} run(s): {len(runs)} cached, 0 to run"
        planned += len(runs)
    assert planned == 2 + 2 + 1 + 2


METHOD_PLUGIN = """
from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec
from zslbench_plugins.krr import KRRRegressor


class Ridge(KRRRegressor):
    name = "myridge"


@hookimpl
def zslbench_regressors():
    return [Ridge]


@hookimpl
def zslbench_methods():
    return [MethodSpec("ridge", model="prototype", components={"embedder": "identity", "regressor": "myridge"})]
"""


def test_the_reproduce_line_of_a_p_method_carries_p_and_runs_as_printed(
    tmp_path: Path, monkeypatch
) -> None:
    """Issue 41: a method a ``-p`` module registers got a line without ``-p`` (``unknown method``)."""
    # a name no other test imports: the docs' examples import a package ``my_zsl``
    (tmp_path / "zsl_reproduce_demo.py").write_text(METHOD_PLUGIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("zslbench.leaderboard.build.render_figure", fake_render_figure)
    try:
        args = ["-p", "zsl_reproduce_demo", "run", "--method", "krr,ridge", "--dataset", "toy"]
        result = invoke_main(*args, "--results-dir", "res")
        assert result.exit_code == 0, result.output
        result = invoke_main("leaderboard", "--results-dir", "res", "--out", "lb")
        assert result.exit_code == 0, result.output
        commands = _commands((tmp_path / "lb" / "synthetic.md").read_text())
        ridge = next(words for words in commands if "ridge" in words[words.index("--method") + 1])
        assert ridge[:4] == ["zslbench", "-p", "zsl_reproduce_demo", "run"]
        result = invoke_main(*ridge[1:], "--dry-run")
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[-1].endswith("cached, 0 to run"), result.stdout
        assert "ridge" in result.stdout
    finally:
        sys.modules.pop("zsl_reproduce_demo", None)
