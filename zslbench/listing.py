"""``zslbench list``: every dataset, method and component with the plugin that provides it, and
one method's hyperparameters with their defaults (``--method NAME``)."""

from __future__ import annotations

from typing import Any, Protocol

import click
from rich.table import Table

from zslbench.console import err_console, out_console
from zslbench.registry import Registry


class _HasRegistry(Protocol):
    """The command line's state (``zslbench.cli.State``): the registry of the loaded plugins."""

    def registry(self) -> Registry: ...


def summary(doc: str | None) -> str:
    """A docstring's first sentence as plain text: its first paragraph joined into one line,
    up to the first full stop that ends a sentence, without reStructuredText marks."""
    import re

    paragraph = " ".join((doc or "").strip().split("\n\n", 1)[0].split())
    text = re.sub(r":[a-z]+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", paragraph)  # :class:`~a.b.C` -> C
    text = re.sub(r"``([^`]+)``", r"\1", text)
    text = re.sub(r"`([^`]+)`", r"\1", text)
    depth, end = 0, len(text)
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if (
            ch == "."
            and depth <= 0
            and (
                i + 1 == len(text)
                or (text[i + 1] == " " and i + 2 < len(text) and text[i + 2].isupper())
            )
        ):
            end = i + 1
            break
    return text[:end]


def method_parameters(reg: Registry, name: str) -> None:
    """``zslbench list --method NAME``: each role's component and its hyperparameters, with the
    value this method uses and the component's own default."""
    import inspect

    from zslbench.prepare import prepare_method

    prep = prepare_method(reg, name)
    spec = prep.spec
    out_console.print(
        f"{name}: {spec.paper_name or name} — model {spec.model}, "
        f"{' '.join(f'{r}={n}' for r, n in prep.spec.roles().items())}",
        markup=False,
        highlight=False,
    )
    cited = reg.items.get("citation", {}).get(name)
    if cited is not None:
        first, *rest = cited.obj.lines()
        for line in [f"citation: {first}", *rest]:  # soft-wrapped: links stay whole to copy
            out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    if spec.citation:  # the method's own note: which code and script its defaults follow
        label = "sources" if cited is not None else "citation"
        out_console.print(
            f"{label}: {spec.citation}", markup=False, highlight=False, soft_wrap=True
        )
    t = Table(
        title=f"Hyperparameters of {name} (set one with --set ROLE.PARAM=VALUE)",
        title_justify="left",
    )
    for col in ("role", "component", "parameter", "value", "default", "summary"):
        t.add_column(col)
    for role, cls in prep.classes.items():
        signature = inspect.signature(cls.__init__).parameters
        params = prep.params[role]
        if not params:
            t.add_row(role, cls.name, "(none)", "", "", summary(cls.__doc__))
        for i, (param, value) in enumerate(params.items()):
            default = signature[param].default if param in signature else inspect.Parameter.empty
            shown = "" if default is inspect.Parameter.empty else repr(default)
            t.add_row(
                role if i == 0 else "",
                cls.name if i == 0 else "",
                param,
                repr(value),
                shown if shown != repr(value) else "(same)",
                summary(cls.__doc__) if i == 0 else "",
            )
    out_console.print(t)


#: The three tables of ``zslbench list``: title and columns.
TABLES = {
    "datasets": ("Datasets", ("name", "kind", "groups", "plugin", "distribution", "description")),
    "methods": (
        "Methods",
        (
            "name",
            "model",
            "components",
            "preprocessor",
            "calibrator",
            "paper name",
            "plugin",
            "distribution",
        ),
    ),
    "components": ("Components", ("kind", "name", "class", "plugin", "distribution", "summary")),
}
#: The built-in plugins' rows of those tables, kept beside them (``python -m zslbench.listing``
#: writes it; a test keeps it true) so that ``zslbench list`` imports none of them (torch).
CATALOG = "listing.json"


