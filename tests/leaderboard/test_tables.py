"""Marks (significance-aware bold, fastest times), and the separation of measured / reported /
synthetic rows and of data versions."""

from __future__ import annotations

from pathlib import Path

from lb_factory import make_record, write_records

from zslbench.leaderboard.collect import aggregate
from zslbench.leaderboard.reported import load_reported
from zslbench.leaderboard.tables import (
    FASTEST,
    SIGNIFICANCE,
    Cell,
    Column,
    Provenance,
    Row,
    Table,
    mark,
    provenances,
    setting_tables,
    sweep_tables,
    time_tables,
)
from zslbench.records import Record
from zslbench.records.results import newest_runs

REPO = Path(__file__).resolve().parents[2]
REPORTED = REPO / "leaderboards" / "reported" / "ye2022_icpr.json"
SEEDS = (1, 2, 3)


def _row(
    label: str,
    values: tuple[float, ...] | float | None,
    *,
    source: str = "measured",
    excluded: tuple[str, ...] = (),
    schedule: str = "",
    flag: str = "",
) -> Row:
    if values is None:
        cell = Cell()
    elif isinstance(values, tuple):
        cell = Cell(
            sum(values) / len(values),
            n=len(values),
            samples=dict(zip(SEEDS, values, strict=False)),
            flag=flag,
        )
    else:
        cell = Cell(
            values,
            n=None if source == "reported" else 1,
            flag=flag,
            samples=None if source == "reported" else {1: values},
        )
    return Row(
        label=label,
        name=label,
        source=source,
        cells={"x": cell},
        prov=Provenance(source=source),
        excluded=list(excluded),
        schedule=schedule,
    )


def _bold(
    rows: list[Row], column_mark: str = SIGNIFICANCE, higher_better: bool = True
) -> list[str]:
    table = mark(
        Table(
            id="t",
            kind="h",
            title="t",
            rows=rows,
            columns=[Column(key="x", title="x", mark=column_mark, higher_better=higher_better)],
        )
    )
    return [r.label for r in table.rows if r.cells["x"].best]


BEST = (60.0, 61.0, 62.0)
CLOSE = (59.0, 61.5, 61.0)
FAR = (30.0, 31.2, 32.1)


def test_bold_is_the_best_and_every_row_not_significantly_worse() -> None:
    assert _bold([_row("close", CLOSE), _row("best", BEST), _row("far", FAR)]) == ["close", "best"]


def test_a_column_with_one_method_has_no_bold() -> None:
    assert _bold([_row("alone", BEST)]) == []
    assert _bold([_row("alone", BEST), _row("empty", None)]) == []


def test_reported_rows_are_never_bold_and_never_compete() -> None:
    assert _bold([_row("a", FAR), _row("b", BEST), _row("paper", 99.0, source="reported")]) == ["b"]


def test_rows_that_are_not_compared_are_never_bold() -> None:
    rows = [
        _row("a", FAR),
        _row("b", CLOSE),
        _row("leaky", (99.0, 99.5, 98.0), excluded=("non-standard split",)),
        _row("other data", (97.0, 98.0, 99.0), excluded=("other data version",)),
    ]
    assert _bold(rows) == ["b"]


def test_reduced_rows_compete_only_without_full_ones() -> None:
    assert _bold(
        [_row("full", FAR), _row("fast", BEST, schedule="reduced"), _row("full2", CLOSE)]
    ) == ["full2"]
    assert _bold([_row("r1", FAR, schedule="reduced"), _row("r2", BEST, schedule="reduced")]) == [
        "r2"
    ]


def test_columns_without_a_mark_are_never_bold() -> None:
    assert _bold([_row("a", FAR), _row("b", BEST)], column_mark="") == []


def test_fastest_time_is_marked_but_never_a_busy_one() -> None:
    rows = [_row("a", 3.0), _row("b", 2.0), _row("busy", 0.5, flag="busy"), _row("none", None)]
    assert _bold(rows, column_mark=FASTEST, higher_better=False) == ["b"]


