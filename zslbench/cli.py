"""The ``zslbench`` command line.

Every user mistake ends as one line on stderr and a non-zero exit, never a traceback: ``main`` is
the one error handler (``ZSLBENCH_TRACEBACK=1`` shows a traceback for bugs in zslbench or a
plugin). Plugins add subcommands through the ``zslbench_commands`` hook (the xlsa17 plugin adds
``zslbench data``).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

import zslbench
from zslbench import threads
from zslbench.config import EXECUTORS
from zslbench.console import (
    Reporter,
    err_console,
    print_results,
    say_error,
    terminal_text,
)
from zslbench.data.dataset import DATA_ENV
from zslbench.errors import UserError, blamed
from zslbench.registry import Registry, load_registry
from zslbench.request import missing_data_line

_registries: dict[tuple[tuple[str, ...], bool, bool], Registry] = {}


def registry_for(plugins: tuple[str, ...], strict: bool, commands_only: bool = False) -> Registry:
    """The registry for these ``-p`` modules, loaded once per process (its warnings once too: a
    broken plugin found by the commands-only registry is not named again by the full one)."""
    key = (tuple(plugins), bool(strict), commands_only)
    if key not in _registries:
        reg = load_registry(plugins, strict=strict, commands_only=commands_only)
        said = {line for r in _registries.values() for line in r.problems}
        for line in reg.problems:
            if line not in said:
                say_error(line, prefix="zslbench: warning: ")
        _registries[key] = reg
    return _registries[key]


@dataclass
class State:
    plugins: tuple[str, ...] = ()
    strict: bool = False

    def registry(self) -> Registry:
        return registry_for(self.plugins, self.strict)


def _global_options(args: list[str]) -> tuple[tuple[str, ...], bool]:
    """``-p`` modules and ``--strict-plugins`` among the options before the subcommand."""
    plugins: list[str] = []
    strict = False
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg in ("-p", "--plugin") and i + 1 < len(args):
            plugins.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("--plugin="):
            plugins.append(arg.split("=", 1)[1])
        elif arg == "--strict-plugins":
            strict = True
        i += 1
    return tuple(plugins), strict


def _add_plugin_commands(args: list[str]) -> None:
    """Let plugins add subcommands (``zslbench_commands``) before click parses the line."""
    if any(a in ("--version",) for a in args[:1]):
        return
    # Only the plugins that may add a command (every third-party one, and of the built-ins those
    # that do): the built-ins that add none import torch, seconds that `run --help` need not
    # wait; a command loads the whole registry when it needs it (State.registry).
    reg = registry_for(*_global_options(args), commands_only=True)
    cli.commands = dict(_CORE_COMMANDS)  # an earlier main() here (a test's) added others
    reg.add_commands(cli)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-p",
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE",
    help="Load a plugin module by import path without installing it (repeatable).",
)
@click.option("--strict-plugins", is_flag=True, help="Make a broken or duplicate plugin fatal.")
@click.version_option(zslbench.__version__, prog_name="zslbench")
@click.pass_context
def cli(ctx: click.Context, plugins: tuple[str, ...], strict_plugins: bool) -> None:
    """Benchmark Generalized Zero-Shot Learning methods on xlsa17 (Split V2.0)."""
    ctx.obj = State(plugins=plugins, strict=strict_plugins)


@cli.command()
@click.option(
    "-m",
    "--method",
    "methods",
    multiple=True,
    metavar="M[,M...]",
    help="Method name(s), comma-separated or repeated.",
)
@click.option(
    "-d",
    "--dataset",
    "datasets",
    multiple=True,
    metavar="D[,D...]",
    help="Dataset name(s), group (all = the five benchmarks, synth-all = their "
    "stand-ins) or a file a plugin reads (mine.npz).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="A TOML run configuration (configs/*.toml); options given here override it.",
)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help=f"Folder of the datasets' files [env {DATA_ENV}].",
)
@click.option(
    "--results-dir",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Where the JSON records go.",
)
@click.option(
    "--seeds",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Repetitions per (dataset, method, configuration).",
)
@click.option(
    "--base-seed",
    type=int,
    default=0,
    show_default=True,
    help="Base of the per-run seeds (hash of base, dataset and repetition: every method gets the same seeds, so runs pair by seed).",
)
@click.option(
    "--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="COMPONENT.PARAM=VALUE",
    help="Set a hyperparameter (role or component name), e.g. embedder.latent_dim=64, "
    "or swap a component: preprocessor=none.",
)
@click.option(
    "--sweep",
    "sweeps",
    multiple=True,
    metavar="COMPONENT.PARAM=V1,V2,...",
    help="Run one configuration per value (repeatable: the Cartesian product), e.g. "
    "embedder.margin=1,2,4.",
)
@click.option(
    "--executor",
    type=click.Choice(list(EXECUTORS)),
    default="local",
    show_default=True,
    help="local: one run after another here; ray: one Ray task per run (pip install -e '.[ray]').",
)
@click.option(
    "--address",
    default=None,
    metavar="ADDR",
    help="With --executor ray: join this Ray cluster (e.g. auto, or HOST:6379) instead "
    "of starting a local one.",
)
@click.option(
    "--cpus-per-run",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="With --executor ray: CPUs each run asks for [default: all of this machine's "
    "cores when local, 1 on a cluster].",
)
@click.option(
    "--gpus-per-run",
    type=click.FloatRange(min=0),
    default=None,
    help="With --executor ray: GPUs (or a fraction) each run asks for, e.g. 0.25 "
    "[default: 1 with --device cuda, else 0].",
)
@click.option("--force", is_flag=True, help="Re-run even when a matching record exists.")
@click.option(
    "--recheck",
    is_flag=True,
    help="Re-run the cached runs here without replacing their records, and keep how far "
    "each moved in <run_id>.rechecks beside it (bit-reproducible across machines?).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Plan only: list every run as cached or to run (with why, and an ETA from "
    "earlier records on this device model); nothing is trained and no record is written "
    "(loading real data may build its cache).",
)
@click.option(
    "--allow-nonstandard-split",
    is_flag=True,
    help="Run data that fails the split policy or is not the official benchmark; its "
    "records are marked non-standard.",
)
@click.pass_context
def run(
    ctx: click.Context,
    methods: tuple[str, ...],
    datasets: tuple[str, ...],
    config_file: Path | None,
    data_dir: Path | None,
    results_dir: Path,
    seeds: int,
    base_seed: int,
    device: str,
    overrides: tuple[str, ...],
    sweeps: tuple[str, ...],
    executor: str,
    address: str | None,
    cpus_per_run: float | None,
    gpus_per_run: float | None,
    force: bool,
    recheck: bool,
    dry_run: bool,
    allow_nonstandard_split: bool,
) -> None:
    """Run methods on datasets and write one record per run."""
    from zslbench import api

    state: State = ctx.obj
    reg = state.registry()

    def given(name: str, value: Any) -> Any:
        """The option's value when the user gave it, else None (the config file's or the
        default applies: ``api.grid_request``)."""
        source = ctx.get_parameter_source(name)
        return (
            value
            if source
            in (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)
            else None
        )

    try:
        request, executor = api.grid_request(
            reg,
            methods=methods or None,
            datasets=datasets or None,
            config=config_file,
            seeds=given("seeds", seeds),
            base_seed=given("base_seed", base_seed),
            device=given("device", device),
            results_dir=given("results_dir", results_dir),
            data_dir=given("data_dir", data_dir),
            sets=overrides,
            sweeps=sweeps,
            executor=given("executor", executor),
            allow_nonstandard_split=given("allow_nonstandard_split", allow_nonstandard_split),
            force=force,
            recheck=recheck,
        )
    except api.MissingData as exc:
        say_error(missing_data_line(exc.lines))
        raise SystemExit(2) from None
    dev = request.device
    if dry_run:
        from zslbench import provenance
        from zslbench.planning import dry_run_lines, plan_grid

        planned = plan_grid(request, reg, api.loader(reg, request.data_dir))
        for line in dry_run_lines(planned, str(provenance.device_info(dev)["name"])):
            click.echo(terminal_text(line))  # a refused record's reason may quote its content
        return
    runner_exec = api.make_executor(
        executor,
        dev,
        address=address,
        cpus_per_run=cpus_per_run,
        gpus_per_run=gpus_per_run,
        plugins=state.plugins,
    )
    n_configs = 1
    for values in request.sweeps.values():
        n_configs *= len(values)
    total = len(request.datasets) * len(request.methods) * request.seeds * n_configs
    outcomes: list[Any] = []
    reporter = Reporter(err_console, total)
    try:
        with reporter:
            for outcome in api.outcomes(request, reg, runner_exec, on_event=reporter.event):
                outcomes.append(outcome)
                reporter.finished(outcome)
    except KeyboardInterrupt:
        ran = sum(o.status == "ran" for o in outcomes)
        cached = sum(o.status == "cached" for o in outcomes)
        done = f"{ran} run(s)" + (f" (and {cached} found cached)" if cached else "")
        say_error(
            f"interrupted after {done}; every record on disk is complete — "
            "re-run the same command to finish the rest.",
            prefix="zslbench: ",
        )
        raise SystemExit(130) from None

    print_results(outcomes, dev)
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        # A dataset that could not be loaded fails its runs without a note: name only notes written.
        noted = sum(o.note is not None for o in failed)
        where = f"{request.results_dir}/<run_id>.failed"
        where = (
            f", also in {where}"
            if noted == len(failed)
            else (f"; {noted} of them also in {where}" if noted else "")
        )
        say_error(
            f"{len(failed)} of {len(outcomes)} run(s) failed (reasons above, one line each"
            f"{where}); every other run is recorded — "
            "fix the cause and re-run the same command: recorded runs are cached.",
            prefix="zslbench: ",
        )
        raise SystemExit(1)


def _add_core_commands() -> None:
    from zslbench.board import board
    from zslbench.compare import compare
    from zslbench.leaderboard.cli import leaderboard
    from zslbench.listing import list_cmd
    from zslbench.prune_command import prune

    leaderboard.add_command(prune)  # an operation on the results folder, listed with the board

    cli.add_command(list_cmd)
    cli.add_command(leaderboard)
    cli.add_command(compare)
    cli.add_command(board)


_add_core_commands()
#: The commands zslbench itself defines: no plugin may replace one.
_CORE_COMMANDS = dict(cli.commands)


INTERRUPTED = "interrupted; re-run the same command to continue"


class _OneLineWarnings(logging.Handler):
    """Warnings that zslbench or a plugin logs (``logging.getLogger("zslbench...")``) reach the
    user as ``zslbench: warning: ...`` lines, like every other warning, rather than through
    Python's unformatted last-resort handler."""

    def emit(self, record: logging.LogRecord) -> None:
        say_error(record.getMessage(), prefix="zslbench: warning: ")


