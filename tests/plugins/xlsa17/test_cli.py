"""``zslbench data verify/info`` output, and the xlsa17 dataset plugin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import invoke_main
from tests.plugins.xlsa17.helpers import Mini, data_cli
from zslbench.data import checks as data_checks
from zslbench.data import splits
from zslbench.data.checks import check_dataset
from zslbench.data.dataset import DatasetSpec
from zslbench.errors import DataError, SplitError
from zslbench_plugins import xlsa17 as plugin
from zslbench_plugins.xlsa17.cli import parse_datasets


def test_verify_clean_table(mini: Mini) -> None:
    res = data_cli(["verify", "-d", "awa2", "--data-dir", str(mini.data_dir)])
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    out = res.stdout
    assert f"✓ official {mini.entry['split_fingerprint'][:12]}" in out
    assert "54×2048" in out and "12×9" in out and "24/12/18" in out and "OK" in out


def test_verify_all_reports_every_missing_file(mini: Mini) -> None:
    res = data_cli(["verify", "--data-dir", str(mini.data_dir)])
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    # 4 absent datasets x 2 files (awa2 is fine), grouped in one line with one fix for all four
    assert len(lines) == 1, lines
    assert f"8 data files are missing under {mini.data_dir} (AWA1/res101.mat" in lines[0]
    assert "`zslbench data download --dataset awa1,apy,cub,sun --data-dir" in lines[0]
    assert "awa1" in res.stdout and "missing" in res.stdout


def test_info_shows_data_cache_and_disk(mini: Mini, monkeypatch: pytest.MonkeyPatch) -> None:
    data_cli(["verify", "-d", "awa2", "--data-dir", str(mini.data_dir)])
    monkeypatch.setenv("ZSLBENCH_DATA", str(mini.data_dir))
    res = data_cli(["info"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert f"data dir: {mini.data_dir}  (from $ZSLBENCH_DATA)" in out
    assert "res101-" in out and "att_splits-" in out and "ok" in out
    assert "disk: datasets" in out and "free on this filesystem" in out


def test_info_on_an_empty_dir(tmp_path: Path) -> None:
    res = data_cli(["info", "--data-dir", str(tmp_path / "nothing")])
    assert res.exit_code == 0 and "does not exist yet" in res.stdout and "(empty)" in res.stdout


def test_parse_datasets() -> None:
    assert parse_datasets(("all",)) == ["awa1", "awa2", "apy", "cub", "sun"]
    assert parse_datasets(("CUB,awa2", "cub")) == ["cub", "awa2"]


def test_plugin_specs(mini: Mini) -> None:
    specs = plugin.zslbench_datasets()
    assert [s.name for s in specs] == ["awa1", "awa2", "apy", "cub", "sun"]
    assert all(
        isinstance(s, DatasetSpec) and s.kind == "real" and s.groups == ("all",) for s in specs
    )
    awa2 = next(s for s in specs if s.name == "awa2")
    assert "37322 images" in awa2.description
    assert awa2.missing(mini.data_dir) == []
    assert len(next(s for s in specs if s.name == "cub").missing(mini.data_dir)) == 2
    # Each dataset declares the published benchmark it is (here the miniature stands in for it).
    assert awa2.benchmark.name == "awa2" and awa2.benchmark.revision == "Split V2.0"
    assert awa2.benchmark.split == mini.entry["split_fingerprint"]
    verdict = check_dataset(awa2.load(mini.data_dir), "real", benchmark=awa2.benchmark)
    assert verdict.standard and verdict.official == "awa2"


def test_plugin_load_refuses_only_what_it_cannot_read(mini: Mini) -> None:
    """The runner calls exactly ``spec.load(data_dir)``: a file whose split fails the split
    checks still reads (those checks are the runner's), and the runner's check names the file; a
    file that cannot be read as a dataset is refused with one line."""
    a = dict(mini.arrays)
    a["trainval_loc"] = a["trainval_loc"][1:]  # one image left out of every split
    mini.rewrite(a)
    spec = next(s for s in plugin.zslbench_datasets() if s.name == "awa2")
    verdict = check_dataset(
        spec.load(mini.data_dir), "real", benchmark=spec.benchmark, allow_nonstandard=True
    )
    assert not verdict.standard and "in no split" in verdict.reason
    a["test_seen_loc"] = a["test_seen_loc"].astype(np.int64) + 1000
    mini.rewrite(a)
    d = spec.load(mini.data_dir)
    with pytest.raises(
        SplitError, match="att_splits.mat: test_seen_loc has 12 indices outside 1..54"
    ):
        check_dataset(d, "real", benchmark=spec.benchmark, allow_nonstandard=True)
    a["features"] = a["features"].copy()
    a["features"][3, 5] = np.nan
    mini.rewrite(a)
    with pytest.raises(DataError, match="res101.mat: features contain NaN or Inf"):
        spec.load(mini.data_dir)


def test_the_split_checks_run_once_per_load(
    mini: Mini, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of an xlsa17 dataset checks its split once: the runner does, the loader does not
    (they used to run in both)."""
    calls = []
    real = splits.check_split

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(splits, "check_split", counted)
    monkeypatch.setattr(data_checks, "check_split", counted)
    # (the flag only so that the code before this change, which compared the miniature with the
    # real AWA2, runs it too: there the split was checked twice)
    res = invoke_main(
        "run",
        "--method",
        "gp",
        "--dataset",
        "awa2",
        "--data-dir",
        str(mini.data_dir),
        "--results-dir",
        str(tmp_path / "res"),
        "--allow-nonstandard-split",
    )
    assert res.exit_code == 0, res.output
    assert calls == [str(mini.att_splits)]


def test_plugin_load_uses_zslbench_data_env(mini: Mini, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZSLBENCH_DATA", str(mini.data_dir))
    spec = next(s for s in plugin.zslbench_datasets() if s.name == "awa2")
    assert spec.load(None).source["data_dir"] == str(mini.data_dir)
