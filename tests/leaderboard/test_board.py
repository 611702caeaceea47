"""One board from many machines and people (data versions, reduced schedules, selection audits),
statistics across datasets, figures (one colour per method, sweeps ticked at their values), and
``zslbench compare``."""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import pytest
from lb_factory import fake_render_figure, make_record, write_records

from tests.cli_helpers import invoke_main
from zslbench import stats
from zslbench.identity import derive_seed
from zslbench.leaderboard import model
from zslbench.leaderboard.figures import draw


@pytest.fixture(autouse=True)
def _no_drawing(monkeypatch) -> None:
    monkeypatch.setattr("zslbench.leaderboard.build.render_figure", fake_render_figure)


def _render(results: Path, out: Path, *extra: str):
    result = invoke_main("leaderboard", "--results-dir", str(results), "--out", str(out), *extra)
    assert result.exit_code == 0, result.output
    return result


def _seeded(dataset: str, method: str, hs: tuple[float, ...], **kw):
    return [
        make_record(
            dataset, method, r, seed=100 + r, metrics={"H": h, "A_T": h + 1, "AUSUC": h / 2}, **kw
        )
        for r, h in enumerate(hs)
    ]


# -- data versions -------------------------------------------------------------------------------


def test_runs_on_another_data_version_are_a_marked_row_and_a_warning(tmp_path: Path) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    records = _seeded("synth-apy", "gp", (30.0, 31.0, 32.0), data_fp="aaaaaaaa11")
    records += _seeded("synth-apy", "bt-gp", (40.0, 41.0, 42.0), data_fp="aaaaaaaa11")
    # A newcomer's machine generated other bytes: far better numbers, never compared with the rest.
    records += [
        make_record(
            "synth-apy", "bt-gp", r, seed=900 + r, metrics={"H": 90.0 + r}, data_fp="bbbbbbbb22"
        )
        for r in range(2)
    ]
    write_records(results, records)
    result = _render(results, out)
    assert (
        "warning: synth-apy: records on 2 data versions; only fingerprint aaaaaaaa (6 record(s)) is "
        "compared, the runs on bbbbbbbb (2 record(s)) are shown as rows of their own and never compared"
    ) in result.stderr.splitlines()
    md = (out / "synthetic.md").read_text()
    row = next(
        line
        for line in md.splitlines()
        if line.startswith("| `bt-gp · data bbbbbbbb, not compared`")
    )
    assert "*other data version, not compared*" in row and "**90.5" not in row
    assert (
        "**40" not in md.split("### Zero-shot")[0] or "**41.0" in md
    )  # the compared bt-gp is the best
    html = (out / "synthetic.html").read_text()
    assert "Only fingerprint <code>aaaaaaaa</code> (6 records) is compared" in html
    assert 'class="badge nonstd" title="other data version: shown, never compared"' in html
    rows = list(csv.DictReader(io.StringIO((out / "synthetic.csv").read_text())))
    other = next(r for r in rows if r["data_fingerprint"] == "bbbbbbbb22")
    assert (other["comparable"], other["best_H"]) == ("false", "false")


# -- reduced schedules --------------------------------------------------------------------------------


def test_reduced_rows_are_marked_on_every_page_that_shows_them(tmp_path: Path) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    records = _seeded("synth-apy", "gp", (30.0, 31.0, 32.0)) + _seeded(
        "synth-cub", "gp", (20.0, 21.0, 22.0)
    )
    records += _seeded("synth-apy", "krr", (10.0, 11.0, 12.0)) + _seeded(
        "synth-cub", "krr", (10.0, 11.0, 12.0)
    )
    reduced = _seeded("synth-apy", "bt-gp", (60.0, 61.0, 62.0)) + _seeded(
        "synth-cub", "bt-gp", (50.0, 51.0, 52.0)
    )
    for record in reduced:
        record.config["schedule"] = "reduced"
    write_records(results, records + reduced)
    _render(results, out)
    for page in ("synthetic.md",):  # the index (README.md) shows no table of rows
        lines = [
            line
            for line in (out / page).read_text().splitlines()
            if line.startswith("| `bt-gp") and "±" in line
        ]  # every row of numbers
        assert lines, page
        assert all("reduced" in line for line in lines), page
    md = (out / "synthetic.md").read_text()
    # The reduced row reads best, yet the full-schedule gp holds the bold.
    assert "**31.0 ± 1.0**" in md and "**61.0" not in md
    html = (out / "synthetic.html").read_text()
    assert html.count('class="badge reduced"') >= 3


