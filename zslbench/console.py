"""What the command line prints: progress while a grid runs, a line per finished run, the results.

In a terminal, two live lines: the grid (runs done of all, elapsed) and the current run, named by
dataset, method and repetition, with the protocol's phase (validation fit, search, calibration,
final fit, evaluation), the component stage (``embedder_fit``) and its steps with an ETA
(``episodes 120/500``), so that slow can be told from hung. In a pipe or CI (stderr not a
terminal): plain lines, no bars - the start of each run, a step report at most every
``PLAIN_STEP_SECONDS`` seconds, and a line per finished run. Either way a finished run prints one
line with its H, train seconds and the record's path as soon as it ends.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

err_console = Console(stderr=True, highlight=False)
# Tables go to stdout; when it is a file or pipe, do not squeeze them into 80 columns.
out_console = Console(width=None if sys.stdout.isatty() else 160)
#: Result tables: at most 80 columns wide, in a terminal or a pipe.
TABLE_WIDTH = 80
PLAIN_STEP_SECONDS = 10.0
PHASES = {
    "preprocess": "preprocessing",
    "search": "search",
    "fit_validation": "validation fit",
    "calibration": "calibration",
    "fit_final": "final fit",
    "evaluation": "evaluation",
}


#: A terminal escape sequence: CSI (``ESC [ ... m``), OSC (``ESC ] 0;title BEL``), or a two-byte
#: escape; C1 control codes (``\x9b``) stand for ``ESC [``.
_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

#: The option every command that reads records takes (``compare``, ``leaderboard``): defined
#: here, below both, so that neither imports the other for it.
RESULTS_DIR = click.option(
    "--results-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("results"),
    show_default=True,
    help="Directory of result records (searched recursively).",
)


def terminal_text(text: str) -> str:
    """``text`` without terminal escape sequences, its other control characters shown escaped
    (``\\x07``): what a record, a plugin or a file holds can never set a terminal's title, colour
    or cursor, in a terminal or in a log read later with ``cat``. Newlines and tabs stay."""
    text = _ESCAPE.sub("", text)
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def echo(text: str, err: bool = False) -> None:
    """``click.echo`` of text that may quote a record's fields: never an escape sequence."""
    click.echo(terminal_text(text), err=err)


def say_error(text: str, prefix: str = "zslbench: error: ") -> None:
    """One line on stderr, never wrapped, never interpreted as markup."""
    err_console.print(
        terminal_text(f"{prefix}{text}"), markup=False, highlight=False, soft_wrap=True
    )


def say(text: str) -> None:
    err_console.print(terminal_text(text), markup=False, highlight=False, soft_wrap=True)


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds} s"


