"""The CI workflow that keeps leaderboards/ current runs what the issue asks for."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

import zslbench_plugins.synthetic as synthetic
from tests.cli_helpers import invoke_main

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "leaderboard.yml"


def test_workflow_runs_the_grid_renders_checks_and_opens_a_pr() -> None:
    text = WORKFLOW.read_text()
    assert "\t" not in text  # YAML forbids tabs
    flat = " ".join(text.split())
    assert "for table in paper-main paper-ablation" in flat  # the real benchmarks' grid
    for table in ("paper-main", "paper-ablation"):
        assert (WORKFLOW.parents[2] / "configs" / f"{table}.toml").is_file()
    assert "zslbench run --config configs/$table.toml --device auto" in flat
    assert "out=leaderboards/records/synthetic" in flat
    assert "--results-dir leaderboards/records/real" in flat and "res101.mat" in flat
    render = flat.index(
        "zslbench leaderboard --results-dir leaderboards/records --out leaderboards"
    )
    assert flat.index("--check", render) > render
    assert "create-pull-request" in flat and "pull-requests: write" in flat
    assert "pip install torch==" in flat  # never an unpinned torch


def test_a_test_workflow_runs_the_ci_script_on_push_and_pull_request() -> None:
    """Issue 18: no workflow ran the tests on a push or a pull request."""
    path = WORKFLOW.with_name("test.yml")
    text = path.read_text()
    assert "\t" not in text  # YAML forbids tabs
    lines = [line.split("#", 1)[0].rstrip() for line in text.splitlines()]
    on = lines.index("on:")
    triggers = []
    for line in lines[on + 1 :]:
        if line and not line.startswith(" "):
            break
        triggers.append(line.strip())
    assert "push:" in triggers and "pull_request:" in triggers
    assert "run: bash .ci/run" in [line.strip() for line in lines]
    assert (path.parents[2] / ".ci" / "run").is_file()


def test_the_test_workflow_covers_every_supported_python_with_the_cpu_torch() -> None:
    """Issue 26: CI ran Python 3.11 only; users run 3.10-3.13. ``.ci/run`` runs ``./setup test``,
    whose torch comes from the CPU index (the line docs/install.md gives), so no job downloads a
    CUDA build."""
    path = WORKFLOW.with_name("test.yml")
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    assert 'python: ["3.10", "3.11", "3.12", "3.13"]' in lines
    assert "python-version: ${{ matrix.python }}" in lines
    root = path.parents[2]
    assert "exec ./setup test" in (root / ".ci" / "run").read_text().splitlines()
    setup = (root / "setup").read_text().splitlines()
    assert "TORCH_VERSION=2.13.0" in setup
    assert "TORCH_INDEX_URL=${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}" in setup
    torch_line = "pip install torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu"
    assert torch_line in (root / "docs" / "install.md").read_text()


def _jobs(text: str) -> dict[str, str]:
    """The workflow's jobs, by name, each as its block of text (comments dropped)."""
    lines = [
        line.split(" #", 1)[0].rstrip()
        for line in text.splitlines()
        if not line.lstrip().startswith("#")
    ]
    start = lines.index("jobs:")
    jobs: dict[str, list[str]] = {}
    name = None
    for line in lines[start + 1 :]:
        if line and not line.startswith(" "):
            break
        if line.startswith("  ") and not line.startswith("   ") and line.endswith(":"):
            name = line.strip()[:-1]
            jobs[name] = []
        elif name is not None:
            jobs[name].append(line)
    return {k: "\n".join(v) for k, v in jobs.items()}


def _permissions(block: str) -> dict[str, str]:
    lines = block.splitlines()
    at = lines.index("    permissions:")
    out = {}
    for line in lines[at + 1 :]:
        if not line.startswith("      ") or ":" not in line:
            break
        key, _, value = line.strip().partition(":")
        out[key] = value.strip()
    return out


def test_third_party_code_runs_in_a_job_that_can_write_nothing() -> None:
    """Issue 27: the plugins of leaderboards/plugins.toml ran in the job holding contents: write,
    with the checkout's token persisted."""
    text = WORKFLOW.read_text()
    top = text[: text.index("\njobs:")]
    assert "permissions:\n  contents: read\n" in top and "write" not in top.split("permissions:")[1]
    jobs = _jobs(text)
    assert set(jobs) == {"third-party", "leaderboard"}
    untrusted, trusted = jobs["third-party"], jobs["leaderboard"]

    assert _permissions(untrusted) == {"contents": "read"}
    assert "persist-credentials: false" in untrusted
    assert "cache:" not in untrusted  # a cache it saved could reach the job that writes
    assert "secrets." not in untrusted
    flat = " ".join(untrusted.split())
    assert flat.index("zslbench board install") < flat.index("zslbench board run")
    assert flat.index("zslbench board run") < flat.index("actions/upload-artifact@v4")
    assert "name: third-party-records" in untrusted

    assert _permissions(trusted) == {"contents": "write", "pull-requests": "write"}
    assert "needs: third-party" in trusted
    assert "persist-credentials: false" in trusted
    # the job that writes never installs or runs a listed plugin: it reads their records as data
    assert "zslbench board install" not in trusted and "zslbench board run" not in trusted
    flat = " ".join(trusted.split())
    fetch = flat.index("actions/download-artifact@v4")
    accept = flat.index("zslbench board accept --from")
    render = flat.index(
        "zslbench leaderboard --results-dir leaderboards/records --out leaderboards"
    )
    assert fetch < accept < render < flat.index("peter-evans/create-pull-request")


def _synthetic_commands() -> list[list[str]]:
    """The ``zslbench run`` command lines of the workflow's synthetic step, as argument lists."""
    text = WORKFLOW.read_text()
    step = text.split("- name: Benchmark on the embedded synthetic datasets", 1)[1]
    script = step.split("run: |", 1)[1].split("\n      - name:", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", script)  # line continuations
    return [shlex.split(line.strip()) for line in joined.splitlines() if "zslbench run" in line]


def test_the_workflow_re_makes_exactly_the_committed_synthetic_board(monkeypatch) -> None:
    """Its synthetic step, dry-run against the committed records, finds every run cached and
    names each committed record once: a re-run after a code change re-makes the whole board and
    nothing more (no official-schedule generative run on synth-*, hours each on a CPU runner)."""
    # Each command generates its stand-ins again; within this test once is enough (a dry run
    # only reads them).
    monkeypatch.setattr(synthetic, "generate", functools.cache(synthetic.generate))
    records = WORKFLOW.parents[2] / "leaderboards" / "records" / "synthetic"
    commands = _synthetic_commands()
    assert len(commands) >= 4
    runs: set[str] = set()
    for argv in commands:
        assert argv[:2] == ["zslbench", "run"], argv
        args = [str(records) if a == "$out" else a for a in argv[2:]]
        res = invoke_main("run", *args, "--dry-run")
        assert res.exit_code == 0, res.output
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith(("cached", "to run"))]
        assert lines and all(ln.startswith("cached") for ln in lines), (argv, res.stdout)
        runs.update(ln.split(None, 1)[1] for ln in lines)
    assert len(runs) == len(list(records.glob("*.json")))
