"""The results folder against bad input (issue 42 items 5, 8-11, 23, 25): special files, malformed
and concurrent rechecks, forged repetitions, and prune per record and read-only."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import invoke_main
from tests.leaderboard.lb_factory import make_record, write_records
from tests.test_cli import THIRD_PARTY
from tests.test_rechecks import _record
from zslbench import identity as ident
from zslbench.data.synthetic import generate
from zslbench.leaderboard import reproducibility
from zslbench.records import (
    SCHEMA_VERSION,
    Record,
    RecordError,
    read_record,
    rechecks,
    results,
    valid_record,
)
from zslbench_plugins import npz
from zslbench_plugins.synthetic import SHAPES

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def alarm():
    """Fail a test that hangs (a FIFO read without O_NONBLOCK waits for a writer forever)."""

    def hung(*_):
        raise TimeoutError("hung reading the results folder")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_special_files_in_a_results_folder_are_refused_not_read(tmp_path, alarm):
    res = tmp_path / "res"
    (path,) = write_records(res, [make_record("toy", "krr", 0)])
    (res / "zero.json").symlink_to("/dev/zero")
    os.mkfifo(res / "pipe.json")
    (res / f"{path.stem}.rechecks").symlink_to("/dev/zero")
    big = res / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(17 * 2**20)  # sparse: 17 MB that costs no disk

    for name in ("zero.json", "pipe.json"):
        with pytest.raises(RecordError, match="not a regular file"):
            read_record(res / name)
    with pytest.raises(RecordError, match="over the"):
        read_record(big)
    with pytest.warns(UserWarning):
        frame = results.load_results(res)
    assert len(frame) == 1
    refused = dict(frame.attrs["refused"])
    assert {Path(p).name for p in refused} == {"zero.json", "pipe.json", "big.json"}
    entries, skipped = rechecks.read_all(res)
    assert entries == [] and "not a regular file" in skipped[0][1]


def test_a_malformed_rechecks_file_is_skipped_with_a_warning_naming_it(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "b.json").write_text("{}")
    rechecks.append(tmp_path / "a.json", rechecks.compare(_record("A", 1.0), _record("B", 1.0)))
    bad = rechecks.compare(_record("A", 1.0), _record("B", 2.0))
    bad["delta"]["H"], bad["recorded"] = "abc", "x"
    (tmp_path / "b.rechecks").write_text(json.dumps([bad]))
    warnings: list[str] = []
    text = reproducibility.page(tmp_path, warnings)
    assert text is not None and "| t-gp | 1 | 1 |" in text  # a.rechecks still counts
    assert warnings == [
        f"{(tmp_path / 'b.rechecks').as_posix()}: skipped, not a valid rechecks file: holds a "
        "delta that is not an object of finite numbers"
    ]


def test_a_rechecks_file_without_its_record_is_ignored(tmp_path):
    entry = rechecks.compare(_record("A", 1.0), _record("B", 2.0))
    rechecks.append(tmp_path / "gone.json", entry)  # its record was removed
    assert rechecks.read_all(tmp_path) == ([], [])
    assert reproducibility.page(tmp_path) is None


def _append_many(path: str, n: int) -> None:
    for i in range(n):
        entry = rechecks.compare(_record("A", 1.0), _record("B", float(i)))
        rechecks.append(Path(path), entry)


def test_concurrent_rechecks_of_one_record_keep_every_entry(tmp_path):
    record = tmp_path / "r.json"
    record.write_text("{}")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(record), 60)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    entries, _ = rechecks.read_all(tmp_path)
    assert len(entries) == 180
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no lock file


@pytest.fixture(scope="module")
def krr_record(tmp_path_factory) -> dict:
    res = tmp_path_factory.mktemp("krr") / "res"
    run = invoke_main("run", "--method", "krr", "--dataset", "toy", "--results-dir", str(res))
    assert run.exit_code == 0, run.output
    (path,) = res.glob("*.json")
    return json.loads(path.read_text())


def _write(res: Path, raw: dict) -> Path:
    res.mkdir(parents=True, exist_ok=True)
    record = Record(**{k: v for k, v in raw.items() if k != "digest"}).sealed()
    path = res / f"{record.run_id}.json"
    path.write_text(record.to_json())
    return path


def test_a_record_whose_seed_is_not_its_repetitions_is_refused(tmp_path, krr_record):
    raw = dict(krr_record, repetition=10**8)
    path = _write(tmp_path / "res", raw)
    found = valid_record(path)
    assert isinstance(found, RecordError)
    assert str(found).startswith("its seed ") and "repetition 100000000" in str(found)


def test_prune_takes_a_record_of_a_huge_repetition_without_planning_every_seed(
    tmp_path, krr_record
):
    """Repetition 10^8 with its own seed is a valid run: checked in one plan, no 3.4 GB."""
    seed = ident.derive_seed(krr_record["base_seed"], "toy", 10**8)
    identity = dict(krr_record["identity"], seed=seed)
    raw = dict(
        krr_record,
        repetition=10**8,
        seed=seed,
        identity=identity,
        key=ident.run_key(identity, SCHEMA_VERSION),
        run_id=krr_record["run_id"].rsplit("__s", 1)[0] + f"__s{seed}",
    )
    res = tmp_path / "res"
    _write(res, krr_record)
    _write(res, raw)
    out = invoke_main("leaderboard", "prune", "--results-dir", str(res))
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines() == ["0 of 2 record(s) would be re-run by the current code"]


def test_prune_checks_each_record_alone_and_lists_a_read_only_folder(tmp_path, monkeypatch):
    """A method whose plugin is not installed is kept unchecked, and the stale krr record beside
    it (one configuration group) is still listed; the folder is read-only: nothing is written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_zsl_plugin.py").write_text(textwrap.dedent(THIRD_PARTY))
    monkeypatch.syspath_prepend(str(tmp_path))
    toy = generate(SHAPES["toy"])
    npz.save_dataset(toy, tmp_path / "data" / "mine.npz")
    run = invoke_main(
        "-p",
        "my_zsl_plugin",
        "run",
        "--method",
        "linear-proto,krr",
        "--dataset",
        "data/mine.npz",
        "--results-dir",
        "res",
    )
    assert run.exit_code == 0, run.output
    toy.features = np.ascontiguousarray(toy.features[:, ::-1])  # the data changes
    npz.save_dataset(toy, tmp_path / "data" / "mine.npz")
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: not mode & os.W_OK and real_access(p, mode, **kw)
    )
    out = invoke_main("leaderboard", "prune", "--results-dir", "res")
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[0].startswith("kept 1 record(s) unchecked (e.g. res/mine__linear-proto__")
    assert lines[1].startswith("would remove res/mine__krr__")
    assert lines[2] == (
        "1 of 2 record(s) would be re-run by the current code; nothing removed: pass --yes to "
        "remove them"
    )


