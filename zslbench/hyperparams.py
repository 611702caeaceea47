"""Checks for hyperparameter values, shared by every component (one copy of each).

A component's ``check_params`` calls these; the harness calls ``check_params`` on every component
before any data is loaded, so ``--set krr.alpha=banana`` fails at once with one line that names
the component, the value and the fix, instead of after minutes of training (or never).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zslbench.errors import ConfigError


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def real(
    who: str,
    param: str,
    value: Any,
    *,
    low: float | None = 0.0,
    allow_low: bool = False,
    high: float | None = None,
) -> float:
    """A finite real number, ``> low`` (``>= low`` with ``allow_low``) and ``<= high``."""
    ok = _is_real(value) and math.isfinite(value)
    if ok and low is not None:
        ok = value >= low if allow_low else value > low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        bound = []
        if low is not None:
            bound.append(f"{'>=' if allow_low else '>'} {low:g}")
        if high is not None:
            bound.append(f"<= {high:g}")
        raise ConfigError(
            f"{who}.{param}={value!r} must be a finite number"
            + (f" {' and '.join(bound)}" if bound else ""),
            hint=f"see the {who} component's docstring for its default",
        )
    return float(value)


def integer(who: str, param: str, value: Any, minimum: int = 0) -> int:
    """An integer ``>= minimum`` (bools are not integers here)."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, np.integer))
        or value < minimum
    ):
        raise ConfigError(
            f"{who}.{param}={value!r} must be an integer >= {minimum}",
            hint=f"e.g. --set {who}.{param}={max(minimum, 1)}",
        )
    return int(value)


def boolean(who: str, param: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(
            f"{who}.{param}={value!r} must be true or false", hint=f"--set {who}.{param}=true"
        )
    return bool(value)


def choice(who: str, param: str, value: Any, options: tuple[Any, ...]) -> Any:
    if value not in options:
        raise ConfigError(
            f"{who}.{param}={value!r} is not one of {', '.join(map(str, options))}",
            hint=f"--set {who}.{param}={options[0]}",
        )
    return value


def reals(
    who: str, param: str, values: Any, *, low: float | None = 0.0, allow_low: bool = False
) -> tuple[float, ...]:
    """A non-empty sequence of numbers, each checked by :func:`real`."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ConfigError(
            f"{who}.{param}={values!r} must be a list of numbers",
            hint=f"e.g. --set {who}.{param}=[0.1,1,10]",
        )
    out = tuple(real(who, param, v, low=low, allow_low=allow_low) for v in values)
    if not out:
        raise ConfigError(f"{who}.{param} is empty", hint="give at least one value")
    return out


def seed(who: str, value: Any) -> int | None:
    if value is None:
        return None
    return integer(who, "random_state", value, 0)


def torch_device(who: str, device: Any) -> Any:
    """``device`` as a ``torch.device`` this torch build can use (cpu, or cuda with a GPU)."""
    import torch

    # The command line's option reads as typed (--device cuda); a component's as its parameter.
    given = f"{who} {device}" if who.startswith("--") else f"{who}.device={device!r}"
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(
            f"{given} is not a torch device ({exc})", hint="use cpu or cuda"
        ) from None
    if resolved.type not in ("cpu", "cuda"):
        raise ConfigError(f"{given} is not supported", hint="use cpu or cuda")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"{given}: this torch build sees no CUDA device",
            hint="run with --device cpu, or install a CUDA build of torch",
        )
    return resolved
