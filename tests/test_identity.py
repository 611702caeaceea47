"""Per-component run identity: which edits re-run a cached run, and the reason a run gives.

Edits are simulated by replacing :func:`zslbench.identity.read_source` for one module, never by
editing the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from zslbench import identity
from zslbench.planning import plan_grid
from zslbench.records import read_record, write_record
from zslbench.registry import load_registry
from zslbench.request import GridRequest, parse_overrides
from zslbench.runner import run_grid

REPO = Path(__file__).resolve().parents[1]

#: The digest of the core numerics (identity.PROTOCOL_MODULES and derive_seed) at the pinned
#: PROTOCOL_VERSION. When this test fails you changed the core: if the change can move any number,
#: bump identity.PROTOCOL_VERSION (every record re-runs, "protocol changed") and add a CHANGES.md
#: section; either way, paste the new digest and version here.
PINNED_PROTOCOL = (2, "5b93f8c434efc486ea1368bb05d37005d7eff81524552c64325294f920ce386b")


def test_core_numerics_are_pinned_to_the_protocol_version():
    got = (identity.PROTOCOL_VERSION, identity.protocol_digest())
    assert got == PINNED_PROTOCOL, (
        f"the core numerics changed (now {got}): bump identity.PROTOCOL_VERSION if a number can "
        "move, then update PINNED_PROTOCOL in tests/test_identity.py"
    )


def test_the_protocol_digest_sees_a_code_edit_but_not_a_docstring(monkeypatch):
    before = identity.protocol_digest()
    real = identity.read_source
    doc = real("zslbench.metrics").replace('"""', '"""Reworded. ', 1)
    monkeypatch.setattr(
        identity, "read_source", lambda name: doc if name == "zslbench.metrics" else real(name)
    )
    assert identity.protocol_digest() == before
    monkeypatch.setattr(
        identity,
        "read_source",
        lambda name: real(name) + "\nX = 1\n" if name == "zslbench.search" else real(name),
    )
    assert identity.protocol_digest() != before


def test_source_digest_ignores_docstrings_comments_and_layout_only():
    a = 'def f(x):\n    """Doc."""\n    return x + 1  # one\n'
    b = 'def f(x):\n    """Other words."""\n\n    # a comment\n    return x + 1\n'
    c = 'def f(x):\n    """Doc."""\n    return x + 2\n'
    assert identity.source_digest(a) == identity.source_digest(b)
    assert identity.source_digest(a) != identity.source_digest(c)


def test_a_component_digest_follows_its_plugin_imports_only():
    krr = load_registry().get("regressor", "krr").obj
    mods = identity.component_digest(krr)["modules"]
    assert "zslbench_plugins.krr" in mods and "zslbench_plugins.regressor_inputs" in mods
    assert not any(m.startswith("zslbench.") for m in mods)  # the core is PROTOCOL_VERSION's
    assert "zslbench_plugins.cnzsl" not in mods


# -- one digest on every Python ----------------------------------------------------------------

#: Source that touches the fields whose ``ast.dump`` text differs between Pythons: optional fields
#: left ``None`` (returns, kind, asname, ...), a ``None`` constant, empty lists where 3.12 adds
#: ``type_params`` and 3.13 drops empty fields, and a docstring to strip.
_CORPUS = '''"""Module doc."""
from . import sibling
import os.path as osp, sys
X: int
Y = None
def f(a, /, b: int = 1, *args, c=None, **kw) -> None:
    """Doc."""
    global Z
    for i in range(3):
        if i and not a: continue
    with open(a) as fh, open(b): pass
    try:
        raise ValueError("x") from None
    except (KeyError, ValueError) as err: return err
    finally: pass
    return [x ** 2 for x in args if x][::2], {k: v for k, v in kw.items()}, lambda q=1: q
class C(dict, metaclass=type):
    attr: "str" = f"{Y!r:>{X}}"
    async def g(self): yield; await self; return
match Y:
    case [1, *rest] if rest: pass
    case {"k": v, **others}: pass
    case C(attr=_) | None: pass
'''

#: sha256 of :func:`identity.canonical_dump` of :data:`_CORPUS` without its docstrings: what
#: every Python must give (``test_every_source_file_has_one_digest_under_every_python_present``
#: checks the project's own files on each interpreter found here).
_CORPUS_DIGEST = "55fabe13b5363cb2db91c1fb89f1da064818083536d3f7459d2c3d7252d8af09"


def test_source_digest_of_the_corpus_is_pinned():
    assert identity.source_digest(_CORPUS) == _CORPUS_DIGEST


def test_canonical_dump_keeps_what_differs_and_drops_what_is_empty():
    import ast

    def dump(text: str) -> str:
        return identity.canonical_dump(ast.parse(text))

    assert dump("def f():\n    return\n") != dump("def f():\n    return None\n")
    assert dump("x = f'{a}'\n") != dump("x = f'{a}b'\n")
    assert dump("x = 1\n") != dump("x = 1.0\n")
    tree = ast.parse("def f(): pass\n")
    tree.body[0].type_params = []  # what 3.12 and 3.13 add to every function
    assert identity.canonical_dump(tree) == dump("def f(): pass\n")
    joined = ast.parse("f'{a}'\n")
    joined.body[0].value.values.insert(0, ast.Constant(value=""))  # 3.12's f-string parser
    assert identity.canonical_dump(joined) == dump("f'{a}'\n")


def _interpreters() -> dict[str, str]:
    """{"3.x": path} of the supported Pythons present here (pyenv's versions, or on PATH)."""
    import os
    import shutil
    import subprocess

    found: dict[str, str] = {}
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for minor in ("3.10", "3.11", "3.12", "3.13"):
        candidates = [
            *sorted(root.glob(f"{minor}*/bin/python{minor}")),
            shutil.which(f"python{minor}"),
        ]
        for exe in filter(None, candidates):
            ok = subprocess.run(
                [str(exe), "-c", "import sys; print(sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if ok.returncode == 0 and ok.stdout.strip() == str(tuple(map(int, minor.split(".")))):
                found[minor] = str(exe)
                break
    return found


_DIGEST_ALL = """
import importlib.util, json, pathlib, sys
spec = importlib.util.spec_from_file_location("ident", sys.argv[1])
ident = importlib.util.module_from_spec(spec); spec.loader.exec_module(ident)
root = pathlib.Path(sys.argv[2])
print(json.dumps({str(p.relative_to(root)): ident.source_digest(p.read_text(encoding="utf-8"))
                  for p in sorted(root.glob("[zp]*/**/*.py"))}))
"""


def test_every_source_file_has_one_digest_under_every_python_present():
    """Records made on 3.10, 3.11, 3.12 and 3.13 share cache keys: the digest of each file of
    the project is the same under each interpreter found here (at least this one)."""
    import json
    import subprocess
    import sys

    pythons = _interpreters()
    pythons.setdefault(f"{sys.version_info[0]}.{sys.version_info[1]}", sys.executable)
    digests = {}
    for minor, exe in sorted(pythons.items()):
        out = subprocess.run(
            [exe, "-c", _DIGEST_ALL, identity.__file__, str(REPO)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        digests[minor] = json.loads(out.stdout)
    reference = digests[f"{sys.version_info[0]}.{sys.version_info[1]}"]
    assert len(reference) > 50
    for minor, got in digests.items():
        differ = sorted(k for k in reference if got.get(k) != reference[k])
        assert not differ, f"Python {minor} digests {len(differ)} files otherwise: {differ[:5]}"


# -- a cached krr run on toy, and what an edit does to it ----------------------------------------


def _request(results: Path, alpha: float = 0.1, force: bool = False) -> GridRequest:
    return GridRequest(
        methods=["krr"],
        datasets=["toy"],
        results_dir=results,
        force=force,
        overrides=parse_overrides([f"krr.alpha={alpha}", "krr.width=1.0"]),
    )


def _load(reg):
    spec = reg.get("dataset", "toy").obj
    return lambda name: (spec.load(None), spec.kind)


@pytest.fixture(scope="module")
def cached_krr(tmp_path_factory):
    results = tmp_path_factory.mktemp("res")
    reg = load_registry()
    (outcome,) = list(run_grid(_request(results), reg, _load(reg)))
    assert outcome.status == "ran"
    return results


def _plan(results: Path, alpha: float = 0.1, force: bool = False):
    reg = load_registry()
    (run,) = plan_grid(_request(results, alpha, force=force), reg, _load(reg))
    return run


def _edited(monkeypatch, module: str, edit):
    real = identity.read_source
    monkeypatch.setattr(
        identity, "read_source", lambda name: edit(real(name)) if name == module else real(name)
    )


def test_a_fresh_plan_of_the_recorded_run_is_cached(cached_krr):
    run = _plan(cached_krr)
    assert run.status == "cached" and run.record is not None
    assert run.record.identity["components"]["regressor"]["component"] == "krr"


@pytest.mark.parametrize(
    "module", ["zslbench.leaderboard.tables", "zslbench_plugins.cnzsl", "zslbench.cli"]
)
def test_editing_another_module_leaves_krr_cached(cached_krr, monkeypatch, module):
    _edited(monkeypatch, module, lambda src: src + "\n_EDITED = 1\n")
    assert _plan(cached_krr).status == "cached"


def test_a_docstring_only_edit_of_krr_leaves_it_cached(cached_krr, monkeypatch):
    _edited(monkeypatch, "zslbench_plugins.krr", lambda src: src.replace('"""', '"""Edited. ', 1))
    assert _plan(cached_krr).status == "cached"


@pytest.mark.parametrize("module", ["zslbench_plugins.krr", "zslbench_plugins.regressor_inputs"])
def test_editing_krr_or_what_it_imports_reruns_it_and_says_so(cached_krr, monkeypatch, module):
    _edited(monkeypatch, module, lambda src: src + "\n_EDITED = 1\n")
    run = _plan(cached_krr)
    assert run.status == "run"
    assert run.reason == f"code of `krr` ({module}) changed"


def test_a_run_reports_why_it_was_not_cached(cached_krr, monkeypatch, tmp_path):
    _edited(monkeypatch, "zslbench_plugins.krr", lambda src: src + "\n_EDITED = 1\n")
    results = tmp_path / "res"
    results.mkdir()
    for f in cached_krr.glob("*.json"):
        (results / f.name).write_text(f.read_text())
    reg = load_registry()
    events = []
    (outcome,) = list(
        run_grid(
            _request(results),
            reg,
            _load(reg),
            on_event=lambda kind, info: events.append((kind, info)),
        )
    )
    assert outcome.status == "ran"
    messages = [info["message"] for kind, info in events if kind == "info"]
    assert any(
        "toy · krr · r0" in m and "code of `krr` (zslbench_plugins.krr) changed" in m
        for m in messages
    ), messages
    assert _plan(results).status == "cached"  # the new record is keyed by the edited code


def test_protocol_bump_config_change_and_force_each_say_so(cached_krr, monkeypatch):
    assert _plan(cached_krr, alpha=0.2).reason == "config changed"
    assert _plan(cached_krr, force=True).reason == "--force"
    monkeypatch.setattr(identity, "PROTOCOL_VERSION", identity.PROTOCOL_VERSION + 1)
    run = _plan(cached_krr)
    assert run.status == "run" and run.reason.startswith("protocol changed")


def test_a_run_that_failed_before_says_so(tmp_path):
    run = _plan(tmp_path)
    assert run.reason == "new"
    run.path.with_suffix(".failed").write_text("krr on toy (seed 1): regressor 'krr': boom\n")
    assert _plan(tmp_path).reason == "failed before (krr on toy (seed 1): regressor 'krr': boom)"


@pytest.mark.parametrize("damage", ["nan", "deep"])
def test_an_unreadable_file_elsewhere_in_the_results_dir_does_not_stop_planning(
    cached_krr, tmp_path, damage
):
    """Planning reads every record of the results dir (to say why a run re-runs): a file it
    cannot read is skipped there, not a crash."""
    results = tmp_path / "res"
    results.mkdir()
    for f in cached_krr.glob("*.json"):
        (results / f.name).write_text(f.read_text())
        text = f.read_text()
    content = (
        text.replace('"validation": {', '"validation": {"x": NaN, ', 1)
        if damage == "nan"
        else "[" * 100_000
    )
    (results / "other__run.json").write_text(content)
    assert _plan(results).status == "cached"


def test_a_damaged_record_is_rerun_with_the_reason(cached_krr, tmp_path):
    (src,) = cached_krr.glob("*.json")
    results = tmp_path / "res"
    results.mkdir()
    (results / src.name).write_text(src.read_text().replace('"H": ', '"H": 1', 1))
    run = _plan(results)
    assert run.status == "run" and run.reason.startswith("damaged record")


def test_a_record_without_an_identity_is_refused_and_rerun(cached_krr, tmp_path):
    """Nothing of such a record can be recomputed (its key, config id, run id): it is damaged."""
    (src,) = cached_krr.glob("*.json")
    record = read_record(src)
    record.identity = {}
    results = tmp_path / "res"
    results.mkdir()
    write_record(results, record.sealed())
    run = _plan(results)
    assert run.status == "run" and run.reason.startswith("damaged record"), run.reason
    assert "no identity" in run.reason


# -- the committed board: at HEAD, its grid is all cached ----------------------------------------

BOARD = REPO / "leaderboards" / "records" / "synthetic"


def test_the_committed_board_is_all_cached_at_head():
    """``zslbench run --config configs/paper-ablation.toml --dataset synth-all --results-dir
    leaderboards/records/synthetic --dry-run`` finds every run cached, so the leaderboard workflow
    re-runs nothing on a push that changes no number."""
    records = [read_record(p) for p in sorted(BOARD.glob("*.json"))]
    if not any(r.identity for r in records):
        pytest.skip(
            "the committed board's records predate per-component run identity "
            "(Record.identity); the coordinator re-makes the board after merging"
        )
    from cli_helpers import invoke_main

    result = invoke_main(
        "run",
        "--config",
        str(REPO / "configs" / "paper-ablation.toml"),
        "--dataset",
        "synth-all",
        "--results-dir",
        str(BOARD),
        "--dry-run",
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("75 run(s): 75 cached, 0 to run"), "\n".join(
        line for line in lines if not line.startswith("cached")
    )


def test_the_eta_comes_from_earlier_runs_on_the_same_device_model(cached_krr):
    from zslbench.planning import RecordIndex, dry_run_lines

    index = RecordIndex.read(cached_krr)
    (record,) = [r for recs in index.by_slot.values() for r in recs]
    name = record.device["name"]
    # Whether this host was busy when the fixture ran must not decide the test: set it both ways.
    record.load["oversubscribed"] = True
    assert index.eta("toy", "krr", name) is None  # a time from a busy machine is not an ETA
    record.load["oversubscribed"] = False
    assert index.eta("toy", "krr", name) == record.load["wall_seconds"]
    assert index.eta("toy", "krr", name + " (another model)") is None
    assert index.eta("toy", "sae", name) is None
    busy = RecordIndex.read(cached_krr).by_path  # as on disk, where the fixture's load is real
    (on_disk,) = [r for r in busy.values() if not isinstance(r, Exception)]
    if on_disk.load.get("oversubscribed") is True:
        pytest.skip(
            "the fixture's run was on a busy machine: its time gives no ETA (checked above)"
        )
    run = _plan(cached_krr, force=True)
    assert run.eta_seconds == record.load["wall_seconds"]
    lines = dry_run_lines([run], name)
    assert lines[0].startswith("to run  toy · krr · r0") and "--force, ~" in lines[0]
    assert lines[-1].startswith("1 run(s): 0 cached, 1 to run; ETA ~")
