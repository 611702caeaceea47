"""Which files zslbench leaderboard wrote: its ``manifest.json``, marked with a ``generator``.

The manifest is how the leaderboard knows what it may replace or delete in an output directory
(``check.write``) and what it must not read back as a record when the output lies inside the
results directory (``zslbench.records.results.newest_runs``).
"""

from __future__ import annotations

from pathlib import Path

from zslbench.records.store import MANIFEST, owned_files

#: The board's list of third-party plugins (``zslbench board``), beside the pages: the render
#: reads past it as an input, never as a file in the way.
PLUGINS_NAME = "plugins.toml"


def owned_in(out_dir: Path) -> set[str]:
    """The files a previous render wrote into ``out_dir`` (empty when it has no manifest of ours)."""
    return owned_files(Path(out_dir) / MANIFEST) or set()


def plain_file(path: Path) -> bool:
    """A regular file and not a link: the board never reads or writes through a link."""
    return path.is_file() and not path.is_symlink()
