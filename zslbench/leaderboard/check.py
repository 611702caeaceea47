"""Write a rendered leaderboard, or compare it with the committed one (``--check``).

**It only ever touches files it wrote itself.** Every render records the files it wrote in
``manifest.json``, marked ``"generator": "zslbench leaderboard"``; that list, and nothing else, is
what a later render may replace or delete. An output directory holding any other file (a project's
README, a figure drawn by hand, a manifest.json of some other tool) is refused, unless
``--overwrite-foreign`` is given: then those files are left alone, except one at a path the
leaderboard writes, which is replaced. The inputs of the render (the results directory and the
reported-numbers file, when they lie inside the output directory, as in the committed
``leaderboards/``) and hidden files are not part of the output.

How strict ``--check`` is, and why:

* **Text** (Markdown, CSV, HTML, ``manifest.json``) is compared byte for byte. These are produced by
  our own code from the records, so any difference means the committed copy is stale.
* **Figures** are compared by the SHA-256 of the data they plot (plus a style version), which each
  PNG/SVG carries in its metadata and ``manifest.json`` lists. Their pixels depend on matplotlib,
  FreeType and font versions that CI does not pin; comparing bytes would fail on an upgrade that
  changed nothing in the results, and comparing the data hash still fails whenever a figure shows
  other data than the records give. ``--check`` never draws, so it is also fast.
* **Stale files** (listed in our manifest, no longer produced), **foreign files** (see above) and
  **refused records** (a JSON file under the results dir that is not a valid, intact record) each
  fail the check with one line.
"""

from __future__ import annotations

import os
from pathlib import Path

from zslbench.errors import UserError
from zslbench.leaderboard import manifest
from zslbench.leaderboard.build import Site, manifest_bytes
from zslbench.leaderboard.figures import embedded_hash
from zslbench.leaderboard.manifest import MANIFEST


def owned_files(out_dir: Path) -> set[str]:
    """The files a previous render wrote into ``out_dir`` (see :mod:`.manifest`)."""
    return manifest.owned_files(Path(out_dir) / MANIFEST) or set()


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def foreign_files(out_dir: Path, inputs: list[Path], produced: frozenset[str] = frozenset(),
                  limit: int | None = None) -> list[str]:
    """Files in ``out_dir`` that zslbench leaderboard did not write (relative, sorted), not counting
    hidden ones or the ``inputs`` (paths inside ``out_dir`` that the render reads); a file at a path
    the render writes counts even when it is an input. Stops after ``limit``."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        return []
    owned = owned_files(out_dir)
    root = out_dir.resolve()
    # An input strictly inside OUT (leaderboards/records) is skipped whole; records in OUT itself
    # (--results-dir and --out the same folder) are its JSON files. An input that holds OUT (the
    # default RESULTS_DIR/leaderboard) excuses nothing in it.
    skip = [p.resolve() for p in inputs if root in p.resolve().parents]
    records_here = any(p.resolve() == root and p.resolve().is_dir() for p in inputs)
    found = sorted(p for p in produced if p not in owned and (out_dir / p).exists())
    for top, dirs, files in os.walk(root):
        here = Path(top)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not any(_inside(here / d, s) for s in skip))
        for name in sorted(files):
            rel = (here / name).relative_to(root).as_posix()
            if (name.startswith(".") or rel in owned or rel in found or any(_inside(here / name, s) for s in skip)
                    or (records_here and name.endswith(".json"))):
                continue
            found.append(rel)
            if limit is not None and len(found) >= limit:
                return sorted(found)
    return sorted(found)


def refuse_foreign(out_dir: Path, foreign: list[str]) -> UserError:
    shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
    count = f"{len(foreign)}" if len(foreign) <= 3 else "more than 3"
    return UserError(f"{Path(out_dir).as_posix()}: holds {count} file(s) that zslbench leaderboard did not "
                     f"write ({shown}); it writes only into a new or empty directory or one it rendered before",
                     hint="choose another --out, or pass --overwrite-foreign to write beside them (a file at "
                          "a path the leaderboard writes is then replaced)")


def _text_difference(old: bytes, new: bytes) -> str:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    first = next((i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b),
                 min(len(old_lines), len(new_lines)))
    return (f"differs from the records' rendering (first difference at line {first + 1}; "
            f"{len(old_lines)} lines committed, {len(new_lines)} rendered)")


def refusal(path: str, reason: str) -> str:
    """The ``--check`` line for a file under the results dir that is not a valid, intact record."""
    return (f"{path}: refused, not a valid zslbench record ({reason}); a leaderboard is never built "
            "from it: re-run that record or delete it")


def compare(site: Site, out_dir: Path, inputs: list[Path], *, allow_foreign: bool = False) -> list[str]:
    """One line per file whose committed copy in ``out_dir`` is missing, stale or extra, and per
    refused record."""
    out_dir = Path(out_dir)
    problems: list[str] = []
    rendered = {a.path: a for a in site.artefacts}
    for path, artefact in sorted(rendered.items()):
        target = out_dir / path
        shown = target.as_posix()
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
    for path in sorted(owned_files(out_dir) - set(rendered)):
        if (out_dir / path).is_file():
            problems.append(f"{(out_dir / path).as_posix()}: stale (the records no longer produce it; delete it)")
    if not allow_foreign:
        problems += [f"{(out_dir / p).as_posix()}: not written by zslbench leaderboard (a render refuses this "
                     "--out unless --overwrite-foreign)" for p in foreign_files(out_dir, inputs)]
    problems += [refusal(path, reason) for path, reason in site.refused]
    return problems


def write(site: Site, out_dir: Path, inputs: list[Path], *, overwrite_foreign: bool = False) -> list[str]:
    """Write every artefact whose bytes change and delete the files a previous render wrote that
    are no longer produced; refuse an ``out_dir`` holding files it did not write (see the module
    docstring). Returns the paths written."""
    out_dir = Path(out_dir)
    produced = frozenset(a.path for a in site.artefacts)
    if not overwrite_foreign:
        foreign = foreign_files(out_dir, inputs, produced, limit=4)
        if foreign:
            raise refuse_foreign(out_dir, foreign)
    owned = owned_files(out_dir)
    stale = sorted(owned - produced)
    changed = [a for a in site.artefacts if not _same(out_dir / a.path, a.data)]
    if not changed and not stale:
        return []
    # First a manifest that lists every file this render may leave behind, so that a render killed
    # half-way still owns what it wrote; the complete manifest comes last.
    manifest = next(a for a in site.artefacts if a.path == MANIFEST)
    _write_bytes(out_dir / MANIFEST, manifest_bytes(site.artefacts, site.runs, site.superseded, extra=owned))
    for artefact in changed:
        if artefact.path != MANIFEST:
            _write_bytes(out_dir / artefact.path, artefact.data)
    for path in stale:
        (out_dir / path).unlink(missing_ok=True)
    _write_bytes(out_dir / MANIFEST, manifest.data)
    return [a.path for a in changed]


def _same(target: Path, data: bytes) -> bool:
    return target.is_file() and target.read_bytes() == data


def _write_bytes(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
