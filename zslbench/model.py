"""The model contract: what every GZSL method implements, whatever its family.

A method is a scikit-learn style estimator with two calls (after ``ClassifierMixin`` and
``decision_function``):

``fit(features, labels, class_semantics, classes)``
    ``features`` (n, d) float32: the training images only (possibly read-only: never write into
    it). ``labels`` (n,) int64: the class id of each image. ``classes`` (c,) int64: the class ids
    the model will be asked about, seen *and* unseen, and ``class_semantics`` (c, a) their
    semantic vectors, row ``j`` for ``classes[j]``. The *seen* classes are those that occur in
    ``labels``; the others have no image. Inductive GZSL allows their semantics at training time,
    and generative methods need them to synthesise features. Returns ``self``.

``decision_function(features)`` -> (m, c) float
    One score per image and candidate class, higher meaning more likely; column ``j`` is
    ``classes[j]`` (stored as ``classes_``). It must be pure given the fitted state: scoring some
    images never changes the scores of others.

The harness owns everything else and does it the same way for every method: the leak-free
validation split, the hyperparameter search on it (see ``search_space``), the seen-class
calibration gamma on the validation scores, the metrics and AUSUC, timing, records and
leaderboards. A model never sees a test image before it is fitted, and is never told which images
are test images.

Like every component (``zslbench.components``), a model takes its hyperparameters as constructor
arguments, stores them unchanged, and keeps learned state in attributes ending with ``_``.
``random_state`` (int) and ``device`` (``"cpu"``/``"cuda"``) are injected by the harness when the
constructor accepts them. A composite model (the paper's prototype pipeline is one) declares its
sub-components in ``components`` (role -> registry kind); the harness builds them from the registry
and passes them as constructor arguments, and ``--set ROLE.PARAM=V`` reaches them.

``check_model`` (``zslbench.testing``) runs the contract's checks on a plugin's model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from zslbench.components import Component
from zslbench.errors import DataError


@dataclass(frozen=True)
class FitInputs:
    """``fit``'s arguments, checked and converted once (see :meth:`Model.check_fit_inputs`).

    ``y`` maps every label to its column in ``classes``; ``seen_mask`` (c,) marks the columns of
    the seen classes (those with at least one image), in column order.
    """

    features: np.ndarray
    labels: np.ndarray
    class_semantics: np.ndarray
    classes: np.ndarray
    y: np.ndarray
    seen_mask: np.ndarray

    @property
    def seen_columns(self) -> np.ndarray:
        return np.flatnonzero(self.seen_mask)

    @property
    def unseen_columns(self) -> np.ndarray:
        return np.flatnonzero(~self.seen_mask)


class Model(Component):
    """Base class of every GZSL method (see the module docstring for the contract).

    Class attributes a subclass may set:

    * ``search_space``: ``{param: (v1, v2, ...)}``, the values the harness tries on the leak-free
      validation split, keeping the combination of highest validation H. A parameter the user
      fixes with ``--set`` is not searched. Empty: nothing is searched. It may be a property, so
      that the values come from hyperparameters (KRR's ``alpha_grid``); any component of a
      composite model may declare one too.
    * ``search_strategy``: ``"grid"`` (every combination) or ``"refine"`` (every other value of
      each parameter first, then hill climbing over full-resolution neighbours; a local optimum
      of the grid, the grid's optimum for a unimodal H, at a fraction of the cost; see
      :mod:`zslbench.search`).
    * ``components``: ``{role: kind}`` for a composite model whose constructor takes registered
      components (``{"embedder": "embedder", "regressor": "regressor"}``).
    """

    search_space: ClassVar[Mapping[str, Sequence[Any]]] = {}
    search_strategy: ClassVar[str] = "grid"
    components: ClassVar[Mapping[str, str]] = {}

    def fit(
        self,
        features: np.ndarray,
        labels: np.ndarray,
        class_semantics: np.ndarray,
        classes: np.ndarray,
    ) -> Model:
        raise NotImplementedError

    def decision_function(self, features: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def full_search_space(self) -> dict[str, tuple[Any, ...]]:
        """The declared search space, with each sub-component's own under ``role.param``."""
        space = {k: tuple(v) for k, v in self.search_space.items()}
        for role in type(self).components:
            sub = getattr(self, role, None)
            for key, values in getattr(sub, "search_space", {}).items():
                space[f"{role}.{key}"] = tuple(values)
        return space

    def set_search_params(self, **params: Any) -> Model:
        """``set_params`` that also reaches sub-components by ``role.param``."""
        own: dict[str, Any] = {}
        for key, value in params.items():
            role, dot, param = key.partition(".")
            if dot:
                getattr(self, role).set_params(**{param: value})
            else:
                own[key] = value
        if own:
            self.set_params(**own)
        return self

    @staticmethod
    def check_fit_inputs(
        features: Any, labels: Any, class_semantics: Any, classes: Any, who: str = "model"
    ) -> FitInputs:
        """Check ``fit``'s arguments against the contract; one-line ``DataError`` otherwise.

        Returns them converted (float32 features, int64 labels and classes, float64 semantics) with
        each label's column and the seen mask, so a model need not recompute them.
        """
        if not hasattr(features, "ndim") or features.ndim != 2:
            raise DataError(
                f"{who}: features must be a 2-D array (images x dims), got shape "
                f"{getattr(features, 'shape', None)}",
                hint="pass one row per training image",
            )
        labels = np.asarray(labels)
        if (
            labels.ndim != 1
            or len(labels) != features.shape[0]
            or not np.issubdtype(labels.dtype, np.integer)
        ):
            raise DataError(
                f"{who}: labels must be {features.shape[0]} integer class ids, got "
                f"{labels.dtype} of shape {labels.shape}",
                hint="pass the class id of every training image",
            )
        classes = np.asarray(classes)
        if (
            classes.ndim != 1
            or not np.issubdtype(classes.dtype, np.integer)
            or len(np.unique(classes)) != len(classes)
        ):
            raise DataError(
                f"{who}: classes must be distinct integer class ids, got {classes!r}",
                hint="pass each candidate class once",
            )
        sem = np.asarray(class_semantics, dtype=np.float64)
        if sem.ndim != 2 or sem.shape[0] != len(classes):
            raise DataError(
                f"{who}: class_semantics has shape {sem.shape} for {len(classes)} classes",
                hint="pass one semantics row per entry of classes",
            )
        order = np.argsort(classes, kind="stable")
        pos = np.searchsorted(classes[order], labels)
        pos = np.minimum(pos, len(classes) - 1)
        bad = classes[order][pos] != labels
        if bad.any():
            raise DataError(
                f"{who}: labels hold class ids not in classes, e.g. {int(labels[bad][0])}",
                hint="classes must contain every label",
            )
        y = order[pos].astype(np.int64)
        seen_mask = np.zeros(len(classes), dtype=bool)
        seen_mask[np.unique(y)] = True
        return FitInputs(
            features, labels.astype(np.int64), sem, classes.astype(np.int64), y, seen_mask
        )
