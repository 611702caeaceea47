"""Third-party methods onto the public board: the board folder's ``plugins.toml``.

A plugin's author adds an entry by pull request::

    [[plugin]]
    name = "my-zsl"                  # the distribution (as pip knows it)
    requirement = "my-zsl==1.0.2"    # what pip installs: a pinned version, a URL or a path
    methods = ["my-eszsl"]           # the methods it registers that the board shows

and ``.github/workflows/leaderboard.yml`` runs them in a job of their own, which can read the
repository and write nothing (``permissions: contents: read``, no token kept by the checkout, no
shared cache)::

    zslbench board install      # pip install every requirement
    zslbench board run          # their methods on the stand-ins (synth-all, 3 seeds)

and hands the records on as an artifact. The job that may write (push a branch, open the pull
request) installs no plugin and runs no third-party code; it only reads the artifact's records as
data::

    zslbench board accept --from DIR   # validate them, take them onto the board
    zslbench board render              # zslbench leaderboard --results-dir DIR/records --out DIR

Every path is relative to the board folder, ``zslbench board --dir DIR`` (default
``leaderboards`` under the current directory, the clone's root in the workflow): its
``plugins.toml``, its records (``records/``, third-party ones in ``records/synthetic/``) and the
rendered pages; ``--plugins``, ``--results-dir`` and ``--out`` name another file or folder.

``accept`` (:func:`accept`) takes a record only when it meets every entry of
:data:`REQUIREMENTS`: a plain file under a size cap, the only record of its run in the artifact,
valid with claims that agree (:mod:`zslbench.claims`), with an identity and content parts so that
every claim was recomputed, named by its run id, a run of a listed third-party (not built-in)
method from the listed distribution, on one of the board's synthetic stand-ins, and replacing no
other method's record.

``run`` goes through ``zslbench.run`` (the command line's own path: caching, records, failure
isolation), and refuses a listed method that the named distribution does not provide, so an entry
cannot put another package's method, or a built-in, under its name. Each record names the
distribution and its version (``config.components.<role>.distribution`` / ``.version``). A plugin
whose runs fail does not keep the others off the board: its failures are listed, and ``run``
exits 1 after every plugin ran.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from zslbench.config import tomllib
from zslbench.console import terminal_text
from zslbench.errors import ConfigError, UserError
from zslbench.leaderboard.cli import render_board
from zslbench.leaderboard.manifest import PLUGINS_NAME
from zslbench.registry import BUILTIN_DISTRIBUTION

if TYPE_CHECKING:
    from zslbench.records import Record, RecordError

#: The board folder, relative to the current directory, unless ``zslbench board --dir`` names one.
BOARD_DIR = Path("leaderboards")
#: What the board runs them on: the embedded stand-ins, as the built-ins' synthetic grid.
DATASETS = "synth-all"
SEEDS = 3
#: The third-party records, inside the board folder's records.
THIRD_PARTY_RECORDS = Path("records") / "synthetic"
KEYS = {"name", "requirement", "methods"}


@dataclass(frozen=True)
class BoardPlugin:
    """One entry of ``plugins.toml``."""

    name: str
    requirement: str
    methods: tuple[str, ...]


def _canonical(name: str) -> str:
    """PEP 503 normalisation: ``My_ZSL`` and ``my-zsl`` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def load_plugins(path: Path) -> list[BoardPlugin]:
    """The validated entries of ``path``; a mistake is one ``ConfigError`` naming the entry."""
    path = Path(path)
    raw = _read_toml(path)
    unknown = sorted(set(raw) - {"plugin"})
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) {', '.join(unknown)}", hint="list plugins as [[plugin]] tables"
        )
    out: list[BoardPlugin] = []
    for i, entry in enumerate(raw.get("plugin", [])):
        plugin = _entry(f"{path}: plugin #{i + 1}", entry)
        if any(_canonical(p.name) == _canonical(plugin.name) for p in out):
            raise ConfigError(
                f"{path}: plugin #{i + 1}: {plugin.name} is listed twice", hint="keep one entry"
            )
        out.append(plugin)
    return out


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file", hint="see zslbench/board.py for its format"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start})", hint="save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot be read ({exc.strerror or exc})",
            hint="point --plugins at the plugins.toml file",
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})", hint="fix the line it names") from None


