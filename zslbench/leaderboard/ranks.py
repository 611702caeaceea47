"""Across datasets: average ranks, Friedman's test and the Nemenyi critical difference.

The view benchmark papers use to compare several methods over several datasets (Demšar, JMLR 7,
2006): rank the methods on each dataset by mean H (1 = best, ties share the mean rank), average
the ranks, test with Friedman's χ²_F (and Iman–Davenport's F_F) whether they differ at all, and
draw a critical-difference diagram: two methods whose average ranks differ by less than the
Nemenyi CD are not significantly different.

The test needs a complete table, every method on every dataset. The block is chosen from the
page's H table: its comparable measured rows (standard split, compared data version, full
schedule unless every row is reduced), the datasets where at least two of them ran, then the rows
that ran on all of those datasets; while fewer than two rows remain, the dataset with the fewest
rows is dropped. Every row left out is named with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from zslbench import stats
from zslbench.leaderboard.tables import Cell, Column, Row, Table

METRIC = "H"


@dataclass
class Ranking:
    """The result on one page: who was ranked on which datasets, and the tests."""

    metric: str
    datasets: list[str]
    rows: list[Row]  # in rank order, best first
    ranks: list[float]
    per_dataset: list[list[float]]  # ranks[row][dataset]
    friedman: stats.Friedman
    cd: float
    alpha: float
    cliques: list[tuple[int, int]]
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (row label, why)

    @property
    def significant(self) -> bool:
        return self.friedman.p_f < self.alpha

    def table(self, kind: str) -> Table:
        columns = [Column("rank", "average rank", higher_better=False, descriptive=True)]
        columns += [Column(f"r:{d}", d, "rank on", False, descriptive=True) for d in self.datasets]
        out_rows = []
        for row, rank, ranks in zip(self.rows, self.ranks, self.per_dataset, strict=True):
            cells = {
                f"r:{d}": Cell(r, decimals=1) for d, r in zip(self.datasets, ranks, strict=True)
            }
            # a measured row (ranked rows are comparable), its own cells, no note
            cells = {"rank": Cell(rank, decimals=2), **cells}
            out_rows.append(replace(row, cells=cells, excluded=[], note=""))
        title = f"Average ranks across datasets ({self.metric})"
        return Table(f"{kind}-ranks", "ranks", title, columns, out_rows, show_source=False)


def _block(h_table: Table) -> tuple[list[Row], list[Column], list[Row]]:
    """The pool (the comparable measured rows, of the full schedule unless every one is reduced)
    and the complete block to rank: the datasets where at least two rows of the pool ran, then the
    rows that ran on all of them; while fewer than two rows remain, the dataset with the fewest
    rows is dropped."""
    pool = [r for r in h_table.rows if r.comparable]
    pool = [r for r in pool if r.schedule != "reduced"] or pool

    def has(row: Row, column: Column) -> bool:
        return not h_table.cell(row, column).missing

    def count(column: Column) -> int:
        return sum(has(r, column) for r in pool)

    datasets = [c for c in h_table.columns if c.title == METRIC and count(c) >= 2]
    while True:
        rows = [r for r in pool if all(has(r, c) for c in datasets)]
        if len(rows) >= 2 or len(datasets) <= 1:
            return pool, datasets, rows
        datasets.remove(min(datasets, key=lambda c: (count(c), c.group)))


def rank_methods(h_table: Table, alpha: float = stats.ALPHA) -> tuple[Ranking | None, str]:
    """The ranking of the rows of a page's H table, or None and the reason it cannot be made."""
    pool, datasets, rows = _block(h_table)
    if len(datasets) < 2 or len(rows) < 3:
        return None, (
            f"needs at least 3 methods that ran on the same 2 or more datasets (here {len(rows)} on "
            f"{len(datasets)})"
        )
    left_out = [
        (r.label, ", ".join(r.excluded) or "reduced schedule")
        for r in h_table.rows
        if r.source == "measured" and r not in pool
    ]
    left_out += [(r.label, "not run on every ranked dataset") for r in pool if r not in rows]
    scores = np.array([[h_table.cell(r, c).mean for r in rows] for c in datasets], dtype=float)
    result = stats.friedman(scores)
    per_dataset = [stats.average_ranks(scores[i : i + 1]) for i in range(len(datasets))]
    order = sorted(range(len(rows)), key=lambda i: (result.ranks[i], i))
    cd = stats.nemenyi_cd(len(rows), len(datasets), alpha)
    ranks = [result.ranks[i] for i in order]
    by_row = [[float(of_dataset[i]) for of_dataset in per_dataset] for i in order]
    names, ranked, cliques = (
        [c.group for c in datasets],
        [rows[i] for i in order],
        stats.cliques(ranks, cd),
    )
    ranking = Ranking(METRIC, names, ranked, ranks, by_row, result, cd, alpha, cliques, left_out)
    return ranking, ""
