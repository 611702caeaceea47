"""What ``zslbench run --dry-run`` says before running: the ETA from earlier records (issue 30)."""

from __future__ import annotations

from pathlib import Path

from tests.cli_helpers import invoke_main
from zslbench.planning import fmt_seconds
from zslbench.records import read_record, write_record


def test_an_eta_from_runs_on_a_busy_machine_is_given_marked_approximate(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        invoke_main("run", "--method", "krr", "--dataset", "toy", "--results-dir", "res").exit_code
        == 0
    )
    (path,) = (tmp_path / "res").glob("*.json")
    record = read_record(path)
    record.load = {**record.load, "oversubscribed": True, "wall_seconds": 42.0}
    write_record(tmp_path / "res", record)  # sealed again: the record of a run on a busy machine
    result = invoke_main(
        "run", "--method", "krr", "--dataset", "toy", "--results-dir", "res", "--force", "--dry-run"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"to run  toy · krr · r0 (seed {record.seed}): --force, ~{fmt_seconds(42.0)} (approximate: earlier runs "
        "on a busy machine)",
        f"1 run(s): 0 cached, 1 to run; ETA ~{fmt_seconds(42.0)} (approximate: 1 run(s) timed only on a busy "
        "machine)",
    ]