def _entry(where: str, entry: object) -> BoardPlugin:
    """One validated ``[[plugin]]`` table."""
    if not isinstance(entry, dict) or set(entry) != KEYS:
        raise ConfigError(
            f"{where} must have exactly the keys {', '.join(sorted(KEYS))}",
            hint='e.g. name = "my-zsl", requirement = "my-zsl==1.0", methods = ["my-eszsl"]',
        )
    name, req, methods = entry["name"], entry["requirement"], entry["methods"]
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ConfigError(
            f"{where}: name {name!r} is not a distribution name",
            hint="the name pip knows the package by",
        )
    if not isinstance(req, str) or not req.strip() or req.lstrip().startswith("-"):
        raise ConfigError(
            f"{where} ({name}): requirement {req!r} is not a requirement",
            hint='e.g. "my-zsl==1.0.2" (pip options are not allowed)',
        )
    if (
        not isinstance(methods, list)
        or not methods
        or not all(isinstance(m, str) and m for m in methods)
    ):
        raise ConfigError(
            f"{where} ({name}): methods must list method names", hint='e.g. methods = ["my-eszsl"]'
        )
    if _canonical(name) == BUILTIN_DISTRIBUTION:
        raise ConfigError(
            f"{where}: {name} is zslbench itself, whose built-in methods the board already runs",
            hint="list only third-party distributions",
        )
    return BoardPlugin(name, req.strip(), tuple(methods))


def install(plugins: list[BoardPlugin]) -> None:
    """``pip install`` every requirement into this environment (one pip call)."""
    if not plugins:
        return
    cmd = [sys.executable, "-m", "pip", "install", *(p.requirement for p in plugins)]
    if subprocess.run(cmd, check=False).returncode != 0:
        raise UserError(
            "pip could not install the plugins of the board "
            f"({', '.join(p.requirement for p in plugins)})",
            hint=f"check each requirement in {PLUGINS_NAME}",
        )


def run(
    plugins: list[BoardPlugin], *, results_dir: Path, datasets: str = DATASETS, seeds: int = SEEDS
) -> list[str]:
    """Run every listed method on ``datasets``; the failures, one line each (empty: all ran)."""
    import zslbench
    from zslbench.api import RunsFailed, print_progress
    from zslbench.registry import load_registry

    registry = load_registry()
    for plugin in plugins:  # every entry is checked before anything runs
        for method in plugin.methods:
            _check_provides(registry, plugin, method)
    failures: list[str] = []
    for plugin in plugins:
        try:
            zslbench.run(
                methods=list(plugin.methods),
                datasets=datasets,
                seeds=seeds,
                results_dir=results_dir,
                device="cpu",
                on_event=print_progress,
            )
        except RunsFailed as exc:
            failures += [f"{plugin.name}: {line}" for line in exc.failures]
    return failures


def _check_provides(registry: Any, plugin: BoardPlugin, method: str) -> None:
    """Refuse an entry's method that is not registered, or that its distribution does not provide."""
    if method not in registry.items["method"]:
        problems = [
            line
            for line in registry.problems
            if repr(method) in line or _canonical(plugin.name) in _canonical(line)
        ]
        why = "; ".join(problems or registry.problems) or "no installed plugin registers it"
        raise ConfigError(
            f"{PLUGINS_NAME}: {plugin.name} lists method {method!r}, "
            f"which is not registered: {why}",
            hint=f"fix {plugin.name}, or run `zslbench list` to see its problems",
        )
    dist = registry.items["method"][method].distribution
    if (
        dist is None
        or _canonical(dist) != _canonical(plugin.name)
        or _canonical(dist) == BUILTIN_DISTRIBUTION
    ):
        raise ConfigError(
            f"{PLUGINS_NAME}: {plugin.name} lists method "
            f"{method!r}, which {dist or 'no installed distribution'} "
            "provides",
            hint=f"list only methods {plugin.name} registers",
        )


#: The largest record file ``accept`` reads, in bytes. A record of the stand-ins holds its
#: per-class results and its curve: the largest on the committed board is 160 kB (synth-sun's 72
#: unseen classes), so 10 MB leaves sixty times that, and is ten times under the 100 MB above which
#: the repository host refuses a file (one such record would block every board update).
MAX_RECORD_BYTES = 10 * 2**20


@dataclass(frozen=True)
class Board:
    """What the board declares, against which ``accept`` checks a record."""

    #: a listed method -> its ``plugins.toml`` entry
    owner: dict[str, BoardPlugin]
    #: the methods zslbench itself provides: no entry may list one
    builtins: frozenset[str]
    #: the synthetic stand-ins the board runs, the only datasets it takes records of
    datasets: frozenset[str]
    #: every installed dataset's declaration (:mod:`zslbench.claims`)
    declarations: Any


