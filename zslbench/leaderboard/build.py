"""The page model -> every leaderboard file, in memory.

:func:`build` returns the complete output as :class:`Artefact` objects (path relative to the
output directory, bytes), so that writing it and checking it against a committed copy
(:mod:`zslbench.leaderboard.check`) use exactly the same rendering.

Layout of the output directory::

    README.md                 index: what was measured, on what, how
    index.html                the landing page: a redirect to the first HTML page with measured
                              rows (real, else synthetic, else custom)
    real.md, real.html        real benchmarks: measured rows (if any) + the reported rows
    synthetic.md, synthetic.html   embedded synthetic stand-ins only, titled as such
    custom.md, custom.html    the user's own datasets (only when there are such runs)
                              (each HTML report holds everything, its Markdown page a summary)
    {kind}.csv, {kind}-train-time.csv, {kind}-per-class.csv, ({kind}-selection-audit.csv)
    reproducibility.md        per method, the runs made again on another machine and how far they moved
    figures/*.png, figures/*.svg
    manifest.json             what was rendered (and so may be replaced); figures with their data hash
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zslbench.leaderboard import csvs, render, reproducibility
from zslbench.leaderboard.figures import FigureSpec, embedded_hash, render_figure
from zslbench.leaderboard.manifest import owned_in, plain_file
from zslbench.leaderboard.model import Board, board
from zslbench.records.store import GENERATOR, MANIFEST


@dataclass(frozen=True)
class Artefact:
    """One output file. Figures carry the hash of the data they plot (see ``figures``)."""

    path: str
    data: bytes
    data_sha256: str | None = None

    @property
    def is_figure(self) -> bool:
        return self.data_sha256 is not None


@dataclass
class Site:
    """Every file of a board (:attr:`artefacts`) and the page model they were rendered from."""

    artefacts: list[Artefact]
    board: Board


def texts(b: Board) -> dict[str, str]:
    """Every text file of the board: Markdown, HTML and CSV."""
    out = {
        "README.md": render.render(
            "index.md.j2", board=b, pages=b.pages, landing=render.landing_kind(b)
        )
    }
    for kind, page in b.pages.items():
        md_name, html_name, _ = render.PAGE_FILES[kind]
        out[md_name] = render.render("page.md.j2", page=page)
        out[html_name] = render.render("page.html.j2", page=page)
        for suffix, text in csvs.page_csvs(page, b.agg).items():
            out[f"{kind}{suffix}.csv"] = text
    out[render.LANDING] = render.render("index.html.j2", target=render.landing_kind(b))
    return out


def build(
    results_dir: Path, out_dir: Path, reported_path: Path | None, *, draw: bool = True
) -> Site:
    """Render everything. With ``draw=False`` figures are specified (and hashed) but not drawn."""
    out_dir = Path(out_dir)
    b = board(Path(results_dir), out_dir, reported_path)
    pages = texts(b)
    rechecked = reproducibility.page(Path(results_dir), b.warnings)
    if rechecked is not None:
        pages[reproducibility.FILE] = rechecked
    artefacts = [Artefact(path, text.encode("utf-8")) for path, text in sorted(pages.items())]
    owned = owned_in(out_dir)
    for spec in b.figures:
        files = (
            _current_figure(out_dir, spec, owned) or dict(sorted(render_figure(spec).items()))
            if draw
            else dict.fromkeys(spec.files, b"")
        )
        artefacts += [Artefact(path, data, spec.data_sha256) for path, data in files.items()]
    artefacts.append(Artefact(MANIFEST, manifest_bytes(artefacts, b.runs, b.superseded)))
    return Site(artefacts=artefacts, board=b)


def _current_figure(out_dir: Path, spec: FigureSpec, owned: set[str]) -> dict[str, bytes] | None:
    """The figure's files as the board already holds them, when this board drew them and they plot
    the same data (the test ``--check`` applies): a re-render redraws only figures whose data
    changed. A link is never read."""
    readable = all(path in owned and plain_file(out_dir / path) for path in spec.files)
    found = {path: (out_dir / path).read_bytes() for path in spec.files} if readable else {}
    same = readable and all(embedded_hash(p, data) == spec.data_sha256 for p, data in found.items())
    return found if same else None


def manifest_bytes(
    artefacts: list[Artefact],
    runs: int,
    superseded: int,
    extra: set[str] | frozenset[str] = frozenset(),
) -> bytes:
    """The list of rendered files: text files with their sha256, figures with their data hash.

    ``generator`` marks the manifest (and so every file it lists) as written by zslbench
    leaderboard: a later render replaces or deletes only those files. ``extra`` lists files a
    render may still leave behind (written while it runs, see ``check.write``).
    """
    files: dict[str, dict[str, Any]] = {path: {} for path in extra}
    for a in artefacts:
        text = {"sha256": hashlib.sha256(a.data).hexdigest()}
        files[a.path] = {"data_sha256": a.data_sha256} if a.is_figure else text
    files.pop(MANIFEST, None)
    doc = {
        "generator": GENERATOR,
        "schema": 2,
        "about": (
            "Rendered by `zslbench leaderboard` from result records; do not edit. It replaces or "
            "deletes only the files listed here. Text files are compared byte for byte by --check; "
            "figures by the hash of the data they plot, which is also embedded in each PNG/SVG."
        ),
        "records": runs,
        "superseded_records": superseded,
        "files": dict(sorted(files.items())),
    }
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8")