def _agg(tmp_path: Path, records: list[Record]):
    write_records(tmp_path / "r", records)
    kept, _ = newest_runs(tmp_path / "r", link_base=tmp_path)[:2]
    agg = aggregate(kept)
    return agg, provenances(agg)


def _seeded(dataset: str, method: str, hs: tuple[float, ...], **kw) -> list[Record]:
    return [
        make_record(
            dataset, method, r, seed=100 + r, metrics={"H": h, "A_S": h + 20, "A_U": h - 5}, **kw
        )
        for r, h in enumerate(hs)
    ]


def test_tables_mark_h_a_t_ausuc_by_test_and_never_a_u_or_a_s(tmp_path: Path) -> None:
    agg, provs = _agg(
        tmp_path, _seeded("synth-apy", "gp", FAR) + _seeded("synth-apy", "bt-gp", BEST)
    )
    h, zsl, au_as = setting_tables(agg, "synthetic", None, provs)
    assert [c.key for c in h.columns] == ["synth-apy:H", "synth-apy:AUSUC"]
    assert [c.key for c in au_as.columns] == ["synth-apy:A_U", "synth-apy:A_S"]
    bt = next(r for r in h.rows if r.method == "bt-gp")
    gp = next(r for r in h.rows if r.method == "gp")
    # The same seeds: paired; gp is consistently 30 below, so significantly worse.
    assert bt.cells["synth-apy:H"].best and bt.cells["synth-apy:H"].status == "best"
    assert not gp.cells["synth-apy:H"].best and gp.cells["synth-apy:H"].status == "worse"
    assert gp.cells["synth-apy:H"].test == "paired t-test"
    # A_S differs just as much, but is never marked.
    assert not any(c.best for r in au_as.rows for c in r.cells.values())
    # The cell carries its 95% t interval over the three seeds.
    cell = bt.cells["synth-apy:H"]
    assert cell.low < cell.mean < cell.high and cell.ci_text() == f"{cell.low:.1f}–{cell.high:.1f}"


def test_real_tables_keep_measured_and_reported_rows_apart(tmp_path: Path) -> None:
    agg, provs = _agg(
        tmp_path,
        [make_record("apy", "bt-gp", i, metrics={"H": 60.0 + i}) for i in range(2)]
        + [make_record("synth-apy", "bt-gp", 0, metrics={"H": 90.0})],
    )
    reported = load_reported(REPORTED)
    h, zsl, _ = setting_tables(agg, "real", reported, provs)[:3]  # then the ablation
    measured = [r for r in h.rows if r.source == "measured"]
    paper = [r for r in h.rows if r.source == "reported"]
    assert len(measured) == 1 and len(paper) == len(reported.rows_for("main")) == 15
    # The measured cell is the mean of the records; the paper's row of the same method keeps its own.
    assert measured[0].cells["APY:H"].mean == 60.5 and measured[0].cells["APY:H"].n == 2
    ours = next(r for r in paper if r.method == "bt-gp")
    assert ours.cells["APY:H"].mean == 51.4 and ours.cells["APY:H"].n is None
    # One measured method: nothing to test, so no bold at all; reported rows are never bold.
    assert not any(c.best for r in h.rows for c in r.cells.values())
    # Synthetic data never reaches a real table, neither as a row nor as a column.
    assert not any("synth" in c.key for c in h.columns + zsl.columns)
    assert all(r.prov.citation for r in paper) and all(r.prov.records for r in measured)


def test_synthetic_tables_hold_no_reported_rows(tmp_path: Path) -> None:
    agg, provs = _agg(
        tmp_path, [make_record("synth-apy", "bt-gp", 0), make_record("apy", "bt-gp", 0)]
    )
    reported = load_reported(REPORTED)
    for table in setting_tables(agg, "synthetic", reported, provs) + time_tables(
        agg, "synthetic", provs
    ):
        assert {r.source for r in table.rows} == {"measured"}
        assert all((c.group or c.key).startswith("synth-") for c in table.columns)