def declared_board(plugins: list[BoardPlugin]) -> Board:
    """The board of ``plugins``, with zslbench's own built-in methods and stand-ins (the write job
    installs no plugin, so only zslbench's are registered there; the distribution is checked
    anyway, so that an installed plugin can declare neither)."""
    from zslbench.claims import declared_datasets
    from zslbench.registry import load_registry

    registry = load_registry()
    ours = {
        kind: {n for n, p in registry.items[kind].items() if p.distribution == BUILTIN_DISTRIBUTION}
        for kind in ("method", "dataset")
    }
    declarations = declared_datasets(registry)
    stand_ins = {
        n for n in ours["dataset"] if getattr(declarations[n], "kind", None) == "synthetic"
    }
    return Board(
        owner={m: p for p in plugins for m in p.methods},
        builtins=frozenset(ours["method"]),
        datasets=frozenset(stand_ins),
        declarations=declarations,
    )


@dataclass
class Candidate:
    """One file of the artifact, as ``accept`` checks it: read at most once, and only when the
    checks before the reading passed (:data:`REQUIREMENTS`)."""

    path: Path
    #: where it would be written on the board
    target: Path
    board: Board
    #: other files of the artifact with this file's name and other content
    twins: tuple[Path, ...] = ()

    @cached_property
    def read(self) -> Record | RecordError:
        """The record, or the error that refuses it (:func:`zslbench.results.valid_record`)."""
        from zslbench.results import valid_record

        return valid_record(self.path, self.board.declarations)

    @property
    def rec(self) -> Record:
        """The record: for the requirements after :func:`_is_a_valid_record`, which refuses a
        file that is not one."""
        return cast("Record", self.read)


# -- what accept requires: each returns "" when the file meets it, else why it is refused ------


def _is_a_record_file(c: Candidate) -> str:
    """A plain ``*.json`` file: a link could point anywhere, a FIFO would hang the job."""
    return "" if c.path.suffix == ".json" and _plain_file(c.path) else "not a record file"


def _is_within_the_size_cap(c: Candidate) -> str:
    """Sized before it is read (:data:`MAX_RECORD_BYTES` says why the cap)."""
    size = c.path.lstat().st_size
    if size <= MAX_RECORD_BYTES:
        return ""
    return f"is {size} bytes, over the {MAX_RECORD_BYTES} bytes a board record may have"


def _is_the_only_one_of_its_name(c: Candidate) -> str:
    """Two different records of one run: the artifact cannot say which is the run, so neither is
    taken (taking one would depend on the order the folder is listed in)."""
    if not c.twins:
        return ""
    return (
        f"{', '.join(map(str, c.twins))} of the artifact is also named {c.path.name} "
        "with other content: neither is taken"
    )


def _is_a_valid_record(c: Candidate) -> str:
    """Valid, intact, and its claims agree (:mod:`zslbench.claims`)."""
    from zslbench.records import Record

    return "" if isinstance(c.read, Record) else f"not a valid zslbench record: {c.read}"


def _has_an_identity(c: Candidate) -> str:
    """Without ``identity`` the claims check has no key, configuration id or run id to recompute:
    the board reads such old records, the write job takes none."""
    if c.rec.identity:
        return ""
    return "has no identity, so its key, configuration id and run id cannot be recomputed"


def _has_its_content_parts(c: Candidate) -> str:
    """Without its split's content parts and features hash, its data fingerprint cannot be
    recomputed (:func:`zslbench.claims.check` skips that claim for such records)."""
    parts, fhash = c.rec.split.get("parts"), c.rec.data.get("features_hash")
    if isinstance(parts, dict) and parts and isinstance(fhash, str) and fhash:
        return ""
    return (
        "has no split content parts or features hash, so its data fingerprint cannot be recomputed"
    )


def _identity_names_its_components(c: Candidate) -> str:
    """The identity's components are the configuration's, role by role (the key covers the
    identity's; the configuration is what the board shows)."""
    own = {role: comp.get("name") for role, comp in c.rec.config.get("components", {}).items()}
    comps = c.rec.identity.get("components")
    claimed = (
        {role: comp.get("component") for role, comp in comps.items() if isinstance(comp, dict)}
        if isinstance(comps, dict)
        else None
    )
    if claimed == own:
        return ""
    return "its identity's components are not its configuration's"


def _h_is_the_harmonic_mean(c: Candidate) -> str:
    """H is the harmonic mean of A_U and A_S: the one metric recomputable from the others."""
    m = c.rec.metrics
    u, s = m["A_U"], m["A_S"]
    h = 2 * u * s / (u + s) if u + s else 0.0
    if abs(h - m["H"]) <= 1e-9 * max(1.0, abs(h)):
        return ""
    return f"its H {m['H']!r} is not the harmonic mean of its A_U and A_S ({h!r})"


