"""Best-value marking, and the separation of measured / reported / synthetic rows."""

from __future__ import annotations

from pathlib import Path

from lb_factory import make_record, write_records

from zslbench.leaderboard.collect import aggregate, dedupe, load_runs
from zslbench.leaderboard.reported import load_reported
from zslbench.leaderboard.tables import (
    Cell,
    Column,
    Provenance,
    Row,
    Table,
    mark_best,
    setting_tables,
    time_table,
)
from zslbench.records import Record

REPO = Path(__file__).resolve().parents[2]
REPORTED = REPO / "leaderboards" / "reported" / "ye2022_icpr.json"


def _row(label: str, value: float | None, *, source: str = "measured", standard: bool = True) -> Row:
    return Row(label=label, name=label, source=source, cells={"x": Cell(value, n=1)},
               prov=Provenance(source=source, standard=standard))


def _best(rows: list[Row], higher_better: bool = True) -> list[str]:
    table = mark_best(Table(id="t", title="t", caption="", rows=rows,
                            columns=[Column(key="x", title="x", higher_better=higher_better)]))
    return [r.label for r in table.rows if r.cells["x"].best]


def test_best_is_the_highest_comparable_value() -> None:
    assert _best([_row("a", 50.0), _row("b", 61.0), _row("c", 55.0, source="reported")]) == ["b"]


def test_reported_rows_compete_for_best() -> None:
    assert _best([_row("a", 50.0), _row("paper", 51.0, source="reported")]) == ["paper"]


def test_non_standard_split_is_never_best() -> None:
    assert _best([_row("a", 50.0), _row("leaky", 99.0, standard=False)]) == ["a"]


def test_ties_at_display_precision_are_all_marked() -> None:
    assert _best([_row("a", 50.04), _row("b", 49.96), _row("c", 49.94)]) == ["a", "b"]


def test_lower_is_better_for_times_and_missing_cells_are_ignored() -> None:
    assert _best([_row("a", 3.0), _row("b", 2.0), _row("c", None)], higher_better=False) == ["b"]


def _tables(tmp_path: Path, records: list[Record]):
    write_records(tmp_path / "r", records)
    kept, _ = dedupe(load_runs(tmp_path / "r", link_base=tmp_path)[0])
    return aggregate(kept)


def test_real_tables_keep_measured_and_reported_rows_apart(tmp_path: Path) -> None:
    agg = _tables(tmp_path, [make_record("apy", "bt-gp", i, metrics={"H": 60.0 + i}) for i in range(2)]
                  + [make_record("synth-apy", "bt-gp", 0, metrics={"H": 90.0})])
    reported = load_reported(REPORTED)
    gzsl, zsl = setting_tables(agg, "real", reported)
    measured = [r for r in gzsl.rows if r.source == "measured"]
    paper = [r for r in gzsl.rows if r.source == "reported"]
    assert len(measured) == 1 and len(paper) == len(reported.rows_for("main")) == 15
    # The measured cell is the mean of the records; the paper's row of the same method keeps its own.
    assert measured[0].cells["APY:H"].mean == 60.5 and measured[0].cells["APY:H"].n == 2
    ours = next(r for r in paper if r.method == "bt-gp")
    assert ours.cells["APY:H"].mean == 51.4 and ours.cells["APY:H"].n is None
    # 60.5 beats every reported APY H, and is marked; the paper's 51.4 is not.
    assert measured[0].cells["APY:H"].best and not ours.cells["APY:H"].best
    # Synthetic data never reaches a real table, neither as a row nor as a column.
    assert not any("synth" in c.key for c in gzsl.columns + zsl.columns)
    assert all(r.prov.citation for r in paper) and all(r.prov.records for r in measured)


def test_synthetic_tables_hold_no_reported_rows(tmp_path: Path) -> None:
    agg = _tables(tmp_path, [make_record("synth-apy", "bt-gp", 0), make_record("apy", "bt-gp", 0)])
    reported = load_reported(REPORTED)
    for table in setting_tables(agg, "synthetic", reported) + [time_table(agg, "synthetic", reported)]:
        assert {r.source for r in table.rows} == {"measured"}
        assert [c.group or c.key for c in table.columns if c.ranked] and all(
            (c.group or c.key).startswith("synth-") for c in table.columns if c.ranked)


