"""Which files zslbench leaderboard wrote: its ``manifest.json``, marked with a ``generator``.

The manifest is how the leaderboard knows what it may replace or delete in an output directory
(``check.write``) and what it must not read back as a record when the output lies inside the
results directory (``collect.load_runs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zslbench.files import read_folder_file

MANIFEST = "manifest.json"
#: The board's list of third-party plugins (``zslbench board``), beside the pages: the render
#: reads past it as an input, never as a file in the way.
PLUGINS_NAME = "plugins.toml"
GENERATOR = "zslbench leaderboard"
#: How manifests began before the ``generator`` field (the committed board's, until it is
#: re-rendered): they are ours too.
LEGACY_ABOUT = "Rendered by `zslbench leaderboard` from result records"


def is_own_manifest(doc: Any) -> bool:
    """Whether a parsed manifest.json was written by ``zslbench leaderboard``."""
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        return False
    return doc.get("generator") == GENERATOR or (
        doc.get("schema") == 1 and str(doc.get("about", "")).startswith(LEGACY_ABOUT)
    )


def owned_files(manifest: Path) -> set[str] | None:
    """The files (relative to its folder, the manifest itself included) that the manifest at
    ``manifest`` says zslbench leaderboard wrote; None when it is absent, unreadable, foreign or
    a link (never followed)."""
    if Path(manifest).is_symlink():
        return None
    try:
        doc = json.loads(read_folder_file(Path(manifest)).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not is_own_manifest(doc):
        return None
    names = {str(p) for p in doc["files"]}
    return {n for n in names if ".." not in Path(n).parts and not Path(n).is_absolute()} | {
        MANIFEST
    }


def owned_in(out_dir: Path) -> set[str]:
    """The files a previous render wrote into ``out_dir`` (empty when it has no manifest of ours)."""
    return owned_files(Path(out_dir) / MANIFEST) or set()
