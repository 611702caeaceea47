"""``zslbench data download``: fetch the xlsa17 archive, verify it, extract what was asked for.

Only the standard library talks HTTP (``urllib``), so a fresh install needs nothing else.

Steps, each chosen so that an interruption never leaves a state that looks complete:

1. datasets already present in the data dir are skipped (a repeated call downloads nothing);
2. the archive streams into ``<data-dir>/.downloads/<name>.part``; an interrupted transfer is
   resumed with an HTTP ``Range`` request, both within the call (``retries``) and by re-running
   the command later;
3. the sha256 (hashed while streaming) is checked *before anything is extracted*: against
   ``--sha256``, else the registry, else the hash recorded for this URL by the first download
   (``.downloads/known_archives.json``; the publisher gives no checksum, so the first download
   defines it). A mismatch deletes the partial file and fails with one line;
4. only the requested ``<NAME>/`` folders are extracted, each into a temporary directory that is
   then renamed into place, so a dataset folder is either complete or absent;
5. the fast cache is built, which also runs the Split V2.0 checks on the new files.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zslbench.errors import ConfigError, DataError
from zslbench.files import atomic_write_text
from zslbench_plugins.xlsa17 import cache as _cache
from zslbench_plugins.xlsa17 import checks as _checks
from zslbench_plugins.xlsa17 import loader as _x

CHUNK = 1024 * 1024
USER_AGENT = "zslbench-data-download (python urllib)"


@dataclass
class DownloadReport:
    """What one ``download`` call did, for the CLI to print and tests to assert."""

    skipped: list[str] = field(default_factory=list)
    extracted: list[str] = field(default_factory=list)
    downloaded_bytes: int = 0
    resumed_from: list[int] = field(default_factory=list)
    archive: Path | None = None
    archive_sha256: str | None = None
    recorded_sha256: bool = False
    problems: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def parse_sha256(value: str | None) -> str | None:
    """Validate ``--sha256``: 64 hexadecimal digits (case-insensitive), or None."""
    if value is None:
        return None
    v = value.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", v):
        raise ConfigError(f"--sha256 {value!r} is not a sha256", hint="give 64 hexadecimal digits")
    return v


def archive_name(url: str) -> str:
    """The local file name for ``url`` (its last path segment, else ``xlsa17.zip``)."""
    name = Path(urllib.parse.urlparse(url).path).name
    return name if re.fullmatch(r"[A-Za-z0-9._-]+", name or "") else "xlsa17.zip"


def _known_path(data_dir: Path) -> Path:
    return data_dir / ".downloads" / "known_archives.json"


def known_archives(data_dir: Path) -> dict[str, Any]:
    """Archive hashes recorded by earlier downloads into this data dir, by URL."""
    path = _known_path(data_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _record_archive(data_dir: Path, url: str, sha256: str, size: int) -> None:
    known = known_archives(data_dir)
    known[url] = {
        "sha256": sha256,
        "size": size,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    atomic_write_text(_known_path(data_dir), json.dumps(known, indent=1, sort_keys=True))


def expected_sha256(data_dir: Path, url: str, override: str | None) -> tuple[str | None, str]:
    """The hash to verify against and where it comes from (``--sha256``, registry, recorded)."""
    if override:
        return override, "--sha256"
    reg = _checks.load_registry().get("archive", {})
    if reg.get("sha256") and url == reg.get("url"):
        return str(reg["sha256"]), "the zslbench registry"
    rec = known_archives(data_dir).get(url)
    if isinstance(rec, dict) and rec.get("sha256"):
        return str(
            rec["sha256"]
        ), f"the hash recorded by the first download on {rec.get('recorded_at', '?')}"
    return None, ""


class _Interrupted(Exception):
    def __init__(self, done: int, total: int | None, why: str) -> None:
        super().__init__(why)
        self.done, self.total, self.why = done, total, why


def _fmt_bytes(n: int | None) -> str:
    """``1234567`` -> ``"1.2 MB"`` (decimal units, as download tools print them)."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1000:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def fetch(
    url: str,
    part: Path,
    *,
    retries: int = 3,
    timeout: float = 60.0,
    on_progress: Callable[[int, int | None], None] | None = None,
    report: DownloadReport | None = None,
) -> str:
    """Download ``url`` into ``part`` (resuming what is there) and return the file's sha256.

    Resumes with ``Range: bytes=<size>-``; a server that answers 200 instead of 206 restarts
    the file. Transient failures (cut connection, timeout) are retried ``retries`` times, each
    resuming where the last stopped; after that a :class:`DataError` says how to resume.
    """
    report = report or DownloadReport()
    hasher = hashlib.sha256()
    part.parent.mkdir(parents=True, exist_ok=True)
    if part.exists():  # a previous call left a partial file: hash what we have, resume after it
        with open(part, "rb") as fh:
            for block in iter(lambda: fh.read(CHUNK), b""):
                hasher.update(block)
    attempts = 0
    while True:
        offset = part.stat().st_size if part.exists() else 0
        try:
            total = _fetch_once(url, part, offset, hasher, timeout, on_progress, report)
            done = part.stat().st_size
            if total is not None and done < total:
                raise _Interrupted(done, total, "the connection closed early")
            return hasher.hexdigest()
        except _Restart:
            hasher = hashlib.sha256()
            part.unlink(missing_ok=True)
            continue
        except _Interrupted as exc:
            attempts += 1
            if attempts > retries:
                raise DataError(
                    f"download of {url} interrupted at {_fmt_bytes(exc.done)} of "
                    f"{_fmt_bytes(exc.total)} ({exc.why}); the partial file {part} is kept",
                    hint="re-run the same command to resume it",
                ) from None
            time.sleep(min(0.2 * attempts, 2.0))