def test_times_are_compared_only_on_one_device_model(tmp_path: Path) -> None:
    records = [
        make_record("synth-cub", "bt-gp", i, train=t, device_name="CPU A")
        for i, t in enumerate((10.0, 14.0))
    ]
    records += [
        make_record("synth-cub", "gp", i, train=t, device_name="CPU B")
        for i, t in enumerate((1.0, 2.0))
    ]
    records += [
        make_record("synth-cub", "krr", i, train=t, device_name="CPU A")
        for i, t in enumerate((30.0, 31.0))
    ]
    agg, provs = _agg(tmp_path, records)
    tables = {t.params["device"]: t for t in time_tables(agg, "synthetic", provs)}
    assert sorted(tables) == ["CPU A", "CPU B"]
    a = {r.method: r.cells["synth-cub"] for r in tables["CPU A"].rows}
    assert sorted(a) == ["bt-gp", "krr"] and a["bt-gp"].text() == "12.0 s" and a["bt-gp"].best
    # gp's 1.5 s on another machine is alone in its table: nothing to compare, no bold.
    (gp,) = tables["CPU B"].rows
    assert gp.cells["synth-cub"].text() == "1.50 s" and not gp.cells["synth-cub"].best


def test_busy_runs_are_left_out_of_a_median_or_shown_marked(tmp_path: Path) -> None:
    records = [
        make_record("synth-apy", "gp", i, train=t, oversubscribed=(i == 2))
        for i, t in enumerate((1.0, 3.0, 0.1))
    ]
    records += [make_record("synth-apy", "krr", i, train=2.5) for i in range(2)]
    records += [
        make_record("synth-apy", "sae", i, train=0.2, oversubscribed=True) for i in range(2)
    ]
    agg, provs = _agg(tmp_path, records)
    (table,) = time_tables(agg, "synthetic", provs)
    gp, krr, sae = (next(r for r in table.rows if r.method == m) for m in ("gp", "krr", "sae"))
    # gp: the 0.1 s run was on a busy machine: median of (1, 3) = 2.0 over n = 2, the fastest.
    assert (
        gp.cells["synth-apy"].text() == "2.00 s"
        and gp.cells["synth-apy"].n == 2
        and gp.cells["synth-apy"].best
    )
    assert gp.note == "† synth-apy: 1 of 3 busy runs left out" and krr.note == ""
    # sae ran only on a busy machine: shown (marked ‡, which the caption explains once), never
    # bold, although it reads fastest; no footnote repeats it on the row.
    assert sae.cells["synth-apy"].flag == "busy" and sae.cells["synth-apy"].text() == "0.20 s"
    assert not sae.cells["synth-apy"].best and sae.note == ""


def test_real_page_puts_each_measured_row_under_the_paper_row_of_its_method(tmp_path: Path) -> None:
    agg, provs = _agg(
        tmp_path, [make_record("cub", m, 0) for m in ("ale", "cnzsl", "bt-gp", "krr")]
    )
    gzsl = setting_tables(agg, "real", load_reported(REPORTED), provs)[0]
    order = [(r.source, r.label if r.source == "reported" else r.method) for r in gzsl.rows]
    for paper, ours in (("ALE", "ale"), ("CNZSL", "cnzsl"), ("L_BT + GP (ours)", "bt-gp")):
        assert order[order.index(("reported", paper)) + 1] == ("measured", ours)
    # A method the paper's Table II lacks comes after all of its rows.
    assert order[-1] == ("measured", "krr")
    assert [r.source for r in gzsl.rows].count("measured") == 4


