"""Errors a user can act on.

Anything raised as :class:`UserError` is printed by the CLI as one line (no traceback) and exits
non-zero. Its message must name the file or value at fault and say how to fix it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class UserError(Exception):
    """A mistake in the user's input (files, flags, config), reported as one actionable line."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The message and its fix, joined into the single line the CLI prints."""
        text = self.message.strip().replace("\n", " ")
        if self.hint:
            text = f"{text} — {self.hint.strip()}"
        return text


class DataError(UserError):
    """A data file is missing, unreadable or inconsistent."""


class SplitError(DataError):
    """A split fails a Split V2.0 check (leaky, altered or malformed)."""


class ConfigError(UserError):
    """An unknown method, dataset, component or hyperparameter."""


class PluginError(UserError):
    """A plugin failed to import, registered a duplicate name, or raised inside a component."""


class ContractError(Exception):
    """A plugin's component broke the contract (wrong score shape, NaN scores, ...): a bug in the
    plugin, reported as a failed run that names the component, never as the user's mistake."""


@contextmanager
def blame(component: str, action: str) -> Iterator[None]:
    """Label any exception raised inside with the component and what it was doing (``fit``,
    ``final fit``, ...), so that a failed run names them. Labels nest: a composite model's
    embedder failing in ``fit`` during the harness's final fit reads
    ``embedder 'bt' in fit (final fit)``."""
    try:
        yield
    except BaseException as exc:  # a plugin's sys.exit() or KeyboardInterrupt is named too
        chain = getattr(exc, "zslbench_blame", None)
        if chain is None:
            chain = []
            exc.zslbench_blame = chain  # type: ignore[attr-defined]
        chain.append((component, action))
        raise


def blamed(exc: BaseException) -> str:
    """The innermost component and action of an exception labelled by :func:`blame`, with the
    outermost action (the protocol's phase) when it differs; ``""`` when unlabelled."""
    chain = getattr(exc, "zslbench_blame", None)
    if not chain:
        return ""
    component, action = chain[0]
    outer = chain[-1][1]
    return f"{component} in {action}" + (f" ({outer})" if outer != action else "")


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


def suggestion(name: str, choices: list[str], kind: str) -> str:
    """'did you mean X?' plus the valid names, for one-line errors."""
    import difflib

    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    listing = ", ".join(sorted(choices)) or "none registered"
    if close:
        return f"did you mean {close[0]!r}? (known {kind}s: {listing})"
    return f"known {kind}s: {listing} (see `zslbench list`)"
