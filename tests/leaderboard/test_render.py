"""The rendered output: determinism, --check, the CLI, and what each format marks."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
from pathlib import Path

import pytest
from lb_factory import fake_render_figure, make_record, small_grid, write_records

from tests.cli_helpers import invoke_main
from zslbench.leaderboard.figures import HASH_KEY, embedded_hash
from zslbench.records.results import newest_runs

REPO = Path(__file__).resolve().parents[2]
REPORTED = REPO / "leaderboards" / "reported" / "ye2022_icpr.json"


def _invoke(out: Path, *extra: str, results: Path | None = None):
    args = [
        "--results-dir",
        str(results or out / "records"),
        "--out",
        str(out),
        "--reported",
        str(REPORTED),
        *extra,
    ]
    return invoke_main("leaderboard", *args)


def _files(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and "records" not in p.parts
    }


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lb") / "lb"
    small_grid(out / "records")
    result = _invoke(out)
    assert result.exit_code == 0, result.output
    return out


def test_same_records_give_the_same_bytes(tmp_path: Path, rendered: Path) -> None:
    # A second render elsewhere, with the records copied there (links are relative to the output).
    other = tmp_path / "lb"
    shutil.copytree(rendered / "records", other / "records")
    assert _invoke(other).exit_code == 0
    first, second = _files(rendered), _files(other)
    assert sorted(first) == sorted(second)
    assert [p for p in first if first[p] != second[p]] == []
    assert any(p.endswith(".png") for p in first) and any(p.endswith(".svg") for p in first)
    # Rendering over an up-to-date copy rewrites nothing.
    again = _invoke(other)
    assert again.exit_code == 0 and again.output.startswith(f"{other.as_posix()}: 0 of ")


def test_figures_carry_their_data_hash_and_no_timestamp(rendered: Path) -> None:
    manifest = json.loads((rendered / "manifest.json").read_text())
    figures = {p: e for p, e in manifest["files"].items() if p.startswith("figures/")}
    assert figures
    for path, entry in figures.items():
        data = (rendered / path).read_bytes()
        assert embedded_hash(path, data) == entry["data_sha256"]
        if path.endswith(".svg"):
            assert b"<dc:date>" not in data and HASH_KEY.encode() in data
        else:
            assert b"tIME" not in data and b"Software" not in data


def test_check_passes_on_a_fresh_render(rendered: Path) -> None:
    result = _invoke(rendered, "--check")
    assert result.exit_code == 0, result.output
    assert "up to date" in result.output


def test_check_names_each_stale_file_on_one_line(tmp_path: Path, rendered: Path) -> None:
    out = tmp_path / "lb"
    shutil.copytree(rendered, out)
    (out / "real.md").write_text((out / "real.md").read_text() + "edited by hand\n")
    (out / "synthetic.csv").unlink()
    (out / "figures" / "leftover.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    result = _invoke(out, "--check")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert any(
        re.search(r"real\.md: differs .*first difference at line \d+", line) for line in lines
    )
    assert any("synthetic.csv: missing" in line for line in lines)
    assert any(
        "figures/leftover.png: not written by zslbench leaderboard" in line for line in lines
    )
    assert len([line for line in lines if ": " in line and "not up to date" not in line]) == 3


def test_check_catches_new_records_including_figures(
    tmp_path: Path, rendered: Path, monkeypatch
) -> None:
    monkeypatch.setattr(
        "zslbench.leaderboard.build.render_figure", fake_render_figure
    )  # files, not pixels
    out = tmp_path / "lb"
    shutil.copytree(rendered, out)
    write_records(out / "records", [make_record("synth-apy", "gp", 2, metrics={"H": 12.0})])
    result = _invoke(out, "--check")
    assert result.exit_code == 1
    assert "synthetic.md: differs" in result.output
    assert "figures/synthetic-h-vs-time.png: plots other data" in result.output
    assert "figures/real-h-vs-time.png" not in result.output  # the real figures did not change
    # Rendering repairs it, and the check passes again.
    assert _invoke(out).exit_code == 0
    assert _invoke(out, "--check").exit_code == 0


def test_check_ignores_how_a_figure_is_drawn(tmp_path: Path, rendered: Path) -> None:
    """Another matplotlib may draw other pixels; only the embedded data hash must match."""
    out = tmp_path / "lb"
    shutil.copytree(rendered, out)
    svg = out / "figures" / "synthetic-h-vs-time.svg"
    svg.write_text(svg.read_text().replace("<svg ", "<svg data-redrawn='yes' ", 1))
    assert _invoke(out, "--check").exit_code == 0


def test_stale_files_are_removed_on_render(tmp_path: Path, rendered: Path, monkeypatch) -> None:
    monkeypatch.setattr(
        "zslbench.leaderboard.build.render_figure", fake_render_figure
    )  # files, not pixels
    out = tmp_path / "lb"
    shutil.copytree(rendered, out)
    for path in (out / "records").glob("synth-cub__*"):
        path.unlink()
    assert _invoke(out).exit_code == 0
    assert not (out / "figures" / "synthetic-curves-synth-cub.png").exists()
    assert (out / "figures" / "synthetic-curves-synth-apy.png").exists()
    assert _invoke(out, "--check").exit_code == 0


def test_missing_results_dir_is_one_line_exit_2(tmp_path: Path) -> None:
    result = _invoke(tmp_path / "lb", results=tmp_path / "absent")
    assert result.exit_code == 2
    assert (
        result.output.strip().count("\n") == 0
        and "absent: no such results directory" in result.output
    )


def test_markdown_marks_best_sources_and_links_records(rendered: Path) -> None:
    real = (rendered / "real.md").read_text()
    synth = (rendered / "synthetic.md").read_text()
    # The measured APY H (60.5) is the only measured one: nothing to test it against, so no bold; its
    # 95% t interval over n = 2 seeds is shown with it.
    assert "| 60.5 ± 0.7 <sub>54.1–66.9, n=2</sub> |" in real and "**60.5" not in real
    assert "| SYNC | *reported* |" in real and "**measured**" in real
    for link in re.findall(r"\]\((records/[^)]+\.json)\)", real + synth):
        assert (rendered / link).is_file()
    # The synthetic page is titled as such and quotes no paper.
    assert synth.startswith("# zslbench leaderboard: SYNTHETIC stand-ins (not the benchmarks)")
    assert "*reported*" not in synth and "Ye et al." not in synth and "51.4" not in synth
    assert "synth-" not in real.split("## Tables")[1]


def test_csv_has_best_flags_and_keeps_sources_apart(rendered: Path) -> None:
    rows = list(csv.DictReader(io.StringIO((rendered / "real.csv").read_text())))
    measured = [r for r in rows if r["source"] == "measured"]
    assert len(measured) == 1 and measured[0]["H_mean"] == "60.5" and measured[0]["H_n"] == "2"
    assert measured[0]["best_H"] == "false" and measured[0]["records"].count(".json") == 2
    # H = 60, 61: s = 1/sqrt(2), and the t(1) quantile has the closed form tan(pi (p - 1/2)).
    half = math.tan(math.pi * 0.475) * math.sqrt(0.5) / math.sqrt(2)
    assert float(measured[0]["H_ci_low"]) == pytest.approx(60.5 - half, abs=1e-6)
    assert float(measured[0]["H_ci_high"]) == pytest.approx(60.5 + half, abs=1e-6)
    paper = [
        r
        for r in rows
        if r["source"] == "reported" and r["dataset"] == "CUB" and r["table"] == "main"
    ]
    assert {r["row"]: r["best_H"] for r in paper}[
        "GCM-CF"
    ] == "false"  # quoted numbers are never tested
    assert all(r["H_std"] == "" and r["citation"] for r in paper)
    synth = list(csv.DictReader(io.StringIO((rendered / "synthetic.csv").read_text())))
    assert {r["source"] for r in synth} == {"measured"} and all(
        r["dataset"].startswith("synth-") for r in synth
    )
    # bt-gp beats gp by 5 H on both stand-ins at the same two seeds: a paired test, with its p-value.
    apy = {r["method"]: r for r in synth if r["dataset"] == "synth-apy"}
    assert (apy["bt-gp"]["best_H"], apy["gp"]["best_H"]) == ("true", "false")
    assert apy["gp"]["test_H"] == "paired t-test" and apy["gp"]["p_vs_best_H"] == "0"


def test_html_is_self_contained(rendered: Path) -> None:
    for page in ("real.html", "synthetic.html"):
        text = (rendered / page).read_text()
        assert "<style>" in text and "<script>" in text
        assert not re.search(r"""(src|href)=["']https?:""", text)
        for src in re.findall(r'<img src="([^"]+)"', text):
            assert (rendered / src).is_file()


