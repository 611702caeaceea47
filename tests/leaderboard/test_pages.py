"""What the pages say about the new record facts: kinds, reproduce lines, sweeps, per-image AUSUC,
oversubscribed runs, and where records live (the same sentence everywhere)."""

from __future__ import annotations

import csv
import io
import re
from html import unescape
from pathlib import Path

import pytest
from lb_factory import fake_render_figure, make_record, write_records

from tests.cli_helpers import invoke_main
from zslbench.leaderboard import build as build_mod
from zslbench.leaderboard.render import PAGE_FILES

REPO = Path(__file__).resolve().parents[2]
REPORTED = REPO / "leaderboards" / "reported" / "ye2022_icpr.json"


@pytest.fixture(autouse=True)
def _no_drawing(monkeypatch) -> None:
    monkeypatch.setattr(build_mod, "render_figure", fake_render_figure)


def _render(tmp_path: Path, records: list) -> Path:
    results, out = tmp_path / "res", tmp_path / "lb"
    write_records(results, records)
    result = invoke_main(
        "leaderboard",
        *["--results-dir", str(results), "--out", str(out), "--reported", str(REPORTED)],
    )
    assert result.exit_code == 0, result.output
    return out


def _csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_each_kind_has_its_own_page_and_they_never_mix(tmp_path: Path) -> None:
    out = _render(
        tmp_path,
        [
            make_record("my-npz", "gp", 0, kind="custom", metrics={"H": 11.1}),
            make_record("synth-apy", "gp", 0, metrics={"H": 22.2}),
            make_record("apy", "gp", 0, metrics={"H": 33.3}),
        ],
    )
    pages = {
        k: (out / md).read_text() + (out / html).read_text()
        for k, (md, html, _) in PAGE_FILES.items()
    }
    for kind, own in (("custom", "11.1"), ("synthetic", "22.2"), ("real", "33.3")):
        assert own in pages[kind]
        assert all(own not in text for other, text in pages.items() if other != kind)
    assert "CUSTOM DATASETS, NOT THE BENCHMARKS" in pages["custom"] and "my-npz" in pages["custom"]
    assert "*reported*" not in pages["custom"] and "Ye et al." not in pages["custom"]
    assert {r["dataset"] for r in _csv(out / "custom.csv")} == {"my-npz"}
    # Without custom runs there is no custom page.
    other = _render(tmp_path / "b", [make_record("synth-apy", "gp", 0)])
    assert (
        not (other / "custom.md").exists()
        and "custom.html" not in (other / "synthetic.html").read_text()
    )


