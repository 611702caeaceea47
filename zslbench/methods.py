"""A method is a named composition of registered components plus their default hyperparameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("preprocessor", "embedder", "regressor", "calibrator")


@dataclass(frozen=True)
class MethodSpec:
    """What a ``zslbench_methods`` hook returns.

    ``params`` maps a role (``"embedder"``, ...) to constructor overrides for that component;
    whatever is not given keeps the component's own documented default.
    """

    name: str
    embedder: str
    regressor: str
    calibrator: str = "gamma"
    preprocessor: str = "clip"
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    description: str = ""
    #: What the paper calls it, e.g. "L_BT + GP (ours)", for leaderboards.
    paper_name: str = ""

    def component(self, role: str) -> str:
        return getattr(self, role)
