"""``zslbench run --recheck``: the same run made again here, its record kept, and how far it moved
written beside it (``<run_id>.rechecks``)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.cli_helpers import invoke_main
from zslbench.records import rechecks


def _record(device: str, h: float, gamma: float = 0.5) -> SimpleNamespace:
    return SimpleNamespace(
        run_id="toy__x",
        key="k",
        method="t-gp",
        dataset="toy",
        seed=7,
        metrics={"A_T": 30.0, "A_U": 20.0, "A_S": 40.0, "H": h, "AUSUC": 9.0},
        gamma=gamma,
        device={"name": device, "type": "cpu", "threads": 2},
        git={"commit": "abc"},
        finished_at="2026-11-27T00:00:00+00:00",
    )


def test_compare_gives_each_move_and_says_bit_identical_only_when_all_equal():
    same = rechecks.compare(_record("AMD EPYC", 30.91), _record("Intel Xeon", 30.91))
    assert same["bit_identical"] and same["delta"]["H"] == 0.0
    moved = rechecks.compare(_record("AMD EPYC", 30.91), _record("Intel Xeon", 29.83))
    assert not moved["bit_identical"] and round(moved["delta"]["H"], 2) == -1.08
    assert moved["recorded"]["device"] == "AMD EPYC" and moved["again"]["device"] == "Intel Xeon"
    gamma_only = rechecks.compare(_record("A", 30.0, gamma=0.5), _record("B", 30.0, gamma=0.6))
    assert not gamma_only["bit_identical"] and set(gamma_only["delta"].values()) == {0.0}
    assert "metrics bit-identical, gamma +0.1" in rechecks.line(gamma_only)
    tiny = rechecks.compare(_record("A", 30.0), _record("B", 30.0 + 3.6e-15))
    assert "H +3.6e-15" in rechecks.line(tiny) and "A_T +0.00" in rechecks.line(tiny)
    assert "H -1.08" in rechecks.line(moved) and "bit-identical" in rechecks.line(same)


def test_summary_counts_per_method(tmp_path):
    entries = [
        rechecks.compare(_record("A", 30.0), _record("B", 30.0)),
        rechecks.compare(_record("A", 30.0), _record("C", 29.5)),
        rechecks.compare(_record("A", 30.0), _record("B", 30.7)),
    ]
    for name in ("r0", "r1", "broken"):
        (tmp_path / f"{name}.json").write_text("{}")  # the records (orphans are not read)
    for i, e in enumerate(entries):
        rechecks.append(tmp_path / f"r{i % 2}.json", e)
    (tmp_path / "broken.rechecks").write_text("{not json")
    found, refused = rechecks.read_all(tmp_path)
    assert refused == [(tmp_path / "broken.rechecks", "is not JSON")]
    (row,) = rechecks.summary(found)
    assert (row["method"], row["rechecks"], row["bit_identical"]) == ("t-gp", 3, 1)
    assert row["metrics_identical"] == 1
    assert round(row["max_abs_dH"], 6) == 0.7 and row["machines"] == ["A", "B", "C"]


def test_recheck_reruns_a_cached_run_keeps_its_record_and_writes_the_move(tmp_path):
    res = tmp_path / "res"
    args = (
        "run",
        "--method",
        "krr",
        "--dataset",
        "toy",
        "--device",
        "cpu",
        "--results-dir",
        str(res),
    )
    assert invoke_main(*args).exit_code == 0
    (record,) = res.glob("*.json")
    before = record.read_bytes()
    out = invoke_main(*args, "--recheck")
    assert out.exit_code == 0, out.output
    assert "recheck toy · krr (seed" in out.output and "bit-identical" in out.output
    assert record.read_bytes() == before  # the recorded run is never replaced
    (entry,) = json.loads(record.with_suffix(".rechecks").read_text())
    assert entry["bit_identical"] is True and entry["run_id"] == record.stem
    assert list(res.glob("*.json")) == [record]


def test_the_leaderboard_lists_rechecks_per_method_with_names_escaped(tmp_path):
    from zslbench.leaderboard import reproducibility

    assert reproducibility.page(tmp_path) is None  # no rechecks, no page
    moved = rechecks.compare(_record("AMD EPYC", 30.91), _record("Intel | Xeon", 29.83))
    moved["method"] = "t-gp|<b>"
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "b.json").write_text("{}")
    rechecks.append(tmp_path / "a.json", moved)
    rechecks.append(tmp_path / "b.json", rechecks.compare(_record("A", 1.0), _record("B", 1.0)))
    text = reproducibility.page(tmp_path)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows[0].startswith("| t-gp | 1 | 1 | 1 | 0.00 | 0.00 |")
    assert "| 1 | 0 | 0 | 1.08 | 1.08 |" in rows[1] and "<b>" not in rows[1]
    assert "Intel \\| Xeon" in rows[1]


def test_recheck_runs_nothing_that_has_no_current_record(tmp_path):
    res = tmp_path / "res"
    out = invoke_main(
        "run",
        "--method",
        "krr",
        "--dataset",
        "toy",
        "--device",
        "cpu",
        "--results-dir",
        str(res),
        "--recheck",
    )
    assert out.exit_code == 0, out.output
    assert "not rechecked toy · krr · r0" in out.output and "(new)" in out.output
    assert not res.exists() or not any(res.iterdir())
