"""Component contracts, after scikit-learn's estimator contract.

A method is a composition of components: preprocessor -> model -> calibrator, where a composite
model is built from components of kinds that plugins add (the paper's prototype pipeline adds its
own in ``zslbench_plugins.prototype_kinds``).
Every component:

* takes its hyperparameters as keyword arguments of ``__init__`` and stores them unchanged
  under the same names (no work in ``__init__``), so ``get_params``/``set_params``/``clone``
  work and a config can be recorded and replayed exactly;
* returns ``self`` from ``fit``; learned state ends with an underscore (``W_``, ``gamma_``);
* is pure in ``transform``/``predict`` given its fitted state.

Two hyperparameters are injected by the runner when a component's constructor accepts them:
``random_state`` (an int derived from the run's seed) and ``device`` (``"cpu"`` or ``"cuda"``).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, ClassVar, TypeVar

import numpy as np

#: The type of ``self``: ``clone`` returns the same class (typing.Self is 3.11+).
_C = TypeVar("_C", bound="Component")


class Component:
    """Base class giving every component ``get_params``/``set_params``/``clone``."""

    #: Name under which the component is registered (set by the plugin that provides it).
    name: ClassVar[str] = ""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self) -> dict[str, Any]:
        """Hyperparameters as given to the constructor."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Component:
        """Set hyperparameters; an unknown name raises ``KeyError`` naming the valid ones."""
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise KeyError(
                    f"{type(self).__name__} has no hyperparameter {key!r}; valid: {valid}"
                )
            setattr(self, key, value)
        return self

    def check_params(self) -> None:
        """Raise a one-line ``ConfigError`` for any invalid hyperparameter (helpers in
        ``zslbench.hyperparams``). The harness calls it before loading any data; components
        with hyperparameters must override it."""

    def clone(self: _C) -> _C:
        """An unfitted copy with the same hyperparameters; a component-valued hyperparameter (a
        composite model's embedder, say) is cloned in turn, never shared."""
        return type(self)(
            **{
                k: v.clone() if isinstance(v, Component) else copy.deepcopy(v)
                for k, v in self.get_params().items()
            }
        )

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class Preprocessor(Component):
    """Maps raw image features to the features every embedder sees (e.g. clip and scale)."""

    def fit(self, features: np.ndarray) -> Preprocessor:
        return self

    def transform(self, features: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class Calibrator(Component):
    """Chooses the seen-class penalty gamma of the calibrated rule (paper eq. 10).

    ``fit`` receives validation *scores* (n, c) where a larger score is a better class
    (the runner passes ``-||x - mu_c||^2``), the true labels (n,) as column indices into the
    scores, and a boolean mask (c,) of which columns are seen classes. It sets ``gamma_``.
    """

    #: The chosen penalty, set by ``fit``.
    gamma_: float

    def fit(self, scores: np.ndarray, labels: np.ndarray, seen_mask: np.ndarray) -> Calibrator:
        raise NotImplementedError