def _route_warnings() -> None:
    logger = logging.getLogger("zslbench")
    if not any(isinstance(h, _OneLineWarnings) for h in logger.handlers):
        handler = _OneLineWarnings(level=logging.WARNING)
        logger.addHandler(handler)


def _terminate_as_interrupt() -> None:
    """SIGTERM (``kill``, a cluster's time limit) unwinds like Ctrl-C, so that what is being
    written is cleaned up and the same one-line message is printed; only the main thread can set
    it, so an embedding application keeps its own handler."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):  # pragma: no cover - not the main interpreter
        pass


def main(argv: list[str] | None = None) -> None:
    """Entry point, and the one error handler: a user's mistake is one line and a non-zero exit,
    never a traceback (``ZSLBENCH_TRACEBACK=1`` shows one for bugs in zslbench or a plugin)."""
    args = sys.argv[1:] if argv is None else list(argv)
    threads.apply_defaults()  # before any plugin imports torch (zslbench.threads says why)
    _route_warnings()
    _terminate_as_interrupt()
    try:
        _add_plugin_commands(args)
        rv = cli.main(args=args, prog_name="zslbench", standalone_mode=False)
    except click.exceptions.Abort:
        say_error(INTERRUPTED, prefix="zslbench: ")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except UserError as exc:
        say_error(exc.one_line())
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        say_error(INTERRUPTED, prefix="zslbench: ")
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("ZSLBENCH_TRACEBACK"):
            raise
        where = blamed(exc)
        say_error(
            f"internal error: {(where + ': ') if where else ''}{type(exc).__name__}: {exc} "
            "(this is a bug in zslbench or a plugin; re-run with ZSLBENCH_TRACEBACK=1 for "
            "the traceback)"
        )
        sys.exit(1)
    if isinstance(rv, int) and rv:
        sys.exit(rv)


__all__ = ["cli", "main"]
