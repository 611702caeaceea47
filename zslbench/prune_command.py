"""``zslbench leaderboard prune``: the records of a results folder that the current code would
re-run. An operation on the results folder (:mod:`zslbench.records.prune`), not on the board: it
plans runs, which the board never does; the command line lists it under ``leaderboard`` because
a board is re-rendered after it."""

from __future__ import annotations

from pathlib import Path

import click

from zslbench.console import RESULTS_DIR, echo


@click.command("prune")
@RESULTS_DIR
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder of the datasets' files [env ZSLBENCH_DATA].",
)
@click.option("--yes", is_flag=True, help="Remove the stale records (without it, only list them).")
@click.pass_context
def prune(ctx: click.Context, results_dir: Path, data_dir: Path | None, yes: bool) -> None:
    """List the records that the current code would re-run, and with --yes remove them.

    A record is stale when `zslbench run`, given the record's own configuration, would not take
    it from the cache (its code, data, protocol or configuration changed): its row shows numbers
    the code no longer produces. Each record is planned as `zslbench run --dry-run` plans it,
    loading its dataset. Only valid, intact zslbench records are removed, never a file reached
    through a link; a record that cannot be planned here (plugin not installed, data missing, a
    GPU run on a machine without one) is kept and listed. Re-render the board afterwards.
    """
    from zslbench.api import record_planner
    from zslbench.records import prune as prune_mod

    if not results_dir.is_dir():
        raise click.ClickException(f"--results-dir {results_dir.as_posix()} is not a folder")
    registry = ctx.find_root().obj.registry()
    report = prune_mod.stale_records(results_dir, record_planner(registry, results_dir, data_dir))
    kept: dict[str, list[Path]] = {}
    for path, why in report.unknown:
        kept.setdefault(why, []).append(path)
    for why, paths in kept.items():  # once per reason, not per record
        echo(f"kept {len(paths)} record(s) unchecked (e.g. {paths[0].as_posix()}): {why}")
    if not yes:
        for path, why in report.stale:
            echo(f"would remove {path.as_posix()} ({why})")
        total = len(report.stale) + report.current + len(report.unknown)
        echo(
            f"{len(report.stale)} of {total} record(s) would be re-run by the current code"
            + ("; nothing removed: pass --yes to remove them" if report.stale else "")
        )
        return
    removed = set(prune_mod.remove(results_dir, [p for p, _ in report.stale]))
    for path, why in report.stale:
        if path in removed:
            echo(f"removed {path.as_posix()} ({why})")
    echo(
        f"removed {len(removed)} stale record(s); {report.current} current"
        + (f", {len(report.unknown)} kept unchecked" if report.unknown else "")
        + (
            f" — re-render the board: zslbench leaderboard --results-dir {results_dir.as_posix()}"
            if removed
            else ""
        )
    )
