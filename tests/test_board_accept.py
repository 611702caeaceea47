"""What the write job of the public board (``zslbench board accept``) requires of a record handed
on by the job that ran third-party code (issue 42 items 1, 6, 12-15, 22, 25): every claim that can
be recomputed is, and only the listed third-party methods on the board's stand-ins are taken.

The records here are forged as an attacker would: whatever can be recomputed (configuration id,
key, run id, digest) is, so each is refused for the one requirement it breaks."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zslbench.board import BoardPlugin, accept
from zslbench.identity import derive_seed, run_key
from zslbench.leaderboard.admission import MAX_RECORD_BYTES
from zslbench.records import Record, config_id, run_name

DEMO = Path(__file__).resolve().parent / "board_plugin"
PLUGINS = [BoardPlugin("zsl-x", "zsl-x==1", ("board-demo", "krr"))]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Record:
    """A record the board takes: the demo plugin's method on ``toy``, run from zsl-x."""
    import zslbench

    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(DEMO))
        (rec,) = zslbench.run(
            methods="board-demo",
            datasets="toy",
            results_dir=tmp_path_factory.mktemp("run"),
            plugins=["zsl_board_demo"],
        )
    return forge(
        rec, lambda raw: raw["config"].update(method_distribution={"distribution": "zsl-x"})
    )


def forge(rec: Record, edit: Callable[[dict[str, Any]], None], *, recompute: bool = True) -> Record:
    """``rec`` edited by ``edit`` (its JSON data), then, unless ``recompute`` is false, with its
    configuration id, key and run id recomputed; always re-sealed."""
    raw = json.loads(rec.to_json())
    raw.pop("digest")
    edit(raw)
    if recompute:
        raw["seed"] = derive_seed(raw["base_seed"], raw["dataset"], raw["repetition"])
        if raw.get("identity"):
            raw["identity"]["seed"] = raw["seed"]
        comps = raw["config"]["components"]
        raw["config"]["method"] = raw["method"]
        raw["config_id"] = config_id(
            raw["method"],
            {role: (c["name"], c.get("params", {})) for role, c in comps.items()},
            raw["config"].get("search", {}),
        )
        if raw.get("identity"):
            raw["identity"]["config_id"] = raw["config_id"]
            raw["key"] = run_key(raw["identity"], raw["schema"])
        raw["run_id"] = run_name(
            raw["dataset"],
            raw["method"],
            raw["config_id"],
            raw["data"]["fingerprint"],
            raw["device"]["type"],
            raw["seed"],
        )
    return Record(**raw).sealed()


def put(folder: Path, rec: Record, name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or f"{rec.run_id}.json")
    path.write_text(rec.to_json())
    return path


def refused_for(tmp_path: Path, rec: Record, name: str | None = None) -> str:
    """Why accept refuses ``rec`` alone in an artifact (it fails the test when taken)."""
    art = tmp_path / "art"
    path = put(art, rec, name)
    written, refused = accept(PLUGINS, art, tmp_path / "board")
    path.unlink()
    assert written == [] and len(refused) == 1, (written, refused)
    assert refused[0].startswith(f"{path}: ")
    return refused[0]


def test_the_forged_good_record_is_taken(tmp_path, good):
    """The control: the forgery helper itself leaves a record the board takes."""
    put(tmp_path / "art", good)
    written, refused = accept(PLUGINS, tmp_path / "art", tmp_path / "board")
    assert refused == [] and written == [tmp_path / "board" / f"{good.run_id}.json"]


def _alpha_123(raw: dict[str, Any]) -> None:
    raw["config"]["components"]["regressor"]["params"]["alpha"] = 123.0


def _h_99(raw: dict[str, Any]) -> None:
    raw["metrics"]["H"] = 99.9


def _readme(raw: dict[str, Any]) -> None:
    raw["run_id"] = "README"


