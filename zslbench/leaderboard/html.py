"""The static HTML report: one self-contained file per page plus the figure files beside it.

No external resource is referenced (CSS and JavaScript are inlined from ``report.css`` and
``report.js`` next to this module), so the report reads offline and from a ``file://`` URL. Columns
sort on click; every cell carries its numeric value in ``data-sort``.
"""

from __future__ import annotations

from html import escape
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import quote

from zslbench.leaderboard.figures import DPI, SIZE
from zslbench.leaderboard.pages import CHECK_TEXT, SYNTH_COMMAND
from zslbench.leaderboard.tables import Row, Table

if TYPE_CHECKING:
    from zslbench.leaderboard.build import Page


def _asset(name: str) -> str:
    return resources.files("zslbench.leaderboard").joinpath(name).read_text(encoding="utf-8")


def _href(target: str) -> str:
    return escape(quote(target, safe="/#:.-_~"), quote=True)


def _sort_value(value: float | None) -> str:
    return "" if value is None else repr(round(float(value), 6))


def _cell_html(table: Table, row: Row, index: int) -> str:
    column = table.columns[index]
    cell = table.cell(row, column)
    classes = []
    if cell.best:
        classes.append("best")
    if cell.missing:
        classes.append("missing")
    if column.group and (index == 0 or table.columns[index - 1].group != column.group):
        classes.append("group-start")
    if column.align == "left":
        classes.append("left")
    sort = _sort_value(cell.sort_value) if cell.sort_value is not None else (
        escape(cell.text_override, quote=True) if cell.text_override else "")
    body = escape(cell.text())
    if cell.n is not None and not cell.missing and column.ranked:
        body += f"<sub>n={cell.n}</sub>"
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f'<td{cls} data-sort="{sort}">{body}</td>'


def _name_html(row: Row, show_source: bool) -> str:
    if row.source == "measured" and show_source:
        extra = (f' <span class="muted">{escape(row.name)}</span>'
                 if row.name and row.name != row.method else "")
        return f"<code>{escape(row.label)}</code>{extra}"
    return escape(row.label)


def _badge(row: Row) -> tuple[str, str]:
    if row.source == "reported":
        return "reported", '<span class="badge reported">reported</span>'
    if row.prov and not row.prov.comparable:
        return ("measured-nonstandard", '<span class="badge measured">measured</span> '
                '<span class="badge nonstd" title="non-standard split: not comparable, never ranked">'
                'non-standard split</span>')
    return "measured", '<span class="badge measured">measured</span>'


def _prov_html(row: Row) -> str:
    prov = row.prov
    if prov is None:
        return ""
    if row.source == "reported":
        refs = ", ".join(f'<a href="#ref-{escape(r, quote=True)}">{escape(r)}</a>' for r in prov.refs)
        return f"{escape(prov.citation)}" + (f" [{refs}]" if refs else "")
    n = sum(len(links) for _, links in prov.records)
    items = "".join(
        f"<li>{escape(ds)}: " + " ".join(f'<a href="{_href(link)}">{escape(_seed(link))}</a>' for link in links)
        + "</li>" for ds, links in prov.records)
    return (f"{escape(prov.summary())} · <a href=\"#{escape(prov.anchor, quote=True)}\">details</a>"
            f"<details><summary>{n} record file{'s' if n != 1 else ''}</summary>"
            f'<ul class="records">{items}</ul></details>')


def _seed(link: str) -> str:
    stem = link.rsplit("/", 1)[-1].removesuffix(".json")
    return stem.rsplit("__", 1)[-1] if "__" in stem else stem


#: Per-class tables longer than this start folded (CUB has 50 unseen classes, SUN 72).
FOLD_ROWS = 15


def table_html(table: Table) -> str:
    body = _table_body_html(table)
    if len(table.rows) > FOLD_ROWS:
        head, _, rest = body.partition("\n")  # keep the heading outside the fold
        caption, _, rest = rest.partition("\n")
        return (f"{head}\n{caption}\n<details><summary>show all {len(table.rows)} rows</summary>\n"
                f"{rest}\n</details>")
    return body


