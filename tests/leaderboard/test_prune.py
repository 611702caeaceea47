"""``zslbench leaderboard prune``: lists the records the current code would re-run, removes them
only with --yes, and never touches a file that is not an intact record (issue 30 item 4)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tests.cli_helpers import invoke_main
from zslbench.data.synthetic import generate
from zslbench_plugins import npz
from zslbench_plugins.synthetic import SHAPES


def test_prune_lists_stale_records_and_removes_them_only_with_yes(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    toy = generate(SHAPES["toy"])
    npz.save_dataset(toy, tmp_path / "data" / "mine.npz")
    for dataset, seeds in (("data/mine.npz", "2"), ("toy", "1")):
        result = invoke_main(
            "run", "--method", "krr", "--dataset", dataset, "--seeds", seeds, "--results-dir", "res"
        )
        assert result.exit_code == 0, result.output
    records = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "res").glob("*.json"))
    mine = [r for r in records if r.startswith("res/mine__")]
    assert len(records) == 3 and len(mine) == 2
    (tmp_path / "res" / "notes.json").write_text('{"not": "a record"}')
    # The file changes: its two runs now have other data, so `run` would re-run them.
    toy.features = np.ascontiguousarray(toy.features[:, ::-1])
    npz.save_dataset(toy, tmp_path / "data" / "mine.npz")

    result = invoke_main("leaderboard", "prune", "--results-dir", "res")
    assert result.exit_code == 0, result.output
    old_fp = mine[0].split("__")[3][:8]
    why = re.compile(rf"\(data changed \(fingerprint {old_fp} -> [0-9a-f]{{8}}\)\)")
    lines = result.stdout.splitlines()
    assert [line.split(" (", 1)[0] for line in lines[:2]] == [f"would remove {r}" for r in mine]
    assert all(why.fullmatch(line.split(" ", 2)[2].split(" ", 1)[1]) for line in lines[:2]), lines
    assert lines[2:] == [
        "2 of 3 record(s) would be re-run by the current code; nothing removed: pass --yes to "
        "remove them"
    ]
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == sorted(
        [Path(r).name for r in records] + ["notes.json"]
    )

    result = invoke_main("leaderboard", "prune", "--results-dir", "res", "--yes")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split(" (", 1)[0] for line in lines[:2]] == [f"removed {r}" for r in mine]
    assert lines[2:] == [
        "removed 2 stale record(s); 1 current — re-render the board: zslbench leaderboard "
        "--results-dir res"
    ]
    left = sorted(p.name for p in (tmp_path / "res").iterdir())
    assert left == sorted([Path(r).name for r in records if r not in mine] + ["notes.json"])
    # What is left is current: nothing to prune.
    result = invoke_main("leaderboard", "prune", "--results-dir", "res")
    assert result.stdout.splitlines() == ["0 of 1 record(s) would be re-run by the current code"]
