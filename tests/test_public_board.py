"""Third-party methods onto the public board (issue 16 item 10): the leaderboard workflow's steps
(``zslbench board install``, ``run``, then the render) on a tiny plugin package
(tests/board_plugin) installed by pip from a path requirement, into a scratch folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import invoke_main
from zslbench.board import BOARD_DIR, load_plugins
from zslbench.errors import ConfigError
from zslbench.leaderboard.manifest import PLUGINS_NAME

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "tests" / "board_plugin"
WORKFLOW = REPO / ".github" / "workflows" / "leaderboard.yml"


def board(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zslbench", "board", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def board_here(*args: str) -> subprocess.CompletedProcess[str]:
    """``zslbench board ARGS`` in this process (``tests/cli_helpers.py``), for the steps that need
    no plugin installed: a console-script process pays some 2-4 s of imports each time."""
    res = invoke_main("board", *args)
    return subprocess.CompletedProcess(
        ["zslbench", "board", *args], res.exit_code, res.stdout, res.stderr
    )


def test_the_committed_plugin_list_reads_and_the_workflow_runs_it():
    load_plugins(REPO / BOARD_DIR / PLUGINS_NAME)
    flat = " ".join(WORKFLOW.read_text().split())
    install, run = flat.index("zslbench board install"), flat.index("zslbench board run")
    assert (
        install
        < run
        < flat.index("zslbench leaderboard --results-dir leaderboards/records --out leaderboards")
    )


@pytest.mark.parametrize(
    "text, needle",
    [
        ('[[plugin]]\nname = "x"\nrequirement = "x==1"\n', "exactly the keys"),
        (
            '[[plugin]]\nname = "x"\nrequirement = "--index-url=evil"\nmethods = ["m"]\n',
            "requirement",
        ),
        (
            '[[plugin]]\nname = "x y"\nrequirement = "x==1"\nmethods = ["m"]\n',
            "not a distribution name",
        ),
        ('[[plugin]]\nname = "x"\nrequirement = "x==1"\nmethods = []\n', "methods must list"),
        ("plugins = []\n", "unknown key"),
    ],
)
def test_a_bad_entry_is_one_line_naming_it(tmp_path, text, needle):
    path = tmp_path / "plugins.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle) as info:
        load_plugins(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_plugins_file_that_is_not_utf8_is_one_line(tmp_path):
    """Issue 27 item 4: a UnicodeDecodeError traceback before."""
    path = tmp_path / "plugins.toml"
    path.write_bytes(b'[[plugin]]\nname = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="not UTF-8 text") as info:
        load_plugins(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    proc = board_here("run", "--plugins", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"zslbench: error: {path}: not UTF-8 text (byte 22) — save it as UTF-8"
    ]


def test_an_entry_named_zslbench_cannot_list_a_built_in(tmp_path):
    """Issue 27 item 6: ``name = "zslbench"`` passed the distribution check for ``krr``."""
    path = tmp_path / "plugins.toml"
    path.write_text('[[plugin]]\nname = "ZSLBench"\nrequirement = "zslbench"\nmethods = ["krr"]\n')
    with pytest.raises(ConfigError, match="is zslbench itself") as info:
        load_plugins(path)
    assert str(path) in str(info.value)
    from zslbench.board import BoardPlugin, run

    with pytest.raises(ConfigError, match="'krr'"):  # and run refuses it too, whatever the file
        run([BoardPlugin("zslbench", "zslbench", ("krr",))], results_dir=tmp_path / "res")
    assert not (tmp_path / "res").exists()


def test_board_run_names_the_registry_problem_of_a_refused_method(tmp_path, monkeypatch):
    """Issue 27 item 5: only "unknown method" before; ``zslbench list`` said why."""
    from zslbench import registry as registry_mod
    from zslbench.board import BoardPlugin, run

    real = registry_mod.load_registry

    def with_problem(*args, **kwargs):
        reg = real(*args, **kwargs)
        reg.problems.append(
            "plugin 'demo' (zsl-demo) registers method 'x/y', whose name contains a "
            "path separator ('/' or '\\'): ignoring it (rename it)"
        )
        return reg

    monkeypatch.setattr(registry_mod, "load_registry", with_problem)
    with pytest.raises(ConfigError) as info:
        run([BoardPlugin("zsl-demo", "zsl-demo==1", ("x/y",))], results_dir=tmp_path / "res")
    message = info.value.one_line()
    assert "zsl-demo lists method 'x/y', which is not registered" in message
    assert "whose name contains a path separator" in message and "\n" not in message


def test_a_listed_plugin_goes_from_pip_install_to_the_rendered_board(tmp_path, monkeypatch):
    site, records = tmp_path / "site", tmp_path / "records"
    demo = shutil.copytree(DEMO, tmp_path / "demo")  # a build leaves files beside the source
    listing = tmp_path / "plugins.toml"
    listing.write_text(
        f'[[plugin]]\nname = "zslbench-board-demo"\nrequirement = "{demo.as_posix()}"\n'
        'methods = ["board-demo"]\n'
    )
    # pip installs into a scratch folder (never this environment), without the network
    pip_env = {
        "PIP_TARGET": str(site),
        "PIP_NO_DEPS": "1",
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    for name, value in pip_env.items():
        monkeypatch.setenv(name, value)
    proc = board_here("install", "--plugins", str(listing))
    assert proc.returncode == 0, proc.stderr
    assert (site / "zsl_board_demo").is_dir()

    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = board(
        "run",
        "--plugins",
        str(listing),
        "--dataset",
        "toy",
        "--seeds",
        "1",
        "--results-dir",
        str(records / "synthetic"),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    (path,) = (records / "synthetic").glob("*.json")
    rec = json.loads(path.read_text())
    assert rec["method"] == "board-demo"
    assert rec["config"]["method_distribution"] == {
        "distribution": "zslbench-board-demo",
        "version": "0.3.1",
    }
    assert "distribution" not in rec["config"]["components"]["regressor"]  # krr is a built-in

    # the job that may write takes them on as data, without the plugin installed
    taken = tmp_path / "board" / "synthetic"
    proc = board_here(
        "accept",
        "--plugins",
        str(listing),
        "--from",
        str(records / "synthetic"),
        "--results-dir",
        str(taken),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"1 record(s) taken into {taken}, 0 refused"
    assert (taken / path.name).read_bytes() == path.read_bytes()

    proc = board_here("render", "--results-dir", str(records), "--out", str(tmp_path / "lb"))
    assert proc.returncode == 0, proc.stderr
    assert "board-demo" in (tmp_path / "lb" / "synthetic.md").read_text()

    # an entry cannot list a method another distribution provides (here a built-in)
    listing.write_text(
        '[[plugin]]\nname = "zslbench-board-demo"\nrequirement = "x"\n'
        'methods = ["board-demo", "krr"]\n'
    )
    proc = board(
        "run",
        "--plugins",
        str(listing),
        "--dataset",
        "toy",
        "--results-dir",
        str(tmp_path / "other"),
        env=env,
    )
    assert proc.returncode == 2 and "'krr'" in proc.stderr and "zslbench provides" in proc.stderr
    assert not (tmp_path / "other").exists()


def test_accept_takes_only_valid_records_of_listed_methods_and_replaces_no_other(
    tmp_path, monkeypatch
):
    """Issue 27: the job that may write validates what the read-only job handed on."""
    import zslbench
    from zslbench.board import BoardPlugin, accept
    from zslbench.records import Record

    monkeypatch.syspath_prepend(str(DEMO))  # a third-party method (a built-in is refused)
    (rec,) = zslbench.run(
        methods="board-demo",
        datasets="toy",
        results_dir=tmp_path / "run",
        plugins=["zsl_board_demo"],
    )
    plugins = [BoardPlugin("zsl-x", "zsl-x==1", ("board-demo",))]
    art, board_dir = tmp_path / "artifact", tmp_path / "board"
    art.mkdir()

    def put(name: str, record: Record) -> Path:
        (art / name).write_text(
            Record(**{k: v for k, v in vars(record).items() if k != "digest"}).sealed().to_json()
        )
        return art / name

    good = Record(**vars(rec))
    good.config = {**rec.config, "method_distribution": {"distribution": "zsl-x", "version": "1"}}
    name = f"{rec.run_id}.json"
    put(name, good)
    written, refused = accept(plugins, art, board_dir)
    assert written == [board_dir / name] and refused == []
    assert accept(plugins, art, board_dir) == ([], [])  # the same file again: nothing to do

    (art / name).unlink()
    forged = Record(**vars(good))
    forged.key = "0" * 64
    cases = {
        "forged": (put(name, forged), "not a valid zslbench record: its key 000000000000 is not"),
        "renamed": (put("other.json", good), "is not named by its run id"),
        "notes": ((art / "x.txt"), "not a record file"),
    }
    (art / "x.txt").write_text("rm -rf /")
    written, refused = accept(plugins, art, board_dir)
    assert written == []
    for path, reason in cases.values():
        assert any(line.startswith(f"{path}: ") and reason in line for line in refused), refused
    assert len(refused) == 3

    for path in art.iterdir():
        path.unlink()
    put(name, rec)  # the listed method's record, run from no listed distribution
    (line,) = accept(plugins, art, tmp_path / "empty")[1]
    assert "method 'board-demo' was not run from zsl-x" in line
    (line,) = accept([BoardPlugin("zsl-y", "zsl-y==1", ("other",))], art, tmp_path / "empty")[1]
    assert "method 'board-demo' is not listed" in line
    assert not (tmp_path / "empty").exists()


def test_board_paths_come_from_the_board_folder(tmp_path, monkeypatch):
    """``zslbench board --dir DIR``: DIR/plugins.toml and DIR/records/synthetic, nothing of the
    repository's; without --dir, ./leaderboards of the current directory."""
    board_dir, artifact = tmp_path / "b", tmp_path / "artifact"
    artifact.mkdir()
    board_dir.mkdir()
    (board_dir / PLUGINS_NAME).write_text(
        '[[plugin]]\nname = "zsl-x"\nrequirement = "zsl-x==1"\nmethods = ["m"]\n'
    )
    proc = board_here("--dir", str(board_dir), "accept", "--from", str(artifact))
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip()
        == f"0 record(s) taken into {board_dir / 'records' / 'synthetic'}, 0 refused"
    )
    monkeypatch.chdir(tmp_path)
    proc = board_here("install")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"zslbench: error: {Path('leaderboards') / PLUGINS_NAME}: no such file — see zslbench/board.py for "
        "its format"
    ]
