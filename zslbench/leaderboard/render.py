"""The page model (:mod:`~zslbench.leaderboard.model`) rendered by jinja2 templates.

Two environments share the templates in ``templates/``:

* **HTML** (``*.html.j2``): autoescaping on, so every value a template prints is escaped by
  ``markupsafe`` unless it is markup built here.
* **Markdown** (``*.md.j2``): every value a template prints goes through one finalizer,
  :func:`~zslbench.leaderboard.markup.md_escape`, unless it is Markdown built here (a macro's
  output).

The prose a page says is written once, in ``prose.j2``, whose macros both formats import; they
mark code, links and emphasis through ``fmt``, the macros of ``fmt.md.j2`` or ``fmt.html.j2``,
so that what both formats say is said alike. The HTML report of a page holds everything; its
Markdown page (what GitHub shows) is a summary: the headline tables, the ranks and the commands,
each row linked to its provenance in the HTML report. Links pass
:func:`~zslbench.leaderboard.markup.safe_href`: relative paths, anchors and http(s) only.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from zslbench.leaderboard.markup import md_code, md_finalize, path_href, safe_href, slug
from zslbench.leaderboard.model import Board
from zslbench.leaderboard.tables import Cell

#: Markdown page and HTML page of each kind, and how the pages name it.
PAGE_FILES = {
    "real": ("real.md", "real.html", "real benchmarks"),
    "synthetic": ("synthetic.md", "synthetic.html", "synthetic stand-ins"),
    "custom": ("custom.md", "custom.html", "custom datasets"),
}
#: The HTML file a browser opens first: a redirect to the landing page (:func:`landing_kind`).
LANDING = "index.html"
#: Per-class tables longer than this start folded in HTML (CUB has 50 unseen classes, SUN 72).
FOLD_ROWS = 15


def _p_value(value: float) -> str:
    """A p-value as shown: three decimals, or an upper bound below 0.001."""
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def _md_join(values: Any, separator: str = "") -> Markup:
    """``join`` for Markdown: each item escaped by the one finalizer (jinja2's own join would
    HTML-escape them)."""
    return Markup(md_finalize(separator)).join(md_finalize(v) for v in values)


def _shell_block(lines: list[str]) -> Markup:
    """``lines`` in a fenced code block, shown verbatim: the fence is longer than any backtick run
    in them."""
    longest = max((len(run) for line in lines for run in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return Markup("\n".join([f"{fence}sh", *lines, fence]))


def _sort_value(cell: Cell) -> str:
    """What a cell sorts by in the HTML table: its number, else its text."""
    if cell.sort_value is not None:
        return repr(round(float(cell.sort_value), 6))
    return cell.text_override or ""


def _asset(name: str) -> Markup:
    """Our own CSS or JavaScript, inlined in the HTML report."""
    return Markup(resources.files("zslbench.leaderboard").joinpath(name).read_text("utf-8"))


@cache
def environment(fmt: str) -> jinja2.Environment:
    """The jinja2 environment of one format: "md" or "html"."""
    md = fmt == "md"
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("zslbench.leaderboard", "templates"),
        autoescape=True,
        finalize=md_finalize if md else None,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals.update(page_files=PAGE_FILES, fold_rows=FOLD_ROWS)
    env.filters.update(path_href=path_href, slug=slug, sort_value=_sort_value, p_value=_p_value)
    env.filters["safe_href"] = safe_href
    if md:
        env.filters.update(join=_md_join, md_code=md_code, shell_block=_shell_block)
    else:
        env.globals["asset"] = _asset
    # Inline marks (code, bold, italic, links) as each format writes them.
    env.globals["fmt"] = env.get_template(f"fmt.{fmt}.j2").module
    return env


def render(template: str, **context: Any) -> str:
    """``template`` rendered in its format's environment: ``*.md.j2`` Markdown, else HTML."""
    env = environment("md" if template.endswith(".md.j2") else "html")
    return env.get_template(template).render(**context)


def landing_kind(board: Board) -> str:
    """The page a visitor lands on: the first of real, synthetic and custom with measured rows
    (a real page that holds only reported numbers shows nothing this board measured)."""
    pages = board.pages
    return next((k for k in PAGE_FILES if k in pages and pages[k].has_measured), "real")
