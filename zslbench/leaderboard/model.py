"""The page model: everything a board shows, as data, before any format.

:func:`board` reads the records and the curated reported numbers once and returns a
:class:`Board`: one :class:`Page` per dataset kind (real, synthetic, custom) holding its facts,
tables (:mod:`~zslbench.leaderboard.tables`), cross-dataset ranking
(:mod:`~zslbench.leaderboard.ranks`), figure specs (:mod:`~zslbench.leaderboard.figures`),
provenance, the commands that reproduce it, and what it leaves out and why. The templates
(:mod:`~zslbench.leaderboard.render`) and the CSV files (:mod:`~zslbench.leaderboard.csvs`) only
format it, so the Markdown, HTML and CSV of a board never say different things.

Nothing here reads a clock: the only dates on a board are the records' own ``finished_at``.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from zslbench.leaderboard.collect import (
    DataVersions,
    aggregate,
    dataset_label,
    dataset_order,
    run_summary,
    value_sort_key,
)
from zslbench.leaderboard.figures import FigureSpec, figure_specs, method_colors
from zslbench.leaderboard.markup import path_href, shell_command
from zslbench.leaderboard.ranks import Ranking, rank_methods
from zslbench.leaderboard.reported import EMPTY, Reported, load_reported
from zslbench.leaderboard.tables import (
    Row,
    Table,
    audit_table,
    cite_table,
    date_range,
    per_class_tables,
    provenances,
    reported_per_class_tables,
    reported_time_table,
    setting_tables,
    sweep_groups,
    sweep_tables,
    time_tables,
)
from zslbench.records.results import newest_runs
from zslbench.records.rows import value_text

#: Dataset kinds in page order. Real and synthetic pages always exist (the committed board links
#: them); a custom page only when there are runs on custom datasets.
KINDS = ("real", "synthetic", "custom")


@dataclass(frozen=True)
class Paths:
    """Where the records and the board are, as every page says it (one sentence, one place).

    Links are relative to the output directory; command arguments are relative to the project
    root (the git work tree holding the output, else the results dir's parent), so that the bytes
    never depend on the current directory.
    """

    records_text: str
    records_href: str
    results_arg: str
    out_arg: str
    reported_text: str = ""
    reported_href: str = ""

    @property
    def render_command(self) -> str:
        return shell_command(
            ["zslbench", "leaderboard", "--results-dir", self.results_arg, "--out", self.out_arg]
        )


@dataclass
class Facts:
    """What a page says about its runs, all derived from the records."""

    records: int = 0
    superseded: int = 0
    methods: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)  # distinct N per cell
    date_first: str = ""
    date_last: str = ""
    devices: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    nonstandard: int = 0
    oversubscribed: int = 0
    load_unknown: int = 0
    reduced: int = 0
    audited: int = 0

    def seeds_text(self) -> str:
        first, last = (self.seeds[0], self.seeds[-1]) if self.seeds else ("–", "–")
        return str(first) if first == last else f"{first}–{last}"

    def dates_text(self) -> str:
        return date_range(self.date_first, self.date_last)


@dataclass
class Page:
    """Everything one page shows (its HTML report all of it, its Markdown page the tables)."""

    kind: str
    facts: Facts
    paths: Paths
    #: The methods × datasets tables (H and AUSUC, A_T, A_U and A_S), the paper's ablation.
    tables: list[Table]
    time_tables: list[Table]
    sweep_tables: list[Table]
    per_class_tables: list[Table]
    ranking: Ranking | None
    #: Why there is no ranking (when there is none and there are measured runs).
    ranking_note: str
    audit: Table | None
    figures: list[FigureSpec]
    references: dict[str, str]
    commands: list[str]
    #: The curated file's rows on the real page: its training times and per-class tables.
    reported_time: Table | None = None
    reported_per_class: list[Table] = field(default_factory=list)
    #: The work the reported rows are quoted from ("" without them).
    source: str = ""
    #: Datasets whose records come from more than one data version.
    data_versions: list[DataVersions] = field(default_factory=list)
    #: The kinds that have a page in this output, for the links between pages.
    kinds: tuple[str, ...] = ()
    #: The "cite this" table: each compared configuration's mean over the page's datasets.
    cite: Table | None = None

    @property
    def has_measured(self) -> bool:
        return self.facts.records > 0

    @property
    def ranking_table(self) -> Table | None:
        return self.ranking.table(self.kind) if self.ranking else None

    @property
    def tests(self) -> dict[str, int]:
        """How many comparisons behind the bold used each test (paired, Welch's)."""
        tables = self.tables + self.sweep_tables + self.per_class_tables
        counts = Counter(c.test for t in tables for r in t.rows for c in r.cells.values() if c.test)
        return dict(sorted(counts.items()))

    @property
    def provenance_rows(self) -> list[Row]:
        """The measured rows of the main table and the sweeps, one per provenance (a default
        configuration is also a point of a sweep: the first, its main row, says where all of its
        runs are)."""
        rows: dict[str, Row] = {}
        for row in (r for t in self.tables[:1] + self.sweep_tables for r in t.rows):
            if row.source == "measured" and row.prov:
                rows.setdefault(row.prov.anchor, row)
        return list(rows.values())

    @property
    def busy_cells(self) -> int:
        cells = [c for t in self.time_tables for r in t.rows for c in r.cells.values()]
        return sum(c.flag == "busy" for c in cells)

    @property
    def excluded_rows(self) -> list[Row]:
        """Measured rows shown but never compared (non-standard split, other data version)."""
        rows = self.tables[0].rows if self.tables else []
        return [r for r in rows if r.source == "measured" and r.excluded]


@dataclass
class Board:
    pages: dict[str, Page]
    figures: list[FigureSpec]
    runs: int
    superseded: int
    #: (path, reason) of every JSON file under the results dir that is not a valid, intact record.
    refused: list[tuple[str, str]]
    #: One row per configuration and dataset (:func:`~zslbench.leaderboard.collect.aggregate`).
    agg: pd.DataFrame
    #: One line per dataset whose records come from several data versions (the CLI warns).
    warnings: list[str] = field(default_factory=list)


def project_root(out_dir: Path, results_dir: Path) -> Path:
    """The git work tree that holds ``out_dir``, else the results dir's parent."""
    folders = (out_dir.resolve(), *out_dir.resolve().parents)
    return next((f for f in folders if (f / ".git").exists()), results_dir.resolve().parent)


def _rel(target: Path | str, base: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), Path(base).resolve())).as_posix()


