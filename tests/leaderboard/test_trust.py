"""Regression tests for the "Trust" issue: what ``zslbench leaderboard`` reads, refuses and touches.

Each test here failed before its fix: invalid JSON crashed the command, a hand-edited record was
published (and passed ``--check``), files the leaderboard did not write were deleted or
overwritten, and the README's render command wrote over the committed board.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from lb_factory import make_record, write_records

from zslbench.leaderboard.cli import leaderboard


def _invoke(*args: str):
    return CliRunner().invoke(leaderboard, list(args))


def _render(results: Path, out: Path, *extra: str):
    return _invoke("--results-dir", str(results), "--out", str(out), *extra)


def _two_runs(results: Path) -> list[Path]:
    return write_records(results, [make_record("toy", "gp", rep, metrics={"H": 30.0 + rep}, with_curve=False)
                                   for rep in range(2)])


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
        assert line == f"warning: {(results / name).as_posix()}: skipped, not a valid zslbench record: {reason}"
    # The two valid runs are on the board.
    assert "2 records" in result.stdout
    assert "toy__gp__" in (tmp_path / "lb" / "synthetic.md").read_text()


# -- item 4: records edited by hand ------------------------------------------------------------

def _edit_metrics(raw: dict) -> None:
    raw["metrics"]["H"] = 99.0


def _edit_standard(raw: dict) -> None:
    raw["split"]["standard"] = not raw["split"]["standard"]


def _edit_schema(raw: dict) -> None:
    raw["schema"] = 1


@pytest.mark.parametrize("edit, reason", [
    (_edit_metrics, "its content does not match its digest (edited or damaged)"),
    (_edit_standard, "its content does not match its digest (edited or damaged)"),
    (_edit_schema, "schema version 1, this zslbench reads 2"),
])
def test_edited_record_is_never_published_and_fails_check(tmp_path: Path, edit, reason: str) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    paths = _two_runs(results)
    raw = json.loads(paths[1].read_text())
    edit(raw)
    paths[1].write_text(json.dumps(raw, indent=2))
    shown = paths[1].as_posix()

    # Plain rendering skips it, with one warning naming the file, and publishes the rest.
    result = _render(results, out)
    assert result.exit_code == 0, result.output
    assert f"warning: {shown}: skipped, not a valid zslbench record: {reason}" in result.stderr.splitlines()
    page = (out / "synthetic.md").read_text()
    assert paths[0].name in page and paths[1].name not in page and "99.0" not in page

    # The board is now exactly what the valid records render, yet --check must not pass it.
    check = _render(results, out, "--check")
    assert check.exit_code == 1, check.output
    assert (f"{shown}: refused, not a valid zslbench record ({reason}); a leaderboard is never "
            "built from it: re-run that record or delete it") in check.stdout.splitlines()