# -- selection audit ---------------------------------------------------------------------------------


def test_selection_audit_is_its_own_table_never_ranked_or_mixed(tmp_path: Path) -> None:
    """Records carry ``selection_audit`` (written and read back through the record format, which
    validates it); the board shows the gain in its own table."""
    results, out = tmp_path / "res", tmp_path / "lb"
    gen = []
    for r, h in enumerate((40.0, 42.0, 44.0)):
        best = h + 3.0 + r
        hs = [h - 1.0] * (6 + r) + [best, h]  # the best at epoch 7 + r, the last is the clean H
        gen.append(
            make_record(
                "synth-apy",
                "gen",
                r,
                seed=100 + r,
                metrics={"H": h, "A_T": h + 1, "AUSUC": h / 2},
                selection_audit={
                    "clean_H": h,
                    "test_selected_H": best,
                    "test_selected_epoch": 7 + r,
                    "H_by_epoch": hs,
                    "rule": "best test H over epochs",
                },
            )
        )
    write_records(results, gen + _seeded("synth-apy", "gp", (30.0, 31.0, 32.0)))
    _render(results, out)
    html = (out / "synthetic.html").read_text()
    section = html.split('<section id="audit"', 1)[1].split("</section>", 1)[0]
    assert (
        "test-selected H − clean H" in section and "<code>best test H over epochs</code>" in section
    )
    line = next(x for x in section.splitlines() if 'data-sort="gen"' in x)
    assert '>4.0<span class="sd">± 1.0' in line and "7, 8, 9" in line
    assert 'class="best"' not in line  # never bold
    assert 'data-sort="gp"' not in section  # only the rows with an audit
    # The clean H is what every other table shows; the Markdown summary has no audit.
    md = (out / "synthetic.md").read_text()
    assert "42.0 ± 2.0" in md.split("### Generalized ZSL: H and AUSUC", 1)[1].split("###", 1)[0]
    assert "selection inflation" not in md.lower()
    audit = list(csv.DictReader(io.StringIO((out / "synthetic-selection-audit.csv").read_text())))
    seeds = [str(derive_seed(100 + r, "synth-apy", r)) for r in range(3)]  # lb_factory's
    assert sorted((r["seed"], r["inflation_H"], r["test_selected_epoch"]) for r in audit) == sorted(
        zip(seeds, ("3", "4", "5"), ("7", "8", "9"), strict=True)
    )


# -- ranks across datasets ------------------------------------------------------------------------------


def test_average_ranks_friedman_and_the_critical_difference_diagram(tmp_path: Path) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    means = {
        "gp": (30.0, 20.0, 35.0),
        "bt-gp": (40.0, 50.0, 45.0),
        "krr": (35.0, 10.0, 25.0),
        "ale": (1.0, 2.0, 3.0),
    }
    records = []
    for method, by_dataset in means.items():
        for dataset, h in zip(("synth-apy", "synth-cub", "synth-sun"), by_dataset, strict=True):
            records += _seeded(dataset, method, (h, h + 0.5))
    write_records(results, records)
    _render(results, out)
    b = model.board(results, out, None)
    ranking = b.pages["synthetic"].ranking
    # Ranks by hand: bt-gp 1,1,1; gp 3,2,2; krr 2,3,3; ale 4,4,4.
    assert [(r.method, x) for r, x in zip(ranking.rows, ranking.ranks, strict=True)] == [
        ("bt-gp", 1.0),
        ("gp", 7 / 3),
        ("krr", 8 / 3),
        ("ale", 4.0),
    ]
    chi2, _ = stats.friedman_from_ranks([1.0, 7 / 3, 8 / 3, 4.0], n=3)
    assert ranking.friedman.chi2 == pytest.approx(chi2) and ranking.cd == pytest.approx(
        stats.nemenyi_cd(4, 3)
    )
    spec = next(s for s in b.figures if s.figure == "cd")
    assert [m["label"] for m in spec.data["methods"]] == ["bt-gp", "gp", "krr", "ale"]
    assert (out / "figures" / f"{spec.name}.png").is_file()
    md = (out / "synthetic.md").read_text()
    assert f"χ²_F = {chi2:.2f}" in md and "Nemenyi post-hoc test" in md and "CD = " in md


