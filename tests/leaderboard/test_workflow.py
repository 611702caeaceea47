"""The CI workflow that keeps leaderboards/ current runs what the issue asks for."""

from __future__ import annotations

from pathlib import Path

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "leaderboard.yml"


def test_workflow_runs_the_grid_renders_checks_and_opens_a_pr() -> None:
    text = WORKFLOW.read_text()
    assert "\t" not in text  # YAML forbids tabs
    flat = " ".join(text.split())
    assert ("zslbench run --method bt-gp,t-gp,gp,krr,bt-krr --dataset synth-all --seeds 3 "
            "--device cpu --results-dir leaderboards/records/synthetic") in flat
    assert "--dataset all --seeds 3" in flat and "res101.mat" in flat  # real data only where cached
    render = flat.index("zslbench leaderboard --results-dir leaderboards/records --out leaderboards")
    assert flat.index("--check", render) > render
    assert "create-pull-request" in flat and "pull-requests: write" in flat
    assert "pip install torch==" in flat  # never an unpinned torch
