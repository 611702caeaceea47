"""``zslbench leaderboard``: render leaderboards from records, or check the committed ones."""

from __future__ import annotations

from pathlib import Path

import click

from zslbench.leaderboard import check as check_mod
from zslbench.leaderboard.build import build
from zslbench.leaderboard.reported import DEFAULT_FILE, default_reported


@click.command("leaderboard")
@click.option("--results-dir", type=click.Path(path_type=Path, file_okay=False), default=Path("results"),
              show_default=True, help="Directory of result records (searched recursively).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Directory the leaderboard is written to [default: RESULTS_DIR/leaderboard]. The "
                   "committed board: --results-dir leaderboards/records --out leaderboards.")
@click.option("--reported", "reported_path", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              default=None, help=f"Curated reported-numbers file [default: OUT/{DEFAULT_FILE.as_posix()}, "
                                 f"else leaderboards/{DEFAULT_FILE.as_posix()} of the zslbench clone].")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 if the leaderboard in --out differs from what the records render.")
@click.option("--overwrite-foreign", is_flag=True,
              help="Write into an --out that holds files zslbench leaderboard did not write: they are left "
                   "alone, except a file at a path the leaderboard writes, which is replaced.")
@click.pass_context
def leaderboard(ctx: click.Context, results_dir: Path, out_dir: Path | None, reported_path: Path | None,
                check_only: bool, overwrite_foreign: bool) -> None:
    """Render Markdown, CSV, HTML and figures from the records alone, deterministically.

    It only ever replaces or deletes files it wrote itself (listed in OUT/manifest.json), and
    refuses an OUT holding other files unless --overwrite-foreign is given.

    Real-benchmark pages show measured rows and the paper's reported rows, each marked; runs on the
    embedded synthetic data go to their own, clearly titled pages.

    A JSON file under --results-dir that is not a valid, intact record (not a record at all, or
    edited since it was written, so that its digest no longer matches) is never published: a
    render skips it with a warning naming the file and goes on; --check fails on it.
    """
    if out_dir is None:
        out_dir = results_dir / "leaderboard"
    if reported_path is None:
        candidates = default_reported(out_dir)
        reported_path = next((c for c in candidates if c.is_file()), None)
        if reported_path is None:
            click.echo(f"note: no {' or '.join(c.as_posix() for c in candidates)}; rendering without reported "
                       "numbers (pass --reported FILE to include them)", err=True)
    # What the render reads, which may lie inside --out (the committed leaderboards/records and
    # leaderboards/reported): never counted as files in the way.
    inputs = [results_dir]
    if reported_path is not None:
        here = reported_path.parent.resolve() == out_dir.resolve()
        inputs.append(reported_path if here else reported_path.parent)
    # A UserError (a refused --out, ...) is printed by the one handler in zslbench.cli.main.
    if not (check_only or overwrite_foreign):  # refuse before the slow part (drawing)
        foreign = check_mod.foreign_files(out_dir, inputs, limit=4)
        if foreign:
            raise check_mod.refuse_foreign(out_dir, foreign)
    site = build(results_dir, out_dir, reported_path, draw=not check_only)
    if not check_only:
        for path, reason in site.refused:
            click.echo(f"warning: {path}: skipped, not a valid zslbench record: {reason}", err=True)
    if check_only:
        problems = check_mod.compare(site, out_dir, inputs, allow_foreign=overwrite_foreign)
        for line in problems:
            click.echo(line)
        if problems:
            click.echo(f"{out_dir.as_posix()}: not up to date ({len(problems)} problem(s) above) — fix "
                       f"each, re-render with `zslbench leaderboard --results-dir {results_dir.as_posix()} "
                       f"--out {out_dir.as_posix()}` and commit the result", err=True)
            ctx.exit(1)
        click.echo(f"{out_dir.as_posix()}: up to date ({len(site.artefacts)} files, {site.runs} records)")
        return
    written = check_mod.write(site, out_dir, inputs, overwrite_foreign=overwrite_foreign)
    click.echo(f"{out_dir.as_posix()}: {len(written)} of {len(site.artefacts)} files changed "
               f"({site.runs} records" + (f", {site.superseded} superseded" if site.superseded else "") + ")")
