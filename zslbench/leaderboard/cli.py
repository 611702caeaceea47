"""``zslbench leaderboard``: render leaderboards from records, or check the committed ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from zslbench.console import RESULTS_DIR, echo

# scipy.stats, pandas and matplotlib are imported inside the commands, so that `zslbench --help`
# stays fast (it imports this module to list the commands).


@click.group("leaderboard", invoke_without_command=True)
@RESULTS_DIR
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory the leaderboard is written to [default: RESULTS_DIR/leaderboard]. The "
    "committed board: --results-dir leaderboards/records --out leaderboards.",
)
@click.option(
    "--reported",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Curated reported-numbers file [default: the JSON file in OUT/reported/, else "
    "in leaderboards/reported/ of the current directory].",
)
@click.option(
    "--check",
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
def leaderboard(ctx: click.Context, results_dir: Path, out: Path | None, **options: Any) -> None:
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
    would re-run (:mod:`zslbench.prune_command`).
    """
    if ctx.invoked_subcommand is None:
        # options: reported, check, overwrite_foreign
        render_board(results_dir, out or results_dir / "leaderboard", **options)


def render_board(
    results_dir: Path,
    out_dir: Path,
    reported: Path | None = None,
    *,
    check: bool = False,
    overwrite_foreign: bool = False,
) -> None:
    """``zslbench leaderboard``: render the board of ``results_dir`` into ``out_dir``, or with
    ``check`` compare it with what is there (``SystemExit(1)`` when it differs). A refused
    ``out_dir`` is a ``UserError``, printed by the one handler in ``zslbench.cli.main``."""
    from zslbench.leaderboard import check as check_mod
    from zslbench.leaderboard.build import build
    from zslbench.leaderboard.reported import find_reported

    if reported is None:
        reported = find_reported(out_dir)
        if reported is None:
            echo(
                "note: no reported-numbers file in OUT/reported/ or leaderboards/reported/; "
                "rendering without reported numbers (pass --reported FILE to include them)",
                err=True,
            )
    inputs = _inputs(results_dir, out_dir, reported)
    if not check:  # refuse before the slow part (drawing)
        check_mod.refuse_unsafe(out_dir, inputs, overwrite_foreign=overwrite_foreign)
    site = build(results_dir, out_dir, reported, draw=not check)
    for line in site.board.warnings:
        echo(f"warning: {line}", err=True)
    if check:
        problems = check_mod.compare(site, out_dir, inputs, allow_foreign=overwrite_foreign)
        for line in problems:
            echo(line)
        if problems:
            echo(
                f"{out_dir.as_posix()}: not up to date ({len(problems)} problem(s) above) — fix "
                f"each, re-render with `zslbench leaderboard --results-dir {results_dir.as_posix()} "
                f"--out {out_dir.as_posix()}` and commit the result",
                err=True,
            )
            raise SystemExit(1)
        echo(
            f"{out_dir.as_posix()}: up to date ({len(site.artefacts)} files, {site.board.runs} records)"
        )
        return
    for path, reason in site.board.refused:
        echo(f"warning: {path}: skipped, not a valid zslbench record: {reason}", err=True)
    written = check_mod.write(site, out_dir, inputs, overwrite_foreign=overwrite_foreign)
    superseded = f", {site.board.superseded} superseded" if site.board.superseded else ""
    changed = f"{len(written)} of {len(site.artefacts)} files changed"
    echo(f"{out_dir.as_posix()}: {changed} ({site.board.runs} records{superseded})")


def _inputs(results_dir: Path, out_dir: Path, reported: Path | None) -> list[Path]:
    """What the render reads, which may lie inside --out (the committed leaderboards/records and
    leaderboards/reported, the board's plugins.toml): never counted as files in the way."""
    from zslbench.leaderboard.manifest import PLUGINS_NAME

    inputs = [results_dir]
    if reported is not None:
        here = reported.parent.resolve() == out_dir.resolve()
        inputs.append(reported if here else reported.parent)
    if (out_dir / PLUGINS_NAME).is_file():
        inputs.append(out_dir / PLUGINS_NAME)
    return inputs