@pytest.mark.parametrize("edit", [_h_99, _alpha_123, _readme], ids=["H", "alpha", "README"])
def test_a_record_without_identity_is_refused(tmp_path, good, edit):
    """Item 1: with ``identity: {}`` none of the claims was recomputed, so each of these was taken."""

    def emptied(raw: dict[str, Any]) -> None:
        edit(raw)
        raw["identity"] = {}

    rec = forge(good, emptied, recompute=False)
    line = refused_for(tmp_path, rec, f"{rec.run_id}.json")
    assert "has no identity" in line


def test_a_forged_h_is_refused_even_with_every_other_claim_recomputed(tmp_path, good):
    """Item 1: H is the one metric recomputable from the others (the harmonic mean of A_U and A_S)."""
    line = refused_for(tmp_path, forge(good, _h_99))
    assert "its H 99.9 is not the harmonic mean of its A_U and A_S" in line


def test_a_record_whose_data_fingerprint_cannot_be_recomputed_is_refused(tmp_path, good):
    """Item 1: without the split's content parts the claims check skipped the fingerprint."""
    line = refused_for(tmp_path, forge(good, lambda raw: raw["split"].pop("parts")))
    assert "data fingerprint cannot be recomputed" in line


def test_an_identity_of_other_components_is_refused(tmp_path, good):
    """Item 1: the key covers the identity's components; they must be the configuration's."""

    def swapped(raw: dict[str, Any]) -> None:
        raw["identity"]["components"]["regressor"]["component"] = "other"

    line = refused_for(tmp_path, forge(good, swapped))
    assert "its identity's components are not its configuration's" in line


@pytest.mark.parametrize("dataset", ["synth-fake", "awa2@vit_b32_clip"])
def test_a_record_of_a_dataset_the_board_does_not_run_is_refused(tmp_path, good, dataset):
    """Item 12: a record that claims to be synthetic on an undeclared dataset was taken."""
    line = refused_for(tmp_path, forge(good, lambda raw: raw.update(dataset=dataset)))
    assert f"ran on {dataset!r}, not one of the board's synthetic stand-ins (synth-apy" in line


def test_a_record_on_a_real_benchmark_is_refused(tmp_path, good):
    """Item 25: a record claiming the real APY (standard split, H 99.9) never reaches the real
    page through the write job, whatever it claims (it runs only on the stand-ins)."""

    from zslbench.data.fingerprints import content_fingerprint
    from zslbench.records.validation import declared_datasets

    bench = declared_datasets()["apy"].benchmark

    def apy(raw: dict[str, Any]) -> None:
        raw.update(dataset="apy", dataset_kind="real")
        raw["metrics"].update(A_U=99.9, A_S=99.9, H=99.9)
        parts = raw["split"]["parts"]
        parts.update(split=bench.split, attributes=bench.attributes)
        raw["split"].update(standard=True, fingerprint=bench.split)
        fp = content_fingerprint(parts, raw["data"]["features_hash"])
        raw["data"]["fingerprint"] = raw["identity"]["data"] = fp

    line = refused_for(tmp_path, forge(good, apy))
    assert "ran on 'apy', not one of the board's synthetic stand-ins" in line


def test_a_record_of_a_built_in_method_is_refused_even_when_listed(tmp_path, good):
    """Item 13: ``plugins.toml`` listing ``krr`` let a krr record (claiming zsl-x) in."""
    line = refused_for(tmp_path, forge(good, lambda raw: raw.update(method="krr")))
    assert "method 'krr' is built into zslbench" in line


def test_a_record_over_the_size_cap_is_refused_unread(tmp_path, good, monkeypatch):
    """Item 14: a valid 11 MB record was taken (one over 100 MB blocks every board update)."""
    rec = forge(good, lambda raw: raw["environment"].update(pad="x" * (MAX_RECORD_BYTES + 1)))
    import zslbench.records

    def never(path: Path, *args: Any) -> Any:
        raise AssertionError(f"{path} was read")

    monkeypatch.setattr(zslbench.records, "valid_record", never)
    line = refused_for(tmp_path, rec)
    assert f"over the {MAX_RECORD_BYTES} bytes a board record may have" in line