def _is_named_by_its_run_id(c: Candidate) -> str:
    if c.path.name == f"{c.rec.run_id}.json":
        return ""
    return f"is not named by its run id {c.rec.run_id!r}"


def _is_of_a_listed_method(c: Candidate) -> str:
    return (
        ""
        if c.rec.method in c.board.owner
        else (f"method {c.rec.method!r} is not listed in {PLUGINS_NAME}")
    )


def _is_not_a_built_in(c: Candidate) -> str:
    """``board run`` refuses an entry that lists a built-in; a record must not slip one in."""
    if c.rec.method not in c.board.builtins:
        return ""
    return f"method {c.rec.method!r} is built into zslbench, which the board already runs"


def _was_run_from_the_listed_distribution(c: Candidate) -> str:
    owner = c.board.owner[c.rec.method].name
    ran_from = str((c.rec.config.get("method_distribution") or {}).get("distribution"))
    return (
        ""
        if _canonical(ran_from) == _canonical(owner)
        else (f"method {c.rec.method!r} was not run from {owner}")
    )


def _is_on_a_board_stand_in(c: Candidate) -> str:
    """Only the stand-ins the board runs: a record of real or undeclared data could not be
    re-checked by anyone, whatever it claims."""
    if c.rec.dataset_kind == "synthetic" and c.rec.dataset in c.board.datasets:
        return ""
    return (
        f"ran on {c.rec.dataset!r}, not one of the board's synthetic stand-ins "
        f"({', '.join(sorted(c.board.datasets))})"
    )


def _replaces_no_other_method(c: Candidate) -> str:
    if not c.target.exists() or _method_of(c.target) == c.rec.method:
        return ""
    return f"would replace {c.target}, which is not a record of {c.rec.method!r}"


#: What ``accept`` requires of every file of the artifact, in order: the first one a file fails
#: is the reason it is refused. A new requirement is one more function here.
REQUIREMENTS: tuple[Callable[[Candidate], str], ...] = (
    _is_a_record_file,
    _is_within_the_size_cap,
    _is_the_only_one_of_its_name,
    _is_a_valid_record,
    _has_an_identity,
    _has_its_content_parts,
    _identity_names_its_components,
    _h_is_the_harmonic_mean,
    _is_named_by_its_run_id,
    _is_of_a_listed_method,
    _is_not_a_built_in,
    _was_run_from_the_listed_distribution,
    _is_on_a_board_stand_in,
    _replaces_no_other_method,
)


def refusal(candidate: Candidate) -> str:
    """Why ``candidate`` is refused: the first requirement it fails ("" when it meets them all)."""
    for requirement in REQUIREMENTS:
        why = requirement(candidate)
        if why:
            return why
    return ""


def accept(
    plugins: list[BoardPlugin], source: Path, results_dir: Path
) -> tuple[list[Path], list[str]]:
    """Take the records that the job running third-party code handed on (``source``, an
    artifact: untrusted) into ``results_dir``: (the files written, one line per file refused).

    A record is taken only when it meets every one of :data:`REQUIREMENTS`. Nothing else of the
    artifact is ever read as code or written. A refusal line names the file with its control
    characters escaped, so that a file name cannot split the log. A ``source`` that is not a
    folder, or a ``results_dir`` that cannot be written, is a ``UserError`` naming it."""
    from zslbench.files import atomic_write_text

    source, results_dir = Path(source), Path(results_dir)
    if not source.is_dir():
        raise UserError(
            f"{_one_line(str(source))}: {'not a folder' if source.exists() else 'no such folder'}",
            hint="--from names the folder the artifact of records was downloaded to",
        )
    board = declared_board(plugins)
    files = [p for p in sorted(source.rglob("*")) if p.is_symlink() or not p.is_dir()]
    by_name: dict[str, list[Path]] = {}
    for path in files:
        by_name.setdefault(path.name, []).append(path)
    written: list[Path] = []
    refused: list[str] = []
    for path in files:
        target = results_dir / path.name
        if _same_content(path, target):
            continue  # already on the board (the committed records it was run beside)
        candidate = Candidate(path, target, board, twins=_twins(path, by_name[path.name]))
        why = refusal(candidate)
        if why:
            refused.append(_one_line(f"{path}: {why}"))
            continue
        try:
            atomic_write_text(target, candidate.rec.to_json())
        except OSError as exc:
            raise UserError(
                f"{_one_line(str(results_dir))}: cannot write {_one_line(target.name)} "
                f"({exc.strerror or exc}); {len(written)} record(s) taken before it",
                hint="make the folder writable, or free space on its disk, and run accept again",
            ) from None
        written.append(target)
    return written, refused


