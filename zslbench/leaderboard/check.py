"""Write a rendered leaderboard, or compare it with the committed one (``--check``).

**It only ever touches files it wrote itself.** Every render records the files it wrote in
``manifest.json``, marked ``"generator": "zslbench leaderboard"``; that list, and nothing else, is
what a later render may replace or delete. An output directory holding any other file (a project's
README, a figure drawn by hand, a manifest.json of some other tool) is refused, unless
``--overwrite-foreign`` is given: then those files are left alone, except one at a path the
leaderboard writes, which is replaced. The inputs of the render (the results directory and the
reported-numbers file, when they lie inside the output directory, as in the committed
``leaderboards/``) and hidden files are not part of the output.

**It never writes or deletes through a link, and never leaves a board half-written.** A symbolic
link at the output directory, or at any path the render writes or deletes (a file, or a folder on
the way to it), is refused before anything is written. Every file is first written in full into a
hidden temporary folder inside the output directory; only when all of them are written are they
moved into place with ``os.replace``. A full disk therefore fails with one line and changes
nothing.

How strict ``--check`` is, and why:

* **Text** (Markdown, CSV, HTML, ``manifest.json``) is compared byte for byte. These are produced by
  our own code from the records, so any difference means the committed copy is stale.
* **Figures** are compared by the SHA-256 of the data they plot (plus a style version), which each
  PNG/SVG carries in its metadata and ``manifest.json`` lists. Their pixels depend on matplotlib,
  FreeType and font versions that CI does not pin; comparing bytes would fail on an upgrade that
  changed nothing in the results, and comparing the data hash still fails whenever a figure shows
  other data than the records give. ``--check`` never draws, so it is also fast.
* **Stale files** (listed in our manifest, no longer produced), **foreign files** (see above),
  **links** and **refused records** (a JSON file under the results dir that is not a valid, intact
  record) each fail the check with one line.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from zslbench.errors import UserError
from zslbench.leaderboard.build import Site, manifest_bytes
from zslbench.leaderboard.figures import embedded_hash
from zslbench.leaderboard.manifest import owned_in, plain_file
from zslbench.records.store import MANIFEST


def survey(
    out_dir: Path,
    inputs: list[Path],
    paths: Collection[str] = (),
    produced: Collection[str] = (),
    limit: float = float("inf"),
) -> tuple[list[str], list[str]]:
    """What stands in the way of a render into ``out_dir``, in one walk that follows nothing:
    the symbolic links (at ``out_dir``, on the way to one of ``paths``, or anywhere in it) as
    posix paths, and the files zslbench leaderboard did not write, relative to it. Hidden names and
    the ``inputs`` inside it (the paths the render reads) are neither; a file at a path the render
    writes (``produced``) is foreign even when it is an input; records in an ``out_dir`` that is
    the results dir are not foreign. The walk stops once more than ``limit`` foreign files are
    found."""
    out_dir = Path(out_dir)
    if out_dir.is_symlink():
        return [out_dir.as_posix()], []
    # (an out_dir that is not a folder walks nothing and holds nothing)
    links = {link.as_posix() for rel in paths if (link := _first_link(out_dir, rel))}
    owned, root = owned_in(out_dir), out_dir.resolve()
    skip = [p.resolve() for p in inputs if root in p.resolve().parents]
    records_here = any(p.resolve() == root for p in inputs)
    foreign = {p for p in produced if p not in owned and (out_dir / p).exists()}
    for path in _walk(root, skip):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            links.add((out_dir / rel).as_posix())
        elif not (path.is_dir() or rel in owned or any(path.is_relative_to(s) for s in skip)):
            if not (records_here and path.suffix == ".json"):
                foreign.add(rel)
        if len(foreign) > limit:
            break
    return sorted(links), sorted(foreign)


def _first_link(out_dir: Path, rel: str) -> Path | None:
    """The first symbolic link on the way from ``out_dir`` to ``rel`` inside it, if any."""
    parts = Path(rel).parts
    on_the_way = (out_dir.joinpath(*parts[:i]) for i in range(1, len(parts) + 1))
    return next((p for p in on_the_way if p.is_symlink()), None)


def _walk(root: Path, skip: list[Path]) -> Iterator[Path]:
    """Every entry under ``root`` but hidden ones and those in the folders ``skip``, in order;
    links are listed, never followed."""
    for top, dirs, files in os.walk(root):
        here = Path(top)
        visible = (d for d in dirs if not d.startswith("."))
        dirs[:] = sorted(
            d for d in visible if not any((here / d).resolve().is_relative_to(s) for s in skip)
        )
        yield from (here / n for n in dirs + sorted(files) if not n.startswith("."))


def _first_three(items: list[str]) -> str:
    return ", ".join(items[:3]) + (", ..." if len(items) > 3 else "")


def compare(
    site: Site, out_dir: Path, inputs: list[Path], *, allow_foreign: bool = False
) -> list[str]:
    """One line per file whose committed copy in ``out_dir`` is missing, stale, extra or a link,
    and per refused record."""
    out_dir = Path(out_dir)
    rendered = {a.path: a for a in site.artefacts}
    links, foreign = survey(out_dir, inputs, frozenset(rendered) | owned_in(out_dir))
    problems = [
        f"{link}: a symbolic link where zslbench leaderboard writes (it never writes through one)"
        for link in links
    ]

    def reachable(path: str) -> bool:  # not through one of the links
        return not any((out_dir / path).is_relative_to(link) for link in links)

    problems += [
        line
        for path, artefact in sorted(rendered.items())
        if reachable(path) and (line := _artefact_problem(out_dir, path, artefact))
    ]
    problems += [
        f"{(out_dir / path).as_posix()}: stale (the records no longer produce it; delete it)"
        for path in sorted(owned_in(out_dir) - set(rendered))
        if (out_dir / path).is_file() and reachable(path)
    ]
    problems += [
        f"{(out_dir / p).as_posix()}: not written by zslbench leaderboard (a render refuses this "
        "--out unless --overwrite-foreign)"
        for p in ([] if allow_foreign else foreign)
    ]
    problems += [
        f"{path}: refused, not a valid zslbench record ({reason}); a leaderboard is never built "
        "from it: re-run that record or delete it"
        for path, reason in site.board.refused
    ]
    return problems


def _artefact_problem(out_dir: Path, path: str, artefact: Any) -> str:
    """What is wrong with the committed copy of one rendered file ("" when nothing)."""
    target = out_dir / path
    shown = target.as_posix()
    if not target.is_file():
        return f"{shown}: missing (not rendered into {out_dir.as_posix()} yet)"
    committed = target.read_bytes()
    if not artefact.is_figure:
        old, new = committed.splitlines(), artefact.data.splitlines()
        same = (a == b for a, b in zip(old, new, strict=False))
        first = next((i for i, equal in enumerate(same) if not equal), min(len(old), len(new)))
        return (
            f"{shown}: differs from the records' rendering (first difference at line {first + 1}; "
            f"{len(old)} lines committed, {len(new)} rendered)"
            if committed != artefact.data
            else ""
        )
    found = embedded_hash(path, committed)
    if found is None:
        return f"{shown}: carries no zslbench data hash (not rendered by zslbench leaderboard)"
    if found != artefact.data_sha256:
        return (
            f"{shown}: plots other data than the records give (data hash "
            f"{found[:12]} committed, {artefact.data_sha256[:12]} expected)"
        )
    return ""


def write(
    site: Site, out_dir: Path, inputs: list[Path], *, overwrite_foreign: bool = False
) -> list[str]:
    """Write every artefact whose bytes change and delete the files a previous render wrote that
    are no longer produced; refuse links and an ``out_dir`` holding files it did not write (see
    the module docstring). Returns the paths written."""
    out_dir = Path(out_dir)
    produced, owned = frozenset(a.path for a in site.artefacts), owned_in(out_dir)
    refuse_unsafe(out_dir, inputs, produced, overwrite_foreign=overwrite_foreign)
    stale = sorted(owned - produced)
    changed = [a for a in site.artefacts if not _holds(out_dir / a.path, a.data)]
    if not changed and not stale:
        return []
    # First a manifest that lists every file this render may leave behind, so that a render killed
    # half-way still owns what it wrote; the complete manifest comes last.
    interim = manifest_bytes(site.artefacts, site.board.runs, site.board.superseded, extra=owned)
    files = [(MANIFEST, interim)] + [(a.path, a.data) for a in changed if a.path != MANIFEST]
    files.append((MANIFEST, next(a.data for a in site.artefacts if a.path == MANIFEST)))
    replaced = False
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        # Hidden, so never a file in the way; gone when this block ends, whatever happens.
        with tempfile.TemporaryDirectory(prefix=".zslbench-render-", dir=out_dir) as tmp:
            for i, (_, data) in enumerate(files):
                (Path(tmp) / str(i)).write_bytes(data)
            for i, (path, _) in enumerate(files[:-1]):
                (out_dir / path).parent.mkdir(parents=True, exist_ok=True)
                os.replace(Path(tmp) / str(i), out_dir / path)  # a link itself, never its target
                replaced = True
            for path in stale:
                if plain_file(out_dir / path):
                    (out_dir / path).unlink()
            os.replace(Path(tmp) / str(len(files) - 1), out_dir / MANIFEST)
    except OSError as exc:
        changed_text = "some files were already replaced" if replaced else "nothing was changed"
        raise UserError(
            f"{out_dir.as_posix()}: cannot write the leaderboard ({exc.strerror or exc}); {changed_text}",
            hint="free disk space, make the folder writable, or choose another --out",
        ) from None
    return [a.path for a in changed]


def refuse_unsafe(
    out_dir: Path, inputs: list[Path], produced: Collection[str] = (), *, overwrite_foreign: bool
) -> None:
    """Raise when a link is in ``out_dir`` or on the way to the files written or deleted, or
    (unless ``overwrite_foreign``) a file not ours is there."""
    limit = float("inf") if overwrite_foreign else 3
    links, foreign = survey(out_dir, inputs, {*produced, *owned_in(out_dir)}, produced, limit)
    if links:
        raise UserError(
            f"{_first_three(links)}: a symbolic link where zslbench leaderboard writes; it never "
            "writes or deletes through a link",
            hint="remove the link (or choose another --out) and render again",
        )
    if foreign and not overwrite_foreign:
        count = f"{len(foreign)}" if len(foreign) <= 3 else "more than 3"
        raise UserError(
            f"{Path(out_dir).as_posix()}: holds {count} file(s) that zslbench leaderboard did not "
            f"write ({_first_three(foreign)}); it writes only into a new or empty directory or one "
            "it rendered before",
            hint="choose another --out, or pass --overwrite-foreign to write beside them (a file "
            "at a path the leaderboard writes is then replaced)",
        )


def _holds(target: Path, data: bytes) -> bool:
    return plain_file(target) and target.read_bytes() == data