def test_two_different_records_of_one_run_are_both_refused(tmp_path, good):
    """Item 25: the last one listed was taken. Neither is now: the artifact cannot say which
    is the run. A byte-identical copy is no conflict."""
    art, board = tmp_path / "art", tmp_path / "board"
    other = forge(good, lambda raw: raw.update(finished_at="2030-01-01T00:00:00+00:00"))
    assert other.run_id == good.run_id
    first, second = put(art / "a", good), put(art / "b", other)
    written, refused = accept(PLUGINS, art, board)
    assert written == [] and not board.exists()
    assert [line.split(": ")[0] for line in refused] == [str(first), str(second)]
    assert all("neither is taken" in line for line in refused)

    second.write_bytes(first.read_bytes())
    written, refused = accept(PLUGINS, art, board)
    assert refused == [] and written == [board / first.name]


@pytest.mark.parametrize("name", ["a\nzslbench board: refused: x.json", "b\r.json", "c\u2028.json"])
def test_a_file_name_cannot_split_a_log_line(tmp_path, name):
    """Item 22: a newline in an artifact's file name wrote a log line of its author's choice."""
    art = tmp_path / "art"
    art.mkdir()
    (art / name).write_text("{}")
    written, (line,) = accept(PLUGINS, art, tmp_path / "board")
    assert len(line.splitlines()) == 1 and "\\" in line


def _accept_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``zslbench board accept ARGS`` through main's error handler, its streams captured (the
    rich console rebound, whatever test ran before)."""
    from tests.cli_helpers import invoke_main

    result = invoke_main("board", "accept", *args)
    return int(result.exit_code), result.stdout, result.stderr


def _plugins_toml(tmp_path: Path) -> Path:
    path = tmp_path / "plugins.toml"
    path.write_text(
        '[[plugin]]\nname = "zsl-x"\nrequirement = "zsl-x==1"\nmethods = ["board-demo"]\n'
    )
    return path


def test_from_a_folder_that_does_not_exist_is_one_line(tmp_path, capsys):
    """Item 25: ``0 taken, 0 refused`` and exit 0 hid a wrong --from in the workflow."""
    missing = tmp_path / "nowhere"
    code, out, err = _accept_cli(
        capsys, "--plugins", str(_plugins_toml(tmp_path)), "--from", str(missing)
    )
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"zslbench: error: {missing}: no such folder — --from names the folder the artifact of "
        "records was downloaded to"
    ]


@pytest.mark.parametrize("full", [False, True], ids=["not-a-folder", "disk-full"])
def test_a_board_folder_that_cannot_be_written_is_one_line(
    tmp_path, good, capsys, monkeypatch, full
):
    """Item 15: a read-only or full disk was an internal error."""
    put(tmp_path / "art", good)
    target = tmp_path / "board"
    if full:
        import zslbench.files

        def no_space(path: Path, text: str) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(zslbench.files, "atomic_write_text", no_space)
    else:
        target.write_text("a file, where the folder should be")
    code, out, err = _accept_cli(
        capsys,
        "--plugins",
        str(_plugins_toml(tmp_path)),
        "--from",
        str(tmp_path / "art"),
        "--results-dir",
        str(target),
    )
    (line,) = err.strip().splitlines()
    assert code == 2 and "internal error" not in line
    assert line.startswith(f"zslbench: error: {target}: cannot write {good.run_id}.json (")
    assert "0 record(s) taken before it" in line


def test_python_m_zslbench_board_says_which_command_to_run(tmp_path):
    """Item 6: ``python -m zslbench.board accept ...`` (as CHANGES.md gives it) exited 0 having
    done nothing. The module is imported by the command line, so it cannot run it: it says
    which command does, in one line, and exits 2."""
    proc = subprocess.run(
        [sys.executable, "-m", "zslbench.board", "accept", "--from", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "zslbench: error: python -m zslbench.board runs no command — use "
        f"`python -m zslbench board accept --from {tmp_path}` (or `zslbench board ...`)"
    ]
