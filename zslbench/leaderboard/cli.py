"""``zslbench leaderboard`` (render leaderboards from records, or check the committed ones) and
``zslbench compare`` (is the difference between two methods real?)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from zslbench.console import terminal_text

# scipy.stats, pandas and matplotlib are imported inside the commands, so that `zslbench --help`
# stays fast (it imports this module to list the commands).


#: The option every command here reads its records from.
RESULTS_DIR = click.option(
    "--results-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("results"),
    show_default=True,
    help="Directory of result records (searched recursively).",
)


def _echo(text: str, err: bool = False) -> None:
    """``click.echo`` of text that may quote a record's fields: never an escape sequence."""
    click.echo(terminal_text(text), err=err)


@click.group("leaderboard", invoke_without_command=True)
@RESULTS_DIR
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Directory the leaderboard is written to [default: RESULTS_DIR/leaderboard]. The "
    "committed board: --results-dir leaderboards/records --out leaderboards.",
)
@click.option(
    "--reported",
    "reported_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="Curated reported-numbers file [default: the JSON file in OUT/reported/, else "
    "in leaderboards/reported/ of the current directory].",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; exit 1 if the leaderboard in --out differs from what the records render.",
)
@click.option(
    "--overwrite-foreign",
    is_flag=True,
    help="Write into an --out that holds files zslbench leaderboard did not write: they are left "
    "alone, except a file at a path the leaderboard writes, which is replaced.",
)
@click.pass_context
def leaderboard(
    ctx: click.Context,
    results_dir: Path,
    out_dir: Path | None,
    reported_path: Path | None,
    check_only: bool,
    overwrite_foreign: bool,
) -> None:
    """Render Markdown, CSV, HTML and figures from the records alone, deterministically.

    It only ever replaces or deletes files it wrote itself (listed in OUT/manifest.json), refuses
    an OUT holding other files unless --overwrite-foreign is given, never writes through a
    symbolic link, and writes every file to a temporary first, so that a failure changes nothing.

    Real-benchmark pages show measured rows and reported rows, each marked; runs on the embedded
    synthetic data go to their own, clearly titled pages. Bold marks the best and every method not
    significantly worse (a t-test over seeds, named on the page).

    A JSON file under --results-dir that is not a valid, intact record (not a record at all,
    damaged, or edited since it was written) is never published: a render skips it with a warning
    naming the file and goes on; --check fails on it.

    `zslbench leaderboard prune` lists (and with --yes removes) the records that the current code
    would re-run.
    """
    if ctx.invoked_subcommand is None:
        render_board(
            results_dir,
            out_dir or results_dir / "leaderboard",
            reported_path,
            check_only=check_only,
            overwrite_foreign=overwrite_foreign,
        )


def render_board(
    results_dir: Path,
    out_dir: Path,
    reported_path: Path | None = None,
    *,
    check_only: bool = False,
    overwrite_foreign: bool = False,
) -> None:
    """``zslbench leaderboard``: render the board of ``results_dir`` into ``out_dir``, or with
    ``check_only`` compare it with what is there (``SystemExit(1)`` when it differs). A refused
    ``out_dir`` is a ``UserError``, printed by the one handler in ``zslbench.cli.main``."""
    from zslbench.leaderboard import check as check_mod
    from zslbench.leaderboard.build import build
    from zslbench.leaderboard.reported import find_reported

    if reported_path is None:
        reported_path = find_reported(out_dir)
        if reported_path is None:
            _echo(
                "note: no reported-numbers file in OUT/reported/ or leaderboards/reported/; "
                "rendering without reported numbers (pass --reported FILE to include them)",
                err=True,
            )
    inputs = _inputs(results_dir, out_dir, reported_path)
    if not check_only:  # refuse before the slow part (drawing)
        check_mod.refuse_unsafe(out_dir, inputs, overwrite_foreign=overwrite_foreign)
    site = build(results_dir, out_dir, reported_path, draw=not check_only)
    for line in site.board.warnings:
        _echo(f"warning: {line}", err=True)
    if check_only:
        _check(site, results_dir, out_dir, inputs, overwrite_foreign)
        return
    for path, reason in site.refused:
        _echo(f"warning: {path}: skipped, not a valid zslbench record: {reason}", err=True)
    written = check_mod.write(site, out_dir, inputs, overwrite_foreign=overwrite_foreign)
    _echo(
        f"{out_dir.as_posix()}: {len(written)} of {len(site.artefacts)} files changed "
        f"({site.board.runs} records"
        + (f", {site.board.superseded} superseded" if site.board.superseded else "")
        + ")"
    )


def _inputs(results_dir: Path, out_dir: Path, reported_path: Path | None) -> list[Path]:
    """What the render reads, which may lie inside --out (the committed leaderboards/records and
    leaderboards/reported, the board's plugins.toml): never counted as files in the way."""
    from zslbench.leaderboard.manifest import PLUGINS_NAME

    inputs = [results_dir]
    if reported_path is not None:
        here = reported_path.parent.resolve() == out_dir.resolve()
        inputs.append(reported_path if here else reported_path.parent)
    if (out_dir / PLUGINS_NAME).is_file():
        inputs.append(out_dir / PLUGINS_NAME)
    return inputs


def _check(
    site: Any, results_dir: Path, out_dir: Path, inputs: list[Path], allow_foreign: bool
) -> None:
    """``--check``: one line per problem and ``SystemExit(1)``, or one line saying it is current."""
    from zslbench.leaderboard import check as check_mod

    problems = check_mod.compare(site, out_dir, inputs, allow_foreign=allow_foreign)
    for line in problems:
        _echo(line)
    if problems:
        _echo(
            f"{out_dir.as_posix()}: not up to date ({len(problems)} problem(s) above) — fix "
            f"each, re-render with `zslbench leaderboard --results-dir {results_dir.as_posix()} "
            f"--out {out_dir.as_posix()}` and commit the result",
            err=True,
        )
        raise SystemExit(1)
    _echo(
        f"{out_dir.as_posix()}: up to date ({len(site.artefacts)} files, {site.board.runs} records)"
    )


@leaderboard.command("prune")
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
    from zslbench.leaderboard import prune as prune_mod

    if not results_dir.is_dir():
        raise click.ClickException(f"--results-dir {results_dir.as_posix()} is not a folder")
    registry = ctx.find_root().obj.registry()
    report = prune_mod.stale_records(results_dir, registry, data_dir)
    kept: dict[str, list[Path]] = {}
    for path, why in report.unknown:
        kept.setdefault(why, []).append(path)
    for why, paths in kept.items():  # once per reason, not per record
        _echo(f"kept {len(paths)} record(s) unchecked (e.g. {paths[0].as_posix()}): {why}")
    if not yes:
        for path, why in report.stale:
            _echo(f"would remove {path.as_posix()} ({why})")
        total = len(report.stale) + report.current + len(report.unknown)
        _echo(
            f"{len(report.stale)} of {total} record(s) would be re-run by the current code"
            + ("; nothing removed: pass --yes to remove them" if report.stale else "")
        )
        return
    removed = set(prune_mod.remove(results_dir, [p for p, _ in report.stale]))
    for path, why in report.stale:
        if path in removed:
            _echo(f"removed {path.as_posix()} ({why})")
    _echo(
        f"removed {len(removed)} stale record(s); {report.current} current"
        + (f", {len(report.unknown)} kept unchecked" if report.unknown else "")
        + (
            f" — re-render the board: zslbench leaderboard --results-dir {results_dir.as_posix()}"
            if removed
            else ""
        )
    )


def _num(value: float, sign: bool = False) -> str:
    return "–" if not math.isfinite(value) else (f"{value:+.2f}" if sign else f"{value:.2f}")


@click.command("compare")
@click.argument("method_a", metavar="CONFIG_A")
@click.argument("method_b", metavar="CONFIG_B")
@click.option("-d", "--dataset", required=True, help="The dataset both methods ran on.")
@RESULTS_DIR
def compare(method_a: str, method_b: str, dataset: str, results_dir: Path) -> None:
    """Is CONFIG_A really better than CONFIG_B on a dataset? The mean difference A - B of H, A_T
    and AUSUC over seeds, with its 95% confidence interval and the two-sided p-value of a t-test:
    paired by seed when both ran the same seeds, Welch's test when the seeds do not pair up.

    \b
    A configuration is a method (its default configuration: no --set, not swept) or
    METHOD[PARAM=VALUE,...] (the runs that set exactly these --set or --sweep values), e.g.
      zslbench compare 'bt-gp[embedder.margin=1]' 'bt-gp[embedder.margin=4]' --dataset toy
    When nothing matches, it lists the configurations with records there."""
    from zslbench import stats
    from zslbench.leaderboard.collect import TESTED_METRICS, comparison_sides, dedupe, load_runs

    runs, refused = load_runs(results_dir, link_base=results_dir)
    for path, reason in refused:
        _echo(f"warning: {path}: skipped, not a valid zslbench record: {reason}", err=True)
    kept, _ = dedupe(runs)
    a, b, fp = comparison_sides(kept, method_a, method_b, dataset)
    _echo(
        f"{method_a} vs {method_b} on {dataset} (data {fp[:8]}; records in {results_dir.as_posix()})"
    )
    for side in (a, b):
        _echo(_side_line(side))
    diffs = {m: stats.compare_runs(a.samples[m], b.samples[m]) for m in TESTED_METRICS}
    test = next((d.test for d in diffs.values() if d is not None), "no test possible")
    _echo(f"  seeds: {stats.pairing(a.samples['H'], b.samples['H'])[1]}; {test}")
    width = max(len(method_a), len(method_b), 14) + 13
    _echo(
        f"  {'metric':<7} {method_a + ' (mean ± std)':>{width}} {method_b + ' (mean ± std)':>{width}} "
        f"{'A - B':>7} {'95% CI':>17} {'p':>8}"
    )
    seeds, _ = stats.pairing(a.samples["H"], b.samples["H"])
    if seeds and len(seeds) < max(len(a.seeds), len(b.seeds)):
        _echo(f"  means over the {len(seeds)} paired seeds, as A - B")
    for m in TESTED_METRICS:
        _echo(_metric_line(m, a.samples[m], b.samples[m], diffs[m], width))
    h = diffs["H"]
    if h is not None:
        _echo(
            f"  {'a' if h.p < stats.ALPHA else 'no'} significant difference in H at α = {stats.ALPHA} "
            "(two-sided; one comparison, so no multiplicity correction)"
        )


def _side_line(side: Any) -> str:
    extra = [f"overrides {side.overrides}"] if side.overrides else []
    extra += [side.schedule] if side.schedule else []
    extra += [f"{side.others} other configuration(s) not compared"] if side.others else []
    return (
        f"  {side.spec}: config {side.config_id[:8]} on {side.device_type}, {len(side.seeds)} run(s), "
        f"seeds {', '.join(map(str, side.seeds))}" + (f" ({'; '.join(extra)})" if extra else "")
    )


def _metric_line(m: str, a: Any, b: Any, d: Any, width: int) -> str:
    from zslbench import stats

    ia, ib = (stats.t_interval(values) for values in stats.compared_values(a, b))
    if d is None:
        tail = f"{_num(ia.mean - ib.mean, sign=True):>7} {'–':>17} {'–':>8}  (too few runs to test)"
    else:
        tail = f"{_num(d.mean, sign=True):>7} {f'[{_num(d.low, sign=True)}, {_num(d.high, sign=True)}]':>17} {d.p:>8.4f}"
    return (
        f"  {m:<7} {f'{_num(ia.mean)} ± {_num(ia.std)}':>{width}} {f'{_num(ib.mean)} ± {_num(ib.std)}':>{width}} "
        f"{tail}"
    )