class Reporter:
    """Receives the runner's events (``run_grid(on_event=...)``) and shows them."""

    def __init__(self, console: Console, total: int, clock: Any = time.perf_counter) -> None:
        self.console = console
        self.clock = clock
        self.total = total
        self.live = console.is_terminal or bool(os.environ.get("ZSLBENCH_PROGRESS"))
        self.where: dict[str, Any] = {}
        self.phase = ""
        self.stage = ""
        self.step: dict[str, Any] = {}
        self.candidate = ""
        self.step_start = 0.0
        self.last_plain = 0.0
        self.done = 0
        self.progress: Progress | None = None
        #: Failure reasons shown in full, without their run's seed -> the seed shown with it.
        self.failures: dict[str, int] = {}

    # -- context ---------------------------------------------------------------------------------
    def __enter__(self) -> Reporter:
        if self.live:
            # The description goes last: its length changes with every step, and before the bar
            # it pushed the bar sideways.
            self.progress = Progress(
                BarColumn(bar_width=20),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=self.console,
                transient=False,
            )
            self.progress.__enter__()
            self.grid_task = self.progress.add_task("runs", total=self.total)
            self.run_task = self.progress.add_task("starting", total=None)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.progress is not None:
            self.progress.__exit__(kind, exc, tb)

    # -- events ----------------------------------------------------------------------------------
    def _run_name(self) -> str:
        w = self.where
        sweep = "".join(f" {k.rsplit('.', 1)[-1]}={v}" for k, v in (w.get("sweep") or {}).items())
        return f"{w.get('dataset')} · {w.get('method')}{sweep} · r{w.get('repetition')}"

    def _describe(self) -> str:
        parts = [self._run_name()]
        if self.phase:
            parts.append(PHASES.get(self.phase, self.phase))
        if self.candidate:
            parts.append(self.candidate)
        if self.stage:
            parts.append(self.stage)
        if self.step:
            done, total = self.step["done"], self.step["total"]
            text = f"{self.step['label']} {done}/{total}"
            elapsed = self.clock() - self.step_start
            if 0 < done < total:
                text += f" ETA {_fmt_eta(elapsed / done * (total - done))}"
            parts.append(text)
        return " · ".join(parts)

    def event(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "dataset":
            self.where = {"dataset": info["dataset"]}
            self._show(f"loading {info['dataset']}", plain=True)
            return
        if kind == "run":
            self.where = dict(info)
            self.phase = self.stage = self.candidate = ""
            self.step = {}
            self._show(self._describe(), plain=True, prefix=f"run {self.done + 1}/{self.total}: ")
            return
        if kind == "phase":
            self.phase, self.stage, self.step = info["phase"], "", {}
            self.candidate = ""
        elif kind == "candidate":
            of = f"/{info['total']}" if info.get("total") else ""
            params = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in info["params"].items())
            self.candidate, self.stage, self.step = (
                f"candidate {info['done']}{of}: {params}",
                "",
                {},
            )
        elif kind == "stage_start":
            self.stage, self.step = info["stage"], {}
        elif kind == "stage_end":
            self.stage, self.step = "", {}
        elif kind == "step":
            if not self.step or self.step.get("label") != info["label"] or info["done"] == 0:
                self.step_start = self.clock()
            self.step = dict(info)
            now = self.clock()
            if not self.live and now - self.last_plain >= PLAIN_STEP_SECONDS and info["done"]:
                self.last_plain = now
                say("  " + self._describe())
        elif kind == "warning":
            self._print(f"zslbench: warning: {info['message']}")
            return
        elif kind == "info":
            self._print(info["message"])
            return
        if self.progress is not None:
            self.progress.update(self.run_task, description=self._describe())

    def _show(self, text: str, plain: bool = False, prefix: str = "") -> None:
        if self.progress is not None:
            self.progress.update(self.run_task, description=terminal_text(text))
        elif plain:
            self.last_plain = self.clock()
            say(prefix + text)

    def _print(self, text: str) -> None:
        if self.progress is not None:
            self.progress.console.print(
                terminal_text(text), markup=False, highlight=False, soft_wrap=True
            )
        else:
            say(text)

    def finished(self, outcome: Any) -> None:
        """One line per finished run, as soon as it ends."""
        self.done += 1
        if self.progress is not None:
            self.progress.advance(self.grid_task)
        if outcome.status == "failed":
            # A data problem fails every seed alike: its reason in full once, then a short line.
            error = str(outcome.error)
            seed = f" (seed {outcome.seed})"
            key = error.replace(seed, "", 1)
            if key in self.failures and seed in error:
                head = error.split(seed, 1)[0]
                self._print(
                    f"zslbench: error: {head}{seed}: failed as seed {self.failures[key]} did "
                    "(the same reason, above)"
                )
            else:
                self.failures.setdefault(key, outcome.seed)
                self._print(f"zslbench: error: {error}")
            return
        rec = outcome.record
        name = (
            f"{outcome.dataset} · {run_label(outcome.method, rec.config)} · r{outcome.repetition}"
        )
        flag = "" if rec.load.get("oversubscribed") is not True else " (machine oversubscribed)"
        verb = {"cached": "cached", "rechecked": "rechecked"}.get(outcome.status, "done")
        self._print(
            f"{verb} {name}: H {rec.metrics['H']:.1f}, train "
            f"{rec.timings['train']:.1f} s{flag} -> {outcome.path}"
        )


COLUMNS = ("dataset", "method", "r", "A_T", "A_U", "A_S", "H", "AUSUC", "train s", "status")


