"""Aggregation: mean ± sample std over seeds with N, grouping, de-duplication, kinds."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from lb_factory import make_record, write_records

from zslbench.errors import UserError
from zslbench.leaderboard.collect import aggregate, dedupe, load_runs, per_class
from zslbench.records import Record


def _agg(tmp_path: Path, records: list[Record]):
    write_records(tmp_path / "r", records)
    kept, superseded = dedupe(load_runs(tmp_path / "r", link_base=tmp_path)[0])
    return aggregate(kept), superseded


def test_mean_std_n_are_exact_over_seeds(tmp_path: Path) -> None:
    hs = [40.0, 50.0, 66.0]
    trains = [1.0, 2.0, 4.5]
    agg, _ = _agg(tmp_path, [make_record("synth-apy", "bt-gp", i, metrics={"H": h}, train=t)
                             for i, (h, t) in enumerate(zip(hs, trains, strict=True))])
    assert len(agg) == 1
    row = agg.iloc[0]
    assert row["n"] == 3 and row["H_n"] == 3
    assert row["H_mean"] == pytest.approx(52.0, abs=1e-12)
    # Sample standard deviation (ddof = 1), by its closed form.
    expected = math.sqrt(((40 - 52) ** 2 + (50 - 52) ** 2 + (66 - 52) ** 2) / 2)
    assert row["H_std"] == pytest.approx(expected, abs=1e-12)
    assert row["train_mean"] == pytest.approx(statistics.fmean(trains))
    assert row["train_std"] == pytest.approx(statistics.stdev(trains))
    assert row["seeds"] == [1000, 1001, 1002]


def test_single_seed_has_no_spread(tmp_path: Path) -> None:
    agg, _ = _agg(tmp_path, [make_record(metrics={"H": 42.0})])
    assert agg.iloc[0]["H_mean"] == 42.0
    assert math.isnan(agg.iloc[0]["H_std"])  # undefined, not 0


def test_groups_split_on_method_config_and_split_standardness(tmp_path: Path) -> None:
    records = [make_record(method="gp", repetition=0), make_record(method="gp", repetition=1),
               make_record(method="bt-gp", repetition=0),
               make_record(method="bt-gp", repetition=0, params={"latent_dim": 32}),
               make_record(method="bt-gp", repetition=0, standard=False, data_fp="other")]
    records[-1].run_id += "-nonstandard"  # another file (the runner names runs without the split)
    agg, _ = _agg(tmp_path, records)
    assert sorted(agg["n"]) == [1, 1, 1, 2]
    labels = set(agg["label"])
    # Two bt-gp configurations read alike, so the config hash tells them apart; the non-standard run
    # is labelled as such.
    assert any("non-standard split" in label for label in labels)
    cfg = [label for label in labels if label.startswith("bt-gp · cfg ")]
    assert len(cfg) == 2 and len(labels) == 4


def test_newest_record_per_seed_wins(tmp_path: Path) -> None:
    old = make_record(repetition=0, metrics={"H": 10.0}, finished_at="2025-01-01T00:00:00+00:00")
    new = make_record(repetition=0, metrics={"H": 30.0}, finished_at="2025-02-01T00:00:00+00:00")
    old.run_id += "-old"
    agg, superseded = _agg(tmp_path, [old, new])
    assert agg.iloc[0]["n"] == 1 and agg.iloc[0]["H_mean"] == 30.0
    assert len(superseded) == 1 and superseded.iloc[0]["H"] == 10.0


def test_synthetic_by_name_even_if_record_says_real(tmp_path: Path) -> None:
    agg, _ = _agg(tmp_path, [make_record("synth-cub", kind="real"), make_record("toy", kind="real"),
                             make_record("cub")])
    assert dict(zip(agg["dataset"], agg["kind"], strict=True)) == {
        "synth-cub": "synthetic", "toy": "synthetic", "cub": "real"}


def test_data_fingerprint_clash_becomes_two_rows(tmp_path: Path) -> None:
    agg, _ = _agg(tmp_path, [make_record(repetition=0, data_fp="aaaaaaaa1"),
                             make_record(repetition=1, data_fp="bbbbbbbb2")])
    assert len(agg) == 2
    assert sorted(agg["label"]) == ["bt-gp · data aaaaaaaa", "bt-gp · data bbbbbbbb"]


def test_record_links_are_relative_to_the_output(tmp_path: Path) -> None:
    write_records(tmp_path / "lb" / "records", [make_record()])
    runs, _ = load_runs(tmp_path / "lb" / "records", link_base=tmp_path / "lb")
    assert runs.iloc[0]["link"].startswith("records/") and (tmp_path / "lb" / runs.iloc[0]["link"]).is_file()


def test_missing_results_dir_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such results directory"):
        load_runs(tmp_path / "nope", link_base=tmp_path)


def test_per_class_mean_over_seeds_and_share_of_unseen() -> None:
    a = make_record(repetition=0, per_class_acc=[10.0, 20.0], frequencies=[0.01, 0.03])
    b = make_record(repetition=1, per_class_acc=[30.0, 20.0], frequencies=[0.01, 0.03])
    rows = per_class([a, b])
    assert [r["mean"] for r in rows] == [20.0, 20.0]
    assert rows[0]["std"] == pytest.approx(math.sqrt(200.0))
    assert [r["share"] for r in rows] == pytest.approx([0.25, 0.75])