def _table_body_html(table: Table) -> str:
    lead = 2 if table.show_source else 1
    out = [f'<h3 id="{escape(table.id, quote=True)}">{escape(table.title)}</h3>',
           f'<p class="caption">{escape(table.caption)}</p>']
    if not table.rows:
        out.append('<p class="muted">(no rows)</p>')
        return "\n".join(out)
    out.append(f'<div class="table-wrap"><table class="lb" data-table="{escape(table.id, quote=True)}">')
    out.append("<thead>")
    groups = table.groups()
    if any(title for title, _ in groups):
        cells = [f'<th colspan="{lead}"></th>']
        cells += [f'<th colspan="{span}" class="group-start">{escape(title)}</th>' for title, span in groups]
        if table.show_source:
            cells.append("<th></th>")
        out.append('<tr class="groups">' + "".join(cells) + "</tr>")
    heads = [f'<th class="left sortable" data-col="0">{escape(table.row_header)}</th>']
    if table.show_source:
        heads.append('<th class="left sortable" data-col="1">Source</th>')
    for i, column in enumerate(table.columns):
        start = column.group and (i == 0 or table.columns[i - 1].group != column.group)
        cls = "sortable" + (" group-start" if start else "") + (" left" if column.align == "left" else "")
        heads.append(f'<th class="{cls}" data-col="{lead + i}">{escape(column.title)}</th>')
    if table.show_source:
        heads.append('<th class="left">Provenance</th>')
    out.append("<tr>" + "".join(heads) + "</tr></thead><tbody>")
    for row in table.rows:
        kind, badge = _badge(row)
        row_cls = row.source + ("" if row.comparable else " noncomparable")
        cells = [f'<td class="name" data-sort="{escape(row.label, quote=True)}">'
                 f"{_name_html(row, table.show_source)}</td>"]
        if table.show_source:
            cells.append(f'<td class="left" data-sort="{kind}">{badge}</td>')
        cells += [_cell_html(table, row, i) for i in range(len(table.columns))]
        if table.show_source:
            cells.append(f'<td class="prov">{_prov_html(row)}</td>')
        out.append(f'<tr class="{row_cls}">' + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _facts_html(page: Page) -> str:
    f = page.facts
    if not page.has_measured:
        return ""
    items = [("Records (runs)", f"{f.records}" + (f" (+{f.superseded} superseded)" if f.superseded else "")),
             ("Methods", ", ".join(f.methods)), ("Datasets", ", ".join(f.datasets)),
             ("Seeds per configuration", f.seeds_text()), ("Finished", f.dates_text()),
             ("Devices", ", ".join(f.devices)), ("zslbench versions", ", ".join(f.versions)),
             ("Git commits", ", ".join(c[:10] for c in f.commits)),
             ("Runs on a non-standard split", str(f.nonstandard))]
    body = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items)
    body += f"<dt>Reproduce</dt><dd><code>{escape(f.command)}</code></dd>"
    return f'<section id="glance"><h2>At a glance</h2><dl class="facts">{body}</dl></section>'


DEFINITIONS_HTML = (
    "<b>A<sub>T</sub></b>: ZSL accuracy (unseen test images, unseen classes only). "
    "<b>A<sub>U</sub> / A<sub>S</sub></b>: GZSL accuracy on unseen / seen test images with all classes as "
    "candidates, at the operating point chosen by calibrating the seen-class penalty γ on validation "
    "classes. <b>H</b> = 2·A<sub>U</sub>·A<sub>S</sub> / (A<sub>U</sub> + A<sub>S</sub>). <b>AUSUC</b>: area "
    "under the seen–unseen accuracy curve traced by γ. All are per-class averaged top-1 accuracies in %.")


def _intro_html(page: Page) -> str:
    if page.kind == "synthetic":
        return ('<div class="banner"><strong>SYNTHETIC STAND-INS, NOT THE BENCHMARKS.</strong> Every number '
                "on this page was measured on data generated in-process (<code>toy</code>, <code>synth-*</code>) "
                "with the shapes of the real datasets. It says how the methods behave on that generated data, "
                "nothing about CUB, SUN, AWA1, AWA2 or APY, and must never be compared with numbers from "
                'papers. For the real benchmarks see <a href="index.html">index.html</a>.</div>'
                + ("" if page.has_measured else
                   f'<div class="notice"><b>No synthetic runs recorded yet.</b> <code>{escape(SYNTH_COMMAND)}'
                   "</code>, then <code>zslbench leaderboard --results-dir leaderboards/records</code>.</div>"))
    reported = (f'<a href="{_href(page.reported_link)}"><code>{escape(page.reported_link)}</code></a>'
                if page.reported_link else "(none given)")
    text = ("<p>Generalized zero-shot learning on the standard benchmarks (CUB, SUN, AWA2, AWA1, APY; "
            "ResNet-101 features, Split V2.0). Rows marked "
            '<span class="badge measured">measured</span> were produced by zslbench from the records under '
            f'<a href="{_href(page.records_link)}/"><code>{escape(page.records_link)}/</code></a>; rows marked '
            '<span class="badge reported">reported</span> are quoted from papers through the curated file '
            f"{reported}, with a citation on every row. Reported and measured numbers are never averaged "
            "together.</p>")
    if not page.has_measured:
        text += ('<div class="notice"><b>No measured runs on the real benchmarks yet.</b> The tables hold only '
                 "the paper's reported numbers. To add measured rows (needs the xlsa17 data): "
                 "<code>zslbench run --method bt-gp,t-gp,gp,krr,bt-krr --dataset all --seeds 3 "
                 "--results-dir leaderboards/records/real</code>, then <code>zslbench leaderboard "
                 '--results-dir leaderboards/records</code>. Results on generated data are on the '
                 '<a href="synthetic.html">synthetic page</a>.</div>')
    return text


