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
    reg = state.registry()
    if method is not None:
        method_parameters(reg, method)
        return

    def dist(p: Any) -> str:
        return p.distribution or "(-p, not installed)"

    t = Table(title="Datasets", title_justify="left")
    for col in ("name", "kind", "groups", "plugin", "distribution", "description"):
        t.add_column(col)
    for name in reg.names("dataset"):
        p = reg.items["dataset"][name]
        t.add_row(name, p.obj.kind, ",".join(p.obj.groups), p.plugin, dist(p), p.obj.description)
    out_console.print(t)

    t = Table(title="Methods", title_justify="left")
    for col in (
        "name",
        "model",
        "components",
        "preprocessor",
        "calibrator",
        "paper name",
        "plugin",
        "distribution",
    ):
        t.add_column(col)
    for name in reg.names("method"):
        p = reg.items["method"][name]
        m = p.obj
        subs = " ".join(f"{r}={n}" for r, n in m.sub_components().items())
        t.add_row(
            name, m.model, subs, m.preprocessor, m.calibrator, m.paper_name, p.plugin, dist(p)
        )
    out_console.print(t)

    t = Table(title="Components", title_justify="left")
    for col in ("kind", "name", "class", "plugin", "distribution", "summary"):
        t.add_column(col)
    for kind in reg.component_kinds():
        for name in reg.names(kind):
            p = reg.items[kind][name]
            t.add_row(kind, name, p.obj.__qualname__, p.plugin, dist(p), summary(p.obj.__doc__))
    out_console.print(t)
    if reg.problems:
        err_console.print(f"{len(reg.problems)} plugin problem(s), see the warnings above.")
