"""The package's structure: no import cycle in ``zslbench/`` (imports inside functions count) and
no module outside ``zslbench/leaderboard`` above 450 lines (``benchmarks/structure.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "structure.py"


@pytest.fixture(scope="module")
def structure():
    spec = importlib.util.spec_from_file_location("zslbench_structure", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Import cycles allowed in the package: none.
KNOWN: list[list[str]] = []


def test_no_import_cycle(structure):
    found = structure.cycles()
    assert [comp for comp, _ in found] == KNOWN, "import cycles: " + "; ".join(
        " -> ".join(cycle) for _, cycle in found
    )


def test_no_oversized_module(structure):
    assert structure.oversized() == {}


def test_a_cycle_inside_a_function_is_found(structure, tmp_path):
    """The check can fail: two modules that import each other, one inside a function, are a cycle."""
    pkg = tmp_path / "zslbench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from zslbench import b\n")
    (pkg / "b.py").write_text("def f():\n    from zslbench.a import x\n")
    (pkg / "c.py").write_text("import zslbench.a\n")
    graph = structure.import_graph(tmp_path)
    assert graph["zslbench.c"] == {"zslbench.a"}
    assert structure.cycles(graph) == [
        (["zslbench.a", "zslbench.b"], ["zslbench.a", "zslbench.b", "zslbench.a"])
    ]


def test_an_oversized_module_is_found(structure, tmp_path):
    pkg = tmp_path / "zslbench"
    (pkg / "leaderboard").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "leaderboard" / "__init__.py").write_text("")
    (pkg / "big.py").write_text("x = 1\n" * 451)
    (pkg / "leaderboard" / "tables.py").write_text("x = 1\n" * 900)
    (pkg / "ok.py").write_text("x = 1\n" * 450)
    assert structure.oversized(tmp_path) == {"zslbench.big": 451}
