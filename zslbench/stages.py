"""Harness-owned staged fitting: a model declares its stages and what each reads; a refit reuses a
stage only when nothing it reads has changed.

Why: the search refits one model instance on the same arrays for every candidate
(:mod:`zslbench.search`). For a generative method most candidates differ only in the final
classifier's hyperparameters, and re-training the generator for each would multiply the cost by
the number of candidates. A hand-rolled cache keyed on a list of the parameters its stage is
*believed* to read is fragile: a parameter left off such a list silently reuses a stale
generator. Here the key is derived from the declaration, and the declaration is enforced:
while a stage runs, reading a hyperparameter it does not declare raises :class:`StageReadError`,
so a stage cannot depend on a value that its key ignores.

A :class:`StagedModel` declares::

    stages = (Stage("gan", reads=("nz", "ngh", "lr", ...)),
              Stage("classifier", reads=("syn_num", "classifier_lr", ...), after=("gan",)))

and implements ``begin_fit(inputs)`` (per-fit context, recomputed on every fit: tensors on the
device, say), one ``fit_<stage>(context, **upstream)`` per stage (``upstream``: the outputs of the
stages named in ``after``), and ``end_fit(context, outputs)`` (sets the fitted attributes).
``random_state`` and ``device`` are read by every stage implicitly.

A stage's output is reused when the training arrays are the *same objects* as in the previous
fit (the search passes the very same arrays; a new array, even with equal contents, refits), the
class semantics and class ids are equal, every hyperparameter it reads is equal, and every stage
it comes after was reused.

A stage that trains for a number of iterations can declare that count as resumable
(``Stage("sgd", reads=("lr", "epochs"), resumes="epochs")``). When a refit differs from the cached
one only by a *larger* count, the harness calls ``fit_<stage>(context, resume=previous_output,
**upstream)`` and the stage continues from there instead of starting over; with a smaller count it
fits afresh (``resume=None``). Why: a search walks an epochs grid in increasing order, and
continuing makes the whole grid cost its largest value once. The stage must then return exactly
what a fresh fit of that count returns (its random stream included, so its output carries the
stream's state), and must not modify ``previous_output``, which stays cached.

``zslbench.testing.check_model`` checks that a refit after any hyperparameter change equals a
fresh fit, resumed refits included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from zslbench.model import FitInputs, Model
from zslbench.progress import stage as progress_stage

#: Hyperparameters the harness injects: every stage reads them.
IMPLICIT_READS = ("random_state", "device")


@dataclass(frozen=True)
class Stage:
    """One stage of a :class:`StagedModel`: its name (``fit_<name>`` fits it, and its wall time
    is reported under that name), the hyperparameters it reads, the stages whose outputs it
    takes, and optionally the iteration count it can resume from."""

    name: str
    reads: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    #: An integer hyperparameter among ``reads`` that counts the stage's iterations: a refit
    #: with a larger count continues the cached output (module docstring).
    resumes: str | None = None


class StageReadError(RuntimeError):
    """A stage read a hyperparameter that its :class:`Stage` does not declare: a bug in the
    model, which would make the search reuse a stale stage."""


_PARAM_SETS: dict[type, frozenset[str]] = {}


def _param_set(cls: type[Any]) -> frozenset[str]:
    """The hyperparameter names of ``cls``, computed once per class (read on every attribute
    access of a model while a stage runs)."""
    names = _PARAM_SETS.get(cls)
    if names is None:
        names = _PARAM_SETS[cls] = frozenset(cls._param_names())
    return names


class StagedModel(Model):
    """A model fitted in declared :attr:`stages` (see the module docstring)."""

    stages: ClassVar[tuple[Stage, ...]] = ()

    # -- what a subclass implements -----------------------------------------------------------
    def begin_fit(self, inputs: FitInputs) -> Any:
        """Per-fit context handed to every stage (default: the checked inputs)."""
        return inputs

    def end_fit(self, context: Any, outputs: Mapping[str, Any]) -> None:
        """Set the fitted attributes from the stages' outputs."""
        raise NotImplementedError

    # -- the harness's part -------------------------------------------------------------------
    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        seen: set[str] = set()
        for st in cls.stages:
            unknown = [a for a in st.after if a not in seen]
            if unknown:
                raise TypeError(
                    f"{cls.__name__}: stage {st.name!r} comes after {unknown}, "
                    "which are not declared before it"
                )
            if st.resumes is not None and st.resumes not in st.reads:
                raise TypeError(
                    f"{cls.__name__}: stage {st.name!r} resumes {st.resumes!r}, "
                    "which is not among its reads"
                )
            seen.add(st.name)

    def __getattribute__(self, name: str) -> Any:
        allowed = object.__getattribute__(self, "__dict__").get("_stage_allowed")
        if allowed is not None and name not in allowed and name in _param_set(type(self)):
            current = object.__getattribute__(self, "__dict__")["_stage_running"]
            raise StageReadError(
                f"{type(self).__name__}: stage {current!r} read hyperparameter {name!r}, which "
                f"its Stage does not declare; add it to Stage({current!r}, reads=...) so that "
                "a refit with another value does not reuse a stale stage"
            )
        return object.__getattribute__(self, name)

    def fit(
        self,
        features: np.ndarray,
        labels: np.ndarray,
        class_semantics: np.ndarray,
        classes: np.ndarray,
    ) -> StagedModel:
        self.check_params()
        inputs = self.check_fit_inputs(
            features,
            labels,
            class_semantics,
            classes,
            who=getattr(self, "name", type(self).__name__),
        )
        context = self.begin_fit(inputs)
        data_key = (inputs.class_semantics.tobytes(), inputs.classes.tobytes())
        cache_ = self.__dict__.setdefault("_stage_cache", {})
        params = self.get_params()
        outputs: dict[str, Any] = {}
        reused: dict[str, bool] = {}
        for st in self.stages:
            reads = tuple(dict.fromkeys((*st.reads, *IMPLICIT_READS)))
            keyed = tuple(r for r in reads if r != st.resumes)
            key = (data_key, tuple((r, repr(params.get(r))) for r in keyed))
            count = None if st.resumes is None else int(params[st.resumes])
            hit = cache_.get(st.name)
            same = (
                hit is not None
                and hit[0] is features
                and hit[1] is labels
                and hit[2] == key
                and all(reused[a] for a in st.after)
            )
            if same and hit[4] == count:
                outputs[st.name], reused[st.name] = hit[3], True
                continue
            kwargs = {a: outputs[a] for a in st.after}
            if st.resumes is not None:
                kwargs["resume"] = hit[3] if same and hit[4] < count else None
            self.__dict__["_stage_allowed"] = frozenset(reads)
            self.__dict__["_stage_running"] = st.name
            try:
                with progress_stage(st.name):
                    out = getattr(self, f"fit_{st.name}")(context, **kwargs)
            finally:
                self.__dict__.pop("_stage_allowed", None)
                self.__dict__.pop("_stage_running", None)
            # the arrays are kept alive with the output, so their ids are never reused
            cache_[st.name] = (features, labels, key, out, count)
            outputs[st.name], reused[st.name] = out, False
        self.end_fit(context, outputs)
        return self


__all__ = ["IMPLICIT_READS", "Stage", "StageReadError", "StagedModel"]
