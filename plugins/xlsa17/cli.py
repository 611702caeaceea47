"""``zslbench data``: download, verify and inspect the xlsa17 benchmark files.

The xlsa17 plugin adds this group to the command line through the ``zslbench_commands`` hook. A
mistake raises a :class:`~zslbench.errors.UserError`, which ``zslbench.cli.main`` (the one error
handler) prints as one ``zslbench: error: ...`` line with a non-zero exit. ``verify`` and
``download`` are reports as well: they print every problem they found, one line each, before
exiting 1.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from zslbench.console import say_error
from zslbench.errors import ConfigError, UserError
from zslbench.request import missing_data_line
from zslbench_plugins.xlsa17 import cache as _cache
from zslbench_plugins.xlsa17 import checks as _checks
from zslbench_plugins.xlsa17 import download as _dl
from zslbench_plugins.xlsa17 import loader as _x


def _out() -> Console:
    # Built per call: click's CliRunner swaps sys.stdout, and rich binds the stream at creation.
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(
            highlight=False, soft_wrap=False, width=200
        )  # files/pipes: keep rows whole
    return console


def _err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def parse_datasets(value: str | tuple[str, ...]) -> list[str]:
    """``"all"`` / ``"awa2,cub"`` (or repeated options) -> canonical xlsa17 names, in order."""
    values = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in values or ["all"]:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            if part.lower() == "all":
                names = list(_x.DATASETS)
            elif part.lower().startswith("synth-") or part.lower() == "toy":
                raise ConfigError(
                    f"{part!r} is an embedded synthetic dataset: it needs no download "
                    f"or verification",
                    hint="run it directly with `zslbench run`",
                )
            else:
                names = [_x.canonical_name(part)]
            out += [n for n in names if n not in out]
    return out


_dataset_option = click.option(
    "-d",
    "--dataset",
    "datasets",
    multiple=True,
    default=("all",),
    show_default=True,
    metavar="NAME|all",
    help="awa1, awa2, apy, cub, sun or all (comma-separated or repeated).",
)
_data_dir_option = click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Data folder [default: $ZSLBENCH_DATA, else $XDG_CACHE_HOME/zslbench/data].",
)


@click.group("data")
def data() -> None:
    """Download, verify and inspect the xlsa17 benchmark files (Split V2.0)."""


@data.command("download")
@_dataset_option
@_data_dir_option
@click.option(
    "--url",
    default=None,
    metavar="URL",
    help="Archive URL (a mirror) [default: the published xlsa17.zip].",
)
@click.option(
    "--sha256",
    "sha256",
    default=None,
    metavar="HEX",
    help="Expected sha256 of the archive; overrides the registry and the recorded hash.",
)
@click.option(
    "--retries",
    type=click.IntRange(0),
    default=3,
    show_default=True,
    help="Resume attempts after a cut connection, within this call.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds without data before a connection counts as cut.",
)
@click.option(
    "--delete-archive",
    is_flag=True,
    help="Delete the zip after extracting (a later dataset then needs a new download).",
)
def download_cmd(
    datasets: tuple[str, ...],
    data_dir: Path | None,
    url: str | None,
    sha256: str | None,
    retries: int,
    timeout: float,
    delete_archive: bool,
) -> None:
    """Fetch xlsa17 (about 879 MB), verify its sha256, extract the datasets asked for, build the cache.

    Resumes an interrupted download; a second call is a no-op.
    """
    names = parse_datasets(datasets)
    root = _x.resolve_data_dir(data_dir)
    expected = _dl.parse_sha256(sha256)
    out = _out()
    err = _err()
    progress = Progress(
        TextColumn("[bold]xlsa17"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
        disable=not err.is_terminal and not os.environ.get("ZSLBENCH_PROGRESS"),
    )
    task = None

    def on_progress(done: int, total: int | None) -> None:
        nonlocal task
        if task is None:
            task = progress.add_task("download", total=total, completed=done)
        progress.update(task, completed=done, total=total)

    try:
        with progress:
            report = _dl.download(
                names,
                root,
                url=url,
                sha256=expected,
                retries=retries,
                timeout=timeout,
                delete_archive=delete_archive,
                on_progress=on_progress,
                say=lambda s: out.print(s, markup=False, soft_wrap=True),
            )
    except KeyboardInterrupt:
        say_error(
            "interrupted; re-run the same command to continue (a partial download is resumed)",
            prefix="zslbench: ",
        )
        raise SystemExit(130) from None
    for line in report.problems:
        say_error(line)
    if report.problems:
        raise SystemExit(1)
    if report.extracted:
        out.print(
            f"ready: {', '.join(report.extracted)} in {root} "
            f"(check with `zslbench data verify --data-dir {root}`)",
            markup=False,
            soft_wrap=True,
        )


#: How ``data info`` describes a temporary (``zslbench_plugins.xlsa17.cache.list_temporaries``).
_TEMPORARY_STATE = {
    "stale": "stale: its writer is gone; the next load of this dataset (or download) removes it",
    "live": "being written by a running zslbench (pid {pid})",
    "unknown": "left by an older zslbench; removed by the next load once it is an hour old",
}


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return str(n)


@data.command("verify")
@_dataset_option
@_data_dir_option
@click.option(
    "--full",
    is_flag=True,
    help="Also re-hash the source .mat files instead of trusting their remembered sha256 "
    "(every cache file is checked in full either way).",
)
def verify_cmd(datasets: tuple[str, ...], data_dir: Path | None, full: bool) -> None:
    """Check presence, sizes, hashes, shapes and the Split V2.0 fingerprint of each dataset, with
    the same checks `zslbench run` makes.

    Prints a table, one problem per line on stderr, and exits 1 when anything is wrong. Every
    byte of the cache is checked; a damaged cache entry is rebuilt from the source (a note says
    so), and the temporaries of killed cache builds are removed.
    """
    names = parse_datasets(datasets)
    root = _x.resolve_data_dir(data_dir)
    table = Table(title=f"xlsa17 in {root}", title_justify="left")
    for col in (
        "dataset",
        "file",
        "size",
        "sha256",
        "shape",
        "split tv/ts/tu",
        "Split V2.0",
        "cache",
    ):
        table.add_column(col, no_wrap=True)
    table.add_column("status", overflow="fold")
    problems: list[str] = []
    missing_lines: list[str] = []  # every dataset's missing files: one line at the end
    notes: list[str] = []
    for name in names:
        rep = _x.inspect_xlsa17(name, root, rehash_sources=full)
        c = rep.counts
        split = f"{c['trainval']}/{c['test_seen']}/{c['test_unseen']}" if "trainval" in c else "-"
        if rep.fingerprint and rep.fingerprint == rep.official_fingerprint:
            fp = f"✓ official {rep.fingerprint[:12]}"
        elif rep.fingerprint:
            fp = f"✗ {rep.fingerprint[:12]}"
        else:
            fp = "-"
        notes += [
            f"note: {name}: removed {p}, the temporary of a killed cache build" for p in rep.cleaned
        ]
        notes += [
            f"note: {name} {k} cache: {v}"
            for k, v in rep.cache_status.items()
            if v.startswith("rebuilt") or v.startswith("disabled (")
        ]
        if rep.error is not None:
            missing = _x.missing_files(name, root)
            missing_lines += missing
            lines = [] if missing else [rep.error.one_line()]
            status = "missing" if missing else "FAIL: unreadable"
        else:
            # The files' own checks, then exactly the checks `zslbench run` makes on the dataset.
            err: UserError | None = _checks.primary_error(rep.failures)
            failed = [f.check for f in rep.failures]
            if err is None:
                try:
                    verdict = _x.check_xlsa17(_x.dataset_from(rep), allow_nonstandard=True)
                    err, failed = verdict.refusal(), [f.check for f in verdict.problems]
                except UserError as exc:  # the split cannot be evaluated at all
                    err, failed = exc, ["split"]
            lines = [err.one_line()] if err is not None else []
            status = "OK" if err is None else "FAIL: " + ", ".join(dict.fromkeys(failed))
        problems += lines
        shapes = {
            "res101": f"{rep.features_shape[0]}×{rep.features_shape[1]}"
            if rep.features_shape
            else "-",
            "att_splits": f"att {rep.att_shape[0]}×{rep.att_shape[1]}" if rep.att_shape else "-",
        }
        for i, (key, f) in enumerate(rep.files.items()):
            sha = (f.sha256[:12] + (" (known)" if f.known else "")) if f.sha256 else "-"
            table.add_row(
                name if i == 0 else "",
                f"{key}.mat",
                _size(f.size) if f.present else "✗ missing",
                sha,
                shapes[key],
                split if i == 0 else "",
                fp if i == 0 else "",
                rep.cache_status.get(key, "-").split(" ")[0],
                status if i == 0 else "",
                end_section=i == len(rep.files) - 1,
            )
    out = _out()
    out.print(table)
    for line in notes:
        out.print(line, markup=False, soft_wrap=True)
    if missing_lines:
        problems.append(missing_data_line(missing_lines))
    for line in problems:
        say_error(line)
    if problems:
        raise SystemExit(1)


@data.command("info")
@_data_dir_option
def info_cmd(data_dir: Path | None) -> None:
    """Show where the data lives, what is cached and how much disk it takes."""
    root = _x.resolve_data_dir(data_dir)
    origin = (
        "--data-dir"
        if data_dir is not None
        else f"${_x.DATA_ENV}"
        if os.environ.get(_x.DATA_ENV)
        else "default ($XDG_CACHE_HOME or ~/.cache)"
    )
    out = _out()
    out.print(
        f"data dir: {root}  (from {origin}){'' if root.exists() else '  [does not exist yet]'}",
        markup=False,
        soft_wrap=True,
    )
    t = Table(title="datasets", title_justify="left")
    for col in ("dataset", "folder", "res101.mat", "att_splits.mat", "disk"):
        t.add_column(col)
    total = 0
    for name in _x.DATASETS:
        res, att = _x.dataset_paths(name, root)
        used = _cache.disk_usage(res.parent)
        total += used
        t.add_row(
            name,
            res.parent.name,
            _size(res.stat().st_size) if res.is_file() else "missing",
            _size(att.stat().st_size) if att.is_file() else "missing",
            _size(used),
        )
    out.print(t)
    cache_root = root / ".cache"
    entries = _cache.list_entries(cache_root)
    t = Table(title=f"cache ({cache_root})", title_justify="left")
    for col in ("folder", "entry", "size", "state", "source"):
        t.add_column(col, overflow="fold")
    for e in entries:
        t.add_row(e["folder"], e["entry"], _size(e["bytes"]), e["state"], e["source"])
    if not entries:
        t.add_row("-", "(empty)", "-", "-", "-")
    out.print(t)
    temporaries = [
        tmp
        for folder in (
            sorted(p for p in cache_root.iterdir() if p.is_dir()) if cache_root.is_dir() else []
        )
        for tmp in _cache.list_temporaries(folder)
    ]
    extracting = _cache.list_temporaries(root, legacy=False)
    for tmp in temporaries + extracting:
        out.print(
            f"temporary: {tmp['path']} ({_size(tmp['bytes'])}) — {_TEMPORARY_STATE[tmp['state']]}".replace(
                "{pid}", str(tmp["pid"])
            ),
            markup=False,
            soft_wrap=True,
        )
    cache_bytes = _cache.disk_usage(cache_root)
    downloads = root / ".downloads"
    dl_bytes = _cache.disk_usage(downloads)
    if downloads.is_dir():
        for f in sorted(downloads.iterdir()):
            if f.is_file() and not f.name.endswith((".json", ".url")):
                kind = (
                    "partial download (re-run download to resume)"
                    if f.name.endswith(".part")
                    else "archive"
                )
                out.print(f"{kind}: {f} ({_size(f.stat().st_size)})", markup=False, soft_wrap=True)
        for url, rec in _dl.known_archives(root).items():
            out.print(
                f"recorded sha256 of {url}: {rec.get('sha256')}", markup=False, soft_wrap=True
            )
    free = shutil.disk_usage(root if root.exists() else Path(root.anchor or "/")).free
    tmp_bytes = sum(tmp["bytes"] for tmp in extracting)
    out.print(
        f"disk: datasets {_size(total)}, cache {_size(cache_bytes)}, downloads {_size(dl_bytes)}, "
        + (f"unfinished extractions {_size(tmp_bytes)}, " if extracting else "")
        + f"total {_size(total + cache_bytes + dl_bytes + tmp_bytes)}; free on this filesystem "
        f"{_size(free)}",
        markup=False,
        soft_wrap=True,
    )


__all__ = ["data", "parse_datasets"]
