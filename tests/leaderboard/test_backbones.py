"""Two feature sets of one benchmark on the board: AWA2's own ResNet-101 features (a generated
res101.mat on the real split file) and a TV-GZSL file of another backbone. Their keys differ, the
default backbone's key is the one it had before backbones were named, and the board shows each
feature set as its own labelled group of columns."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np

from tests.cli_helpers import invoke_main
from tests.plugins.xlsa17.helpers import awa2_full, awa2_like_labels, require_shared  # noqa: F401
from zslbench.data.checks import check_dataset
from zslbench_plugins.xlsa17.loader import benchmark, read_xlsa17

FIXED = ("--set", "eszsl.gamma=1", "--set", "eszsl.lam=1")


def test_two_backbones_of_awa2_are_two_keys_and_two_labelled_groups(
    awa2_full: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    shared = require_shared()
    results = tmp_path / "records"
    res = invoke_main(
        "run",
        "--method",
        "eszsl",
        "--dataset",
        "awa2",
        "--data-dir",
        str(awa2_full),
        "--results-dir",
        str(results),
        *FIXED,
    )
    assert res.exit_code == 0, res.output
    (own,) = [json.loads(p.read_text()) for p in results.glob("*.json")]
    assert own["data"]["backbone"] == "res101" and "backbone" not in own["split"]["parts"]
    # the key a record of the default backbone had before backbones were named
    plain = check_dataset(read_xlsa17("awa2", awa2_full), "real", benchmark=benchmark("awa2"))
    assert own["data"]["fingerprint"] == own["identity"]["data"] == plain.fingerprint

    data = tmp_path / "tv-gzsl"
    (data / "RN101" / "AWA2").mkdir(parents=True)
    shutil.copy(shared / "AWA2" / "att_splits.mat", data / "RN101" / "AWA2" / "att_splits.mat")
    labels = awa2_like_labels(shared)
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(50, 32))[labels - 1] + rng.normal(size=(labels.size, 32))
    with open(data / "vit_b32_clip_awa2_data.p", "wb") as fh:
        pickle.dump({"features": feats.astype(np.float32), "labels": labels}, fh)
    res = invoke_main(
        "run",
        "--method",
        "eszsl",
        "--dataset",
        str(data / "vit_b32_clip_awa2_data.p"),
        "--results-dir",
        str(results),
        *FIXED,
    )
    assert res.exit_code == 0, res.output
    records = [json.loads(p.read_text()) for p in sorted(results.glob("*.json"))]
    clip = next(r for r in records if r["dataset"] == "awa2@vit_b32_clip")
    assert clip["key"] != own["key"] and clip["data"]["fingerprint"] != own["data"]["fingerprint"]
    assert clip["split"]["official"] == "awa2" and clip["split"]["standard"] is True

    out = tmp_path / "board"
    res = invoke_main("leaderboard", "--results-dir", str(results), "--out", str(out))
    assert res.exit_code == 0, res.output
    md = (out / "real.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| Method | Source | CUB H"))
    assert "| AWA2 H |" in header and "| AWA2 · vit\\_b32\\_clip H |" in header
    assert header.index("| AWA2 H |") < header.index("| AWA2 · vit\\_b32\\_clip H |")
