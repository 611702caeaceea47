"""The evaluation protocol, the same for every method, with a validation split that never sees a
test image.

Steps (the paper's, "Calibration", generalised to any model):

1. fit the model on the *train classes* of the validation split, with the semantics of its
   *validation classes* as the unseen candidates; when the model declares a search space, every
   candidate is fitted this way and the one of highest validation H is kept (``zslbench.search``);
2. choose the seen-class penalty gamma on the validation images' scores (the calibrator);
3. refit the model, with the chosen hyperparameters, on trainval, with the test-unseen classes'
   semantics as the unseen candidates;
4. evaluate on test-seen and test-unseen with that gamma.

The official xlsa17 ``train_loc``/``val_loc`` contain test-seen images (AWA1 4958, AWA2 5882,
SUN 2580), so steps 1-3 use ``trainval_idx`` only: the validation-unseen classes are the official
validation classes restricted to trainval images, and validation-seen images are a held-out part of
the trainval images of the remaining classes.

A method's preprocessor is fitted on the training images of each fit and applied to every image the
model sees, so any method can swap it (``--set preprocessor=none``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zslbench.components import Calibrator, Preprocessor
from zslbench.data.dataset import ZSLData
from zslbench.errors import ContractError, blame
from zslbench.model import Model
from zslbench.progress import listening

#: Share of each validation-seen class's trainval images held out for validation (our choice: the
#: xlsa17 test-seen share is 20% of the seen images, so validation mirrors the test protocol).
VAL_SEEN_FRACTION = 0.2
#: Share of seen classes used as validation classes when a split file has no ``val_loc`` (CUB's
#: re-saved file): xlsa17 uses 13/40, 5/20, 50/150 and 65/645 — about a third at most.
FALLBACK_VAL_CLASS_FRACTION = 1 / 3


@dataclass(frozen=True)
class ValidationSplit:
    """Index sets (into the dataset's images) of the leak-free validation split."""

    train_idx: np.ndarray
    val_seen_idx: np.ndarray
    val_unseen_idx: np.ndarray
    train_classes: np.ndarray
    val_classes: np.ndarray

    def all_indices(self) -> np.ndarray:
        return np.concatenate([self.train_idx, self.val_seen_idx, self.val_unseen_idx])


def leak_free_validation(data: ZSLData, seed: int) -> ValidationSplit:
    """Derive the validation split from ``trainval_idx`` alone.

    Validation-unseen classes are the dataset's official validation classes that occur in
    trainval (or, when the file has none, a seeded third of the seen classes). Each remaining
    seen class gives ``VAL_SEEN_FRACTION`` of its trainval images (at least one, when it has two or
    more) to validation-seen; the rest are the training images.
    """
    rng = np.random.default_rng(seed)
    tv = np.asarray(data.trainval_idx)
    tv_labels = data.labels[tv]
    seen = np.unique(tv_labels)
    if data.val_classes is not None and len(data.val_classes):
        val_classes = np.intersect1d(np.asarray(data.val_classes), seen)
    else:
        k = max(1, int(round(len(seen) * FALLBACK_VAL_CLASS_FRACTION)))
        val_classes = np.sort(np.random.default_rng(0).choice(seen, size=k, replace=False))
    if len(val_classes) == 0 or len(val_classes) == len(seen):
        raise ValueError(
            f"{data.name}: validation classes must be a non-empty proper subset of "
            f"the seen classes, got {len(val_classes)} of {len(seen)}"
        )
    train_classes = np.setdiff1d(seen, val_classes)
    is_val_class = np.isin(tv_labels, val_classes)
    val_unseen_idx = tv[is_val_class]

    train_parts, val_seen_parts = [], []
    for c in train_classes:
        members = tv[tv_labels == c]
        members = members[rng.permutation(len(members))]
        k = int(round(len(members) * VAL_SEEN_FRACTION))
        if len(members) >= 2:
            k = min(max(k, 1), len(members) - 1)
        else:
            k = 0
        val_seen_parts.append(members[:k])
        train_parts.append(members[k:])
    return ValidationSplit(
        train_idx=np.sort(np.concatenate(train_parts)),
        val_seen_idx=np.sort(np.concatenate(val_seen_parts)),
        val_unseen_idx=np.sort(val_unseen_idx),
        train_classes=train_classes,
        val_classes=val_classes,
    )


@dataclass
class Method:
    """A method ready to run: its preprocessor, model and calibrator (unfitted), and which of the
    model's hyperparameters the user fixed (those are not searched)."""

    name: str
    preprocessor: Preprocessor
    model: Model
    calibrator: Calibrator
    fixed: frozenset[str] = frozenset()

    def search_space(self) -> dict[str, tuple[Any, ...]]:
        return {k: v for k, v in self.model.full_search_space().items() if k not in self.fixed}


@dataclass
class ProtocolResult:
    evaluation: dict[str, Any]
    gamma: float
    timings: dict[str, float]
    search: dict[str, Any] | None = None
    validation: dict[str, Any] = field(default_factory=dict)
    selection_audit: dict[str, Any] | None = None


class StageTimer:
    """Wall-clock per stage; synchronises CUDA first so GPU work is counted where it happens.

    It listens to :mod:`zslbench.progress`, so the stages a model reports (``embedder_fit``, ...)
    are timed alongside the protocol's own phases, and it forwards every report to ``on_event``.
    """

    def __init__(
        self, device: str, on_event: Callable[[str, dict[str, Any]], None] | None = None
    ) -> None:
        self.device = device
        self.on_event = on_event
        self.timings: dict[str, float] = {}

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()

    def listen(self, event: str, info: dict[str, Any]) -> None:
        if event == "stage_start":
            self._sync()
        elif event == "stage_end":
            self._sync()
            name = info["stage"]
            self.timings[name] = self.timings.get(name, 0.0) + info["seconds"]
        if self.on_event:
            self.on_event(event, info)

    def phase(self, name: str) -> _Phase:
        return _Phase(self, name)


class _Phase:
    def __init__(self, timer: StageTimer, name: str) -> None:
        self.timer, self.name = timer, name

    def __enter__(self) -> _Phase:
        if self.timer.on_event:
            self.timer.on_event("phase", {"phase": self.name})
        self.timer._sync()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer._sync()
        elapsed = time.perf_counter() - self.start
        self.timer.timings[self.name] = self.timer.timings.get(self.name, 0.0) + elapsed


def _columns(classes: np.ndarray, n_classes: int) -> np.ndarray:
    """Class id -> column in ``classes`` (-1 for classes not among them)."""
    column = np.full(n_classes, -1)
    column[classes] = np.arange(len(classes))
    return column


def run_protocol(
    data: ZSLData,
    method: Method,
    seed: int,
    device: str = "cpu",
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
) -> ProtocolResult:
    """Validation fit (with the search), calibration, final fit, evaluation; see the module doc.

    No test image is touched before the evaluation phase: every index used before it comes from
    ``leak_free_validation`` or ``data.trainval_idx``. Phases, in order: ``preprocess``,
    ``search`` (when the model has a search space), ``fit_validation``, ``calibration``,
    ``fit_final``, ``evaluation``; ``train`` is the wall time of all but the last.
    """
    from zslbench.classifier import predict
    from zslbench.metrics import gzsl_evaluate, harmonic_mean, per_class_accuracy
    from zslbench.search import search

    timer = StageTimer(device, on_event)
    labels = data.labels
    seen = data.seen_classes
    unseen = data.unseen_classes
    att = np.asarray(data.attributes, dtype=np.float64)
    split = leak_free_validation(data, seed)
    train_start = time.perf_counter()

    with listening(timer.listen):
        # Step 1: the validation split's training images, and its validation images.
        with timer.phase("preprocess"):
            val_idx = np.concatenate([split.val_seen_idx, split.val_unseen_idx])
            with blame(_who("preprocessor", method.preprocessor), "validation fit"):
                pre = method.preprocessor.clone().fit(data.features[split.train_idx])
                x_train = pre.transform(data.features[split.train_idx])
                x_val = pre.transform(data.features[val_idx])
        y_train = labels[split.train_idx]
        val_classes_all = np.concatenate([split.train_classes, split.val_classes])
        sem_val = att[val_classes_all]
        y_val = _columns(val_classes_all, data.n_classes)[labels[val_idx]]
        seen_mask = np.arange(len(val_classes_all)) < len(split.train_classes)

        def evaluate(params: dict[str, Any]) -> tuple[float, np.ndarray]:
            with blame(_who("model", method.model), f"search ({params})"):
                model = candidate.set_search_params(**params)
                model.fit(x_train, y_train, sem_val, val_classes_all)
                s_val = _checked_scores(model, x_val, len(val_classes_all))
            with blame(_who("calibrator", method.calibrator), "search"):
                cal = method.calibrator.clone().fit(s_val, y_val, seen_mask)
            pred = predict(s_val, seen_mask, cal.gamma_)
            in_seen = seen_mask[y_val]
            a_s, _ = per_class_accuracy(y_val[in_seen], pred[in_seen])
            a_u, _ = per_class_accuracy(y_val[~in_seen], pred[~in_seen])
            return harmonic_mean(a_u, a_s), s_val

        space = method.search_space()
        found = None
        if space:
            # One model instance walks the candidates, so a composite can keep what a change of
            # parameters does not touch (PrototypeModel keeps its fitted embedder).
            candidate = method.model.clone()
            with timer.phase("search"):
                found = search(space, type(method.model).search_strategy, evaluate)
            method.model.set_search_params(**found.chosen)
            for name in found.at_edge:
                if on_event is not None:
                    from zslbench.console import compact_value, grid_text

                    on_event(
                        "warning",
                        {
                            "message": f"{method.name}: the search chose {name}="
                            f"{compact_value(found.chosen[name])}, an end of its grid "
                            f"{grid_text(space[name])}; the validation optimum may "
                            "lie beyond it"
                        },
                    )
            model, s_val = None, found.best_scores
        else:
            with (
                timer.phase("fit_validation"),
                blame(_who("model", method.model), "validation fit"),
            ):
                model = method.model.clone().fit(x_train, y_train, sem_val, val_classes_all)
            s_val = None

        # Step 2: choose gamma on validation-seen + validation-unseen images.
        with timer.phase("calibration"):
            if s_val is None:
                assert model is not None  # fitted above whenever the search gave no scores
                with blame(_who("model", method.model), "validation scoring"):
                    s_val = _checked_scores(model, x_val, len(val_classes_all))
            with blame(_who("calibrator", method.calibrator), "calibration"):
                cal = method.calibrator.clone().fit(s_val, y_val, seen_mask)
            gamma = float(cal.gamma_)
        del model, s_val

        # Steps 3-4: refit on trainval with the chosen hyperparameters.
        with timer.phase("preprocess"):
            with blame(_who("preprocessor", method.preprocessor), "final fit"):
                pre = method.preprocessor.clone().fit(data.features[data.trainval_idx])
                x_tv = pre.transform(data.features[data.trainval_idx])
        classes = np.concatenate([seen, unseen])
        with timer.phase("fit_final"), blame(_who("model", method.model), "final fit"):
            final = method.model.clone().fit(x_tv, labels[data.trainval_idx], att[classes], classes)
        train_seconds = time.perf_counter() - train_start

        # Step 5: evaluate on the test images, first touched here.
        with timer.phase("evaluation"), blame(_who("model", method.model), "evaluation"):
            column = _columns(classes, data.n_classes)
            test_mask = np.arange(len(classes)) < len(seen)
            x_ts = pre.transform(data.features[data.test_seen_idx])
            x_tu = pre.transform(data.features[data.test_unseen_idx])
            y_ts, y_tu = column[labels[data.test_seen_idx]], column[labels[data.test_unseen_idx]]
            s_ts = _checked_scores(final, x_ts, len(classes))
            s_tu = _checked_scores(final, x_tu, len(classes))
            evaluation = gzsl_evaluate(s_ts, y_ts, s_tu, y_tu, test_mask, gamma, class_ids=classes)
            del s_ts, s_tu
            # Class frequency (share of all the dataset's images) and name: the paper's Table 4.
            counts = np.bincount(labels, minlength=data.n_classes)
            for group in evaluation.get("per_class", {}).values():
                for entry in group:
                    c = int(entry["class"])
                    entry["frequency"] = float(counts[c] / counts.sum())
                    entry["name"] = data.class_names[c] if data.class_names else None

        # Step 6, after the clean numbers are final: what the official code's selection on test
        # would have reported (only for a model that declares such a rule).
        audit = None
        rule = getattr(final, "selection_rule", None)
        if rule:
            with (
                timer.phase("selection_audit"),
                blame(_who("model", method.model), "selection audit"),
            ):
                audit = selection_audit(
                    final,
                    x_ts,
                    y_ts,
                    x_tu,
                    y_tu,
                    test_mask,
                    gamma,
                    float(evaluation["H"]),
                    str(rule),
                )

    timings = dict(timer.timings)
    timings["train"] = train_seconds
    return ProtocolResult(
        evaluation=evaluation,
        gamma=gamma,
        timings=timings,
        search=found.as_record() if found is not None else None,
        selection_audit=audit,
        validation={
            "n_train": int(len(split.train_idx)),
            "n_val_seen": int(len(split.val_seen_idx)),
            "n_val_unseen": int(len(split.val_unseen_idx)),
            "train_classes": split.train_classes.tolist(),
            "val_classes": split.val_classes.tolist(),
        },
    )


def selection_audit(
    model: Model,
    x_seen: np.ndarray,
    y_seen: np.ndarray,
    x_unseen: np.ndarray,
    y_unseen: np.ndarray,
    seen_mask: np.ndarray,
    gamma: float,
    clean_h: float,
    rule: str,
) -> dict[str, Any]:
    """What selecting on test would have reported: H on the test images of each checkpoint the
    model kept (``model.checkpoint_scores``, in training order, the last being the final model),
    at the calibrated ``gamma``, and the best of them.

    Why: the official codes of several generative methods keep the epoch of best *test* H, so
    their published numbers select on test. The protocol's own number (``clean_H``) never does;
    this measures the difference on the same fit. It runs only after the clean evaluation is
    complete, so nothing here can change the clean numbers. Returns ``{rule, clean_H,
    test_selected_H, test_selected_epoch (1-based), H_by_epoch}``.
    """
    from zslbench.classifier import predict
    from zslbench.metrics import harmonic_mean, per_class_accuracy

    hs: list[float] = []
    checkpoint_scores = model.checkpoint_scores  # type: ignore[attr-defined]
    for s_ts, s_tu in zip(checkpoint_scores(x_seen), checkpoint_scores(x_unseen), strict=True):
        a_s, _ = per_class_accuracy(y_seen, predict(s_ts, seen_mask, gamma))
        a_u, _ = per_class_accuracy(y_unseen, predict(s_tu, seen_mask, gamma))
        hs.append(float(harmonic_mean(a_u, a_s)))
    if not hs:
        raise ContractError(f"{model.name} declares a selection_rule but kept no checkpoint")
    best = int(np.argmax(hs))
    return {
        "rule": rule,
        "clean_H": clean_h,
        "test_selected_H": hs[best],
        "test_selected_epoch": best + 1,
        "H_by_epoch": hs,
    }


def _who(role: str, component: Any) -> str:
    return f"{role} {getattr(component, 'name', type(component).__name__)!r}"


def _checked_scores(model: Model, features: np.ndarray, n_classes: int) -> np.ndarray:
    """The model's scores, refused with a message naming the model when they break the contract."""
    s = np.asarray(model.decision_function(features))
    if s.shape != (features.shape[0], n_classes):
        raise ContractError(
            f"{model.name}.decision_function returned shape {s.shape}, expected "
            f"{(features.shape[0], n_classes)} (images x classes)"
        )
    if not np.isfinite(s).all():
        raise ContractError(f"{model.name}.decision_function returned NaN or infinite scores")
    return s
