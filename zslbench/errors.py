"""Errors a user can act on.

Anything raised as :class:`UserError` is printed by the CLI as one line (no traceback) and exits
non-zero. Its message must name the file or value at fault and say how to fix it.
"""

from __future__ import annotations


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
