"""``reproducibility.md``: which methods gave the same numbers when their runs were made again on
another machine (``zslbench run --recheck``, :mod:`zslbench.records.rechecks`), and how far the others
moved. Written only when the results dir holds rechecks."""

from __future__ import annotations

from pathlib import Path

from zslbench.leaderboard.markup import md_escape
from zslbench.records import rechecks

FILE = "reproducibility.md"


def page(results_dir: Path, warnings: list[str] | None = None) -> str | None:
    """The page's Markdown, or None when no run under ``results_dir`` was rechecked; a malformed
    ``.rechecks`` file is skipped, with a line naming it added to ``warnings``."""
    entries, refused = rechecks.read_all(Path(results_dir))
    if warnings is not None:
        warnings += [
            f"{p.as_posix()}: skipped, not a valid rechecks file: {why}" for p, why in refused
        ]
    rows = rechecks.summary(entries)
    if not rows:
        return None
    lines = [
        "# The same runs on other machines",
        "",
        "A record is keyed by what the run computes, not by the machine, so the board gathers "
        "records from many machines. `zslbench run ... --recheck` made some of them again on "
        "another machine and kept the records as they were; this table says, per method, how many "
        "of those rechecks gave bit-identical numbers (metrics and gamma), how many identical "
        "metrics (gamma, a float32 threshold, can differ in its last bits), and how far the others "
        "moved (percentage points). A method trained by many small steps can land elsewhere when another CPU, BLAS "
        "kernel or thread count rounds one product otherwise: its seed-to-seed spread on the "
        "board is the scale to read such a move against.",
        "",
        "| method | rechecks | bit-identical | metrics identical | largest move of H "
        "| largest move of any metric | machines |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        machines = "; ".join(md_escape(m) for m in r["machines"])
        counts = f"{r['rechecks']} | {r['bit_identical']} | {r['metrics_identical']}"
        moves = f"{r['max_abs_dH']:.2f} | {r['max_abs_d']:.2f}"
        lines.append(f"| {md_escape(r['method'])} | {counts} | {moves} | {machines} |")
    return "\n".join(lines) + "\n"
