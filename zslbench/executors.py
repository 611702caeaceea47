"""How runs execute: :func:`execute` (one plan, in this process), the local executor and the Ray
executor.

A run fails alone, whatever failed in it: its data (the ``clip``
preprocessor refusing negative features), a component, the model, or plugin code calling
``sys.exit(0)`` or raising ``KeyboardInterrupt``. :func:`zslbench.errors.failure_reason` turns any
of these into the one line that the driver keeps in ``<run_id>.failed`` next to where the record
would go (:func:`zslbench.records.store.write_failure_note`); the grid goes on and exits non-zero at the
end. Only a real Ctrl-C (SIGINT) or ``kill`` (SIGTERM, which the CLI turns into
``KeyboardInterrupt``) stops a grid (:mod:`zslbench.interrupts`).

An executor's ``run(batches, emit)`` takes one :class:`Batch` per dataset and yields the batch
itself (the driver then reports that dataset's cached runs, before any fit), then one
:class:`RunResult` per run, in any order.

The Ray executor: one Ray task per run, for grids on many cores, GPUs or machines.

Optional (``pip install -e ".[ray]"``); the default local executor
(:class:`LocalExecutor`) never imports Ray. Why Ray: it schedules by declared
resources, so a run can take a fraction of a GPU (``--gpus-per-run 0.25``) and four small runs
share one device; the same code runs on a laptop (a local cluster started here) and on a SLURM
allocation (``ray start`` on the nodes, then ``--address``); and its object store gives every
worker zero-copy access to a dataset that the driver loaded once.

What stays on the driver, exactly as with the local executor: planning (cached runs are never
submitted), the dataset checks, and writing every record atomically as its task finishes. A
worker only runs :func:`execute` on one plan. So caching, resume after a kill, and
Ctrl-C (outstanding tasks are cancelled; complete records stay) behave as they do locally, and a
failed task fails its run only. Progress inside a run (phases, steps) is not streamed back from
workers: the driver prints one line per finished run.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from zslbench import interrupts, provenance
from zslbench.data.dataset import ZSLData
from zslbench.errors import ConfigError, failure_reason
from zslbench.planning import DatasetPlan, Emit, PlannedRun
from zslbench.protocol import ProtocolResult, run_protocol


@dataclass
class Batch:
    """One dataset handed to an executor: its plan (the driver reports its cached runs and its
    failure) and the runs to do (``todo``), on ``planned.data``."""

    planned: DatasetPlan
    todo: list[PlannedRun]


@dataclass
class RunResult:
    """What a run produced, wherever it ran; the driver turns it into a record."""

    plan: PlannedRun
    result: ProtocolResult | None = None
    error: str | None = None
    load: dict[str, Any] = field(default_factory=dict)
    device: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    finished_at: str = ""


def execute(
    plan: PlannedRun, data: ZSLData, on_event: Callable[[str, dict[str, Any]], None] | None = None
) -> RunResult:
    """Run one plan on ``data`` (in this process: the local executor, or a Ray worker).

    Whatever fails in the run (its data, a component, the model, plugin code calling
    ``sys.exit`` or raising ``KeyboardInterrupt``) gives a ``RunResult`` whose ``error`` is one
    line naming the method, the dataset, the seed, and the component and stage that failed: the
    run fails alone. Only the user's Ctrl-C or kill (:mod:`zslbench.interrupts`) propagates;
    mistakes in the grid's configuration were refused by ``prepare_grid`` before anything ran.
    """
    started = datetime.now(timezone.utc)
    snapshot = provenance.load_snapshot()
    out = RunResult(plan, started_at=started.isoformat(timespec="seconds"))
    signals = interrupts.user_signals()
    startup = 0.0
    try:
        startup = provenance.warm_device(plan.device)
        provenance.reset_peak_memory(plan.device)
        assert plan.prepared is not None, "a planned run carries its prepared method"
        method = plan.prepared.instantiate(plan.seed, plan.device)
        out.result = run_protocol(data, method, plan.seed, plan.device, on_event=on_event)
    except BaseException as exc:  # the run failed: name what failed, write no record
        if isinstance(exc, KeyboardInterrupt) and interrupts.user_signals() != signals:
            raise  # the user's Ctrl-C: the grid stops
        out.error = f"{plan.method} on {plan.dataset} (seed {plan.seed}): " + failure_reason(exc)
        if os.environ.get("ZSLBENCH_TRACEBACK"):
            import traceback

            out.error += "\n" + "".join(traceback.format_exception(exc))
    out.load = provenance.load_report(snapshot)
    out.device = provenance.device_info(plan.device)
    if startup:
        out.device["startup_seconds"] = startup
    peak = provenance.peak_memory_mib(plan.device)
    if peak is not None:
        out.device["peak_memory_mib"] = peak
    out.environment = provenance.environment()
    out.finished_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return out


class LocalExecutor:
    """Runs plans one after another in this process, reporting every phase and step."""

    name = "local"

    def run(self, batches: Iterable[Batch], emit: Emit) -> Iterator[Batch | RunResult]:
        for batch in batches:
            yield batch  # lets the driver report this dataset's cached runs before any fit
            for plan in batch.todo:
                emit(
                    "run",
                    {
                        "dataset": plan.dataset,
                        "method": plan.method,
                        "repetition": plan.repetition,
                        "seed": plan.seed,
                        "sweep": plan.config.get("sweep"),
                        "reason": plan.reason,
                    },
                )
                assert batch.planned.data is not None, "a batch with runs to do has its data"
                with interrupts.user_interrupts():
                    result = execute(plan, batch.planned.data, on_event=emit)
                yield result

    def shutdown(self) -> None:
        """Nothing to release."""


def _execute_remote(plan: PlannedRun, data: ZSLData, threads: int) -> RunResult:
    """Body of a Ray task: run one plan with the CPU threads the task asked for."""
    import torch

    torch.set_num_threads(max(1, threads))
    return execute(plan, data)


class RayExecutor:
    """Submit every non-cached run as a Ray task; yield results as they finish."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        cpus_per_run: float | None = None,
        gpus_per_run: float | None = None,
        device: str = "cpu",
        plugins: tuple[str, ...] = (),
    ) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "--executor ray needs Ray, which is not installed",
                hint="pip install -e '.[ray]' (or pip install ray)",
            ) from None
        self.ray = ray
        self.address = address
        self.started = False
        from zslbench.provenance import cores

        self.cpus = (
            cpus_per_run if cpus_per_run is not None else (1.0 if address else float(cores()))
        )
        self.gpus = (
            gpus_per_run
            if gpus_per_run is not None
            else (1.0 if device.startswith("cuda") else 0.0)
        )
        if device.startswith("cuda") and self.gpus == 0:
            raise ConfigError(
                "--device cuda with --gpus-per-run 0: the runs would get no GPU",
                hint="give each run a GPU or a fraction, e.g. --gpus-per-run 0.25",
            )
        self.task = ray.remote(num_cpus=self.cpus, num_gpus=self.gpus, max_retries=0)(
            _execute_remote
        )
        self.pending: list[Any] = []

    def _connect(self) -> None:
        """Start a local Ray cluster, or join ``--address``'s, unless Ray is running already.
        Called with the first run to submit: a grid whose runs are all cached never starts Ray."""
        ray = self.ray
        if ray.is_initialized():
            return
        # Ray nices its workers to 15 by default; on a shared machine that makes every run
        # yield to everyone else's jobs, and its timings meaningless. Runs get normal priority.
        os.environ.setdefault("RAY_worker_niceness", "0")
        # Workers import the same modules as the driver (plugins loaded with -p included).
        env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.ERROR,
            "runtime_env": {"env_vars": env},
        }
        try:
            if self.address:
                ray.init(address=self.address, **kwargs)
            else:
                ray.init(**kwargs)
        except Exception as exc:  # a user's cluster address or resources: one line
            raise ConfigError(
                f"--executor ray: cannot start or join a Ray cluster"
                f"{' at ' + self.address if self.address else ''} "
                f"({type(exc).__name__}: {exc})",
                hint="check --address (or `ray status` on the head node)",
            ) from None
        self.started = True

    def run(self, batches: Iterable[Batch], emit: Emit) -> Iterator[Batch | RunResult]:
        ray = self.ray
        owner: dict[Any, Any] = {}
        threads = max(1, int(self.cpus))
        try:
            for batch in batches:
                yield batch  # the driver reports this dataset's cached runs now
                plans = batch.todo
                if not plans:
                    continue
                self._connect()
                ref = ray.put(batch.planned.data)  # once per dataset: workers read it zero-copy
                for plan in plans:
                    task = self.task.remote(plan, ref, threads)
                    owner[task] = plan
                    self.pending.append(task)
                emit(
                    "info",
                    {
                        "message": f"{len(plans)} run(s) of {plans[0].dataset} submitted "
                        f"to Ray ({self.cpus:g} CPU, {self.gpus:g} GPU each)"
                    },
                )
                yield from self._collect(owner, block=False)
            yield from self._collect(owner, block=True)
        except BaseException:
            self.cancel()
            raise

    def _collect(self, owner: dict[Any, Any], block: bool) -> Iterator[RunResult]:
        ray = self.ray
        while self.pending:
            done, self.pending = ray.wait(self.pending, num_returns=1, timeout=None if block else 0)
            if not done:
                return
            task = done[0]
            plan = owner.pop(task)
            try:
                yield ray.get(task)
            except Exception as exc:  # the worker died or the task raised: this run fails only
                cause = getattr(exc, "cause", None) or exc
                yield RunResult(
                    plan,
                    error=f"{plan.method} on {plan.dataset} (seed {plan.seed}): "
                    f"the Ray task failed: {type(cause).__name__}: {cause}",
                )

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
