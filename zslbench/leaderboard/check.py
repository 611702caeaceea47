"""Write a rendered leaderboard, or compare it with the committed one (``--check``).

How strict ``--check`` is, and why:

* **Text** (Markdown, CSV, HTML, ``manifest.json``) is compared byte for byte. These are produced by
  our own code from the records, so any difference means the committed copy is stale.
* **Figures** are compared by the SHA-256 of the data they plot (plus a style version), which each
  PNG/SVG carries in its metadata and ``manifest.json`` lists. Their pixels depend on matplotlib,
  FreeType and font versions that CI does not pin; comparing bytes would fail on an upgrade that
  changed nothing in the results, and comparing the data hash still fails whenever a figure shows
  other data than the records give. ``--check`` never draws, so it is also fast.
* **Stale files**: anything listed in the committed ``manifest.json`` or present under ``figures/``
  that the records no longer produce is reported (and deleted on a normal render).
"""

from __future__ import annotations

import json
from pathlib import Path

from zslbench.leaderboard.build import MANIFEST, Artefact, Site
from zslbench.leaderboard.figures import embedded_hash


def _old_files(out_dir: Path) -> set[str]:
    """Files a previous render produced: the committed manifest's list plus everything in figures/."""
    names: set[str] = set()
    try:
        doc = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        names.update(str(p) for p in (doc.get("files") or {}))
    except (OSError, ValueError, AttributeError):
        pass
    figures = out_dir / "figures"
    if figures.is_dir():
        names.update(p.relative_to(out_dir).as_posix() for p in figures.rglob("*") if p.is_file())
    return {n for n in names if ".." not in Path(n).parts and not Path(n).is_absolute()}


def _text_difference(old: bytes, new: bytes) -> str:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    first = next((i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b),
                 min(len(old_lines), len(new_lines)))
    return (f"differs from the records' rendering (first difference at line {first + 1}; "
            f"{len(old_lines)} lines committed, {len(new_lines)} rendered)")


def compare(site: Site, out_dir: Path) -> list[str]:
    """One line per file whose committed copy in ``out_dir`` is missing, stale or extra."""
    out_dir = Path(out_dir)
    problems: list[str] = []
    rendered = {a.path: a for a in site.artefacts}
    for path, artefact in sorted(rendered.items()):
        target = out_dir / path
        shown = (out_dir / path).as_posix()
        if not target.is_file():
            problems.append(f"{shown}: missing (not rendered into {out_dir.as_posix()} yet)")
            continue
        committed = target.read_bytes()
        if artefact.is_figure:
            found = embedded_hash(path, committed)
            if found is None:
                problems.append(f"{shown}: carries no zslbench data hash (not rendered by zslbench leaderboard)")
            elif found != artefact.data_sha256:
                problems.append(f"{shown}: plots other data than the records give (data hash "
                                f"{found[:12]} committed, {artefact.data_sha256[:12]} expected)")
        elif committed != artefact.data:
            problems.append(f"{shown}: {_text_difference(committed, artefact.data)}")
    for path in sorted(_old_files(out_dir) - set(rendered)):
        if (out_dir / path).is_file():
            problems.append(f"{(out_dir / path).as_posix()}: stale (the records no longer produce it; delete it)")
    problems += [refusal(path, reason) for path, reason in site.refused]
    return problems


def refusal(path: str, reason: str) -> str:
    """The ``--check`` line for a file under the results dir that is not a valid, intact record."""
    return (f"{path}: refused, not a valid zslbench record ({reason}); a leaderboard is never built "
            "from it: re-run that record or delete it")


def write(site: Site, out_dir: Path) -> list[str]:
    """Write every artefact (only when its bytes change) and delete files no longer produced."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stale = _old_files(out_dir) - {a.path for a in site.artefacts}
    written: list[str] = []
    for artefact in site.artefacts:
        written += _write_one(out_dir, artefact)
    for path in sorted(stale):
        (out_dir / path).unlink(missing_ok=True)
    return written


def _write_one(out_dir: Path, artefact: Artefact) -> list[str]:
    target = out_dir / artefact.path
    if target.is_file() and target.read_bytes() == artefact.data:
        return []
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(artefact.data)
    tmp.replace(target)
    return [artefact.path]