# -- figures -----------------------------------------------------------------------------------------


def test_every_method_has_its_own_colour_in_every_figure(tmp_path: Path) -> None:
    results = tmp_path / "res"
    methods = [f"m{i:02d}" for i in range(24)]  # more methods than the palette holds
    write_records(
        results,
        [
            make_record(ds, m, r, metrics={"H": 10.0 + i + r}, oversubscribed=(i == 3))
            for i, m in enumerate(methods)
            for ds in ("synth-apy", "synth-cub")
            for r in range(2)
        ]
        + [
            make_record("synth-apy", "m05", r, sweep={"embedder.margin": v})
            for v in (1, 2)
            for r in range(2)
        ],
    )
    b = model.board(results, tmp_path / "lb", None)
    seen: dict[str, str] = {}
    for spec in b.figures:
        entries = (
            spec.data.get("series") or spec.data.get("points") or spec.data.get("methods") or []
        )
        colours: dict[str, str] = {}
        for entry in entries:
            method = entry["label"].split(" ")[0] if spec.figure != "sweep" else "m05"
            colour = entry.get("color", spec.data.get("color"))
            assert seen.setdefault(method, colour) == colour, (
                spec.name,
                method,
            )  # the same in every figure
            colours[method] = colour
        assert len(set(colours.values())) == len(colours), spec.name  # one each within a figure
    assert len(set(seen.values())) == len(methods)


def test_sweep_axes_are_ticked_at_the_swept_values(tmp_path: Path) -> None:
    results = tmp_path / "res"
    values = (0.25, 0.5, 1, 2, 3, 8)
    write_records(
        results,
        [
            make_record(
                "synth-apy",
                "bt-gp",
                r,
                sweep={"embedder.margin": v},
                metrics={"H": 10.0 * math.log2(v * 8) + r},
            )
            for v in values
            for r in range(2)
        ],
    )
    b = model.board(results, tmp_path / "lb", None)
    (spec,) = [s for s in b.figures if s.figure == "sweep"]
    fig = draw(spec)
    for ax in fig.axes:
        assert list(ax.get_xticks()) == list(values)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["0.25", "0.5", "1", "2", "3", "8"]
        assert ax.get_xscale() == "log"


# -- zslbench compare ---------------------------------------------------------------------------------


def test_compare_pairs_runs_by_seed_and_prints_the_interval_and_p(tmp_path: Path) -> None:
    results = tmp_path / "res"
    write_records(
        results,
        _seeded("synth-apy", "bt-gp", (40.0, 43.0, 41.0))
        + _seeded("synth-apy", "gp", (38.0, 40.5, 39.6)),
    )
    result = invoke_main(
        "compare", "bt-gp", "gp", "--dataset", "synth-apy", "--results-dir", str(results)
    )
    assert result.exit_code == 0, result.output
    d = stats.compare_runs({100: 40.0, 101: 43.0, 102: 41.0}, {100: 38.0, 101: 40.5, 102: 39.6})
    assert d.test == "paired t-test"
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("H "))
    assert (
        f"{d.mean:+.2f}" in line
        and f"[{d.low:+.2f}, {d.high:+.2f}]" in line
        and f"{d.p:.4f}" in line
    )
    assert "seeds: paired by seed (3 seeds); paired t-test" in result.stdout
    assert re.search(r"^\s+AUSUC\s", result.stdout, re.M) and re.search(
        r"^\s+A_T\s", result.stdout, re.M
    )


