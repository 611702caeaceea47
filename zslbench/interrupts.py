"""Telling the user's Ctrl-C from a ``KeyboardInterrupt`` that plugin code raised.

Only a real Ctrl-C (SIGINT) or ``kill`` (SIGTERM, which the CLI turns into ``KeyboardInterrupt``)
stops a grid; a run whose plugin code raises ``KeyboardInterrupt`` itself fails alone.
:func:`user_interrupts` counts those signals while a run or a dataset load is under way, so that
the caller compares :func:`user_signals` before and after.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _counting(previous: Callable[..., Any]) -> Callable[..., Any]:
    def handler(signum: int, frame: Any) -> Any:
        global _user_signals
        _user_signals += 1
        return previous(signum, frame)

    return handler
