"""The README's plugin guide works as written: its code block, saved as a module, adds a model and
a dataset that run through the command line, and the model passes ``check_model``.

The code is read from README.md itself (the block after ``<!-- README-PLUGIN-EXAMPLE -->``), so
the guide cannot drift from what works.
"""

from __future__ import annotations

import importlib
import json
import re
import sys

import pytest

from tests.cli_helpers import run_cli
from zslbench.testing import check_model

README = __import__("pathlib").Path(__file__).resolve().parents[1] / "README.md"


def example_code() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- README-PLUGIN-EXAMPLE -->\n```python\n(.*?)\n```", text, re.S)
    assert match, "README.md lost its plugin example block"
    return match.group(1)


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "readme_plugin.py").write_text(example_code())
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("readme_plugin", None)
    return tmp_path


def test_the_readme_model_follows_the_contract(plugin):
    module = importlib.import_module("readme_plugin")
    check_model(module.MyESZSL())


def test_the_readme_plugin_runs_its_model_and_dataset_through_the_cli(plugin):
    env = {"PYTHONPATH": str(plugin)}
    res = plugin / "res"
    proc = run_cli("-p", "readme_plugin", "run", "--method", "my-eszsl,krr", "--dataset",
                   "blobs", "--results-dir", str(res), env=env)
    assert proc.returncode == 0, proc.stderr
    records = {json.loads(p.read_text())["method"]: json.loads(p.read_text())
               for p in res.glob("*.json")}
    assert set(records) == {"my-eszsl", "krr"}
    mine = records["my-eszsl"]
    assert mine["dataset_kind"] == "custom" and mine["split"]["standard"] is True
    assert mine["config"]["components"]["model"]["plugin"] == "readme_plugin"
    assert set(mine["search"]["chosen"]) == {"gamma", "lam"}
    assert mine["metrics"]["A_T"] > 100 / 3  # 3 unseen classes: far above chance