class _Restart(Exception):
    """The server ignored our Range request (or the partial file is unusable): start over."""


def _fetch_once(
    url: str,
    part: Path,
    offset: int,
    hasher: Any,
    timeout: float,
    on_progress: Callable[[int, int | None], None] | None,
    report: DownloadReport,
) -> int | None:
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    req = urllib.request.Request(url, headers=headers)
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 - URL given by the user
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # nothing after our offset: is the partial file complete?
            total = _content_range_total(exc.headers.get("Content-Range"))
            if total == offset:
                return total
            raise _Restart() from None
        raise DataError(
            f"download of {url} failed: HTTP {exc.code} {exc.reason}",
            hint="check the URL, or pass --url for a mirror",
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, (socket.timeout, TimeoutError, ConnectionResetError)):
            raise _Interrupted(offset, None, f"{reason}") from None
        raise DataError(
            f"cannot reach {url} ({reason})",
            hint="check the network connection, or pass --url for a mirror",
        ) from None
    with resp:
        status = resp.status
        if offset and status == 206:
            start = _content_range_start(resp.headers.get("Content-Range"))
            if start != offset:
                raise _Restart()
            report.resumed_from.append(offset)
            mode = "ab"
            total = _content_range_total(resp.headers.get("Content-Range"))
        elif status == 200:
            if offset:
                raise _Restart()  # server ignored Range: start over
            mode = "wb"
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        else:
            raise DataError(
                f"download of {url} failed: unexpected HTTP {status}",
                hint="check the URL, or pass --url for a mirror",
            )
        done = offset
        if on_progress:
            on_progress(done, total)
        with open(part, mode) as fh:
            while True:
                try:
                    block = resp.read(CHUNK)
                except (http.client.IncompleteRead, ConnectionError, TimeoutError, OSError) as exc:
                    fh.flush()
                    raise _Interrupted(done, total, type(exc).__name__) from None
                if not block:
                    break
                fh.write(block)
                hasher.update(block)
                done += len(block)
                report.downloaded_bytes += len(block)
                if on_progress:
                    on_progress(done, total)
            fh.flush()
            os.fsync(fh.fileno())
        return total


def _content_range_start(value: str | None) -> int | None:
    m = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", value or "")
    return int(m.group(1)) if m else None


def _content_range_total(value: str | None) -> int | None:
    m = re.match(r"bytes (?:\d+-\d+|\*)/(\d+)", value or "")
    return int(m.group(1)) if m else None


def extract_dataset(archive: Path, folder: str, data_dir: Path) -> Path:
    """Extract ``<...>/<folder>/*`` files of the zip into ``data_dir/folder`` atomically.

    Files land in a locked temporary directory next to the target
    (``.<folder>.zslbench-<pid>-<random>.extract``, see :class:`~zslbench_plugins.xlsa17.cache.WriterDir`),
    which is then renamed into place, so a new dataset folder is either complete or absent. When
    the target already exists (e.g. with only one of the two files), each extracted file replaces
    its namesake atomically and the folder's other files stay where they are. Member paths are
    reduced to their base names, so no member can write outside the folder. A temporary left by a
    killed extraction is removed by the next download.
    """
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(
            f"{archive} is not a readable zip archive ({exc})",
            hint="delete it and re-run `zslbench data download`",
        ) from None
    target = data_dir / folder
    with zf:
        members = [
            m
            for m in zf.infolist()
            if not m.is_dir()
            and len(parts := m.filename.replace("\\", "/").split("/")) >= 2
            and parts[-2] == folder
            and parts[-1] not in ("", ".", "..")
        ]
        if not members:
            raise DataError(
                f"{archive} has no folder {folder}/ (expected xlsa17/data/{folder}/)",
                hint="check --url; the archive must be the xlsa17 zip",
            )
        with _cache.WriterDir(data_dir, folder, ".extract") as tmp:
            try:
                for m in members:
                    name = m.filename.replace("\\", "/").split("/")[-1]
                    with zf.open(m) as src, open(tmp.path / name, "wb") as dst:
                        shutil.copyfileobj(src, dst, CHUNK)
            except zipfile.BadZipFile as exc:
                raise DataError(
                    f"{archive}: {folder}/ is damaged ({exc})",
                    hint="delete the archive and re-run `zslbench data download`",
                ) from None
            if target.is_dir():
                # Replace file by file: the user's other files never leave their folder (a
                # temporary holding them could later be removed as stale).
                for f in tmp.path.iterdir():
                    if f.name != _cache.LOCK_NAME:
                        os.replace(f, target / f.name)
            else:
                tmp.publish(target)
    return target


