"""``zslbench.load_results``: every record as one tidy row, through the leaderboard's own reader."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

import zslbench
from tests.leaderboard.lb_factory import make_record, write_records
from zslbench.records import results


def test_load_results_is_one_row_per_record_with_the_documented_columns(tmp_path: Path) -> None:
    made = [
        make_record(
            "synth-apy", "bt-gp", 0, metrics={"H": 40.0, "AUSUC_per_image": 33.0}, train=2.5
        ),
        make_record("synth-apy", "bt-gp", 1, metrics={"H": 44.0}, oversubscribed=True),
        make_record("apy", "gp", 0, device_name="Some GPU", device_type="cuda", data_fp="fp-apy"),
    ]
    paths = write_records(tmp_path / "res", made)
    frame = zslbench.load_results(tmp_path / "res")
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == results.columns()
    assert len(frame) == 3 and frame.attrs["refused"] == []
    row = frame[(frame["method"] == "bt-gp") & (frame["seed"] == made[0].seed)].iloc[0]
    assert (row["dataset"], row["dataset_kind"], row["H"], row["AUSUC_per_image"]) == (
        "synth-apy",
        "synthetic",
        40.0,
        33.0,
    )
    assert (row["train_seconds"], row["device_name"], row["oversubscribed"]) == (
        2.5,
        "Test CPU",
        False,
    )
    assert row["config"]["components"]["embedder"]["params"] == {"latent_dim": 64}
    assert row["path"] == paths[0].as_posix()
    other = frame[frame["seed"] == made[1].seed].iloc[0]
    assert other["oversubscribed"] and math.isnan(other["AUSUC_per_image"])
    gpu = frame[frame["method"] == "gp"].iloc[0]
    assert (gpu["device_type"], gpu["data_fingerprint"], gpu["dataset_kind"]) == (
        "cuda",
        "fp-apy",
        "real",
    )
    # The same numbers as a groupby would give the leaderboard's means.
    assert frame.groupby("method")["H"].mean()["bt-gp"] == 42.0


def test_a_file_that_is_not_a_record_is_a_warning_naming_it(tmp_path: Path) -> None:
    write_records(tmp_path / "res", [make_record()])
    (tmp_path / "res" / "broken.json").write_text(json.dumps({"not": "a record"}))
    with pytest.warns(UserWarning, match=r"broken\.json: skipped, not a valid zslbench record"):
        frame = zslbench.load_results(tmp_path / "res")
    assert len(frame) == 1 and frame.attrs["refused"][0][0].endswith("broken.json")


def test_a_missing_folder_is_a_user_error(tmp_path: Path) -> None:
    from zslbench.errors import UserError

    with pytest.raises(UserError, match="no such results directory"):
        zslbench.load_results(tmp_path / "nope")


REPO = Path(__file__).resolve().parents[1]


def _block_after(page: str, marker: str, language: str) -> str:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    return text.split(marker, 1)[1].split(f"```{language}\n", 1)[1].split("\n```", 1)[0]


def test_the_docs_examples_run_as_written(monkeypatch) -> None:
    """The docs' load_results example and compare command, on the committed records."""
    import shlex

    from tests.cli_helpers import invoke_main

    monkeypatch.chdir(REPO)
    namespace: dict = {}
    code = _block_after("records.md", "## Records from Python", "python")
    exec(compile(code, "records.md", "exec"), namespace)  # noqa: S102 - the docs' own example
    runs = namespace["runs"]
    assert isinstance(runs, pd.DataFrame) and len(runs) > 100 and runs.attrs["refused"] == []
    summary = runs.groupby(["dataset", "method"])["H"].agg(["mean", "std", "count"])
    assert summary.loc[("synth-apy", "bt-gp"), "count"] >= 3  # three seeds, and its sweep
    (command,) = _block_after("leaderboards.md", "Two methods on one dataset:", "bash").splitlines()
    words = shlex.split(command)
    assert words[0] == "zslbench"
    result = invoke_main(*words[1:])
    assert result.exit_code == 0, result.output
    assert "95% CI" in result.stdout and re.search(r"^\s+H\s+.*\d\.\d{4}$", result.stdout, re.M)
