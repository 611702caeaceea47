"""The ``zslbench`` command line.

Every user mistake ends as one line on stderr and a non-zero exit, never a traceback
(``ZSLBENCH_TRACEBACK=1`` shows one for bugs in zslbench itself).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import zslbench
from zslbench.errors import ConfigError, UserError
from zslbench.registry import Registry, load_registry

err_console = Console(stderr=True)
# Tables go to stdout; when it is a file or pipe, do not squeeze them into 80 columns.
out_console = Console(width=None if sys.stdout.isatty() else 160)


@dataclass
class State:
    plugins: tuple[str, ...] = ()
    strict: bool = False
    _registry: Registry | None = field(default=None, repr=False)

    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = load_registry(self.plugins, strict=self.strict)
            for line in self._registry.problems:
                err_console.print(f"zslbench: warning: {line}", markup=False, highlight=False, soft_wrap=True)
        return self._registry


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-p", "--plugin", "plugins", multiple=True, metavar="MODULE",
              help="Load a plugin module by import path without installing it (repeatable).")
@click.option("--strict-plugins", is_flag=True, help="Make a broken or duplicate plugin fatal.")
@click.version_option(zslbench.__version__, prog_name="zslbench")
@click.pass_context
def cli(ctx: click.Context, plugins: tuple[str, ...], strict_plugins: bool) -> None:
    """Benchmark Generalized Zero-Shot Learning methods on xlsa17 (Split V2.0)."""
    ctx.obj = State(plugins=plugins, strict=strict_plugins)


@cli.command("list")
@click.pass_obj
def list_cmd(state: State) -> None:
    """Show every dataset, method and component, with the plugin that provides it."""
    reg = state.registry()

    def dist(p: Any) -> str:
        return p.distribution or "(-p, not installed)"

    t = Table(title="Datasets", title_justify="left")
    for col in ("name", "kind", "groups", "plugin", "distribution", "description"):
        t.add_column(col)
    for name in reg.names("dataset"):
        p = reg.items["dataset"][name]
        t.add_row(name, p.obj.kind, ",".join(p.obj.groups), p.plugin, dist(p), p.obj.description)
    out_console.print(t)

    t = Table(title="Methods", title_justify="left")
    for col in ("name", "preprocessor", "embedder", "regressor", "calibrator", "paper name", "plugin",
                "distribution"):
        t.add_column(col)
    for name in reg.names("method"):
        p = reg.items["method"][name]
        m = p.obj
        t.add_row(name, m.preprocessor, m.embedder, m.regressor, m.calibrator, m.paper_name, p.plugin,
                  dist(p))
    out_console.print(t)

    t = Table(title="Components", title_justify="left")
    for col in ("kind", "name", "class", "plugin", "distribution", "summary"):
        t.add_column(col)
    for kind in ("preprocessor", "embedder", "regressor", "calibrator"):
        for name in reg.names(kind):
            p = reg.items[kind][name]
            doc = (p.obj.__doc__ or "").strip().splitlines()
            t.add_row(kind, name, p.obj.__qualname__, p.plugin, dist(p), doc[0] if doc else "")
    out_console.print(t)
    if reg.problems:
        err_console.print(f"{len(reg.problems)} plugin problem(s), see the warnings above.")


def _resolve_data_dir(value: Path | None) -> Path | None:
    try:
        from zslbench.data.xlsa17 import resolve_data_dir
    except ImportError:  # pragma: no cover - the loader ships with zslbench
        return value
    return resolve_data_dir(value)


@cli.command()
@click.option("-m", "--method", "methods", multiple=True, required=True, metavar="M[,M...]",
              help="Method name(s), comma-separated or repeated.")
@click.option("-d", "--dataset", "datasets", multiple=True, required=True, metavar="D[,D...]",
              help="Dataset name(s) or group (all = the five benchmarks, synth-all = their stand-ins).")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Folder holding <NAME>/res101.mat and att_splits.mat [env ZSLBENCH_DATA].")
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"),
              show_default=True, help="Where the JSON records go.")
@click.option("--seeds", type=click.IntRange(1), default=1, show_default=True,
              help="Repetitions per (dataset, method).")
@click.option("--base-seed", type=int, default=0, show_default=True,
              help="Base of the per-run seeds (hash of base, dataset, method, repetition).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--set", "overrides", multiple=True, metavar="COMPONENT.PARAM=VALUE",
              help="Override a hyperparameter (role or component name), e.g. embedder.latent_dim=64.")
@click.option("--force", is_flag=True, help="Re-run even when a matching record exists.")
@click.option("--allow-nonstandard-split", is_flag=True,
              help="Run a split that fails the Split V2.0 checks; its records are marked non-comparable.")
@click.pass_obj
def run(state: State, methods: tuple[str, ...], datasets: tuple[str, ...], data_dir: Path | None,
        results_dir: Path, seeds: int, base_seed: int, device: str, overrides: tuple[str, ...],
        force: bool, allow_nonstandard_split: bool) -> None:
    """Run methods on datasets and write one record per run."""
    from zslbench import provenance
    from zslbench.runner import GridRequest, expand_datasets, parse_overrides, run_grid, split_names

    reg = state.registry()
    method_names = split_names(methods)
    for name in method_names:
        reg.get("method", name)
    dataset_names = expand_datasets(split_names(datasets), reg)
    parsed = parse_overrides(overrides)
    resolved_dir = _resolve_data_dir(data_dir)

    missing: list[str] = []
    for name in dataset_names:
        spec = reg.items["dataset"][name].obj
        if spec.missing is not None:
            missing += spec.missing(resolved_dir)
    if missing:
        for line in missing:
            err_console.print(f"zslbench: error: {line}", markup=False, highlight=False, soft_wrap=True)
        raise SystemExit(2)

    dev = provenance.resolve_device(device)
    request = GridRequest(methods=method_names, datasets=dataset_names, results_dir=results_dir,
                          data_dir=resolved_dir, seeds=seeds, base_seed=base_seed, device=dev,
                          overrides=parsed, force=force, allow_nonstandard=allow_nonstandard_split)

    def load(name: str) -> Any:
        spec = reg.items["dataset"][name].obj
        return spec.load(resolved_dir, allow_nonstandard=allow_nonstandard_split)

    total = len(dataset_names) * len(method_names) * seeds
    outcomes = []
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err_console, transient=False,
                        disable=not err_console.is_terminal and not os.environ.get("ZSLBENCH_PROGRESS"))
    current: dict[str, Any] = {}
    try:
        with progress:
            task = progress.add_task("starting", total=total)

            def on_event(kind: str, info: dict[str, Any]) -> None:
                current.update(info)
                if kind == "dataset":
                    current.pop("stage", None)
                    desc = f"loading {info['dataset']}"
                elif kind == "run":
                    current.pop("stage", None)
                    desc = f"{current['dataset']} · {current['method']} · r{current['repetition']}"
                else:
                    desc = (f"{current.get('dataset')} · {current.get('method')} · "
                            f"r{current.get('repetition')} · {info['stage']}")
                progress.update(task, description=desc)

            for outcome in run_grid(request, reg, load, on_event=on_event):
                outcomes.append(outcome)
                progress.advance(task)
                if outcome.status == "failed":
                    progress.console.print(f"zslbench: error: {outcome.error}", markup=False,
                                           highlight=False, soft_wrap=True)
    except KeyboardInterrupt:
        done = sum(o.status in ("ran", "cached") for o in outcomes)
        err_console.print(f"zslbench: interrupted after {done} complete run(s); every record on disk is "
                          f"complete — re-run the same command to finish the rest.", markup=False,
                          highlight=False, soft_wrap=True)
        raise SystemExit(130) from None

    _print_results(outcomes, dev)
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        raise SystemExit(1)


def _print_results(outcomes: list[Any], device: str) -> None:
    t = Table(title=f"Results (percent; train seconds on {device})", title_justify="left")
    for col in ("dataset", "method", "seed", "A_T", "A_U", "A_S", "H", "AUSUC", "train s", "status"):
        t.add_column(col, justify="right" if col not in ("dataset", "method", "status") else "left")
    for o in outcomes:
        if o.record is None:
            t.add_row(o.dataset, o.method, str(o.seed), *["-"] * 6, o.status)
            continue
        m = o.record["metrics"]
        t.add_row(o.dataset, o.method, str(o.seed), *(f"{m[k]:.1f}" for k in ("A_T", "A_U", "A_S", "H", "AUSUC")),
                  f"{o.record['timings']['train']:.1f}", o.status)
    out_console.print(t)
    ran = [o for o in outcomes if o.path is not None]
    if ran:
        out_console.print(f"{len(ran)} record(s) in {ran[0].path.parent}", markup=False, highlight=False, soft_wrap=True)


def _add_optional_commands() -> None:
    """Commands that live with their subsystem (data, leaderboard)."""
    try:
        from zslbench.data.cli import data as data_group

        cli.add_command(data_group)
    except ImportError:
        pass
    try:
        from zslbench.leaderboard.cli import leaderboard

        cli.add_command(leaderboard)
    except ImportError:
        pass


_add_optional_commands()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn user errors into one line and an exit code."""
    try:
        rv = cli.main(args=argv, prog_name="zslbench", standalone_mode=False)
    except click.exceptions.Abort:
        err_console.print("zslbench: interrupted", markup=False, highlight=False, soft_wrap=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except UserError as exc:
        err_console.print(f"zslbench: error: {exc.one_line()}", markup=False, highlight=False,
                          soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("zslbench: interrupted", markup=False, highlight=False, soft_wrap=True)
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("ZSLBENCH_TRACEBACK"):
            raise
        err_console.print(f"zslbench: internal error: {type(exc).__name__}: {exc} (this is a bug in "
                          f"zslbench or a plugin; re-run with ZSLBENCH_TRACEBACK=1 for the traceback)",
                          markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)
    if isinstance(rv, int) and rv:
        sys.exit(rv)


__all__ = ["cli", "main", "ConfigError"]