def _reproduce(page: str) -> list[str]:
    """The commands of a Markdown page's Reproduce block."""
    block = page.split("## Reproduce", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    return block.splitlines()


def test_reproduce_lists_exactly_the_pairs_that_were_run(tmp_path: Path) -> None:
    out = _render(
        tmp_path,
        [make_record("synth-apy", "krr", r) for r in range(3)]
        + [make_record("synth-cub", "gp", r) for r in range(2)]
        + [make_record("synth-cub", "krr", r) for r in range(3)],
    )
    assert _reproduce((out / "synthetic.md").read_text()) == [
        "zslbench run --method krr --dataset synth-cub,synth-apy --seeds 3 --results-dir res",
        "zslbench run --method gp --dataset synth-cub --seeds 2 --results-dir res",
    ]


def test_reproduce_names_the_config_file_and_the_sweep(tmp_path: Path) -> None:
    records = [
        make_record("synth-apy", m, r, config_file="configs/paper-ablation.toml")
        for m in ("krr", "gp")
        for r in range(2)
    ]
    records += [
        make_record("synth-apy", "bt-gp", 0, sweep={"embedder.margin": m}, overrides={"gp.lr": 0.1})
        for m in (4.0, 1.0, 2.0)
    ]
    out = _render(tmp_path, records)
    # Everything the records fix is on the command line, the config file's grid included.
    assert _reproduce((out / "synthetic.md").read_text()) == [
        "zslbench run --config configs/paper-ablation.toml --method krr,gp --dataset synth-apy --seeds 2 "
        "--results-dir res",
        "zslbench run --method bt-gp --dataset synth-apy --seeds 1 --set gp.lr=0.1 "
        "--sweep embedder.margin=1.0,2.0,4.0 --results-dir res",
    ]


def test_sweep_gets_a_table_and_a_figure_per_parameter(tmp_path: Path) -> None:
    records = [
        make_record(
            ds,
            "bt-gp",
            rep,
            sweep={"embedder.margin": m, "embedder.lr": lr},
            metrics={"H": 10 * m + lr},
        )
        for m in (1.0, 2.0)
        for lr in (0.1, 0.01)
        for ds in ("synth-apy", "synth-cub")
        for rep in range(2)
    ]
    out = _render(tmp_path, records)
    html = (out / "synthetic.html").read_text()
    assert ">Sweep: bt-gp over embedder.lr, embedder.margin on synth-apy</h3>" in html
    # Its rows show the values; their provenance names the whole configuration.
    assert (
        '<a href="#prov-bt-gp-embedder-lr-0-01-embedder-margin-1-0">embedder.lr=0.01, embedder.margin=1.0</a>'
        in html
    )
    assert "Sweep:" not in (out / "synthetic.md").read_text()  # the HTML report's alone
    assert (
        '<h3 id="prov-bt-gp-embedder-lr-0-01-embedder-margin-1-0"><code>bt-gp [embedder.lr=0.01, embedder.margin=1.0]</code>'
        in html
    )
    for param in ("embedder-lr", "embedder-margin"):
        assert (
            out / "figures" / f"synthetic-sweep-bt-gp-over-embedder-lr-embedder-margin-{param}.png"
        ).is_file()
    spec = next(
        s
        for s in build_mod.build(tmp_path / "res", out, None, draw=False).board.figures
        if s.figure == "sweep" and s.data["param"] == "embedder.margin"
    )
    # One line per dataset and value of the other parameter; each point: every metric, mean and std.
    assert len(spec.data["series"]) == 4
    point = spec.data["series"][0]["points"][0]
    assert set(point) == {"x", "H", "A_U", "A_S", "AUSUC", "A_T"} and point["x"] == 1.0
    assert point["H"] == [10.01, 0.0]


def test_csv_labels_both_ausuc_and_the_median_times(tmp_path: Path) -> None:
    out = _render(
        tmp_path,
        [
            make_record(
                "synth-apy",
                "gp",
                r,
                train=t,
                oversubscribed=(r == 2),
                metrics={"AUSUC": 30.0 + r, "AUSUC_per_image": 40.0 + r},
            )
            for r, t in enumerate((1.0, 2.0, 9.0))
        ],
    )
    (row,) = _csv(out / "synthetic.csv")
    assert (row["AUSUC_per_class_mean"], row["AUSUC_per_image_mean"]) == ("31", "41")
    (time,) = _csv(out / "synthetic-train-time.csv")
    assert (
        time["train_median"],
        time["train_runs"],
        time["train_n"],
        time["train_busy"],
        time["train_unknown"],
    ) == ("1.5", "3", "2", "1", "0")
    assert (time["device"], time["train_busy_only"]) == ("Test CPU", "false")
    html = (out / "synthetic.html").read_text()
    page = _text(html)
    assert "GP measured † busy-machine runs" in page
    busy = "<dd>1 (oversubscribed: a load above its cores): left out of a time median"
    assert "<dt>Runs on a busy machine</dt>" + busy in html
    assert "Training time (median) on Test CPU" in page and "MEDIAN" in page
    # The Markdown page is the summary: the headline tables, a link to the report for the rest.
    md = (out / "synthetic.md").read_text()
    assert "### Generalized ZSL: H and AUSUC" in md and "[The HTML report](synthetic.html)" in md
    assert "Training time" not in md and "†" not in md


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())


def test_the_two_places_that_say_where_records_live_agree(tmp_path: Path) -> None:
    out = _render(tmp_path, [make_record("apy", "gp", 0)])
    sentence = next(
        line
        for line in (out / "README.md").read_text().splitlines()
        if line.startswith("Every measured number comes from")
    )
    assert "[`../res/`](../res/) (`res`)" in sentence and "--results-dir res --out lb`" in sentence
    plain = _text(sentence.replace("`", ""))
    plain = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", plain)
    assert plain in _text((out / "real.html").read_text())


def test_the_landing_page_is_the_first_page_with_measured_rows(tmp_path: Path) -> None:
    """index.html leads to the measured board: the synthetic page while no real run is measured
    (the real page would show only reported numbers), the real page once one is."""
    out = _render(tmp_path, [make_record("toy", "gp", 0)])
    assert 'content="0; url=synthetic.html"' in (out / "index.html").read_text()
    assert (
        "[index.html](index.html) | The landing page: it leads to the HTML report of the synthetic stand-ins (the real "
        "benchmarks have no measured run yet). |" in (out / "README.md").read_text()
    )
    out = _render(tmp_path / "again", [make_record("toy", "gp", 0), make_record("apy", "gp", 0)])
    assert 'content="0; url=real.html"' in (out / "index.html").read_text()
    assert (
        "[index.html](index.html) | The landing page: it leads to the HTML report of the real benchmarks. |"
        in (out / "README.md").read_text()
    )


def test_the_time_table_explains_busy_runs_once_not_on_every_row(tmp_path: Path) -> None:
    records = [
        make_record(ds, m, i, oversubscribed=True)
        for ds in ("synth-apy", "synth-cub")
        for m in ("gp", "krr", "bt-gp")
        for i in range(2)
    ]
    html = (_render(tmp_path, records) / "synthetic.html").read_text()
    section = html.split(">Training time (median) on Test CPU</h3>", 1)[1].split("<h3", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith('<tr class="measured')]
    assert len(rows) == 3 and all(
        line.count(">‡<") == 2 and "busy-machine runs<" not in line and "†" not in line
        for line in rows
    )
    assert section.count("marked ‡, never bold") == 1