def download(
    names: list[str],
    data_dir: Path,
    *,
    url: str | None = None,
    sha256: str | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    delete_archive: bool = False,
    on_progress: Callable[[int, int | None], None] | None = None,
    say: Callable[[str], None] = lambda s: None,
) -> DownloadReport:
    """Make ``names`` (canonical xlsa17 names) present and cached in ``data_dir``.

    See the module docstring for the steps. Raises :class:`DataError` on a failed download, a
    checksum mismatch or a broken archive; Split V2.0 problems of the extracted data are returned
    in ``report.problems`` (the files are the publisher's; the user decides what to do).
    """
    names = [_x.canonical_name(n) for n in names]
    report = DownloadReport()
    data_dir = Path(data_dir)
    expected = parse_sha256(sha256)
    url = url or _checks.load_registry()["archive"]["url"]
    todo = [n for n in names if _x.missing_files(n, data_dir)]
    report.skipped = [n for n in names if n not in todo]
    if not todo:
        say(f"{', '.join(names)} already present in {data_dir}: nothing to download")
        _build_caches(names, data_dir, report, say)
        return report
    data_dir.mkdir(parents=True, exist_ok=True)
    for stale in _cache.clean_stale(data_dir, legacy=False):
        say(f"removed {stale}, the temporary of a killed extraction")
    downloads = data_dir / ".downloads"
    archive = downloads / archive_name(url)
    part = archive.with_name(archive.name + ".part")
    want, origin = expected_sha256(data_dir, url, expected)
    if archive.is_file():
        got = _cache.HashStore(downloads / "hashes.json").sha256(archive)
        if want and got != want:
            archive.unlink()
            say(f"{archive} does not match {origin}; downloading it again")
        else:
            say(f"using the archive already downloaded: {archive}")
    if not archive.is_file():
        origin_file = part.with_name(part.name + ".url")  # a partial file resumes only from its URL
        if part.exists() and (not origin_file.is_file() or origin_file.read_text().strip() != url):
            part.unlink()
        downloads.mkdir(parents=True, exist_ok=True)
        origin_file.write_text(url + "\n")
        say(f"{'resuming' if part.exists() else 'downloading'} {url} to {part}")
        got = fetch(
            url, part, retries=retries, timeout=timeout, on_progress=on_progress, report=report
        )
        if want and got != want:
            part.unlink(missing_ok=True)
            origin_file.unlink(missing_ok=True)
            raise DataError(
                f"checksum mismatch for {url}: sha256 {got} but {origin} says {want}; "
                f"the downloaded file was deleted",
                hint="retry, or check --url/--sha256 (a mirror may serve another file)",
            )
        size = part.stat().st_size
        os.replace(part, archive)
        origin_file.unlink(missing_ok=True)
        if not want:
            _record_archive(data_dir, url, got, size)
            report.recorded_sha256 = True
            say(f"recorded sha256 {got} of {url}; later downloads are verified against it")
        else:
            say(f"sha256 verified against {origin}")
    report.archive = archive
    report.archive_sha256 = _cache.HashStore(downloads / "hashes.json").sha256(archive)
    for name in todo:
        folder = _x.dataset_folder(name)
        extract_dataset(archive, folder, data_dir)
        report.extracted.append(name)
        say(f"extracted {folder}/ into {data_dir / folder}")
    _build_caches(todo, data_dir, report, say)
    if delete_archive:
        archive.unlink(missing_ok=True)
        say(f"deleted {archive}")
    return report


def _build_caches(
    names: list[str], data_dir: Path, report: DownloadReport, say: Callable[[str], None]
) -> None:
    for name in names:
        rep = _x.inspect_xlsa17(name, data_dir)
        if rep.error is not None:
            report.problems.append(rep.error.one_line())
            continue
        for f in rep.failures:
            report.problems.append(f"{f.line()} — {f.hint}")
        built = [k for k, v in rep.cache_status.items() if v != "hit"]
        say(
            f"{name}: cache {'built' if built else 'ready'}"
            + ("" if not rep.failures else f" ({len(rep.failures)} check(s) failed)")
        )


__all__ = [
    "DownloadReport",
    "archive_name",
    "download",
    "expected_sha256",
    "extract_dataset",
    "fetch",
    "known_archives",
    "parse_sha256",
]
