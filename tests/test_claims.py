"""Issue 27: one record per configuration, and records checked against their own claims
(``zslbench.records.validation``) by ``run`` (the cache), ``leaderboard`` and ``compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import invoke_main
from zslbench.records import Record, parse, write_record

pytestmark = pytest.mark.usefixtures("one_thread")


def _run(res: Path, *extra: str):
    return invoke_main(
        "run", "--method", "krr", "--dataset", "toy", "--results-dir", str(res), *extra
    )


def test_a_run_never_replaces_the_record_of_another_configuration_under_its_name(
    tmp_path, monkeypatch
):
    """Run names hold 12 hex digits of the configuration id; were two ever to share them, the
    second run is refused in one line instead of replacing the first one's record."""
    from zslbench import planning, records

    res = tmp_path / "res"
    assert _run(res, "--set", "regressor.alpha=0.1").exit_code == 0
    (first,) = res.glob("*.json")
    before = first.read_bytes()

    def clash(dataset, method, config_id, data_fp, dev_type, seed):
        return records.run_name(dataset, method, "0" * 12, data_fp, dev_type, seed)

    monkeypatch.setattr(planning, "run_name", clash)
    first.rename(
        res
        / f"{clash('toy', 'krr', '', first.stem.split('__')[3], 'cpu', first.stem.split('__')[-1][1:])}.json"
    )
    out = _run(res, "--set", "regressor.alpha=1.0")
    assert out.exit_code == 2, out.output
    assert "holds the record of another configuration" in out.output
    (kept,) = res.glob("*.json")
    assert kept.read_bytes() == before


def _reseal(path: Path, raw: dict) -> None:
    """Write ``raw`` as a record at ``path`` with a valid digest (a forger recomputes it)."""
    record = Record(**{k: v for k, v in raw.items() if k != "digest"}).sealed()
    path.write_text(record.to_json())


@pytest.fixture(scope="module")
def krr_runs(tmp_path_factory) -> tuple[Path, dict]:
    """krr on toy with alpha 0.1 (recorded), and the plan of alpha 1.0 (its key and run id)."""
    res = tmp_path_factory.mktemp("forged") / "res"
    assert _run(res, "--set", "regressor.alpha=0.1").exit_code == 0
    other = res.parent / "other"
    assert _run(other, "--set", "regressor.alpha=1.0").exit_code == 0
    (theirs,) = other.glob("*.json")
    return res, json.loads(theirs.read_text())


FORGERIES = {
    # the issue's forgery: key and run id of alpha=1.0 on alpha=0.1's record
    "key": lambda raw, other: {"key": other["key"], "run_id": other["run_id"]},
    # and its config id and identity too: the configuration itself still says alpha=0.1
    "config": lambda raw, other: {
        "key": other["key"],
        "run_id": other["run_id"],
        "config_id": other["config_id"],
        "identity": other["identity"],
    },
    # toy's data published as a measured APY row
    "dataset": lambda raw, other: {
        "dataset": "apy",
        "dataset_kind": "real",
        "run_id": raw["run_id"].replace("toy__", "apy__", 1),
    },
    "kind": lambda raw, other: {"dataset_kind": "real"},
    "seed": lambda raw, other: {"seed": raw["seed"] + 1},
}


@pytest.mark.parametrize("how", sorted(FORGERIES))
def test_a_forged_record_is_refused_by_run_leaderboard_and_compare(tmp_path, krr_runs, how):
    src, other = krr_runs
    (good,) = src.glob("*.json")
    raw = json.loads(good.read_text())
    raw.update(FORGERIES[how](raw, other))
    res = tmp_path / "res"
    res.mkdir()
    forged = res / f"{raw['run_id']}.json"
    _reseal(forged, raw)
    parse(json.loads(forged.read_text()))  # the digest alone accepts it

    alpha = "1.0" if how in ("key", "config") else "0.1"
    out = _run(res, "--set", f"regressor.alpha={alpha}", "--dry-run")
    assert out.exit_code == 0, out.output
    assert "cached" not in out.stdout.splitlines()[0], out.stdout

    board = invoke_main("leaderboard", "--results-dir", str(res), "--out", str(tmp_path / "board"))
    warned = [line for line in board.stderr.splitlines() if str(forged.as_posix()) in line]
    assert len(warned) == 1 and "not a valid zslbench record" in warned[0], board.stderr
    assert "Traceback" not in board.output

    cmp = invoke_main("compare", "krr", "krr", "-d", raw["dataset"], "--results-dir", str(res))
    warned = [line for line in cmp.stderr.splitlines() if str(forged.as_posix()) in line]
    assert len(warned) == 1 and "not a valid zslbench record" in warned[0], cmp.stderr
    assert "Traceback" not in cmp.output


def test_a_forged_record_is_re_run_by_run_with_one_line_naming_it(tmp_path, krr_runs):
    src, other = krr_runs
    (good,) = src.glob("*.json")
    raw = json.loads(good.read_text())
    raw.update(FORGERIES["key"](raw, other))
    res = tmp_path / "res"
    forged = res / f"{raw['run_id']}.json"
    res.mkdir()
    _reseal(forged, raw)
    out = _run(res, "--set", "regressor.alpha=1.0")
    assert out.exit_code == 0, out.output
    named = [line for line in out.stderr.splitlines() if str(forged) in line and "warning" in line]
    assert len(named) == 1 and "is not the key of its identity" in named[0], out.stderr
    assert "0 cached, 1 to run" in out.stderr and "done toy · krr" in out.stderr
    assert (
        json.loads(forged.read_text())["config"]["components"]["regressor"]["params"]["alpha"]
        == 1.0
    )


def test_a_record_without_an_identity_is_never_served_from_the_cache(tmp_path):
    res = tmp_path / "res"
    assert _run(res).exit_code == 0
    (path,) = res.glob("*.json")
    raw = json.loads(path.read_text())
    raw["identity"] = {}
    write_record(res, Record(**{k: v for k, v in raw.items() if k != "digest"}))
    out = _run(res, "--dry-run")
    assert out.stdout.splitlines()[-1].startswith("1 run(s): 0 cached, 1 to run"), out.output


def test_the_committed_records_all_pass_their_own_claims():
    from zslbench.records.validation import read_one

    board = Path(__file__).resolve().parents[1] / "leaderboards" / "records"
    paths = sorted(board.rglob("*.json"))
    assert len(paths) >= 246
    refused = {p.name: str(r) for p in paths if not isinstance(r := read_one(p), Record)}
    assert refused == {}