def test_compare_columns_are_over_the_paired_seeds_as_a_minus_b(tmp_path: Path) -> None:
    """krr ran 3 seeds, eszsl 2 of them: the columns' difference is A - B (issue 27, item 3)."""
    results = tmp_path / "res"
    write_records(
        results,
        _seeded("synth-apy", "krr", (10.0, 20.0, 60.0))
        + _seeded("synth-apy", "eszsl", (30.0, 34.0)),
    )
    result = invoke_main(
        "compare", "krr", "eszsl", "--dataset", "synth-apy", "--results-dir", str(results)
    )
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("H "))
    cells = line.split()
    # krr over seeds 100, 101 only: 15.00 ± 7.07; eszsl 32.00 ± 2.83; A - B = -17.00
    assert cells[1:7] == ["15.00", "±", "7.07", "32.00", "±", "2.83"], line
    assert cells[7] == "-17.00", line
    assert "means over the 2 paired seeds, as A - B" in result.stdout


def test_compare_says_when_the_seeds_do_not_pair_up(tmp_path: Path) -> None:
    results = tmp_path / "res"
    write_records(
        results,
        [make_record("toy", "bt-gp", r, seed=10 + r, metrics={"H": 40.0 + r}) for r in range(3)]
        + [make_record("toy", "gp", r, seed=20 + r, metrics={"H": 30.0 + 2 * r}) for r in range(3)],
    )
    result = invoke_main("compare", "bt-gp", "gp", "-d", "toy", "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    assert (
        "the seeds do not pair up (no seed in common): independent runs; Welch's t-test"
        in result.stdout
    )


def test_compare_refuses_runs_on_different_data(tmp_path: Path) -> None:
    results = tmp_path / "res"
    write_records(
        results,
        [make_record("toy", "bt-gp", 0, data_fp="one"), make_record("toy", "gp", 0, data_fp="two")],
    )
    result = invoke_main("compare", "bt-gp", "gp", "-d", "toy", "--results-dir", str(results))
    assert result.exit_code == 2 and "never ran on the same version of toy" in result.stderr


def _swept(margin: float, hs: tuple[float, ...]):
    return [
        make_record(
            "toy",
            "bt-gp",
            r,
            seed=100 + r,
            metrics={"H": h, "A_T": h + 1, "AUSUC": h / 2},
            sweep={"embedder.margin": margin},
            overrides={"embedder.margin": margin},
        )
        for r, h in enumerate(hs)
    ]


def test_compare_takes_two_sweep_values_of_one_method(tmp_path: Path) -> None:
    results = tmp_path / "res"
    write_records(
        results,
        _swept(1, (40.0, 43.0, 41.0))
        + _swept(2, (39.0, 39.5, 40.0))
        + _swept(4, (38.0, 40.5, 39.6)),
    )
    result = invoke_main(
        "compare",
        "bt-gp[embedder.margin=1]",
        "bt-gp[embedder.margin=4.0]",
        "-d",
        "toy",
        "--results-dir",
        str(results),
    )
    assert result.exit_code == 0, result.output
    d = stats.compare_runs({100: 40.0, 101: 43.0, 102: 41.0}, {100: 38.0, 101: 40.5, 102: 39.6})
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("H "))
    assert (
        f"{d.mean:+.2f}" in line
        and f"[{d.low:+.2f}, {d.high:+.2f}]" in line
        and f"{d.p:.4f}" in line
    )
    assert "seeds: paired by seed (3 seeds); paired t-test" in result.stdout
    lines = result.stdout.splitlines()
    seeds = [derive_seed(100 + r, "toy", r) for r in range(3)]  # lb_factory's
    assert (
        lines[1].startswith("  bt-gp[embedder.margin=1]: config ")
        and f"3 run(s), seeds {', '.join(map(str, sorted(seeds)))}" in lines[1]
    )
    assert "(overrides embedder.margin=4; 2 other configuration(s) not compared)" in lines[2]


