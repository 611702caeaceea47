"""The static HTML report: one self-contained file per page plus the figure files beside it.

No external resource is referenced (CSS and JavaScript are inlined from ``report.css`` and
``report.js`` next to this module), so the report reads offline and from a ``file://`` URL. Columns
sort on click; every cell carries its numeric value in ``data-sort``. The prose is the Markdown of
:mod:`zslbench.leaderboard.pages`, converted by :func:`inline_html`.

Laid out to read at 1400 px without horizontal scrolling: a row's source, provenance and notes sit
under its name rather than in columns of their own, and a cell's spread goes under its mean.
"""

from __future__ import annotations

import re
from collections import Counter
from html import escape
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import quote

from zslbench.leaderboard import pages as text
from zslbench.leaderboard.render import PROVENANCE_TEXT
from zslbench.leaderboard.tables import Row, Table

if TYPE_CHECKING:
    from zslbench.leaderboard.build import Page

_INLINE = re.compile(r"\\(.)|`([^`]+)`|\*\*(.+?)\*\*|\*(.+?)\*|\[([^\]]+)\]\(([^)\s]+)\)")


def inline_html(md: str) -> str:
    """Markdown inline marks (code, bold, italic, links, backslash escapes) to HTML; links to a
    Markdown page go to its HTML page."""
    out, pos = [], 0
    for m in _INLINE.finditer(md):
        out.append(escape(md[pos:m.start()]))
        esc, code, bold, em, label, target = m.groups()
        if esc is not None:
            out.append(escape(esc))
        elif code is not None:
            out.append(f"<code>{escape(code)}</code>")
        elif bold is not None:
            out.append(f"<b>{inline_html(bold)}</b>")
        elif em is not None:
            out.append(f"<i>{inline_html(em)}</i>")
        else:
            out.append(f'<a href="{_href(text.HTML_OF.get(target, target))}">{inline_html(label)}</a>')
        pos = m.end()
    return "".join(out) + escape(md[pos:])


def _asset(name: str) -> str:
    return resources.files("zslbench.leaderboard").joinpath(name).read_text(encoding="utf-8")


def _href(target: str) -> str:
    return escape(quote(target, safe="/#:.-_~"), quote=True)


def _sort_value(value: float | None) -> str:
    return "" if value is None else repr(round(float(value), 6))


def _common_n(table: Table) -> int | None:
    """The number of seeds most cells have: shown once in the caption, per cell only where it differs."""
    counts = Counter(cell.n for row in table.rows for cell in row.cells.values()
                     if cell.n is not None and not cell.missing)
    return counts.most_common(1)[0][0] if counts else None


def _cell_html(table: Table, row: Row, index: int, common_n: int | None) -> str:
    column = table.columns[index]
    cell = table.cell(row, column)
    classes = [c for c, on in (("best", cell.best), ("missing", cell.missing), ("left", column.align == "left"),
                               ("group-start", bool(column.group) and (index == 0 or
                                                                       table.columns[index - 1].group != column.group)))
               if on]
    sort = _sort_value(cell.sort_value) if cell.sort_value is not None else (
        escape(cell.text_override, quote=True) if cell.text_override else "")
    if cell.text_override is not None or cell.mean is None:
        body = escape(cell.text())
    else:
        body = f"{cell.mean:.{cell.decimals}f}{escape(cell.unit)}"
        spread = [f"± {cell.std:.{cell.decimals}f}"] if cell.std is not None else []
        if cell.n is not None and cell.n != common_n and column.ranked:
            spread.append(f"n={cell.n}")
        if spread:
            body += f'<span class="sd">{" · ".join(spread)}</span>'
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f'<td{cls} data-sort="{sort}">{body}</td>'


def _badges(row: Row) -> str:
    if row.source == "reported":
        out = '<span class="badge reported">reported</span>'
    else:
        out = '<span class="badge measured">measured</span>'
        if row.prov and not row.prov.comparable:
            out += (' <span class="badge nonstd" title="non-standard split: not comparable, never ranked">'
                    "non-standard split</span>")
    if row.note:
        out += f' <span class="badge warn" title="{escape(row.note, quote=True)}">† oversubscribed runs left out</span>'
    return out


def _prov_line(row: Row) -> str:
    prov = row.prov
    if prov is None:
        return ""
    if row.source == "reported":
        refs = ", ".join(f'<a href="#ref-{escape(r, quote=True)}">{escape(r)}</a>' for r in prov.refs)
        return f'<div class="prov">{escape(prov.citation)}' + (f" [{refs}]" if refs else "") + "</div>"
    note = f"{escape(row.note)} · " if row.note else ""
    return (f'<div class="prov">{note}{escape(prov.summary())} · '
            f'<a href="#{escape(prov.anchor, quote=True)}">records</a></div>')