def _arg(path: Path | str, root: Path) -> str:
    """A path as a command argument: relative to the project root when inside it."""
    resolved = Path(path).resolve()
    return _rel(resolved, root) if resolved.is_relative_to(root) else resolved.as_posix()


def reproduce_commands(runs: pd.DataFrame, root: Path, ranks: dict[str, int]) -> list[list[str]]:
    """The commands that produce exactly these runs (each as its words, unquoted): one
    ``zslbench run`` per group of methods sharing datasets, seeds, options and records folder
    (never a method × dataset pair that was not run). A run from a configuration file names it
    too; every option the records fix is given explicitly (on the command line it overrides the
    file). A dataset opened from a file is named by its path; one a plugin registers, by its name,
    with ``-p MODULE`` when that plugin was a ``-p`` module."""
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in runs.itertuples(index=False):
        slot = cells.setdefault(_cell_key(e, root), {"seeds": 0, "sweep": {}})
        slot["seeds"] = max(slot["seeds"], int(e.repetition) + 1)
        for param, value in e.sweep_map.items():
            slot["sweep"].setdefault(param, {})[value_text(value)] = value
    # per command (its options, the sweep's too, seeds, records folder, -p modules): each
    # method's datasets, then the methods of each set of datasets
    datasets: dict[tuple[Any, ...], set[str]] = {}
    for (method, dataset, opts, _, folder, plugins), slot in cells.items():
        sweep = sorted(slot["sweep"].items())
        opts += tuple(w for p, vals in sweep for w in ("--sweep", f"{p}={_values(vals)}"))
        datasets.setdefault((opts, slot["seeds"], folder, plugins, method), set()).add(dataset)
    methods: dict[tuple[Any, ...], list[str]] = {}
    for (*unit, method), of_method in datasets.items():
        methods.setdefault((*unit, *sorted(of_method, key=dataset_order)), []).append(method)
    # (not from a config file, the first method's rank, the words): config-file commands first
    out: list[tuple[bool, int, list[str]]] = []
    for (opts, seeds, folder, plugins, *on), names in methods.items():
        names = sorted(names, key=lambda m: (ranks.get(m, 0), m))
        config, rest = (opts[:2], opts[2:]) if opts[:1] == ("--config",) else ((), opts)
        words = ["zslbench", *(w for p in plugins for w in ("-p", p)), "run", *config]
        words += ["--method", ",".join(names), "--dataset", ",".join(on)]
        words += ["--seeds", str(seeds), *rest, "--results-dir", _arg(folder, root)]
        out.append((not config, min(ranks.get(m, 0) for m in names), words))
    return [words for *_, words in sorted(out)]