def run_label(method: str, config: dict[str, Any]) -> str:
    """A run's method as a results line names it: with its swept values (``margin=0.25``) and
    its other ``--set`` values (``gp.optimizer=adam``), so that configurations read apart."""
    sweep = config.get("sweep") or {}
    overrides = {k: v for k, v in (config.get("overrides") or {}).items() if k not in sweep}
    return (
        method
        + "".join(f" {k.rsplit('.', 1)[-1]}={v}" for k, v in sweep.items())
        + "".join(f" {k}={v}" for k, v in sorted(overrides.items()))
    )


def results_lines(outcomes: list[Any], width: int = TABLE_WIDTH) -> list[str]:
    """The results table as plain lines of at most ``width`` characters.

    Columns are as wide as their widest value, one space apart, so a value is never cut; when a
    long method label (a sweep's values) would overflow, it continues on the next line, aligned.
    """
    rows = []
    for o in outcomes:
        if o.record is None:
            rows.append([o.dataset, o.method, str(o.repetition), *["-"] * 6, o.status])
            continue
        m = o.record.metrics
        label = run_label(o.method, o.record.config)
        rows.append(
            [
                o.dataset,
                label,
                str(o.repetition),
                *(f"{m[k]:.1f}" for k in ("A_T", "A_U", "A_S", "H", "AUSUC")),
                f"{o.record.timings['train']:.1f}",
                o.status,
            ]
        )
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(COLUMNS)]
    room = width - (sum(widths) - widths[1]) - (len(COLUMNS) - 1)
    widths[1] = max(len(COLUMNS[1]), min(widths[1], room))

    def fmt(cells: list[str]) -> list[str]:
        out = []
        for n, chunk in enumerate(_wrapped(cells[1], widths[1])):
            first = n == 0
            parts = [(c if first or i == 1 else "") for i, c in enumerate(cells)]
            parts[1] = chunk
            out.append(
                " ".join(
                    p.ljust(w) if i < 2 or i == len(COLUMNS) - 1 else p.rjust(w)
                    for i, (p, w) in enumerate(zip(parts, widths, strict=True))
                ).rstrip()
            )
        return out

    lines = fmt(list(COLUMNS))
    lines.append("-" * min(width, sum(widths) + len(COLUMNS) - 1))
    for r in rows:
        lines += fmt(r)
    return lines


def _wrapped(label: str, width: int) -> list[str]:
    """A run label in lines of at most ``width`` characters, broken between its space-separated
    settings (``krr.width=1.0`` stays whole); only a setting wider than the column is cut."""
    lines: list[str] = []
    for word in label.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
            continue
        while len(word) > width:
            lines.append(word[:width])
            word = word[width:]
        lines.append(word)
    return lines or [""]


def print_results(outcomes: list[Any], device: str, console: Console | None = None) -> None:
    """The results table (at most 80 columns; values are never cut) and where the records are."""
    console = console or Console(highlight=False)
    width = min(TABLE_WIDTH, console.width) if console.is_terminal else TABLE_WIDTH
    console.print(f"Results (percent; train seconds on {device})", markup=False, highlight=False)
    for line in results_lines(outcomes, width):
        console.print(terminal_text(line), markup=False, highlight=False, soft_wrap=True)
    paths = [o.path for o in outcomes if o.path is not None]
    if paths:
        console.print(
            terminal_text(f"{len(paths)} record(s) in {paths[0].parent}"),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def compact_value(value: Any) -> str:
    """A hyperparameter value as a person reads it: ``0.0316``, not ``0.03162277660168379``."""
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(compact_value(v) for v in value) + "]"
    return repr(value) if isinstance(value, str) else str(value)


def grid_text(values: Any, ends: int = 2) -> str:
    """A search grid in a line: ``[0.01, 0.0316, …, 3.16e+06, 1e+07] (19 values)``."""
    values = list(values)
    shown = [compact_value(v) for v in values]
    if len(shown) > 2 * ends + 1:
        shown = [*shown[:ends], "…", *shown[-ends:]]
        return f"[{', '.join(shown)}] ({len(values)} values)"
    return f"[{', '.join(shown)}]"
