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
:data:`zslbench.leaderboard.admission.REQUIREMENTS`: a plain file under a size cap, the only record of its
run in the artifact, valid with claims that agree (:mod:`zslbench.records.validation`), with an identity and content parts so that
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
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from zslbench.config import tomllib
from zslbench.console import terminal_text
from zslbench.errors import ConfigError, UserError
from zslbench.leaderboard.cli import render_board
from zslbench.leaderboard.manifest import PLUGINS_NAME
from zslbench.registry import BUILTIN_DISTRIBUTION, canonical_distribution

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
        if any(canonical_distribution(p.name) == canonical_distribution(plugin.name) for p in out):
            raise ConfigError(
                f"{path}: plugin #{i + 1}: {plugin.name} is listed twice", hint="keep one entry"
            )
        out.append(plugin)
    return out


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        why, hint = "no such file", "see zslbench/board.py for its format"
    except UnicodeDecodeError as exc:
        why, hint = f"not UTF-8 text (byte {exc.start})", "save it as UTF-8"
    except OSError as exc:
        why, hint = (
            f"cannot be read ({exc.strerror or exc})",
            "point --plugins at the plugins.toml file",
        )
    except tomllib.TOMLDecodeError as exc:
        why, hint = f"not valid TOML ({exc})", "fix the line it names"
    raise ConfigError(f"{path}: {why}", hint=hint)


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
    if not (
        isinstance(methods, list) and methods and all(isinstance(m, str) and m for m in methods)
    ):
        raise ConfigError(
            f"{where} ({name}): methods must list method names", hint='e.g. methods = ["my-eszsl"]'
        )
    if canonical_distribution(name) == BUILTIN_DISTRIBUTION:
        raise ConfigError(
            f"{where}: {name} is zslbench itself, whose built-in methods the board already runs",
            hint="list only third-party distributions",
        )
    return BoardPlugin(name, req.strip(), tuple(methods))


def install(plugins: list[BoardPlugin]) -> None:
    """``pip install`` every requirement into this environment (one pip call)."""
    requirements = [p.requirement for p in plugins]
    cmd = [sys.executable, "-m", "pip", "install", *requirements]
    if requirements and subprocess.run(cmd, check=False).returncode != 0:
        raise UserError(
            f"pip could not install the plugins of the board ({', '.join(requirements)})",
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
    for plugin, method in ((p, m) for p in plugins for m in p.methods):
        _check_provides(registry, plugin, method)  # every entry, before anything runs
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
        name = canonical_distribution(plugin.name)
        problems = [
            p for p in registry.problems if repr(method) in p or name in canonical_distribution(p)
        ]
        why = "; ".join(problems or registry.problems) or "no installed plugin registers it"
        raise ConfigError(
            f"{PLUGINS_NAME}: {plugin.name} lists method {method!r}, "
            f"which is not registered: {why}",
            hint=f"fix {plugin.name}, or run `zslbench list` to see its problems",
        )
    dist = registry.items["method"][method].distribution
    ran_from = canonical_distribution(dist or BUILTIN_DISTRIBUTION)  # None: not installed
    if ran_from == BUILTIN_DISTRIBUTION or ran_from != canonical_distribution(plugin.name):
        raise ConfigError(
            f"{PLUGINS_NAME}: {plugin.name} lists method {method!r}, which "
            f"{dist or 'no installed distribution'} provides",
            hint=f"list only methods {plugin.name} registers",
        )


def accept(
    plugins: list[BoardPlugin], source: Path, results_dir: Path
) -> tuple[list[Path], list[str]]:
    """Take the records that the job running third-party code handed on (``source``, an
    artifact: untrusted) into ``results_dir``: (the files written, one line per file refused).
    What a record must be is :data:`zslbench.leaderboard.admission.REQUIREMENTS`."""
    from zslbench.leaderboard.admission import admit

    return admit({m: p.name for p in plugins for m in p.methods}, source, results_dir)


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


def _in_board(given: Path | None, default: Path | str) -> Path:
    """``given``, else ``default`` inside the board folder (``zslbench board --dir``)."""
    return given or Path(click.get_current_context().meta["zslbench.board_dir"]) / default


_PATH = click.Path(path_type=Path)
_plugins_option = click.option(
    "--plugins", "plugins_file", type=_PATH, help=f"[default: DIR/{PLUGINS_NAME}]"
)
_results_option = click.option(
    "--results-dir", type=_PATH, help=f"[default: DIR/{THIRD_PARTY_RECORDS.as_posix()}]"
)


def _plugins(plugins_file: Path | None) -> list[BoardPlugin]:
    return load_plugins(_in_board(plugins_file, PLUGINS_NAME))


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
    target = _in_board(results_dir, THIRD_PARTY_RECORDS)
    failures = run(_plugins(plugins_file), datasets=datasets, seeds=seeds, results_dir=target)
    for line in failures:
        click.echo(f"zslbench board: failed: {line}", err=True)
    if failures:
        raise SystemExit(1)


@board.command("accept")
@_plugins_option
@click.option(
    "--from",
    "source",
    type=_PATH,
    required=True,
    help="The records handed on by the job that ran the plugins (an artifact).",
)
@_results_option
def accept_cmd(plugins_file: Path | None, source: Path, results_dir: Path | None) -> None:
    """Validate the listed plugins' records (untrusted) and take them onto the board."""
    target = _in_board(results_dir, THIRD_PARTY_RECORDS)
    written, refused = accept(_plugins(plugins_file), source, target)
    for line in refused:  # each already one line (accept escapes what the artifact names)
        click.echo(terminal_text(f"zslbench board: refused: {line}"), err=True)
    click.echo(f"{len(written)} record(s) taken into {target}, {len(refused)} refused")


@board.command("render")
@click.option("--results-dir", type=_PATH, help="[default: DIR/records]")
@click.option("--out", type=_PATH, help="[default: DIR]")
def render_cmd(results_dir: Path | None, out: Path | None) -> None:
    """Re-render the board (zslbench leaderboard), then check it."""
    results_dir, out = _in_board(results_dir, "records"), _in_board(out, "")
    render_board(results_dir, out)
    render_board(results_dir, out, check=True)


if __name__ == "__main__":
    # The board's commands are ``zslbench board ...``; this module is imported by the command line,
    # which it therefore cannot import. Running it says so, rather than exiting 0 having done nothing.
    from zslbench.console import say_error

    say_error(
        "python -m zslbench.board runs no command — use `python -m zslbench board "
        f"{shlex.join(sys.argv[1:]) or '...'}` (or `zslbench board ...`)"
    )
    sys.exit(2)
