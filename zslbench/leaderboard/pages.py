"""The Markdown pages: README.md (the index), real.md and synthetic.md.

The index answers a newcomer's four questions in order: what was measured, on what, how, and how it
compares with the paper. The synthetic page opens with a banner and never shows a reported number;
the real page shows measured rows (if any) and the paper's rows, each marked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zslbench.leaderboard.render import (
    SYNTHETIC_BANNER,
    figures_md,
    markdown_table,
    md_escape,
    provenance_md,
)

if TYPE_CHECKING:
    from zslbench.leaderboard.build import Page

CHECK_TEXT = ("`zslbench leaderboard --check` re-renders in memory and exits non-zero, with one line per "
              "differing file, when this directory is stale. Text files (Markdown, CSV, HTML, "
              "manifest.json) are compared byte for byte. Figures are compared by the SHA-256 of the data "
              "they plot, which each PNG and SVG carries in its metadata: a different matplotlib or "
              "FreeType version that draws the same data slightly differently does not fail the check, a "
              "change in the records does.")

SYNTH_COMMAND = ("zslbench run --method bt-gp,t-gp,gp,krr,bt-krr --dataset synth-all --seeds 3 "
                 "--results-dir leaderboards/records/synthetic")

DEFINITIONS = ("**A_T**: ZSL accuracy (unseen test images, unseen classes only). **A_U / A_S**: GZSL "
               "accuracy on unseen / seen test images, all classes as candidates, at the operating point "
               "chosen by calibrating the seen-class penalty γ on validation classes. **H** = 2·A_U·A_S / "
               "(A_U + A_S). **AUSUC**: area under the seen–unseen accuracy curve traced by γ. All are "
               "per-class averaged top-1 accuracies in percent.")


def _glance(page: Page) -> list[str]:
    f = page.facts
    if not page.has_measured:
        return []
    rows = [("Records (runs)", f"{f.records}" + (f" (+{f.superseded} superseded by newer runs of the same seed)"
                                                 if f.superseded else "")),
            ("Methods", ", ".join(f"`{m}`" for m in f.methods)),
            ("Datasets", ", ".join(f"`{d}`" for d in f.datasets)),
            ("Seeds per configuration", f.seeds_text()),
            ("Finished", f.dates_text()),
            ("Devices", md_escape(", ".join(f.devices))),
            ("zslbench versions", md_escape(", ".join(f.versions))),
            ("Git commits", md_escape(", ".join(c[:10] for c in f.commits))),
            ("Runs on a non-standard split", str(f.nonstandard)),
            ("Reproduce", f"`{f.command}`")]
    out = ["## At a glance", "", "| | |", "| :--- | :--- |"]
    out += [f"| {k} | {v} |" for k, v in rows]
    return out + [""]


def page_markdown(page: Page) -> str:
    kind = page.kind
    other = "synthetic.md" if kind == "real" else "real.md"
    other_text = "synthetic stand-ins" if kind == "real" else "real benchmarks"
    html = "index.html" if kind == "real" else "synthetic.html"
    lines = [f"# {page.title}", ""]
    if kind == "synthetic":
        lines += [SYNTHETIC_BANNER, ""]
        lines += ["Use these pages to see that the pipeline runs end to end and how the methods rank *on "
                  "generated data*. Numbers from papers are deliberately absent here.", ""]
        if not page.has_measured:
            lines += [f"> **No synthetic runs recorded yet.** `{SYNTH_COMMAND}`, then `zslbench leaderboard "
                      "--results-dir leaderboards/records`.", ""]
    else:
        lines += ["Generalized zero-shot learning on the standard benchmarks (CUB, SUN, AWA2, AWA1, APY; "
                  "ResNet-101 features, Split V2.0). Rows marked **measured** were produced by zslbench "
                  f"from the records under [`{page.records_link}/`]({page.records_link}/). Rows marked "
                  "*reported* are quoted from papers through the curated file "
                  + (f"[`{page.reported_link}`]({page.reported_link})" if page.reported_link else "(none given)")
                  + ", with a citation on every row. Reported and measured numbers are never averaged "
                  "together.", ""]
        if not page.has_measured:
            lines += ["> **No measured runs on the real benchmarks yet.** The tables below hold only the "
                      "paper's reported numbers. To add measured rows (needs the xlsa17 data): "
                      "`zslbench run --method bt-gp,t-gp,gp,krr,bt-krr --dataset all --seeds 3 "
                      "--results-dir leaderboards/records/real`, then `zslbench leaderboard "
                      "--results-dir leaderboards/records`.", ""]
    lines += [f"See also: [{other_text}]({other}) · [HTML report with figures]({html}) · "
              f"[CSV]({kind}.csv) · [index](README.md)", "", DEFINITIONS, ""]
    lines += _glance(page)
    lines += ["## Tables", ""]
    for table in page.tables + page.reported_tables:
        lines.append(markdown_table(table))
    fig = figures_md(page.figures)
    if fig:
        lines.append(fig)
    prov = provenance_md(page.provenance_rows)
    if prov:
        lines.append(prov)
    refs = references_md_from(page)
    if refs:
        lines.append(refs)
    lines += ["---", "", "Rendered by `zslbench leaderboard` from the records alone; do not edit by hand. "
              + CHECK_TEXT, ""]
    return "\n".join(lines)


def references_md_from(page: Page) -> str:
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
    """Measured H next to the paper's H for the same composition (real data only)."""
    tables = {t.id: t for t in page.tables}
    abl = tables.get("real-ablation")
    if abl is None:
        return []
    lines = ["| Method | Dataset | measured H (ours, mean ± std) | reported H (paper) |",
             "| :--- | :--- | ---: | ---: |"]
    found = False
    reported = {r.method: r for r in abl.rows if r.source == "reported"}
    for row in abl.rows:
        if row.source != "measured" or not row.comparable:
            continue
        rep = reported.get(row.method)
        for column in abl.columns:
            if column.title != "H":
                continue
            cell = abl.cell(row, column)
            if cell.missing:
                continue
            found = True
            rep_text = abl.cell(rep, column).text() if rep else "–"
            lines.append(f"| `{row.label}` | {md_escape(column.group)} | {md_escape(cell.text())} "
                         f"<sub>n={cell.n}</sub> | {md_escape(rep_text)} |")
    return lines + [""] if found else []


