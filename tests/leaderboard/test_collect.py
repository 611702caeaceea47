"""Aggregation: mean ± sample std and interval over seeds with N, grouping, de-duplication, kinds,
data versions, training times per device model."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from lb_factory import make_record, write_records

from zslbench.errors import UserError
from zslbench.leaderboard.collect import aggregate
from zslbench.records import Record
from zslbench.records.results import newest_runs


def _agg(tmp_path: Path, records: list[Record], first: tuple[str, ...] | list[str] = ()):
    write_records(tmp_path / "r", records)
    kept, superseded = newest_runs(tmp_path / "r", link_base=tmp_path)[:2]
    return aggregate(kept, first), superseded


def test_mean_std_n_are_exact_over_seeds(tmp_path: Path) -> None:
    hs = [40.0, 50.0, 66.0]
    trains = [1.0, 2.0, 4.5]
    records = [
        make_record("synth-apy", "bt-gp", i, metrics={"H": h}, train=t)
        for i, (h, t) in enumerate(zip(hs, trains, strict=True))
    ]
    agg, _ = _agg(tmp_path, records)
    seeds = [r.seed for r in records]
    assert len(agg) == 1
    row = agg.iloc[0]
    assert row["n"] == 3 and row["H"].n == 3
    assert row["H"].mean == pytest.approx(52.0, abs=1e-12)
    # Sample standard deviation (ddof = 1), by its closed form; the values by seed for the tests.
    expected = math.sqrt(((40 - 52) ** 2 + (50 - 52) ** 2 + (66 - 52) ** 2) / 2)
    assert row["H"].std == pytest.approx(expected, abs=1e-12)
    assert row["H_samples"] == dict(zip(seeds, hs, strict=True))
    time = row["times"]["Test CPU"]
    assert time["median"] == statistics.median(trains) and time["n"] == 3
    assert (time["min"], time["max"]) == (1.0, 4.5)
    assert row["seeds"] == sorted(seeds)


def test_train_time_is_the_median_without_oversubscribed_runs(tmp_path: Path) -> None:
    trains = [1.0, 2.0, 3.0, 100.0, 5.0]
    # Run 3 (100 s) was taken on an oversubscribed machine; run 4 has no load report (unknown: kept).
    busy = [False, False, False, True, None]
    agg, _ = _agg(
        tmp_path,
        [
            make_record(repetition=i, train=t, oversubscribed=b)
            for i, (t, b) in enumerate(zip(trains, busy, strict=True))
        ],
    )
    time = agg.iloc[0]["times"]["Test CPU"]
    assert time["median"] == statistics.median([1.0, 2.0, 3.0, 5.0]) == 2.5
    assert (time["n"], time["busy"], time["unknown"], time["busy_only"]) == (4, 1, 1, False)
    assert agg.iloc[0]["n"] == 5 and agg.iloc[0]["H"].n == 5  # the metrics of every run still count


def test_every_run_on_a_busy_machine_shows_their_median_marked(tmp_path: Path) -> None:
    agg, _ = _agg(
        tmp_path,
        [make_record(repetition=i, oversubscribed=True, train=t) for i, t in enumerate((3.0, 5.0))],
    )
    time = agg.iloc[0]["times"]["Test CPU"]
    assert (time["median"], time["n"], time["busy_only"]) == (4.0, 2, True)


def test_times_are_kept_per_device_model(tmp_path: Path) -> None:
    agg, _ = _agg(
        tmp_path,
        [
            make_record(repetition=0, train=1.0, device_name="CPU A"),
            make_record(repetition=1, train=9.0, device_name="CPU B"),
            make_record(repetition=2, train=3.0, device_name="CPU A"),
        ],
    )
    times = agg.iloc[0]["times"]
    assert sorted(times) == ["CPU A", "CPU B"] and len(agg) == 1  # one row: accuracies pool
    assert (times["CPU A"]["median"], times["CPU B"]["median"]) == (2.0, 9.0)


def test_per_image_ausuc_is_aggregated_beside_the_headline(tmp_path: Path) -> None:
    agg, _ = _agg(
        tmp_path,
        [
            make_record(repetition=0, metrics={"AUSUC": 30.0, "AUSUC_per_image": 33.0}),
            make_record(repetition=1, metrics={"AUSUC": 32.0, "AUSUC_per_image": 37.0}),
            make_record(repetition=2, metrics={"AUSUC": 34.0}),
        ],
    )
    row = agg.iloc[0]
    assert (row["AUSUC"].mean, row["AUSUC"].n) == (32.0, 3)
    assert (row["AUSUC_per_image"].mean, row["AUSUC_per_image"].n) == (35.0, 2)


def test_single_seed_has_no_spread(tmp_path: Path) -> None:
    agg, _ = _agg(tmp_path, [make_record(metrics={"H": 42.0})])
    assert agg.iloc[0]["H"].mean == 42.0
    assert math.isnan(agg.iloc[0]["H"].std) and math.isnan(agg.iloc[0]["H"].low)  # undefined, not 0


def test_groups_split_on_method_config_and_split_standardness(tmp_path: Path) -> None:
    records = [
        make_record(method="gp", repetition=0),
        make_record(method="gp", repetition=1),
        make_record(method="bt-gp", repetition=0),
        make_record(method="bt-gp", repetition=0, params={"latent_dim": 32}),
        make_record(method="bt-gp", repetition=0, standard=False, data_fp="other"),
    ]
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
    folder = tmp_path / "r"
    write_records(folder, [old])
    (folder / f"{old.run_id}.json").rename(folder / f"{old.run_id}-old.json")  # another file
    agg, superseded = _agg(tmp_path, [new])
    assert agg.iloc[0]["n"] == 1 and agg.iloc[0]["H"].mean == 30.0
    assert len(superseded) == 1 and superseded.iloc[0]["H"] == 10.0


def test_kinds_come_from_the_record_and_a_stand_in_claiming_real_is_refused(tmp_path: Path) -> None:
    records = [
        make_record("synth-cub", kind="real"),
        make_record("toy", kind="real"),
        make_record("cub"),
        make_record("my-npz", kind="custom"),
    ]
    agg, _ = _agg(tmp_path, records)
    assert dict(zip(agg["dataset"], agg["kind"], strict=True)) == {
        "cub": "real",
        "my-npz": "custom",
    }
    _, _, refused = newest_runs(tmp_path / "r", link_base=tmp_path)
    assert sorted((Path(p).name.split("__")[0], reason) for p, reason in refused) == [
        (name, f"claims dataset_kind 'real', but dataset {name!r} is declared 'synthetic'")
        for name in ("synth-cub", "toy")
    ]


def test_methods_follow_the_given_order_then_by_name(tmp_path: Path) -> None:
    methods = ["sje", "ale", "krr", "bt-gp", "cnzsl"]
    agg, _ = _agg(tmp_path, [make_record(method=m) for m in methods])
    assert list(agg["method"]) == ["ale", "bt-gp", "cnzsl", "krr", "sje"]
    agg, _ = _agg(tmp_path / "x", [make_record(method=m) for m in methods], first=["krr", "cnzsl"])
    assert list(agg["method"]) == ["krr", "cnzsl", "ale", "bt-gp", "sje"]


def test_other_data_versions_are_rows_of_their_own_never_compared(tmp_path: Path) -> None:
    records = [make_record(repetition=r, data_fp="aaaaaaaa1") for r in range(2)]
    records += [make_record(method="gp", repetition=r, data_fp="aaaaaaaa1") for r in range(2)]
    records += [
        make_record(repetition=5, data_fp="bbbbbbbb2", finished_at="2030-01-01T00:00:00+00:00")
    ]
    agg, _ = _agg(tmp_path, records)
    assert len(agg) == 3
    # The version with the most records is the compared one; the other is marked, whoever ran it last.
    assert dict(zip(agg["label"], agg["compared"], strict=True)) == {
        "bt-gp": True,
        "gp": True,
        "bt-gp · data bbbbbbbb, not compared": False,
    }
    (versions,) = agg.attrs["data_versions"]
    assert versions.compared == "aaaaaaaa1" and versions.counts == (
        ("aaaaaaaa1", 4),
        ("bbbbbbbb2", 1),
    )
    assert "only fingerprint aaaaaaaa (4 record(s)) is compared" in versions.warning()


def test_record_links_are_relative_to_the_output(tmp_path: Path) -> None:
    write_records(tmp_path / "lb" / "records", [make_record()])
    runs, _, _ = newest_runs(tmp_path / "lb" / "records", link_base=tmp_path / "lb")
    assert (
        runs.iloc[0]["link"].startswith("records/")
        and (tmp_path / "lb" / runs.iloc[0]["link"]).is_file()
    )


def test_missing_results_dir_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such results directory"):
        newest_runs(tmp_path / "nope", link_base=tmp_path)


def test_per_class_mean_over_seeds_and_share_of_unseen(tmp_path: Path) -> None:
    records = [
        make_record(repetition=0, per_class_acc=[10.0, 20.0], frequencies=[0.01, 0.03]),
        make_record(repetition=1, per_class_acc=[30.0, 20.0], frequencies=[0.01, 0.03]),
    ]
    agg, _ = _agg(tmp_path, records)
    rows = agg.iloc[0]["per_class"]
    assert [r["interval"].mean for r in rows] == [20.0, 20.0]
    assert rows[0]["interval"].std == pytest.approx(math.sqrt(200.0))
    assert rows[0]["samples"] == {records[0].seed: 10.0, records[1].seed: 30.0}
    assert [r["share"] for r in rows] == pytest.approx([0.25, 0.75])
