"""What a fit tells the harness while it runs: named stages (timed) and steps (for progress bars).

Components call these; the harness decides where the reports go (a progress bar with an ETA, plain
lines in a pipe, or nowhere). Without a harness listening they cost a context-variable lookup::

    from zslbench.progress import stage, steps

    with stage("embedder_fit"):                    # its wall time lands in the record's timings
        with steps("episodes", total=500) as step:  # "episodes 120/500, ETA 9 s" in the terminal
            for _ in range(500):
                ...
                step()

Stage times add up when a stage is entered more than once (the validation fit and the final fit
each enter ``embedder_fit``); the harness also reports which of its own phases is running.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: Steps are reported to the listener at most this often (and always at the last step).
MIN_REPORT_SECONDS = 0.1
#: The harness's listener: ``listener(event, info)`` with event "stage_start", "stage_end" or "step".
_listener: ContextVar[Callable[[str, dict[str, Any]], None] | None] = ContextVar(
    "zslbench_progress_listener", default=None
)


@contextmanager
def listening(listener: Callable[[str, dict[str, Any]], None]) -> Iterator[None]:
    """Route every report made inside the block to ``listener`` (harness side)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time a named part of a fit (e.g. ``embedder_fit``); the harness adds it to the record."""
    listener = _listener.get()
    if listener is None:
        yield
        return
    listener("stage_start", {"stage": name})
    start = time.perf_counter()
    try:
        yield
    finally:
        listener("stage_end", {"stage": name, "seconds": time.perf_counter() - start})


@contextmanager
def steps(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """Report a loop of ``total`` steps (episodes, iterations, epochs); call the yielded function
    once per step (or with ``n`` for several)."""
    listener = _listener.get()
    if listener is None:
        yield _ignore
        return
    done, last = 0, time.perf_counter()
    listener("step", {"label": label, "done": 0, "total": int(total)})

    def advance(n: int = 1) -> None:
        # Throttled: a 3 ms training step must not pay for a progress-bar update every time.
        nonlocal done, last
        done += n
        now = time.perf_counter()
        if now - last >= MIN_REPORT_SECONDS or done >= total:
            last = now
            listener("step", {"label": label, "done": done, "total": int(total)})

    yield advance


def candidate(params: dict[str, Any], index: int, total: int | None) -> None:
    """Report the search candidate about to be fitted (``total`` None when not known ahead, as
    for the ``refine`` search), so that progress lines can name it."""
    listener = _listener.get()
    if listener is not None:
        listener("candidate", {"params": dict(params), "done": index, "total": total})


def _ignore(n: int = 1) -> None:
    return None