def _values(values: dict[str, Any]) -> str:
    """A sweep's values as ``--sweep`` takes them: in order, comma-separated."""
    return ",".join(value_text(v) for v in sorted(values.values(), key=value_sort_key))


def _cell_key(e: Any, root: Path) -> tuple[Any, ...]:
    """(method, dataset argument, options, swept parameters, records folder, ``-p`` modules) of a
    run. A dataset a plugin registered is named by its name (else the run opened it from its
    file, ``data_path``, when it has one)."""
    opts: tuple[str, ...] = ("--config", e.config_file) if e.config_file else ()
    opts += ("--base-seed", str(e.base_seed)) if e.base_seed else ()
    opts += tuple(
        w for k, v in sorted(e.overrides_map.items()) for w in ("--set", f"{k}={value_text(v)}")
    )
    opts += () if e.standard else ("--allow-nonstandard-split",)
    opts += ("--device", "cuda") if e.device_type == "cuda" else ()
    by_name = e.data_plugin not in ("", "open_dataset")
    dataset = _arg(e.data_path, root) if e.data_path and not by_name else e.dataset
    plugins = ({e.data_plugin} if by_name and e.data_plugin_p else set()) | _p_components(e.config)
    return (e.method, dataset, opts, e.sweep_params, e.folder, tuple(sorted(plugins)))


def _p_components(config: dict[str, Any]) -> set[str]:
    """The ``-p`` modules that provided a run's components: a record names each component's plugin
    and, for an installed third-party one, its distribution; a plugin with neither a distribution
    nor a built-in's name was a ``-p`` module (a qualified ``dist:name`` never is). A method a
    ``-p`` module registers from built-in components alone is not told apart: the record does not
    name the method's plugin."""
    comps = config.get("components") or {}
    named = {
        c.get("plugin") for c in comps.values() if isinstance(c, dict) and "distribution" not in c
    }
    return {p for p in named if isinstance(p, str) and ":" not in p and p not in _builtin_plugins()}


@functools.cache
def _builtin_plugins() -> frozenset[str]:
    """The plugin names of zslbench's own entry points."""
    from importlib.metadata import entry_points

    from zslbench.registry import BUILTIN_DISTRIBUTION, ENTRY_POINT_GROUP, dist_name

    group = entry_points(group=ENTRY_POINT_GROUP)
    return frozenset(ep.name for ep in group if dist_name(ep) == BUILTIN_DISTRIBUTION)