def _name_html(table: Table, row: Row) -> str:
    if not table.show_source:
        if row.prov and row.prov.anchor:
            return f'<a href="#{escape(row.prov.anchor, quote=True)}">{escape(row.label)}</a>'
        return escape(row.label)
    if row.source == "measured":
        extra = f' <span class="muted">{escape(row.name)}</span>' if row.name and row.name != row.method else ""
        name = f"<code>{escape(row.label)}</code>{extra}"
    else:
        name = f"<b>{escape(row.label)}</b>"
    return f"{name} {_badges(row)}{_prov_line(row)}"


#: Per-class tables longer than this start folded (CUB has 50 unseen classes, SUN 72); the
#: methods × datasets tables never fold.
FOLD_ROWS = 15


def table_html(table: Table) -> str:
    common_n = _common_n(table)
    caption = table.caption + (f" Every cell is over n = {common_n} seeds unless it says otherwise."
                               if common_n and table.show_source else "")
    out = [f'<h3 id="{escape(table.id, quote=True)}">{escape(table.title)}</h3>',
           f'<p class="caption">{inline_html(caption)}</p>']
    if not table.rows:
        return "\n".join(out + ['<p class="muted">(no rows)</p>'])
    body = [f'<div class="table-wrap"><table class="lb" data-table="{escape(table.id, quote=True)}"><thead>']
    groups = table.groups()
    if any(title for title, _ in groups):
        body.append('<tr class="groups"><th></th>' + "".join(
            f'<th colspan="{span}" class="group-start">{escape(title)}</th>' for title, span in groups) + "</tr>")
    heads = [f'<th class="left sortable" data-col="0">{escape(table.row_header)}</th>']
    for i, column in enumerate(table.columns):
        start = column.group and (i == 0 or table.columns[i - 1].group != column.group)
        cls = "sortable" + (" group-start" if start else "") + (" left" if column.align == "left" else "")
        heads.append(f'<th class="{cls}" data-col="{i + 1}">{escape(column.title)}</th>')
    body.append("<tr>" + "".join(heads) + "</tr></thead><tbody>")
    for i, row in enumerate(table.rows):
        follows = i + 1 < len(table.rows) and row.source == "reported" and row.method and \
            table.rows[i + 1].method == row.method and table.rows[i + 1].source == "measured"
        row_cls = row.source + ("" if row.comparable else " noncomparable") + (" pair" if follows else "")
        cells = [f'<td class="name" data-sort="{escape(row.label, quote=True)}">{_name_html(table, row)}</td>']
        cells += [_cell_html(table, row, j, common_n) for j in range(len(table.columns))]
        body.append(f'<tr class="{row_cls}">' + "".join(cells) + "</tr>")
    body.append("</tbody></table></div>")
    if table.best_axis == "row" and len(table.rows) > FOLD_ROWS:
        return "\n".join(out + [f"<details><summary>show all {len(table.rows)} rows</summary>", *body, "</details>"])
    return "\n".join(out + body)


def _block_html(block: text.Block) -> str:
    tag = {"p": "p", "banner": 'div class="banner"', "notice": 'div class="notice"'}[block.kind]
    return f"<{tag}>{inline_html(block.text)}</{tag.split()[0]}>"


def _glance_html(page: Page) -> str:
    facts = text.glance(page)
    if not facts:
        return ""
    body = "".join(f"<dt>{escape(label)}</dt><dd>{'<br>'.join(inline_html(v) for v in values)}</dd>"
                   for label, values in facts)
    return f'<section id="glance"><h2>At a glance</h2><dl class="facts">{body}</dl></section>'


def _figures_html(page: Page) -> str:
    figs = []
    for spec in page.figures:
        png, svg = spec.files
        width, height = spec.size
        wide = " wide" if width > 900 else ""
        figs.append(f'<figure class="fig{wide}" id="fig-{escape(spec.name, quote=True)}"><img src="{_href(png)}" '
                    f'width="{width}" height="{height}" alt="{escape(spec.title, quote=True)}">'
                    f"<figcaption><b>{escape(spec.title)}.</b> {inline_html(spec.caption)} "
                    f'(<a href="{_href(svg)}">SVG</a>)</figcaption></figure>')
    return '<section id="figures"><h2>Figures</h2><div class="figures">' + "".join(figs) + "</div></section>"


