"""How runs execute: failure isolation shared by every executor, and the Ray executor.

A run fails alone, whatever failed in it: its data (the ``clip``
preprocessor refusing negative features), a component, the model, or plugin code calling
``sys.exit(0)`` or raising ``KeyboardInterrupt``. :func:`failure_reason` turns any of these into the
one line that :func:`write_failure_note` keeps in ``<run_id>.failed`` next to where the record would
go; the grid goes on and exits non-zero at the end. Only a real Ctrl-C (SIGINT) or ``kill``
(SIGTERM, which the CLI turns into ``KeyboardInterrupt``) stops a grid: :func:`user_interrupts`
counts those signals, so :func:`zslbench.runner.execute` tells them from a ``KeyboardInterrupt``
that plugin code raised itself.

The Ray executor: one Ray task per run, for grids on many cores, GPUs or machines.

Optional (``pip install -e ".[ray]"``); the default local executor
(``zslbench.runner.LocalExecutor``) never imports Ray. Why Ray: it schedules by declared
resources, so a run can take a fraction of a GPU (``--gpus-per-run 0.25``) and four small runs
share one device; the same code runs on a laptop (a local cluster started here) and on a SLURM
allocation (``ray start`` on the nodes, then ``--address``); and its object store gives every
worker zero-copy access to a dataset that the driver loaded once.

What stays on the driver, exactly as with the local executor: planning (cached runs are never
submitted), the dataset checks, and writing every record atomically as its task finishes. A
worker only runs :func:`zslbench.runner.execute` on one plan. So caching, resume after a kill, and
Ctrl-C (outstanding tasks are cancelled; complete records stay) behave as they do locally, and a
failed task fails its run only. Progress inside a run (phases, steps) is not streamed back from
workers: the driver prints one line per finished run.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zslbench.errors import ConfigError, UserError, blamed
from zslbench.files import atomic_write_text

#: Ctrl-C and kill signals received while :func:`user_interrupts` watched (a process-wide count).
_user_signals = 0


def user_signals() -> int:
    """How many SIGINT/SIGTERM the user sent so far while :func:`user_interrupts` watched: a
    ``KeyboardInterrupt`` raised while this count did not move came from code, not the user."""
    return _user_signals


@contextmanager
def user_interrupts() -> Iterator[None]:
    """Count SIGINT and SIGTERM before their usual handler raises ``KeyboardInterrupt``.

    Only the main thread can set handlers, and only a Python handler is wrapped (the default
    SIGINT one, or the CLI's SIGTERM one): a signal that kills the process still kills it.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)
        if callable(previous):
            saved[sig] = previous
            signal.signal(sig, _counting(previous))
    try:
        yield
    finally:
        for sig, previous in saved.items():
            signal.signal(sig, previous)


def _counting(previous: Callable[..., Any]) -> Callable[..., Any]:
    def handler(signum: int, frame: Any) -> Any:
        global _user_signals
        _user_signals += 1
        return previous(signum, frame)

    return handler


def failure_reason(exc: BaseException) -> str:
    """One line saying what failed in a run: the component and stage when known (``regressor
    'linear' in fit (validation fit)``), then what it raised; a plugin's ``sys.exit(0)`` and
    ``KeyboardInterrupt`` are named as such, since neither says anything by itself."""
    where = blamed(exc)
    if isinstance(exc, SystemExit):
        what = f"called sys.exit({exc.code!r})"
    elif isinstance(exc, KeyboardInterrupt):
        what = "raised KeyboardInterrupt (not a Ctrl-C from the user)"
    elif isinstance(exc, UserError):
        what = f"{type(exc).__name__}: {exc.one_line()}"
    else:
        what = f"{type(exc).__name__}: {exc}"
    text = (f"{where}: " if where else "") + what
    return " ".join(text.split())


def failure_note_path(record_path: Path) -> Path:
    """Where a failed run's note goes: ``<run_id>.failed`` beside its record's ``<run_id>.json``
    (no reader of records globs it)."""
    return Path(record_path).with_suffix(".failed")


def write_failure_note(record_path: Path, reason: str) -> Path:
    """Keep a failed run's one-line reason, atomically (a reader sees no note or the whole one)."""
    path = failure_note_path(record_path)
    atomic_write_text(path, reason.splitlines()[0] + "\n" if reason else "failed\n")
    return path


def clear_failure_note(record_path: Path, *, other_configs: bool = False) -> None:
    """Remove a run's failure note once the run has its record: that failure no longer holds.

    With ``other_configs`` (a run that is not part of a sweep), the notes of the same run under
    another configuration go too: same dataset, method, data, device type and seed, another
    config id (``--set preprocessor=none`` after the ``clip`` default refused the data), so that
    fixed failures do not stay behind. Only plain files named as the harness names its notes, of
    one line, are removed."""
    failure_note_path(record_path).unlink(missing_ok=True)
    if not other_configs:
        return
    parts = Path(record_path).stem.split("__")
    if len(parts) != 6:
        return
    dataset, method, config, data, device, seed = parts
    for note in Path(record_path).parent.glob(f"*__{device}__{seed}.failed"):
        theirs = note.stem.split("__")
        if (len(theirs) != 6 or theirs[:2] != [dataset, method] or theirs[3] != data
                or theirs[2] == config or not re.fullmatch(r"[0-9a-f]{8}", theirs[2])):
            continue
        try:
            if note.is_symlink() or not note.is_file() or note.stat().st_size > 4096:
                continue
            if note.read_text(encoding="utf-8", errors="replace").count("\n") != 1:
                continue
            note.unlink()
        except OSError:
            continue


def _execute_remote(plan: Any, data: Any, threads: int) -> Any:
    """Body of a Ray task: run one plan with the CPU threads the task asked for."""
    import torch

    from zslbench.runner import execute

    torch.set_num_threads(max(1, threads))
    return execute(plan, data)


class RayExecutor:
    """Submit every non-cached run as a Ray task; yield results as they finish."""

    name = "ray"

    def __init__(self, address: str | None = None, cpus_per_run: float | None = None,
                 gpus_per_run: float | None = None, device: str = "cpu",
                 plugins: tuple[str, ...] = ()) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError("--executor ray needs Ray, which is not installed",
                              hint="pip install -e '.[ray]' (or pip install ray)") from None
        self.ray = ray
        self.address = address
        self.started = False
        if not ray.is_initialized():
            # Ray nices its workers to 15 by default; on a shared machine that makes every run
            # yield to everyone else's jobs, and its timings meaningless. Runs get normal priority.
            os.environ.setdefault("RAY_worker_niceness", "0")
            # Workers import the same modules as the driver (plugins loaded with -p included).
            env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "logging_level": logging.ERROR,
                                      "runtime_env": {"env_vars": env}}
            try:
                if address:
                    ray.init(address=address, **kwargs)
                else:
                    ray.init(**kwargs)
            except Exception as exc:  # a user's cluster address or resources: one line
                raise ConfigError(f"--executor ray: cannot start or join a Ray cluster"
                                  f"{' at ' + address if address else ''} "
                                  f"({type(exc).__name__}: {exc})",
                                  hint="check --address (or `ray status` on the head node)"
                                  ) from None
            self.started = True
        from zslbench.provenance import cores

        self.cpus = cpus_per_run if cpus_per_run is not None else (1.0 if address else
                                                                   float(cores()))
        self.gpus = (gpus_per_run if gpus_per_run is not None
                     else (1.0 if device.startswith("cuda") else 0.0))
        if device.startswith("cuda") and self.gpus == 0:
            raise ConfigError("--device cuda with --gpus-per-run 0: the runs would get no GPU",
                              hint="give each run a GPU or a fraction, e.g. --gpus-per-run 0.25")
        self.task = ray.remote(num_cpus=self.cpus, num_gpus=self.gpus,
                               max_retries=0)(_execute_remote)
        self.pending: list[Any] = []

    def run(self, batches: Iterable[tuple[Any, list[Any]]],
            emit: Callable[[str, dict[str, Any]], None]) -> Iterator[Any]:
        ray = self.ray
        owner: dict[Any, Any] = {}
        threads = max(1, int(self.cpus))
        try:
            for data, plans in batches:
                yield None  # the driver reports this dataset's cached runs now
                if not plans:
                    continue
                ref = ray.put(data)  # once per dataset: workers read it zero-copy
                for plan in plans:
                    task = self.task.remote(plan, ref, threads)
                    owner[task] = plan
                    self.pending.append(task)
                emit("info", {"message": f"{len(plans)} run(s) of {plans[0].dataset} submitted "
                              f"to Ray ({self.cpus:g} CPU, {self.gpus:g} GPU each)"})
                yield from self._collect(owner, block=False)
            yield from self._collect(owner, block=True)
        except BaseException:
            self.cancel()
            raise

    def _collect(self, owner: dict[Any, Any], block: bool) -> Iterator[Any]:
        from zslbench.runner import RunResult

        ray = self.ray
        while self.pending:
            done, self.pending = ray.wait(self.pending, num_returns=1,
                                          timeout=None if block else 0)
            if not done:
                return
            task = done[0]
            plan = owner.pop(task)
            try:
                yield ray.get(task)
            except Exception as exc:  # the worker died or the task raised: this run fails only
                cause = getattr(exc, "cause", None) or exc
                yield RunResult(plan, error=f"{plan.method} on {plan.dataset} (seed {plan.seed}): "
                                f"the Ray task failed: {type(cause).__name__}: {cause}")

    def cancel(self) -> None:
        for task in self.pending:
            try:
                self.ray.cancel(task, force=True)
            except Exception:  # already finished or gone
                pass
        self.pending = []

    def shutdown(self) -> None:
        self.cancel()
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
