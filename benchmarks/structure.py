"""The package's structure at a glance: module sizes, the most complex functions, import cycles
and imports against the layering.

    python benchmarks/structure.py            # the report
    python benchmarks/structure.py --check    # exit 1 on a cycle or an oversized module

Five things the design keeps in bounds:

* physical lines per module of ``zslbench/``; a module outside ``zslbench/leaderboard`` above
  :data:`MAX_LINES` is flagged (one module, one job);
* the ten functions of highest cyclomatic complexity (radon's ``cc`` when radon is installed,
  else a count of branches from the ast, named as such);
* the leaderboard's code lines (:func:`leaderboard_code_lines`): non-blank lines of its Python
  that are neither comments nor docstrings, plus the non-blank lines of its templates, CSS and
  JavaScript, for ``zslbench/leaderboard/`` and ``zslbench/board.py``;
* every import cycle among the modules of ``zslbench/``, counting imports made inside functions:
  an import deferred to a function body still ties the two modules together. Each strongly
  connected component of the import graph is listed with one shortest cycle through it;
* imports only downward: no module of the core imports the board (``zslbench.leaderboard`` and
  ``zslbench.board``), except the command line's entry (:data:`BOARD_USERS`), which wires the
  board's commands in (:func:`upward_imports`).

``tests/test_structure.py`` runs :func:`import_graph`, :func:`cycles` and :func:`oversized`.
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "zslbench"
MAX_LINES = 450
#: Modules under this package may exceed :data:`MAX_LINES` (pages and tables of the board).
EXEMPT = "zslbench.leaderboard"
#: The board: it reads the records table; the core never imports it.
BOARD = ("zslbench.leaderboard", "zslbench.board")
#: The one core module that may import the board: the command line's entry, to add its commands.
BOARD_USERS = ("zslbench.cli",)


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The package module ``name`` is, or the closest enclosing one."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package modules it imports, anywhere in its body (functions included).

    ``from zslbench.x import y`` is an edge to ``zslbench.x.y`` when that is a module, else to
    ``zslbench.x``; the packages passed through on the way (``zslbench``) are not edges, since
    importing them runs only their ``__init__``, which this graph covers as its own module.
    """
    known = modules(root)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                subs = [f"{base}.{alias.name}" for alias in node.names]
                found = [s for s in subs if s in known]
                targets = found if found else [base]
                if found and len(found) < len(subs):
                    targets.append(base)  # names that are attributes of the package itself
            for target in targets:
                if target.split(".")[0] != PACKAGE:
                    continue
                resolved = _target(target, known)
                if resolved is not None and resolved != name:
                    graph[name].add(resolved)
    return graph


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def _shortest_cycle(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """A shortest cycle through the first module of ``comp`` (breadth first)."""
    members = set(comp)
    start = comp[0]
    parent: dict[str, str] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [*reversed(path), start]
            if nxt not in seen:
                seen.add(nxt)
                parent[nxt] = node
                queue.append(nxt)
    return comp  # pragma: no cover - a component always has a cycle through each member


def cycles(graph: dict[str, set[str]] | None = None) -> list[tuple[list[str], list[str]]]:
    """Every import cycle, as (the modules of a strongly connected component, one shortest
    cycle through it); empty when the graph is acyclic."""
    graph = import_graph() if graph is None else graph
    return [(comp, _shortest_cycle(graph, comp)) for comp in _components(graph)]


def _in_board(name: str) -> bool:
    return any(name == b or name.startswith(b + ".") for b in BOARD)


def upward_imports(graph: dict[str, set[str]] | None = None) -> dict[str, list[str]]:
    """Core module -> the board modules it imports (imports inside functions count); the command
    line's entry (:data:`BOARD_USERS`) is allowed."""
    graph = import_graph() if graph is None else graph
    return {
        name: sorted(t for t in targets if _in_board(t))
        for name, targets in sorted(graph.items())
        if not _in_board(name) and name not in BOARD_USERS and any(_in_board(t) for t in targets)
    }


def line_counts(root: Path = ROOT) -> dict[str, int]:
    """Physical lines per module."""
    return {
        name: len(path.read_text(encoding="utf-8").splitlines())
        for name, path in modules(root).items()
    }


def code_lines(path: Path) -> int:
    """Lines of ``path`` that hold code: for Python, the lines of any token but a comment,
    excluding docstrings (of the module, classes and functions); for anything else (templates,
    CSS, JavaScript), the non-blank lines."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return sum(1 for line in text.splitlines() if line.strip())
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if isinstance(node, kinds) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    skip.add(tokenize.ENDMARKER)
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def leaderboard_files(root: Path = ROOT) -> list[Path]:
    """The leaderboard's sources: its package (Python, templates, CSS, JavaScript) and ``board.py``."""
    folder = root / PACKAGE / "leaderboard"
    found = [
        p for p in folder.rglob("*") if p.is_file() and p.suffix in (".py", ".j2", ".css", ".js")
    ]
    return sorted(found) + [root / PACKAGE / "board.py"]


def leaderboard_code_lines(root: Path = ROOT) -> dict[str, int]:
    """Code lines (:func:`code_lines`) per leaderboard file, keyed by its path under ``root``."""
    return {p.relative_to(root).as_posix(): code_lines(p) for p in leaderboard_files(root)}


def oversized(root: Path = ROOT) -> dict[str, int]:
    """The modules outside :data:`EXEMPT` above :data:`MAX_LINES` lines."""
    return {
        name: n
        for name, n in line_counts(root).items()
        if n > MAX_LINES and not (name == EXEMPT or name.startswith(EXEMPT + "."))
    }


def complexity(root: Path = ROOT, top: int = 10) -> tuple[str, list[tuple[int, str]]]:
    """The ``top`` most complex functions as (complexity, ``module:function``), and the tool."""
    found: list[tuple[int, str]] = []
    try:
        from radon.complexity import cc_visit
    except ImportError:
        cc_visit = None
    for name, path in modules(root).items():
        source = path.read_text(encoding="utf-8")
        if cc_visit is not None:
            for block in cc_visit(source):
                if block.letter in ("F", "M"):
                    found.append((block.complexity, f"{name}:{block.fullname}"))
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                branches = sum(
                    isinstance(
                        n,
                        (
                            ast.If,
                            ast.For,
                            ast.While,
                            ast.Try,
                            ast.With,
                            ast.BoolOp,
                            ast.IfExp,
                            ast.comprehension,
                            ast.ExceptHandler,
                        ),
                    )
                    for n in ast.walk(node)
                )
                found.append((1 + branches, f"{name}:{node.name}"))
    tool = "radon cc" if cc_visit is not None else "ast branch count (radon not installed)"
    return tool, sorted(found, key=lambda item: (-item[0], item[1]))[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on an import cycle, an oversized module or a core module importing the board",
    )
    args = parser.parse_args(argv)
    counts = line_counts()
    big = oversized()
    print(f"Physical lines per module of {PACKAGE}/ (> {MAX_LINES} flagged, {EXEMPT} exempt):")
    for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        flag = "  <-- over" if name in big else ""
        print(f"  {n:5d}  {name}{flag}")
    tool, top = complexity()
    print(f"\nTen most complex functions ({tool}):")
    for score, where in top:
        print(f"  {score:4d}  {where}")
    board = leaderboard_code_lines()
    print(f"\nleaderboard code lines: {sum(board.values())}")
    for path, n in sorted(board.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {n:5d}  {path}")
    found = cycles()
    print(f"\nImport cycles (imports inside functions count): {len(found)}")
    for comp, cycle in found:
        print(f"  {len(comp)} modules: {', '.join(comp)}")
        print(f"    e.g. {' -> '.join(cycle)}")
    upward = upward_imports()
    print(f"\nCore modules importing the board (besides {', '.join(BOARD_USERS)}): {len(upward)}")
    for name, targets in upward.items():
        print(f"  {name} -> {', '.join(targets)}")
    return 1 if args.check and (found or big or upward) else 0


if __name__ == "__main__":
    sys.exit(main())
