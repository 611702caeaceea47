"""A dataset declares which published benchmark it is (``DatasetSpec.benchmark``), so that a third
party adds a standard real benchmark without touching the core: the plugin below is defined here,
and ``zslbench run`` judges its data against the pins it declares, and nothing else."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np

from tests.cli_helpers import run_cli
from zslbench.data.checks import content_parts, features_hash
from zslbench.data.dataset import ZSLData
from zslbench_plugins import npz

DATA = """
    import numpy as np
    from zslbench.data.dataset import Benchmark, DatasetSpec, ZSLData
    from zslbench.hookspecs import hookimpl


    def tiny(swap=False):
        rng = np.random.default_rng(0)
        labels = np.repeat(np.arange(8), 30)
        idx = np.arange(len(labels))
        seen = idx[labels < 5]
        test_seen = seen[::3]
        trainval = np.setdiff1d(seen, test_seen)
        if swap:  # one trainval image and one test-seen image of a class trade places
            trainval, test_seen = trainval.copy(), test_seen.copy()
            trainval[0], test_seen[0] = test_seen[0], trainval[0]
        feats = rng.random((len(labels), 16), dtype=np.float32) + labels[:, None] * 0.1
        return ZSLData(name="tinybench", features=feats, labels=labels,
                       attributes=rng.random((8, 6)).astype(np.float32) + 0.1,
                       trainval_idx=np.sort(trainval), test_seen_idx=np.sort(test_seen),
                       test_unseen_idx=idx[labels >= 5], val_classes=np.array([0, 1]))
"""

DECLARATION = """

    # What pins the published benchmark: its revision and the fingerprints of its content.
    TINYBENCH = Benchmark(
        name="tinybench", title="A tiny published benchmark", revision="v1.0",
        source="https://example.org/tinybench", split="{split}", attributes="{attributes}",
        labels="{labels}", val_classes="{val_classes}", features="{features}",
        n_images=240, n_classes=8, n_seen=5, n_unseen=3, n_val_classes=2, attribute_dim=6,
        feature_dim=16)


    @hookimpl
    def zslbench_datasets():
        return [DatasetSpec(name="tinybench", load=lambda d: tiny(), kind="real",
                            benchmark=TINYBENCH, description="the official tinybench"),
                DatasetSpec(name="tinybench-altered", load=lambda d: tiny(swap=True), kind="real",
                            benchmark=TINYBENCH, description="a copy with one image moved")]
"""


def _tiny() -> ZSLData:
    namespace: dict = {}
    exec(textwrap.dedent(DATA), namespace)  # noqa: S102 - the plugin's own data code
    return namespace["tiny"]()


def _plugin(tmp_path: Path) -> dict[str, str]:
    """Write the plugin with the pins of its data filled in, as its author would publish them."""
    data = _tiny()
    pins = {**content_parts(data), "features": features_hash(data.features)}
    (tmp_path / "tinybench_plugin.py").write_text(
        textwrap.dedent(DATA) + textwrap.dedent(DECLARATION).format(**pins)
    )
    return {"PYTHONPATH": str(tmp_path)}


def _records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def test_a_third_party_benchmark_is_standard_only_as_declared(tmp_path: Path) -> None:
    env = _plugin(tmp_path)
    res = tmp_path / "res"
    run = run_cli(
        "-p",
        "tinybench_plugin",
        "run",
        "--method",
        "gp",
        "--dataset",
        "tinybench",
        "--results-dir",
        str(res),
        env=env,
    )
    assert run.returncode == 0, run.stderr
    (rec,) = _records(res)
    assert rec["dataset_kind"] == "real" and rec["split"]["standard"] is True
    assert rec["split"]["official"] == "tinybench" and rec["split"]["revision"] == "v1.0"
    assert rec["split"]["unverified"] == []  # every part pinned, features included

    # A copy that moves one image between the sets is not the benchmark it claims to be.
    refused = run_cli(
        "-p",
        "tinybench_plugin",
        "run",
        "--method",
        "gp",
        "--dataset",
        "tinybench-altered",
        "--results-dir",
        str(tmp_path / "res2"),
        env=env,
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (
        "v1.0 check 'fingerprint' failed: the index sets are not the official tinybench v1.0 ones"
    ) in refused.stderr
    assert not (tmp_path / "res2").exists()

    # A file that says it is real, declaring nothing, is matched by its split: the plugin's
    # declaration is the one it matches.
    file = npz.save_dataset(_tiny(), tmp_path / "mine.npz", kind="real")
    run = run_cli(
        "-p",
        "tinybench_plugin",
        "run",
        "--method",
        "gp",
        "--dataset",
        str(file),
        "--results-dir",
        str(tmp_path / "res3"),
        env=env,
    )
    assert run.returncode == 0, run.stderr
    (rec,) = _records(tmp_path / "res3")
    assert rec["split"]["standard"] is True and rec["split"]["official"] == "tinybench"
    assert np.isfinite(rec["metrics"]["H"])


def test_a_malformed_declaration_names_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "bad_plugin.py").write_text(
        textwrap.dedent("""
        from zslbench.data.dataset import Benchmark, DatasetSpec
        from zslbench.hookspecs import hookimpl

        @hookimpl
        def zslbench_datasets():
            return [DatasetSpec(name="bad", load=None, kind="real",
                                benchmark=Benchmark(name="bad", title="t", revision="1",
                                                    split="not a fingerprint"))]
    """)
    )
    res = run_cli("-p", "bad_plugin", "list", env={"PYTHONPATH": str(tmp_path)})
    assert "plugin 'bad_plugin' failed in zslbench_datasets" in res.stderr
    assert "split must be a sha256 hex digest" in res.stderr