def test_the_csv_columns_are_the_aggregated_tables_the_same_on_every_page(rendered: Path) -> None:
    """A page's CSV shows every one-value column of the board's aggregated table (each interval
    spread out), so real.csv, holding one measured row, has the columns synthetic.csv has."""
    from zslbench.leaderboard import collect, csvs

    headers = {
        name: next(csv.reader(io.StringIO((rendered / name).read_text())))
        for name in ("real.csv", "synthetic.csv")
    }
    assert headers["real.csv"] == headers["synthetic.csv"]
    agg = collect.aggregate(newest_runs(rendered / "records", rendered)[0])
    for key in csvs.csv_columns(agg):
        name = csvs.RENAMED.get(key, key)
        assert name in headers["real.csv"] or f"{name}_ci_high" in headers["real.csv"], key
    assert {"H_ci_high", "AUSUC_per_image_mean", "data_fingerprint", "citation"} <= set(
        headers["real.csv"]
    )


def test_reported_lines_are_the_numbers_the_paper_gives(rendered: Path) -> None:
    """A reported line per (table, row, dataset) the paper gives a number for: no line of only
    empty values (the paper's "-" cells stay "–" on the page)."""
    rows = list(csv.DictReader(io.StringIO((rendered / "real.csv").read_text())))
    paper = [r for r in rows if r["source"] == "reported"]
    assert paper and all(any(v for k, v in r.items() if k.endswith("_mean")) for r in paper)
    # GDAN is in the paper's Table II without a number on AWA1.
    assert {r["dataset"] for r in paper if r["row"] == "GDAN"} == {"CUB", "SUN", "AWA2", "APY"}


def test_per_class_accuracy_is_spread_and_marked_like_every_metric(rendered: Path) -> None:
    """One naming rule for every CSV: ``{name}_mean`` … ``{name}_ci_high`` and
    ``best_{name}`` / ``p_vs_best_{name}`` / ``test_{name}``, here with name ``accuracy``."""
    rows = list(csv.DictReader(io.StringIO((rendered / "synthetic-per-class.csv").read_text())))
    spread = [f"accuracy_{s}" for s in ("mean", "std", "n", "ci_low", "ci_high")]
    marks = ["best_accuracy", "p_vs_best_accuracy", "test_accuracy"]
    assert rows and [k for k in rows[0] if k in spread + marks] == spread + marks
    assert any(r["best_accuracy"] == "true" for r in rows)
    assert all(r["accuracy_n"] == "2" for r in rows)