def test_compare_names_a_component_by_its_role_or_its_name_and_any_set(tmp_path: Path) -> None:
    results = tmp_path / "res"
    adam = [
        make_record(
            "toy",
            "bt-gp",
            r,
            seed=100 + r,
            metrics={"H": 30.0 + r},
            overrides={"gp.optimizer": "adam"},
        )
        for r in range(3)
    ]
    write_records(results, _swept(2, (40.0, 43.0, 41.0)) + adam)
    result = invoke_main(
        "compare",
        "bt-gp[bt.margin=2]",
        "bt-gp[regressor.optimizer=adam]",
        "-d",
        "toy",
        "--results-dir",
        str(results),
    )
    assert result.exit_code == 0, result.output
    d = stats.compare_runs({100: 40.0, 101: 43.0, 102: 41.0}, {100: 30.0, 101: 31.0, 102: 32.0})
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("H "))
    assert f"{d.mean:+.2f}" in line and f"{d.p:.4f}" in line


def test_compare_of_a_method_with_only_swept_records_lists_them_and_how_to_name_them(
    tmp_path: Path,
) -> None:
    results = tmp_path / "res"
    write_records(
        results,
        _swept(1, (40.0, 43.0, 41.0))
        + _swept(2, (39.0, 39.5, 40.0))
        + [make_record("toy", "krr", r, seed=100 + r) for r in range(3)],
    )
    result = invoke_main("compare", "bt-gp", "krr", "-d", "toy", "--results-dir", str(results))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "zslbench: error: no records of 'bt-gp' (its default configuration) on toy — configurations of bt-gp with "
        "records there: bt-gp[embedder.margin=1] (3 run(s)), bt-gp[embedder.margin=2] (3 run(s)); name one as "
        "METHOD[PARAM=VALUE,...], quoted"
    ]
    result = invoke_main(
        "compare", "bt-gp[embedder.margin=1]", "krr", "-d", "toy", "--results-dir", str(results)
    )
    assert result.exit_code == 0, result.output
    result = invoke_main("compare", "gp", "krr", "-d", "toy", "--results-dir", str(results))
    assert result.exit_code == 2
    assert (
        "no records of 'gp' on toy — configurations with records there: bt-gp[embedder.margin=1] (3 run(s)), "
        "bt-gp[embedder.margin=2] (3 run(s)), krr (3 run(s))" in result.stderr
    )


def test_compare_of_a_plain_method_takes_its_default_configuration_beside_its_sweeps(
    tmp_path: Path,
) -> None:
    results = tmp_path / "res"
    write_records(
        results,
        _swept(1, (10.0, 11.0, 12.0))
        + _seeded("toy", "bt-gp", (40.0, 43.0, 41.0))
        + _seeded("toy", "gp", (38.0, 40.5, 39.6)),
    )
    result = invoke_main("compare", "bt-gp", "gp", "-d", "toy", "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    d = stats.compare_runs({100: 40.0, 101: 43.0, 102: 41.0}, {100: 38.0, 101: 40.5, 102: 39.6})
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("H "))
    assert f"{d.mean:+.2f}" in line and f"{d.p:.4f}" in line
    assert "1 other configuration(s) not compared" in result.stdout.splitlines()[1]


def test_compare_refuses_a_malformed_configuration_in_one_line(tmp_path: Path) -> None:
    results = tmp_path / "res"
    write_records(results, _seeded("toy", "gp", (38.0, 40.5, 39.6)))
    result = invoke_main(
        "compare", "gp[embedder.margin=1", "gp", "-d", "toy", "--results-dir", str(results)
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "zslbench: error: 'gp[embedder.margin=1' is not a configuration: METHOD or METHOD[PARAM=VALUE,...] — "
        "e.g. 'bt-gp[embedder.margin=1]' (quote it in the shell)"
    ]