def table_rows(reg: Registry, distribution: str | None = None) -> dict[str, list[list[str]]]:
    """The rows of every table (only ``distribution``'s items when given)."""

    def dist(p: Any) -> str:
        return p.distribution or "(-p, not installed)"

    def keep(p: Any) -> bool:
        return distribution is None or p.distribution == distribution

    rows: dict[str, list[list[str]]] = {"datasets": [], "methods": [], "components": []}
    for name in reg.names("dataset"):
        p = reg.items["dataset"][name]
        if keep(p):
            d = p.obj
            row = [name, d.kind, ",".join(d.groups), p.plugin, dist(p), d.description]
            rows["datasets"].append(row)
    for name in reg.names("method"):
        p = reg.items["method"][name]
        m = p.obj
        subs = " ".join(f"{r}={n}" for r, n in m.sub_components().items())
        if keep(p):
            row = [name, m.model, subs, m.preprocessor, m.calibrator, m.paper_name, p.plugin]
            rows["methods"].append([*row, dist(p)])
    for kind in reg.component_kinds():
        for name in reg.names(kind):
            p = reg.items[kind][name]
            if keep(p):
                row = [kind, name, p.obj.__qualname__, p.plugin, dist(p), summary(p.obj.__doc__)]
                rows["components"].append(row)
    return rows


def _builtin_folder() -> Any:
    """The built-in plugins' folder (the package ``zslbench_plugins``), found without importing
    it; None when it is not installed."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("zslbench_plugins")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def catalog_sources() -> str:
    """Digest of what the catalog is made from: zslbench's version, the ``zslbench`` entry points
    and every file of the built-in plugins (a checkout with edited plugins lists them afresh)."""
    import hashlib
    from importlib.metadata import entry_points

    import zslbench
    from zslbench.registry import ENTRY_POINT_GROUP

    h = hashlib.sha256(zslbench.__version__.encode())
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        h.update(f"{ep.name}={ep.value}\n".encode())
    folder = _builtin_folder()
    for path in sorted(folder.rglob("*")) if folder is not None else []:
        if path.suffix in (".py", ".json") and path.name != CATALOG and path.is_file():
            h.update(f"{path.relative_to(folder).as_posix()}\n".encode() + path.read_bytes())
    return h.hexdigest()


def write_catalog() -> Any:
    """Write the built-in plugins' rows (``CATALOG``) beside them, from the full registry."""
    import json

    from zslbench.registry import BUILTIN_DISTRIBUTION, load_registry

    folder = _builtin_folder()
    reg = load_registry(autoload=True)
    data = {"sources": catalog_sources(), **table_rows(reg, BUILTIN_DISTRIBUTION)}
    path = folder / CATALOG
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def cached_rows(plugins: tuple[str, ...]) -> dict[str, list[list[str]]] | None:
    """The tables from the catalog, when they are exactly what loading every plugin would list:
    no ``-p`` module, autoload on, only zslbench's own entry points installed, and the catalog
    made from the files installed now. None otherwise (the caller loads the plugins)."""
    import json
    import os
    from importlib.metadata import entry_points

    from zslbench.registry import (
        BUILTIN_DISTRIBUTION,
        DISABLE_AUTOLOAD_ENV,
        ENTRY_POINT_GROUP,
        dist_name,
    )

    folder = _builtin_folder()
    if plugins or os.environ.get(DISABLE_AUTOLOAD_ENV) or folder is None:
        return None
    eps = entry_points(group=ENTRY_POINT_GROUP)
    if any(dist_name(ep) != BUILTIN_DISTRIBUTION for ep in eps):
        return None  # a third-party plugin: its items, and any clash, need the real registry
    try:
        data = json.loads((folder / CATALOG).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("sources") != catalog_sources():
        return None
    return {k: data[k] for k in TABLES}


@click.command("list")
@click.option(
    "-m",
    "--method",
    "method",
    default=None,
    metavar="NAME",
    help="Show this method's components and hyperparameters, with their defaults.",
)
@click.pass_obj
def list_cmd(state: _HasRegistry, method: str | None) -> None:
    """Show every dataset, method and component, with the plugin that provides it (--method NAME:
    one method's hyperparameters and defaults)."""
    rows = cached_rows(getattr(state, "plugins", ())) if method is None else None
    reg = state.registry() if rows is None else None
    if reg is not None and method is not None:
        method_parameters(reg, method)
        return
    for key, rows_of in (rows or table_rows(reg)).items():  # type: ignore[arg-type]
        title, columns = TABLES[key]
        t = Table(title=title, title_justify="left")
        for col in columns:
            t.add_column(col)
        for row in rows_of:
            t.add_row(*row)
        out_console.print(t)
    if reg is not None and reg.problems:
        err_console.print(f"{len(reg.problems)} plugin problem(s), see the warnings above.")


if __name__ == "__main__":
    print(f"wrote {write_catalog()}")
