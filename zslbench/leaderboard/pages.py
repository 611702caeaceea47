"""What each page says, written once, and the Markdown pages: README.md (the index), real.md,
synthetic.md, custom.md.

The prose of a page (banner, introduction, notices, "at a glance", definitions, footer) is built
here as Markdown with inline marks only (`code`, **bold**, *italic*, [links](target), backslash
escapes); :mod:`zslbench.leaderboard.html` converts the same text to HTML, so the two formats never
say different things. The index answers a newcomer's four questions in order: what was measured,
on what, how, and how it compares with the paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from zslbench.leaderboard.render import figures_md, markdown_table, md_escape, provenance_md

if TYPE_CHECKING:
    from zslbench.leaderboard.build import Page

PAGE_LINKS = {"real": ("real.md", "index.html", "real benchmarks"),
              "synthetic": ("synthetic.md", "synthetic.html", "synthetic stand-ins"),
              "custom": ("custom.md", "custom.html", "custom datasets")}
#: Markdown page -> HTML page, for links in text written once for both.
HTML_OF = {md: html for md, html, _ in PAGE_LINKS.values()}

CHECK_TEXT = ("`zslbench leaderboard --check` re-renders in memory and exits non-zero, with one line per "
              "problem, when this directory is stale, holds a file the leaderboard did not write, or a "
              "record under the results dir is not valid and intact. Text files (Markdown, CSV, HTML, "
              "manifest.json) are compared byte for byte. Figures are compared by the SHA-256 of the data "
              "they plot, which each PNG and SVG carries in its metadata: a different matplotlib or "
              "FreeType version that draws the same data slightly differently does not fail the check, a "
              "change in the records does. The leaderboard only ever replaces or deletes files it wrote "
              "itself (listed in manifest.json).")

DEFINITIONS = ("**A\\_T**: ZSL accuracy (unseen test images, unseen classes only). **A\\_U / A\\_S**: GZSL "
               "accuracy on unseen / seen test images, all classes as candidates, at the operating point "
               "chosen by calibrating the seen-class penalty γ on validation classes. **H** = 2·A\\_U·A\\_S / "
               "(A\\_U + A\\_S). **AUSUC**: area under the seen–unseen accuracy curve traced by γ, from "
               "per-class accuracies (Chao et al.; the CSV also gives the per-image variant where a record "
               "has it). All are per-class averaged top-1 accuracies in percent. Training times are "
               "medians over seeds, without runs taken on an oversubscribed machine.")

BANNERS = {
    "synthetic": ("**SYNTHETIC STAND-INS, NOT THE BENCHMARKS.** Every number on this page was measured on "
                  "data generated in-process (`toy`, `synth-*`) with the shapes of the real datasets. It says "
                  "how the methods behave on that generated data, nothing about CUB, SUN, AWA1, AWA2 or APY, "
                  "and must never be compared with numbers from papers."),
    "custom": ("**CUSTOM DATASETS, NOT THE BENCHMARKS.** Every number on this page was measured on datasets "
               "supplied by the user (for example loaded from a `.npz` file). They are not CUB, SUN, AWA1, "
               "AWA2 or APY, and must never be compared with numbers from papers or with the other pages."),
}


@dataclass(frozen=True)
class Block:
    """A paragraph of page prose: ``kind`` is "p", "banner" (a warning box) or "notice"."""

    kind: str
    text: str


def where_records(page: Page) -> str:
    """The one sentence, on every page and in the index, that says where the records live."""
    p = page.paths
    return (f"Every measured number comes from the result records (one JSON file per run, written by "
            f"`zslbench run`) under [`{p.records_link}/`]({p.records_link}/) (`{p.results_arg}`), and this "
            f"board is rendered from them alone by `{p.render_command}`.")


def intro(page: Page) -> list[Block]:
    kind, p = page.kind, page.paths
    blocks = [Block("banner", BANNERS[kind])] if kind in BANNERS else []
    if kind == "real":
        reported = f"[`{p.reported_link}`]({p.reported_link})" if p.reported_link else "(none given)"
        blocks.append(Block("p", (
            "Generalized zero-shot learning on the standard benchmarks (CUB, SUN, AWA2, AWA1, APY; ResNet-101 "
            "features, Split V2.0). Rows marked **measured** were run by zslbench; rows marked *reported* are "
            f"quoted from papers through the curated file {reported}, with a citation on every row, and each "
            "is followed by our measured rows of the same method. Reported and measured numbers are never "
            "averaged together.")))
    else:
        blocks.append(Block("p", "Use this page to see how the methods rank *on this data*. Numbers from "
                                 "papers are deliberately absent here."))
    blocks.append(Block("p", where_records(page)))
    if not page.has_measured:
        dataset = {"real": "all", "synthetic": "synth-all", "custom": "YOUR-DATASET"}[kind]
        what = ("The tables hold only the paper's reported numbers. To add measured rows (needs the xlsa17 "
                "data): " if kind == "real" else "")
        blocks.append(Block("notice", (
            f"**No measured runs on the {PAGE_LINKS[kind][2]} yet.** {what}`zslbench run --method bt-gp "
            f"--dataset {dataset} --seeds 3 --results-dir {p.results_arg}` (any method of `zslbench list`), "
            f"then `{p.render_command}`.")))
    return blocks


def see_also(page: Page) -> str:
    links = [f"[{PAGE_LINKS[k][2]}]({PAGE_LINKS[k][0]})" for k in page.kinds if k != page.kind]
    return " · ".join(links + [f"[CSV]({page.kind}.csv)", "[index](README.md)"])


def glance(page: Page) -> list[tuple[str, list[str]]]:
    """The "at a glance" facts as (label, lines of Markdown)."""
    f = page.facts
    if not page.has_measured:
        return []
    return [
        ("Records (runs)", [f"{f.records}" + (f" (+{f.superseded} superseded by newer runs of the same seed)"
                                              if f.superseded else "")]),
        ("Methods", [", ".join(f"`{m}`" for m in f.methods)]),
        ("Datasets", [", ".join(f"`{d}`" for d in f.datasets)]),
        ("Seeds per configuration", [f.seeds_text()]),
        ("Finished", [f.dates_text()]),
        ("Devices", [md_escape(", ".join(f.devices))]),
        ("zslbench versions", [md_escape(", ".join(f.versions))]),
        ("Git commits", [md_escape(", ".join(c[:10] for c in f.commits))]),
        ("Runs on a non-standard split", [str(f.nonstandard) + (" (marked, never ranked)" if f.nonstandard else "")]),
        ("Runs on an oversubscribed machine", [
            str(f.oversubscribed) + (" (left out of the training times and the H-vs-time figure)"
                                     if f.oversubscribed else "")
            + (f"; {f.load_unknown} without a load report (kept)" if f.load_unknown else "")]),
        ("Reproduce", [f"`{c}`" for c in f.commands]),
    ]


def footer(page: Page) -> str:
    return (f"Rendered by `zslbench leaderboard` from the records alone; do not edit by hand. Re-render: "
            f"`{page.paths.render_command}`. " + CHECK_TEXT)


# --- Markdown --------------------------------------------------------------------------------

def _blocks_md(blocks: list[Block]) -> list[str]:
    return [line for b in blocks for line in ((f"> {b.text}" if b.kind != "p" else b.text), "")]


def page_markdown(page: Page) -> str:
    html = PAGE_LINKS[page.kind][1]
    lines = [f"# {page.title}", "", *_blocks_md(intro(page)),
             f"See also: {see_also(page)} · [HTML report with figures]({html})", "", DEFINITIONS, ""]
    facts = glance(page)
    if facts:
        lines += ["## At a glance", "", "| | |", "| :--- | :--- |"]
        lines += [f"| {label} | {'<br>'.join(values)} |" for label, values in facts] + [""]
    lines += ["## Tables", ""]
    lines += [markdown_table(table) for table in page.tables + page.reported_tables]
    for part in (figures_md(page.figures), provenance_md(page.provenance_rows), references_md(page)):
        if part:
            lines.append(part)
    lines += ["---", "", footer(page), ""]
    return "\n".join(lines)


def references_md(page: Page) -> str:
    if not page.references:
        return ""
    lines = ["## References (reported rows)", ""]
    lines += [f"- **{md_escape(k)}**: {md_escape(v)}" for k, v in page.references.items()]
    return "\n".join(lines) + "\n"


def _h_matrix(page: Page) -> list[str]:
    """Methods × datasets, H only: the one-glance summary of the GZSL table."""
    gzsl = next((t for t in page.tables if t.id.endswith("-gzsl")), None)
    if gzsl is None:
        return []
    rows = [r for r in gzsl.rows if r.source == "measured"]
    cols = [c for c in gzsl.columns if c.title == "H"]
    if not rows or not cols:
        return []
    out = ["| Method | " + " | ".join(md_escape(c.group) for c in cols) + " |",
           "| :--- | " + " | ".join("---:" for _ in cols) + " |"]
    for row in rows:
        cells = []
        for c in cols:
            cell = gzsl.cell(row, c)
            text = md_escape(cell.text())
            cells.append(f"**{text}**" if cell.best else text)
        out.append(f"| `{row.label}` | " + " | ".join(cells) + " |")
    return out + [""]


def _comparison(page: Page) -> list[str]:
    """Measured H next to the paper's H for the same method (real data only): Table II's rows and
    the ablation's, each measured row once."""
    lines = ["| Method | Dataset | measured H (ours, mean ± std) | reported H (paper) |",
             "| :--- | :--- | ---: | ---: |"]
    seen: set[tuple[str, str]] = set()
    for table in (t for t in page.tables if t.id in ("real-gzsl", "real-ablation")):
        reported = {r.method: r for r in table.rows if r.source == "reported" and r.method}
        for row in table.rows:
            rep = reported.get(row.method)
            if row.source != "measured" or not row.comparable or rep is None:
                continue
            for column in (c for c in table.columns if c.title == "H"):
                cell = table.cell(row, column)
                if cell.missing or (row.label, column.group) in seen:
                    continue
                seen.add((row.label, column.group))
                lines.append(f"| `{row.label}` | {md_escape(column.group)} | {md_escape(cell.text())} "
                             f"<sub>n={cell.n}</sub> | {md_escape(table.cell(rep, column).text())} |")
    return lines + [""] if seen else []