def test_time_table_shows_median_seconds_with_device_and_paper_minutes(tmp_path: Path) -> None:
    agg = _tables(tmp_path, [make_record("cub", "bt-gp", i, train=t, device_name="Some GPU")
                             for i, t in enumerate((100.0, 140.0, 110.0))])
    table = time_table(agg, "real", load_reported(REPORTED))
    ours = next(r for r in table.rows if r.source == "measured")
    assert ours.cells["CUB"].text() == "110.0 s" and ours.cells["device"].text() == "Some GPU"
    assert ours.note == ""
    paper = next(r for r in table.rows if r.source == "reported" and r.method == "bt-gp")
    assert paper.cells["CUB"].text() == "5 min" and paper.cells["device"].text() == "NVIDIA RTX 2080 Ti"
    # 120 s beats the paper's 5 min = 300 s, but CNZSL's 0.5 min = 30 s is fastest.
    assert [r.label for r in table.rows if r.cells.get("CUB") and r.cells["CUB"].best] == ["CNZSL"]


def test_non_standard_rows_are_marked_in_every_format(tmp_path: Path) -> None:
    from zslbench.leaderboard.html import table_html
    from zslbench.leaderboard.render import markdown_table

    agg = _tables(tmp_path, [make_record("apy", "bt-gp", 0, standard=False, metrics={"H": 99.0})])
    gzsl = setting_tables(agg, "real", load_reported(REPORTED))[0]
    row = next(r for r in gzsl.rows if r.source == "measured")
    assert not row.comparable and not row.cells["APY:H"].best
    assert "non-standard split" in row.label and "NON-STANDARD" in row.prov.summary()
    md_line = next(line for line in markdown_table(gzsl).splitlines() if "99.0" in line)
    assert "non-standard split, not comparable" in md_line and "**99.0" not in md_line
    assert 'class="measured noncomparable"' in table_html(gzsl)


def test_oversubscribed_runs_are_left_out_of_the_times_and_marked(tmp_path: Path) -> None:
    agg = _tables(tmp_path, [make_record("synth-apy", "gp", i, train=t, oversubscribed=(i == 2))
                             for i, t in enumerate((1.0, 3.0, 0.1))]
                  + [make_record("synth-apy", "krr", i, train=2.5) for i in range(2)])
    table = time_table(agg, "synthetic", None)
    gp, krr = (next(r for r in table.rows if r.method == m) for m in ("gp", "krr"))
    # gp: the 0.1 s run was on an oversubscribed machine: median of (1, 3) = 2.0, n = 2.
    assert gp.cells["synth-apy"].text() == "2.00 s" and gp.cells["synth-apy"].n == 2
    assert gp.note == "† 1 of 3 runs on an oversubscribed machine, left out of the times" and krr.note == ""
    # ...and it is the fastest comparable time, not the 0.1 s.
    assert gp.cells["synth-apy"].best and not krr.cells["synth-apy"].best


def test_real_page_puts_each_measured_row_under_the_paper_row_of_its_method(tmp_path: Path) -> None:
    agg = _tables(tmp_path, [make_record("cub", m, 0) for m in ("ale", "cnzsl", "bt-gp", "krr")])
    reported = load_reported(REPORTED)
    gzsl = setting_tables(agg, "real", reported)[0]
    order = [(r.source, r.label if r.source == "reported" else r.method) for r in gzsl.rows]
    for paper, ours in (("ALE", "ale"), ("CNZSL", "cnzsl"), ("L_BT + GP (ours)", "bt-gp")):
        assert order[order.index(("reported", paper)) + 1] == ("measured", ours)
    # A method the paper's Table II lacks comes after all of its rows.
    assert order[-1] == ("measured", "krr")
    assert [r.source for r in gzsl.rows].count("measured") == 4


def test_sweep_table_has_a_row_per_value_and_stays_out_of_the_main_tables(tmp_path: Path) -> None:
    from zslbench.leaderboard.tables import sweep_tables

    records = [make_record(ds, "bt-gp", rep, sweep={"embedder.margin": m}, metrics={"H": 10 * m + rep})
               for m in (4.0, 1.0, 2.0) for ds in ("synth-apy", "synth-cub") for rep in range(2)]
    agg = _tables(tmp_path, records + [make_record("synth-apy", "gp", 0)])
    (table,) = sweep_tables(agg, "synthetic")
    assert [r.label for r in table.rows] == ["embedder.margin=1.0", "embedder.margin=2.0", "embedder.margin=4.0"]
    assert [c.group for c in table.columns][::5] == ["synth-cub", "synth-apy"]
    assert [c.title for c in table.columns][:5] == ["H", "A_U", "A_S", "AUSUC", "A_T"]
    cell = table.rows[1].cells["synth-apy:H"]
    assert (cell.mean, cell.n) == (20.5, 2) and table.rows[2].cells["synth-apy:H"].best
    gzsl = setting_tables(agg, "synthetic", None)[0]
    assert [r.method for r in gzsl.rows] == ["gp"]