def _one_line(text: str) -> str:
    """``text`` on one line: its control characters and line or paragraph separators escaped."""
    from zslbench.data.dataset import printable as escaped

    return escaped(text).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _twins(path: Path, namesakes: list[Path]) -> tuple[Path, ...]:
    """The other files of ``namesakes`` (the artifact's files named as ``path``) whose content
    differs from it."""
    return tuple(p for p in namesakes if p != path and not _same_content(p, path))


def _plain_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _same_content(a: Path, b: Path) -> bool:
    """Whether two plain files within the size cap hold the same bytes (larger ones are never
    read)."""
    if not (_plain_file(a) and _plain_file(b)):
        return False
    size = a.stat().st_size
    return size == b.stat().st_size <= MAX_RECORD_BYTES and a.read_bytes() == b.read_bytes()


def _method_of(target: Path) -> str | None:
    """The method of the record at ``target``; None when it is not a readable record."""
    from zslbench.records import read_record

    try:
        return read_record(target).method
    except Exception:  # noqa: BLE001 - whatever is there, it is not this method's
        return None


@click.group("board")
@click.option(
    "--dir",
    "board_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=BOARD_DIR,
    show_default=True,
    help="The board folder: its plugins.toml, records/ and rendered pages.",
)
@click.pass_context
def board(ctx: click.Context, board_dir: Path) -> None:
    """Third-party plugins on the public board (the board folder's plugins.toml)."""
    ctx.meta["zslbench.board_dir"] = board_dir


def _board_dir() -> Path:
    return Path(click.get_current_context().meta["zslbench.board_dir"])


_plugins_option = click.option(
    "--plugins",
    "plugins_file",
    type=click.Path(path_type=Path),
    default=None,
    help=f"[default: DIR/{PLUGINS_NAME}]",
)
_results_option = click.option(
    "--results-dir",
    type=click.Path(path_type=Path),
    default=None,
    help=f"[default: DIR/{THIRD_PARTY_RECORDS.as_posix()}]",
)


def _plugins(plugins_file: Path | None) -> list[BoardPlugin]:
    return load_plugins(plugins_file or _board_dir() / PLUGINS_NAME)


def _results(results_dir: Path | None) -> Path:
    return results_dir or _board_dir() / THIRD_PARTY_RECORDS


@board.command("install")
@_plugins_option
def install_cmd(plugins_file: Path | None) -> None:
    """pip install every listed plugin."""
    install(_plugins(plugins_file))


@board.command("run")
@_plugins_option
@click.option("--dataset", "datasets", default=DATASETS, show_default=True)
@click.option("--seeds", type=click.IntRange(1), default=SEEDS, show_default=True)
@_results_option
def run_cmd(plugins_file: Path | None, datasets: str, seeds: int, results_dir: Path | None) -> None:
    """Run every listed method on the stand-ins (cached runs are not repeated)."""
    failures = run(
        _plugins(plugins_file), datasets=datasets, seeds=seeds, results_dir=_results(results_dir)
    )
    for line in failures:
        click.echo(f"zslbench board: failed: {line}", err=True)
    if failures:
        raise SystemExit(1)


@board.command("accept")
@_plugins_option
@click.option(
    "--from",
    "source",
    type=click.Path(path_type=Path),
    required=True,
    help="The records handed on by the job that ran the plugins (an artifact).",
)
@_results_option
def accept_cmd(plugins_file: Path | None, source: Path, results_dir: Path | None) -> None:
    """Validate the listed plugins' records (untrusted) and take them onto the board."""
    target = _results(results_dir)
    written, refused = accept(_plugins(plugins_file), source, target)
    for line in refused:  # each already one line (accept escapes what the artifact names)
        click.echo(terminal_text(f"zslbench board: refused: {line}"), err=True)
    click.echo(f"{len(written)} record(s) taken into {target}, {len(refused)} refused")


@board.command("render")
@click.option(
    "--results-dir", type=click.Path(path_type=Path), default=None, help="[default: DIR/records]"
)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="[default: DIR]")
def render_cmd(results_dir: Path | None, out: Path | None) -> None:
    """Re-render the board (zslbench leaderboard), then check it."""
    results_dir = results_dir or _board_dir() / "records"
    out = out or _board_dir()
    render_board(results_dir, out)
    render_board(results_dir, out, check_only=True)


if __name__ == "__main__":
    # ``python -m zslbench.board accept ...`` is ``zslbench board accept ...``, through the command
    # line's one error handler (a mistake is one line, exit 2).
    from zslbench.cli import main

    main(["board", *sys.argv[1:]])
