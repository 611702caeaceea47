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


def test_the_core_never_imports_the_board(structure):
    assert structure.upward_imports() == {}


def test_an_upward_import_is_found(structure, tmp_path):
    """The check can fail: a core module that imports the leaderboard inside a function."""
    pkg = tmp_path / "zslbench"
    (pkg / "leaderboard").mkdir(parents=True)
    for name in ("__init__.py", "leaderboard/__init__.py", "leaderboard/cli.py"):
        (pkg / name).write_text("")
    (pkg / "results.py").write_text("def f():\n    from zslbench.leaderboard import cli\n")
    (pkg / "cli.py").write_text("from zslbench.leaderboard import cli\n")
    graph = structure.import_graph(tmp_path)
    assert structure.upward_imports(graph) == {"zslbench.results": ["zslbench.leaderboard.cli"]}


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


def test_code_lines_skip_blanks_comments_and_docstrings(structure, tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        '"""Module\ndocstring."""\n\n# a comment\nx = (\n    1,  # trailing\n)\n\n\n'
        'def f():\n    """Doc."""\n    return """not\na docstring"""\n'
    )
    assert structure.code_lines(source) == 6  # x = ( / 1, / ) / def f / return "not / a docstring"
    template = tmp_path / "t.j2"
    template.write_text("{# comment #}\n\n<p>\n   \n</p>\n")
    assert structure.code_lines(template) == 3


def test_leaderboard_code_lines_cover_its_templates_and_board(structure):
    counted = structure.leaderboard_code_lines()
    assert "zslbench/board.py" in counted
    assert "zslbench/leaderboard/templates/page.html.j2" in counted
    assert "zslbench/leaderboard/report.css" in counted
    assert all(n > 0 for path, n in counted.items() if not path.endswith("__init__.py"))


def test_compare_imports_nothing_of_the_leaderboard_for_its_options(structure):
    """Issue 41 item 3: ``compare`` took ``--results-dir`` and ``echo`` from ``leaderboard.cli``;
    both now live in ``zslbench.console``, below the two commands."""
    graph = structure.import_graph()
    assert "zslbench.leaderboard.cli" not in graph["zslbench.compare"]
    assert "zslbench.console" in graph["zslbench.compare"]