def index_markdown(pages: dict[str, Page], refused: list[tuple[str, str]]) -> str:
    real = pages["real"]
    lines = ["# zslbench leaderboards", "",
             "How GZSL methods do on each dataset, with the provenance of every number. Everything here "
             "is rendered by `zslbench leaderboard` from result records (one JSON file per run) and, for "
             "numbers quoted from papers, from a curated file with a citation per row.", "",
             where_records(real), "",
             "## What is here", "", "| File | What it holds |", "| :--- | :--- |",
             f"| [real.md](real.md) · [index.html](index.html) | Real benchmarks: {real.facts.records} measured "
             "runs" + (" (none yet)" if not real.has_measured else "") + " and the paper's reported numbers "
             "(Ye et al., ICPR 2022), each row marked *measured* or *reported*. |",
             f"| [synthetic.md](synthetic.md) · [synthetic.html](synthetic.html) | **SYNTHETIC stand-ins** "
             f"(`toy`, `synth-*`): {pages['synthetic'].facts.records} measured runs on generated data. Not "
             "comparable with any paper. |"]
    if "custom" in pages:
        lines.append(f"| [custom.md](custom.md) · [custom.html](custom.html) | **CUSTOM datasets** (the user's "
                     f"own data): {pages['custom'].facts.records} measured runs. Not comparable with any paper. |")
    any_figures = any(p.figures for p in pages.values())
    lines += ["| `real*.csv`, `synthetic*.csv` | The same tables for analysis: one line per (row, dataset), "
              "mean / std / n per metric (AUSUC per class and per image), `best_*` flags, median training "
              "times with the runs left out, provenance and record paths. |",
              ("| [figures/](figures/) | Seen–unseen curves, H vs training time, per-class accuracy by class "
               "frequency, sweeps (PNG and SVG). |" if any_figures else
               "| figures/ | (none yet: figures are drawn from measured runs) |"),
              (f"| [{real.paths.reported_link}]({real.paths.reported_link}) | Numbers quoted from the paper (its "
               "Table II, model-structure ablation, training times, per-class APY accuracies), citation per row. |"
               if real.paths.reported_link else "| (no reported file) | |"),
              f"| [{real.paths.records_link}/]({real.paths.records_link}/) | The result records themselves. |",
              "| [manifest.json](manifest.json) | The files this board wrote (the only ones a re-render "
              "replaces or deletes) and the data hash of each figure. |", ""]
    if refused:
        lines += [f"> **{len(refused)} file(s) under the results dir are not valid, intact records** (not a "
                  "record, or edited since written) and are left out; `zslbench leaderboard` names each.", ""]
    lines += ["## What was measured, on what, how", ""]
    for page in pages.values():
        f, name = page.facts, PAGE_LINKS[page.kind][2]
        if not page.has_measured:
            lines += [f"- **{name}**: no measured runs yet.", ""]
            continue
        lines += [f"- **{name}**: {f.records} runs of {', '.join(f'`{m}`' for m in f.methods)} on "
                  f"{', '.join(f'`{d}`' for d in f.datasets)}, {f.seeds_text()} seed(s) per configuration, "
                  f"finished {f.dates_text()} on {md_escape(', '.join(f.devices))} with zslbench "
                  f"{md_escape(', '.join(f.versions))}"
                  + (f"; {f.nonstandard} run(s) on a non-standard split (marked, never ranked)"
                     if f.nonstandard else "") + ".",
                  "  Reproduce: " + "; ".join(f"`{c}`" for c in f.commands), ""]
    lines += ["Each run follows the method's pipeline as its paper and official code define it; the harness "
              "owns what is common: the leak-free validation split carved out of the seen classes, the "
              "hyperparameter search on it, and the seen-class penalty γ calibrated there. Each seed is "
              "derived from (base seed, dataset, method, repetition), so adding a method never changes "
              "another's numbers. Tables show mean ± sample standard deviation over seeds with n.", "",
              DEFINITIONS, "", "## How it compares", ""]
    comparison = _comparison(real)
    if comparison:
        lines += ["Measured H next to the paper's H for the same method (real data, standard split):", ""]
        lines += comparison
    else:
        lines += ["No measured runs on the real benchmarks of a method the paper reports are here yet, so "
                  "there is nothing to set beside the paper's numbers: [real.md](real.md) shows its rows.", ""]
    matrix = _h_matrix(pages["synthetic"])
    if matrix:
        lines += ["### SYNTHETIC stand-ins: H at a glance (not comparable with the paper)", "",
                  "Harmonic mean H (%), mean ± std over seeds; bold is the best per dataset. Generated data, "
                  "so only the *ranking of the methods* on it carries information.", ""] + matrix
    lines += ["## Keeping it current", "", f"Re-render after adding records: `{real.paths.render_command}`. "
              + CHECK_TEXT + " CI runs the check; the workflow `.github/workflows/leaderboard.yml` re-runs "
              "the synthetic grid (and the real one where the data is cached) and opens a pull request "
              "with the re-rendered leaderboard.", ""]
    return "\n".join(lines)