def index_markdown(pages: dict[str, Page]) -> str:
    real, synth = pages["real"], pages["synthetic"]
    lines = ["# zslbench leaderboards", "",
             "How GZSL methods do on each dataset, with the provenance of every number. Everything here "
             "is rendered by `zslbench leaderboard` from result records (one JSON file per run) and, for "
             "numbers quoted from papers, from a curated file with a citation per row.", "",
             "## What is here", "",
             "| File | What it holds |", "| :--- | :--- |",
             f"| [real.md](real.md) · [index.html](index.html) | Real benchmarks: {real.facts.records} measured "
             "runs" + (" (none yet)" if not real.has_measured else "") + " and the paper's reported numbers "
             "(Ye et al., ICPR 2022), each row marked *measured* or *reported*. |",
             f"| [synthetic.md](synthetic.md) · [synthetic.html](synthetic.html) | **SYNTHETIC stand-ins** "
             f"(`toy`, `synth-*`): {synth.facts.records} measured runs on generated data. Not comparable "
             "with any paper. |",
             "| `real*.csv`, `synthetic*.csv` | The same tables for analysis: one line per (row, dataset), "
             "mean / std / n per metric, `best_*` flags, provenance and record paths. |",
             ("| [figures/](figures/) | Seen–unseen curves, H vs training time, per-class accuracy vs "
              "class frequency (PNG and SVG). |" if real.figures or synth.figures else
              "| figures/ | (none yet: figures are drawn from measured runs) |"),
             (f"| [{real.reported_link}]({real.reported_link}) | Numbers quoted from the paper (its Table II, "
              "model-structure ablation, training times, per-class APY accuracies), citation per row. |"
              if real.reported_link else "| (no reported file) | |"),
             f"| [{real.records_link}/]({real.records_link}/) | The result records themselves. |",
             "| [manifest.json](manifest.json) | The rendered files and the data hash of each figure. |", ""]
    lines += ["## What was measured, on what, how", ""]
    for page, name in ((real, "Real benchmarks"), (synth, "SYNTHETIC stand-ins")):
        f = page.facts
        if not page.has_measured:
            lines += [f"- **{name}**: no measured runs yet.", ""]
            continue
        lines += [f"- **{name}**: {f.records} runs of {', '.join(f'`{m}`' for m in f.methods)} on "
                  f"{', '.join(f'`{d}`' for d in f.datasets)}, {f.seeds_text()} seed(s) per configuration, "
                  f"finished {f.dates_text()} on {md_escape(', '.join(f.devices))} with zslbench "
                  f"{md_escape(', '.join(f.versions))}"
                  + (f"; {f.nonstandard} run(s) on a non-standard split (marked, never ranked)"
                     if f.nonstandard else "") + ".",
                  f"  Reproduce: `{f.command}`", ""]
    lines += ["Each run follows the paper's pipeline: features clipped at 7 and scaled to [0, 1], an "
              "embedding (none, triplet L_T or class-balanced triplet L_BT), a regressor (GP or KRR) from "
              "class attributes to class prototypes, nearest-prototype classification, and a seen-class "
              "penalty γ calibrated on validation classes carved out of the seen classes. Each seed is "
              "derived from (base seed, dataset, method, repetition), so adding a method never changes "
              "another's numbers. Tables show mean ± sample standard deviation over seeds with n.", "",
              DEFINITIONS, ""]
    lines += ["## How it compares", ""]
    comparison = _comparison(real)
    if comparison:
        lines += ["Measured H next to the paper's H for the same composition (real data, standard split):",
                  ""] + comparison
    else:
        lines += ["No measured runs on the real benchmarks are committed yet, so there is nothing to set "
                  "beside the paper's numbers: [real.md](real.md) shows the paper's reported rows only.", ""]
    matrix = _h_matrix(synth)
    if matrix:
        lines += ["### SYNTHETIC stand-ins: H at a glance (not comparable with the paper)", "",
                  "Harmonic mean H (%), mean ± std over seeds; bold is the best per dataset. Generated data, "
                  "so only the *ranking of the methods* on it carries information.", ""] + matrix
    lines += ["## Keeping it current", "",
              "Re-render after adding records: `zslbench leaderboard --results-dir leaderboards/records`. "
              + CHECK_TEXT + " CI runs the check; the workflow `.github/workflows/leaderboard.yml` re-runs "
              "the synthetic grid (and the real one where the data is cached) and opens a pull request "
              "with the re-rendered leaderboard.", ""]
    return "\n".join(lines)
