"""The curated reported numbers: transcribed exactly, cited per row, validated on load."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zslbench.errors import UserError
from zslbench.leaderboard.reported import load_reported

REPO = Path(__file__).resolve().parents[2]
REPORTED = REPO / "leaderboards" / "reported" / "ye2022_icpr.json"
PAPER = REPO.parent / "shared" / "seeds" / "000_8afdcf5a7cc55a53.txt"
DATASETS = ["CUB", "SUN", "AWA2", "AWA1", "APY"]


@pytest.fixture(scope="module")
def reported():
    return load_reported(REPORTED)


def _row(reported, table: str, method: str):
    return next(r for r in reported.rows_for(table) if r.method == method)


# Cells copied by hand from the paper's LaTeX source (line numbers of that file in comments).
@pytest.mark.parametrize(
    "table, method, dataset, metric, printed",
    [
        ("main", "SYNC", "CUB", "A_T", "56.0"),  # Table II, SYNC row
        ("main", "DEVISE", "APY", "A_U", "3.5"),  # Table II, DEVISE row
        ("main", "GCM-CF", "CUB", "H", "60.3"),  # \textbf{60.3}
        ("main", "CNZSL", "SUN", "A_S", "41.6"),
        ("main", "Li et al.", "AWA1", "A_T", "69.4"),
        ("main", "GDAN", "AWA1", "H", "-"),  # a '-' cell
        ("main", "L_BT + GP (ours)", "APY", "H", "51.4"),
        ("ablation", "KRR", "CUB", "A_T", "20.8"),
        ("ablation", "GP", "AWA2", "A_T", "69.2"),
        ("ablation", "L_T + GP", "APY", "A_S", "75.2"),
        ("train_time", "DVBE", "AWA2", "train_min", "540"),
        ("train_time", "CNZSL", "CUB", "train_min", "0.5"),
        ("train_time", "L_BT + GP (ours)", "APY", "train_min", "2"),
    ],
)
def test_cells_match_the_paper(reported, table, method, dataset, metric, printed) -> None:
    value = _row(reported, table, method).values[dataset][metric]
    if value is None:
        shown = "-"
    else:
        shown = f"{value:g}" if table == "train_time" else f"{value:.1f}"
    assert shown == printed


def test_per_class_cells_match_the_paper(reported) -> None:
    ours = {c["name"]: c for c in _row(reported, "per_class", "L_BT + GP (ours)").classes}
    theirs = {c["name"]: c for c in _row(reported, "per_class", "L_T + GP").classes}
    assert ours["person"]["share_of_unseen_pct"] == 63.99 and ours["donkey"]["accuracy"] == 36.7
    assert theirs["goat"]["accuracy"] == 63.2 and len(ours) == len(theirs) == 12


def test_table_ii_has_every_method_and_dataset_with_a_citation(reported) -> None:
    main = reported.rows_for("main")
    assert [r.method for r in main] == [
        "SYNC",
        "ALE",
        "DEVISE",
        "GFZSL",
        "GDAN",
        "CADA-VAE",
        "TF-VAEGAN",
        "LisGAN",
        "Li et al.",
        "E-PGN",
        "DVBE",
        "GCM-CF",
        "CNZSL",
        "FREE",
        "L_BT + GP (ours)",
    ]
    for row in main:
        assert sorted(row.values) == sorted(DATASETS)
        assert all(set(v) == {"A_T", "A_U", "A_S", "H"} for v in row.values.values())
        assert "Table II" in row.citation and "ye2022" in row.refs
    ablation = reported.rows_for("ablation")
    assert [r.zslbench_method for r in ablation] == ["krr", "bt-krr", "gp", "t-gp", "bt-gp"]


def test_rows_of_methods_zslbench_implements_name_them(reported) -> None:
    """So that the real page sets each reported row beside the measured row of the same method."""
    named = {(r.table, r.method): r.zslbench_method for r in reported.rows if r.zslbench_method}
    for table in ("main", "train_time"):
        for paper, ours in (
            ("CADA-VAE", "cada-vae"),
            ("CNZSL", "cnzsl"),
            ("L_BT + GP (ours)", "bt-gp"),
        ):
            assert named[(table, paper)] == ours
    assert named[("main", "ALE")] == "ale" and named[("main", "DEVISE")] == "devise"
    assert ("main", "SYNC") not in named and ("main", "FREE") not in named
    assert reported.method_order()[:5] == ["krr", "bt-krr", "gp", "t-gp", "bt-gp"]


def _latex_rows(text: str, label: str) -> list[list[str]]:
    end = text.index(f"\\label{{{label}}}")
    block = text[text.rindex("\\begin{table", 0, end) : end]
    rows = []
    for line in block.splitlines():
        line = line.strip()
        if line.startswith("%") or "&" not in line or "multicolumn" in line or "$A_T$" in line:
            continue
        if line.startswith(("Dataset &", "class &", "Sample Frequency")):
            continue
        cells = [
            re.sub(r"\\textbf\{(.*?)\}", r"\1", c)
            .replace("\\\\", "")
            .replace("\\hline", "")
            .strip()
            for c in line.split("&")
        ]
        rows.append(cells)
    return rows


@pytest.mark.skipif(not PAPER.is_file(), reason=f"paper text not available at {PAPER}")
def test_every_cell_matches_the_paper_source(reported) -> None:
    text = PAPER.read_text(encoding="utf-8")
    for table, label, skip in (
        ("main", "Table:performance", 2),
        ("ablation", "Table:perf_ablation", 1),
    ):
        latex = _latex_rows(text, label)
        rows = reported.rows_for(table)
        assert len(latex) == len(rows)
        for cells, row in zip(latex, rows, strict=True):
            ours = [row.values[d][m] for d in DATASETS for m in ("A_T", "A_U", "A_S", "H")]
            assert [("-" if v is None else f"{v:.1f}") for v in ours] == cells[skip:], row.method
    latex = _latex_rows(text, "Table:time")
    for cells, row in zip(latex, reported.rows_for("train_time"), strict=True):
        ours = [row.values[d]["train_min"] for d in DATASETS]
        assert [("-" if v is None else f"{v:g}min") for v in ours] == cells[1:], row.method


def _broken(tmp_path: Path, mutate) -> Path:
    doc = json.loads(REPORTED.read_text())
    mutate(doc)
    path = tmp_path / "reported.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["rows"][0].pop("citation"), "rows\\[0\\]: 'citation' is missing"),
        (lambda d: d["rows"][1]["values"]["CUB"].update(H="high"), "rows\\[1\\].values.CUB.H"),
        (lambda d: d["rows"][2].update(refs=["nobody"]), "refs nobody are not in"),
        (lambda d: d.update(schema=7), "schema"),
    ],
)
def test_invalid_file_is_a_user_error_naming_file_and_row(tmp_path: Path, mutate, message) -> None:
    path = _broken(tmp_path, mutate)
    with pytest.raises(UserError, match=message) as info:
        load_reported(path)
    assert str(path) in info.value.one_line() and "\n" not in info.value.one_line()