def board(results_dir: Path, out_dir: Path, reported_path: Path | None) -> Board:
    """Read the records under ``results_dir`` (and the curated file) into the page model of a
    board written to ``out_dir``."""
    out_dir, results_dir = Path(out_dir), Path(results_dir)
    reported = load_reported(reported_path) if reported_path else EMPTY
    kept, superseded, refused = newest_runs(results_dir, link_base=out_dir)
    agg = aggregate(kept, reported.method_order())
    root = project_root(out_dir, results_dir)
    paths = _paths(results_dir, out_dir, root, reported)
    provs, ranks = provenances(agg), dict(zip(agg["method"], agg["method_rank"], strict=True))
    colors = method_colors(sorted(ranks, key=lambda m: (ranks[m], m)))
    kinds = tuple(k for k in KINDS if k != "custom" or (kept["kind"] == "custom").any())
    versions: list[DataVersions] = agg.attrs.get("data_versions", [])

    def page(kind: str) -> Page:
        real, runs = kind == "real", kept[kept["kind"] == kind]
        tables = setting_tables(agg, kind, reported, provs)
        ranking, ranking_note = rank_methods(tables[0])
        sweeps = sweep_tables(agg, kind, provs)
        reported_pc = reported_per_class_tables(reported) if real else []
        reported_time = reported_time_table(reported) if real else None
        shown = tables + sweeps + reported_pc + ([reported_time] if reported_time else [])
        return Page(
            kind=kind,
            facts=_facts(kind, runs, superseded[superseded["kind"] == kind], agg, ranks),
            paths=paths,
            tables=tables,
            time_tables=time_tables(agg, kind, provs),
            sweep_tables=sweeps,
            per_class_tables=per_class_tables(agg, kind),
            cite=cite_table(agg, kind, provs),
            ranking=ranking,
            ranking_note=ranking_note,
            audit=audit_table(agg, kind, provs),
            figures=figure_specs(agg, kind, sweep_groups(agg, kind), colors, ranking),
            references=_references(reported, shown),
            commands=[shell_command(w) for w in reproduce_commands(runs, root, ranks)],
            reported_time=reported_time,
            reported_per_class=reported_pc,
            source=(reported.source or "the curated reported file")
            if real and reported.rows
            else "",
            data_versions=[v for v in versions if v.kind == kind],
            kinds=kinds,
        )

    pages = {kind: page(kind) for kind in kinds}
    figures = [f for p in pages.values() for f in p.figures]
    warnings = [v.warning() for v in versions]
    return Board(pages, figures, len(kept), len(superseded), refused, agg, warnings)


def _paths(results_dir: Path, out_dir: Path, root: Path, reported: Reported) -> Paths:
    records, rep = _rel(results_dir, out_dir), _rel(reported.path, out_dir) if reported.path else ""
    args = (_arg(results_dir, root), _arg(out_dir, root))
    return Paths(records + "/", path_href(records) + "/", *args, rep, path_href(rep) if rep else "")


def _facts(
    kind: str, runs: pd.DataFrame, old: pd.DataFrame, agg: pd.DataFrame, ranks: dict[str, int]
) -> Facts:
    """The facts of the runs of one kind (``old``: its superseded records)."""
    if runs.empty:
        return Facts(superseded=len(old))
    return Facts(
        records=len(runs),
        superseded=len(old),
        methods=sorted(set(runs["method"]), key=lambda m: ranks.get(m, 0)),
        datasets=[dataset_label(d, kind) for d in sorted(set(runs["dataset"]), key=dataset_order)],
        seeds=sorted(set(int(n) for n in agg.loc[agg["kind"] == kind, "n"])),
        nonstandard=int((~runs["standard"].astype(bool)).sum()),
        reduced=int((runs["schedule"] == "reduced").sum()),
        audited=int(runs["selection_audit"].map(lambda a: a is not None).sum()),
        **run_summary(runs),
    )


def _references(reported: Reported, shown: list[Table]) -> dict[str, str]:
    """The references the reported rows of ``shown`` cite, by key."""
    rows = [row for table in shown for row in table.rows if row.source == "reported" and row.prov]
    used = {ref for row in rows for ref in (row.prov.refs if row.prov else [])}
    return {k: reported.references.get(k, k) for k in sorted(used)}