def page_html(page: Page) -> str:
    synthetic = page.kind == "synthetic"
    subtitle = ("Generated stand-in data only — for checking the pipeline and ranking methods on "
                "synthetic data, not for comparison with papers." if synthetic else
                "Measured runs and numbers reported by Ye et al. (ICPR 2022), each row marked, with its provenance.")
    other = ('<a class="other" href="index.html">Real benchmarks →</a>' if synthetic else
             '<a class="other" href="synthetic.html">Synthetic stand-ins →</a>')
    tables = page.tables + page.reported_tables
    nav = ['<a href="#about">About</a>']
    if page.has_measured:
        nav.append('<a href="#glance">At a glance</a>')
    per_class = [t for t in tables if "-perclass-" in t.id]
    nav += [f'<a href="#{escape(t.id, quote=True)}">{escape(t.title)}</a>' for t in tables if t not in per_class]
    if per_class:
        nav.append(f'<a href="#{escape(per_class[0].id, quote=True)}">Per-class accuracy</a>')
    if page.figures:
        nav.append('<a href="#figures">Figures</a>')
    if any(r.source == "measured" for r in page.provenance_rows):
        nav.append('<a href="#provenance">Provenance</a>')
    if page.references:
        nav.append('<a href="#references">References</a>')
    nav.append(other)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(page.title)}</title>",
        f"<style>\n{_asset('report.css')}</style></head>",
        f'<body class="{page.kind}">',
        f'<header class="top"><h1>{escape(page.title)}</h1><p>{escape(subtitle)}</p></header>',
        '<nav class="sections">' + "".join(nav) + "</nav>",
        "<main>",
        f'<section id="about"><h2>About</h2>{_intro_html(page)}<p class="muted">{DEFINITIONS_HTML}</p>'
        '<div class="legend"><span><span class="badge measured">measured</span> run by zslbench, '
        "mean ± std over seeds (n)</span>"
        + ("" if synthetic else '<span><span class="badge reported">reported</span> quoted from a paper</span>')
        + '<span><span class="badge nonstd">non-standard split</span> shown, never ranked</span>'
          "<span><b>bold</b> on yellow: best comparable value of the column</span>"
          "<span>click a column header to sort</span></div></section>",
        _facts_html(page),
        '<section id="tables"><h2>Tables</h2>' + "\n".join(table_html(t) for t in tables) + "</section>",
    ]
    if page.figures:
        figs = []
        width, height = int(SIZE[0] * DPI), int(SIZE[1] * DPI)
        for spec in page.figures:
            png, svg = spec.files
            figs.append(f'<figure id="fig-{escape(spec.name, quote=True)}"><img src="{_href(png)}" '
                        f'width="{width}" height="{height}" alt="{escape(spec.title, quote=True)}">'
                        f"<figcaption><b>{escape(spec.title)}.</b> {escape(spec.caption)} "
                        f'(<a href="{_href(svg)}">SVG</a>)</figcaption></figure>')
        parts.append('<section id="figures"><h2>Figures</h2><div class="figures">' + "".join(figs)
                     + "</div></section>")
    measured = [r for r in page.provenance_rows if r.source == "measured" and r.prov]
    if measured:
        blocks = []
        for row in measured:
            prov = row.prov
            assert prov is not None
            lines = "".join(
                f"<tr><td class=\"left\">{escape(ds)}</td><td>{len(links)}</td><td class=\"left\">"
                + " ".join(f'<a href="{_href(link)}">{escape(_seed(link))}</a>' for link in links)
                + "</td></tr>" for ds, links in prov.records)
            reason = f" — {escape(prov.split_reason)}" if prov.split_reason else ""
            blocks.append(
                f'<h3 id="{escape(prov.anchor, quote=True)}"><code>{escape(row.label)}</code></h3>'
                f'<p class="caption">{escape(prov.summary())}{reason}</p>'
                '<div class="table-wrap"><table class="lb"><thead><tr><th class="left">Dataset</th>'
                '<th>N</th><th class="left">Records (seed)</th></tr></thead>'
                f"<tbody>{lines}</tbody></table></div>")
        parts.append('<section id="provenance"><h2>Provenance of measured rows</h2>'
                     '<p class="caption">Every measured number is the mean over the record files linked '
                     "here (one JSON file per run).</p>" + "".join(blocks) + "</section>")
    if page.references:
        refs = "".join(f'<li id="ref-{escape(k, quote=True)}"><b>{escape(k)}</b>: {escape(v)}</li>'
                       for k, v in page.references.items())
        parts.append(f'<section id="references"><h2>References (reported rows)</h2><ol class="refs">{refs}'
                     "</ol></section>")
    parts += ["</main>",
              f"<footer>Rendered by <code>zslbench leaderboard</code> from the records alone; do not edit by "
              f"hand. {escape(CHECK_TEXT).replace('`', '')}</footer>",
              f"<script>\n{_asset('report.js')}</script>",
              "</body></html>", ""]
    return "\n".join(parts)
