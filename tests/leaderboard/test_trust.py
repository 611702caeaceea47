"""Regression tests for the "Trust" issue: what ``zslbench leaderboard`` reads, refuses and touches.

Each test here failed before its fix: invalid JSON crashed the command, a hand-edited record was
published (and passed ``--check``), files the leaderboard did not write were deleted or
overwritten, and the README's render command wrote over the committed board.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lb_factory import fake_render_figure, make_record, write_records

from tests.cli_helpers import invoke_main


@pytest.fixture(autouse=True)
def _no_drawing(monkeypatch) -> None:
    """These tests are about which files are read and written, not about pixels."""
    monkeypatch.setattr("zslbench.leaderboard.build.render_figure", fake_render_figure)


def _invoke(*args: str):
    return invoke_main("leaderboard", *args)


def _render(results: Path, out: Path, *extra: str):
    return _invoke("--results-dir", str(results), "--out", str(out), *extra)


def _errors(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("zslbench: error: ")]


def _two_runs(results: Path) -> list[Path]:
    return write_records(
        results,
        [
            make_record("toy", "gp", rep, metrics={"H": 30.0 + rep}, with_curve=False)
            for rep in range(2)
        ],
    )


# -- item 3: valid JSON that is not a record ---------------------------------------------------

NOT_RECORDS = {
    "five.json": (5, "holds a JSON int, not a record object"),
    "list.json": ([1], "holds a JSON list, not a record object"),
    "text.json": ("a string", "holds a JSON str, not a record object"),
}


def test_json_that_is_not_a_record_is_skipped_with_one_warning_each(tmp_path: Path) -> None:
    results = tmp_path / "res"
    good = _two_runs(results)
    for name, (value, _) in NOT_RECORDS.items():
        (results / name).write_text(json.dumps(value))
    raw = json.loads(good[0].read_text())
    no_metrics = {k: v for k, v in raw.items() if k != "metrics"}
    (results / "no-metrics.json").write_text(json.dumps(no_metrics))
    nan_h = dict(raw, metrics=dict(raw["metrics"], H="nan"))
    (results / "nan-h.json").write_text(json.dumps(nan_h))

    result = _render(results, tmp_path / "lb")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    expected = {name: reason for name, (_, reason) in NOT_RECORDS.items()}
    expected["no-metrics.json"] = "lacks metrics"
    expected["nan-h.json"] = "metric H is 'nan', not a finite number"
    assert len(warnings) == len(expected)
    for name, reason in expected.items():
        line = next(w for w in warnings if f"{(results / name).as_posix()}:" in w)
        assert (
            line
            == f"warning: {(results / name).as_posix()}: skipped, not a valid zslbench record: {reason}"
        )
    # The two valid runs are on the board.
    assert "2 records" in result.stdout
    assert "toy__gp__" in (tmp_path / "lb" / "synthetic.html").read_text()


# -- item 4: records edited by hand ------------------------------------------------------------


def _edit_metrics(raw: dict) -> None:
    raw["metrics"]["H"] = 99.0


def _edit_standard(raw: dict) -> None:
    raw["split"]["standard"] = not raw["split"]["standard"]


def _edit_schema(raw: dict) -> None:
    raw["schema"] = 1


@pytest.mark.parametrize(
    "edit, reason",
    [
        (_edit_metrics, "its content does not match its digest (edited or damaged)"),
        (_edit_standard, "its content does not match its digest (edited or damaged)"),
        (_edit_schema, "schema version 1, this zslbench reads 3"),
    ],
)
def test_edited_record_is_never_published_and_fails_check(
    tmp_path: Path, edit, reason: str
) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    paths = _two_runs(results)
    raw = json.loads(paths[1].read_text())
    edit(raw)
    paths[1].write_text(json.dumps(raw, indent=2))
    shown = paths[1].as_posix()

    # Plain rendering skips it, with one warning naming the file, and publishes the rest.
    result = _render(results, out)
    assert result.exit_code == 0, result.output
    assert (
        f"warning: {shown}: skipped, not a valid zslbench record: {reason}"
        in result.stderr.splitlines()
    )
    page = (out / "synthetic.html").read_text()
    assert paths[0].name in page and paths[1].name not in page and "99.0" not in page

    # The board is now exactly what the valid records render, yet --check must not pass it.
    check = _render(results, out, "--check")
    assert check.exit_code == 1, check.output
    assert (
        f"{shown}: refused, not a valid zslbench record ({reason}); a leaderboard is never "
        "built from it: re-run that record or delete it"
    ) in check.stdout.splitlines()


# -- item 1: only ever touch files it wrote itself ---------------------------------------------

FOREIGN_HINT = "pass --overwrite-foreign to write beside them"


def _rendered_board(tmp_path: Path) -> tuple[Path, Path]:
    results, out = tmp_path / "res", tmp_path / "lb"
    _two_runs(results)
    assert _render(results, out).exit_code == 0
    return results, out


def test_files_under_figures_it_did_not_draw_are_kept(tmp_path: Path) -> None:
    results, out = _rendered_board(tmp_path)
    mine = out / "figures" / "my-own-plot.png"
    mine.write_bytes(b"not zslbench's")
    result = _render(results, out)
    assert result.exit_code == 2 and mine.read_bytes() == b"not zslbench's"
    assert _errors(result) == [
        f"zslbench: error: {out.as_posix()}: holds 1 file(s) that zslbench leaderboard did not write "
        f"(figures/my-own-plot.png); it writes only into a new or empty directory or one it rendered "
        f"before — choose another --out, or {FOREIGN_HINT} (a file at a path the leaderboard writes "
        "is then replaced)"
    ]
    # With the flag it renders beside the file and still leaves it alone; a re-render too.
    for _ in range(2):
        assert _render(results, out, "--overwrite-foreign").exit_code == 0
        assert mine.read_bytes() == b"not zslbench's"


def test_a_foreign_manifest_deletes_nothing(tmp_path: Path) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    _two_runs(results)
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    (out / "manifest.json").write_text(json.dumps({"files": {"precious.txt": {}}}))
    result = _render(results, out)
    assert result.exit_code == 2 and FOREIGN_HINT in result.stderr
    assert len(_errors(result)) == 1 and "(manifest.json, precious.txt)" in _errors(result)[0]
    assert (out / "precious.txt").read_text() == "keep me"
    assert _render(results, out, "--overwrite-foreign").exit_code == 0
    assert (out / "precious.txt").read_text() == "keep me"
    manifest = json.loads((out / "manifest.json").read_text())
    assert (
        manifest["generator"] == "zslbench leaderboard" and "precious.txt" not in manifest["files"]
    )


def test_out_dot_in_a_clone_never_overwrites_its_readme(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    _two_runs(clone / "results")
    (clone / "README.md").write_text("# my project\n")
    (clone / "pyproject.toml").write_text("[project]\n")
    result = _render(clone / "results", clone)
    assert result.exit_code == 2 and FOREIGN_HINT in result.stderr
    assert (clone / "README.md").read_text() == "# my project\n"
    assert not (clone / "index.html").exists() and not (clone / "manifest.json").exists()


def test_stale_files_it_wrote_are_removed_and_check_names_foreign_ones(tmp_path: Path) -> None:
    results, out = _rendered_board(tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["generator"] == "zslbench leaderboard"
    figure = out / "figures" / "synthetic-h-vs-time.png"
    assert "figures/synthetic-h-vs-time.png" in manifest["files"] and figure.is_file()
    (out / "notes.txt").write_text("mine")
    check = _render(results, out, "--check")
    assert check.exit_code == 1
    assert (
        f"{(out / 'notes.txt').as_posix()}: not written by zslbench leaderboard (a render refuses "
        "this --out unless --overwrite-foreign)"
    ) in check.stdout.splitlines()
    # The records of one run are gone: its figure (written by the leaderboard) goes, notes.txt stays.
    for path in results.glob("*.json"):
        path.unlink()
    assert _render(results, out, "--overwrite-foreign").exit_code == 0
    assert not figure.exists() and (out / "notes.txt").read_text() == "mine"


# -- item 2: a user's results and the committed board never share a default path ---------------


def test_default_out_lives_in_the_results_dir_and_renders_twice(
    tmp_path: Path, monkeypatch
) -> None:
    clone = tmp_path / "clone"
    committed = clone / "leaderboards"
    committed.mkdir(parents=True)
    (committed / "README.md").write_text("committed board\n")
    _two_runs(clone / "results")
    monkeypatch.chdir(clone)
    for attempt in range(2):
        result = _invoke("--results-dir", "results")
        assert result.exit_code == 0, result.output
        # The leaderboard's own output (manifest.json included) is never read as a record.
        assert "warning" not in result.stderr, result.stderr
        assert "(2 records)" in result.stdout
        if attempt:
            assert result.stdout.startswith("results/leaderboard: 0 of ")
    assert (clone / "results" / "leaderboard" / "index.html").is_file()
    assert sorted(p.name for p in committed.iterdir()) == ["README.md"]
    assert (committed / "README.md").read_text() == "committed board\n"
    check = _invoke("--results-dir", "results", "--check")
    assert check.exit_code == 0, check.output
    # A second board rendered elsewhere inside the results dir does not read the first one either.
    other = _invoke("--results-dir", "results", "--out", "results/by-hand")
    assert other.exit_code == 0 and "warning" not in other.stderr and "(2 records)" in other.stdout


def test_a_board_inside_the_results_dir_still_refuses_foreign_files(tmp_path: Path) -> None:
    results = tmp_path / "res"
    _two_runs(results)
    out = results / "leaderboard"
    assert _render(results, out).exit_code == 0
    (out / "figures" / "mine.png").write_bytes(b"mine")
    result = _render(results, out)
    assert result.exit_code == 2 and "(figures/mine.png)" in _errors(result)[0]
    # Records and board in one folder: the records are inputs, anything else is still foreign.
    same = tmp_path / "same"
    _two_runs(same)
    assert _render(same, same).exit_code == 0
    assert _render(same, same).stdout.startswith(f"{same.as_posix()}: 0 of ")
    (same / "notes.txt").write_text("mine")
    assert "(notes.txt)" in _errors(_render(same, same))[0]


def test_many_foreign_files_are_one_line_naming_three_and_more_than_3(tmp_path: Path) -> None:
    """An --out holding three foreign files names all three; one holding forty (the walk stops
    after the fourth, so a big folder is not walked to the end) names three and says "more than
    3". Nothing of them is touched."""
    results, out = tmp_path / "res", tmp_path / "lb"
    _two_runs(results)
    for i in range(3):
        (out / f"d{i}").mkdir(parents=True)
        (out / f"d{i}" / "note.txt").write_text("mine")
    three = _errors(_render(results, out))
    assert len(three) == 1 and "holds 3 file(s)" in three[0]
    assert "(d0/note.txt, d1/note.txt, d2/note.txt)" in three[0]
    for i in range(3, 40):
        (out / f"d{i}").mkdir()
        (out / f"d{i}" / "note.txt").write_text("mine")
    many = _errors(_render(results, out))
    assert len(many) == 1 and "holds more than 3 file(s)" in many[0]
    assert "(d0/note.txt, d1/note.txt, d10/note.txt, ...)" in many[0]
    assert all((out / f"d{i}" / "note.txt").read_text() == "mine" for i in range(40))