def test_sweep_table_per_dataset_has_a_row_per_value_and_stays_out_of_the_main_tables(
    tmp_path: Path,
) -> None:
    records = [
        make_record(ds, "bt-gp", rep, sweep={"embedder.margin": m}, metrics={"H": 10 * m + rep})
        for m in (4.0, 1.0, 2.0)
        for ds in ("synth-apy", "synth-cub")
        for rep in range(2)
    ]
    agg, provs = _agg(tmp_path, records + [make_record("synth-apy", "gp", 0)])
    tables = sweep_tables(agg, "synthetic", provs)
    assert [t.dataset for t in tables] == ["synth-cub", "synth-apy"]
    table = tables[1]
    assert [r.label for r in table.rows] == [
        "embedder.margin=1.0",
        "embedder.margin=2.0",
        "embedder.margin=4.0",
    ]
    assert [c.title for c in table.columns] == ["H", "A_U", "A_S", "AUSUC", "A_T"]
    cell = table.rows[1].cells["H"]
    assert (cell.mean, cell.n) == (20.5, 2) and table.rows[2].cells["H"].best
    gzsl = setting_tables(agg, "synthetic", None, provs)[0]
    assert [r.method for r in gzsl.rows] == ["gp"]


def test_cite_table_gives_each_method_its_mean_over_datasets_with_an_interval_inside_0_100(
    tmp_path: Path,
) -> None:
    import math

    from scipy import stats as st

    from zslbench.leaderboard.tables import cite_table

    records = [
        make_record(
            ds, "bt-gp", r, seed=100 + r, metrics={"H": h, "A_T": 50.0 + r, "AUSUC": 1.0 + 3 * r}
        )
        for ds, hs in (("synth-apy", (40.0, 44.0)), ("synth-cub", (20.0, 22.0, 27.0)))
        for r, h in enumerate(hs)
    ]
    records += [
        make_record("synth-apy", "gp", r, seed=100 + r, metrics={"H": 30.0}) for r in range(2)
    ]
    records += [make_record("synth-apy", "krr", r, seed=100 + r, standard=False) for r in range(2)]
    agg, provs = _agg(tmp_path, records)
    table = cite_table(agg, "synthetic", provs)
    assert table is not None and table.params["datasets"] == ["synth-cub", "synth-apy"]
    # The non-standard krr is not compared, so not quoted; gp misses synth-cub, so has no mean.
    assert [r.method for r in table.rows] == ["bt-gp", "gp"]
    bt, gp = table.rows
    assert all(gp.cells[m].missing for m in ("H", "A_T", "AUSUC"))
    h = bt.cells["H"]
    va, vc = 8.0 / 2, 13.0 / 3  # s²/n on synth-apy (s² = 8, n = 2) and synth-cub (s² = 13, n = 3)
    df = (va + vc) ** 2 / (va**2 / 1 + vc**2 / 2)
    half = st.t.ppf(0.975, df) * math.sqrt(va + vc) / 2
    assert h.mean == (42.0 + 23.0) / 2 and h.n == 2 and h.std is None
    assert math.isclose(h.low, 32.5 - half) and math.isclose(h.high, 32.5 + half)
    # AUSUC's interval would run below 0 (means 2.5 and 4, wide spreads): clipped at 0.
    ausuc = bt.cells["AUSUC"]
    assert ausuc.mean == (2.5 + 4.0) / 2 and ausuc.low == 0.0 and ausuc.high < 100.0
    assert not any(c.best for r in table.rows for c in r.cells.values())


def test_page_intervals_are_clipped_to_0_100(tmp_path: Path) -> None:
    records = [
        make_record("synth-apy", "gp", r, seed=100 + r, metrics={"H": h})
        for r, h in enumerate((1.0, 9.0))
    ]
    agg, provs = _agg(tmp_path, records)
    (row,) = setting_tables(agg, "synthetic", None, provs)[0].rows
    cell = row.cells["synth-apy:H"]
    assert (
        cell.mean == 5.0
        and cell.low == 0.0
        and cell.high > 9.0
        and cell.ci_text().startswith("0.0–")
    )