def test_prune_yes_removes_the_records_rechecks_and_failure_note(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    toy = generate(SHAPES["toy"])
    npz.save_dataset(toy, tmp_path / "data" / "mine.npz")
    run = invoke_main(
        "run", "--method", "krr", "--dataset", "data/mine.npz", "--results-dir", "res"
    )
    assert run.exit_code == 0, run.output
    (record,) = (tmp_path / "res").glob("*.json")
    record.with_suffix(".rechecks").write_text("[]\n")
    record.with_suffix(".failed").write_text("an old failure\n")
    (tmp_path / "res" / "notes.txt").write_text("mine")
    toy.features = np.ascontiguousarray(toy.features[:, ::-1])
    npz.save_dataset(toy, tmp_path / "data" / "mine.npz")
    out = invoke_main("leaderboard", "prune", "--results-dir", "res", "--yes")
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == ["notes.txt"]


def test_recheck_leaves_a_malformed_rechecks_file_as_it_is_and_says_so(tmp_path):
    args = ("run", "--method", "krr", "--dataset", "toy", "--results-dir", str(tmp_path))
    assert invoke_main(*args).exit_code == 0
    (record,) = tmp_path.glob("*.json")
    planted = record.with_suffix(".rechecks")
    planted.write_text('{"not": "a list"}')
    out = invoke_main(*args, "--recheck")
    assert out.exit_code == 0, out.output
    assert "internal error" not in out.output
    assert f"{planted}: not extended, is not a JSON list of recheck entries" in out.stderr
    assert planted.read_text() == '{"not": "a list"}'