def _provenance_html(page: Page) -> str:
    blocks = []
    for row in (r for r in page.provenance_rows if r.source == "measured" and r.prov):
        prov = row.prov
        assert prov is not None
        lines = "".join(
            f'<tr><td class="left">{escape(ds)}</td><td>{len(links)}</td><td class="left links">'
            + " ".join(f'<a href="{_href(link)}">{prov.seed_of.get(link, "record")}</a>' for link in links)
            + "</td></tr>" for ds, links in prov.records)
        reason = f" — {escape(prov.split_reason)}" if prov.split_reason else ""
        blocks.append(
            f'<h3 id="{escape(prov.anchor, quote=True)}"><code>{escape(prov.label or row.label)}</code></h3>'
            f'<p class="caption">{escape(prov.summary())}{reason}</p>'
            '<div class="table-wrap"><table class="lb"><thead><tr><th class="left">Dataset</th>'
            '<th>N</th><th class="left">Records (seed)</th></tr></thead>'
            f"<tbody>{lines}</tbody></table></div>")
    return ('<section id="provenance"><h2>Provenance of measured rows</h2>'
            f'<p class="caption">{escape(PROVENANCE_TEXT)}</p>' + "".join(blocks) + "</section>")


SUBTITLES = {"real": "Measured runs and numbers reported by Ye et al. (ICPR 2022), each row marked, with its "
                     "provenance.",
             "synthetic": "Generated stand-in data only — for checking the pipeline and ranking methods on "
                          "synthetic data, not for comparison with papers.",
             "custom": "The user's own datasets only — not the benchmarks, not for comparison with papers."}


def page_html(page: Page) -> str:
    tables = page.tables + page.reported_tables
    per_class = [t for t in tables if "-perclass-" in t.id]
    nav = ['<a href="#about">About</a>'] + (['<a href="#glance">At a glance</a>'] if page.has_measured else [])
    nav += [f'<a href="#{escape(t.id, quote=True)}">{escape(t.title)}</a>' for t in tables if t not in per_class]
    if per_class:
        nav.append(f'<a href="#{escape(per_class[0].id, quote=True)}">Per-class accuracy</a>')
    nav += (['<a href="#figures">Figures</a>'] if page.figures else []) + (
        ['<a href="#provenance">Provenance</a>'] if any(r.source == "measured" for r in page.provenance_rows) else [])
    nav += ['<a href="#references">References</a>'] if page.references else []
    nav += [f'<a class="other" href="{text.PAGE_LINKS[k][1]}">{text.PAGE_LINKS[k][2].capitalize()} →</a>'
            for k in page.kinds if k != page.kind]
    legend = ('<div class="legend"><span><span class="badge measured">measured</span> run by zslbench, mean ± '
              "std over seeds</span>"
              + ("" if page.kind != "real" else '<span><span class="badge reported">reported</span> quoted from a '
                 "paper</span>")
              + '<span><span class="badge nonstd">non-standard split</span> shown, never ranked</span>'
              '<span><span class="badge warn">†</span> times without oversubscribed runs</span>'
              "<span><b>bold</b> on yellow: best comparable value</span><span>click a header to sort</span></div>")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(page.title)}</title>",
        f"<style>\n{_asset('report.css')}</style></head>",
        f'<body class="{page.kind}">',
        f'<header class="top"><h1>{escape(page.title)}</h1><p>{escape(SUBTITLES[page.kind])}</p></header>',
        '<nav class="sections">' + "".join(nav) + "</nav>",
        "<main>",
        '<section id="about"><h2>About</h2>' + "".join(_block_html(b) for b in text.intro(page))
        + f'<p class="muted">{inline_html(text.DEFINITIONS)}</p>{legend}</section>',
        _glance_html(page),
        '<section id="tables"><h2>Tables</h2>' + "\n".join(table_html(t) for t in tables) + "</section>",
    ]
    if page.figures:
        parts.append(_figures_html(page))
    if any(r.source == "measured" and r.prov for r in page.provenance_rows):
        parts.append(_provenance_html(page))
    if page.references:
        refs = "".join(f'<li id="ref-{escape(k, quote=True)}"><b>{escape(k)}</b>: {escape(v)}</li>'
                       for k, v in page.references.items())
        parts.append(f'<section id="references"><h2>References (reported rows)</h2><ol class="refs">{refs}'
                     "</ol></section>")
    parts += ["</main>", f"<footer>{inline_html(text.footer(page))}</footer>",
              f"<script>\n{_asset('report.js')}</script>", "</body></html>", ""]
    return "\n".join(parts)