def test_a_sweep_takes_the_default_configuration_as_its_point_at_the_default_value(
    tmp_path: Path,
) -> None:
    """A swept value equal to an unsearched default runs the default itself (the harness records
    it as plain bt-gp): the sweep table and figure show it at its resolved margin, and the main
    tables still show it as bt-gp."""
    from zslbench.leaderboard.figures import figure_specs
    from zslbench.leaderboard.tables import sweep_groups

    records = [
        make_record("synth-apy", "bt-gp", rep, sweep={"embedder.margin": m}, metrics={"H": m})
        for m in (1.0, 2.0)
        for rep in range(2)
    ]
    default = {"latent_dim": 64, "margin": 4.0}
    records += [
        make_record(dataset, "bt-gp", rep, params=default, metrics={"H": 4.0})
        for dataset in ("synth-apy", "synth-cub")  # no sweep ran on synth-cub: no table there
        for rep in range(2)
    ]
    agg, provs = _agg(tmp_path, records)
    (table,) = sweep_tables(agg, "synthetic", provs)
    assert [r.label for r in table.rows] == [
        "embedder.margin=1.0",
        "embedder.margin=2.0",
        "embedder.margin=4.0",
    ]
    assert table.rows[2].cells["H"].mean == 4.0 and table.rows[2].prov.label == "bt-gp"
    (spec,) = [
        s
        for s in figure_specs(agg, "synthetic", sweep_groups(agg, "synthetic"), {"bt-gp": "#000"})
        if s.figure == "sweep"
    ]
    assert [p["x"] for p in spec.data["series"][0]["points"]] == [1.0, 2.0, 4.0]
    gzsl = setting_tables(agg, "synthetic", None, provs)[0]
    assert [r.label for r in gzsl.rows] == ["bt-gp"]


def test_a_searched_default_is_no_point_of_a_sweep(tmp_path: Path) -> None:
    """A searched parameter has no single value: its default configuration is no sweep point."""
    records = [
        make_record("synth-apy", "bt-gp", rep, sweep={"embedder.margin": m})
        for m in (1.0, 2.0)
        for rep in range(2)
    ]
    default = make_record("synth-apy", "bt-gp", 0, params={"latent_dim": 64, "margin": 4.0})
    default.config["search"] = {"embedder.margin": [1.0, 4.0]}
    agg, provs = _agg(tmp_path, [*records, default])
    (table,) = sweep_tables(agg, "synthetic", provs)
    assert len(table.rows) == 2


def test_a_default_that_is_a_sweep_point_has_one_provenance_entry(tmp_path: Path) -> None:
    """Its main row and its sweep row share an anchor: the page lists it once (no duplicate id)."""
    from zslbench.leaderboard.model import board

    records = [
        make_record("synth-apy", "bt-gp", rep, sweep={"embedder.margin": m})
        for m in (1.0, 2.0)
        for rep in range(2)
    ]
    records += [
        make_record("synth-apy", "bt-gp", rep, params={"latent_dim": 64, "margin": 4.0})
        for rep in range(2)
    ]
    write_records(tmp_path / "r", records)
    page = board(tmp_path / "r", tmp_path / "out", None).pages["synthetic"]
    assert len(page.sweep_tables[0].rows) == 3
    provs = [r.prov.anchor for r in page.provenance_rows if r.prov]
    assert len(provs) == len(set(provs)) == 3


def test_a_sweep_point_on_two_datasets_has_one_provenance_with_both(tmp_path: Path) -> None:
    """One provenance per row key, shared by every table that shows the row: the provenance
    section lists a sweep point's runs on every dataset it ran on, not only those of the first
    sweep table that shows it."""
    from zslbench.leaderboard.model import board

    records = [
        make_record(dataset, "bt-gp", rep, sweep={"embedder.margin": m})
        for dataset in ("synth-apy", "synth-cub")
        for m in (1.0, 2.0)
        for rep in range(2)
    ]
    write_records(tmp_path / "r", records)
    page = board(tmp_path / "r", tmp_path / "out", None).pages["synthetic"]
    assert len(page.sweep_tables) == 2  # one per dataset
    by_label = {r.label: r.prov for r in page.provenance_rows if r.prov}
    assert sorted(by_label) == ["embedder.margin=1.0", "embedder.margin=2.0"]
    for prov in by_label.values():
        assert sorted(ds for ds, _ in prov.records) == ["synth-apy", "synth-cub"]
        assert sum(len(links) for _, links in prov.records) == 4
    assert page.sweep_tables[0].rows[0].prov is page.sweep_tables[1].rows[0].prov
