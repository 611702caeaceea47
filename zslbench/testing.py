"""``check_model``: the model contract as a test a plugin's own test suite calls.

Like scikit-learn's ``check_estimator``::

    from zslbench.testing import check_model
    from my_package.zsl_plugin import MyModel

    def test_my_model_follows_the_contract():
        check_model(MyModel(epochs=3))

It fits the model on a small synthetic GZSL problem and raises one ``AssertionError`` naming every
broken rule. Each rule is also a check of its own (:func:`model_checks`), and
:func:`parametrize_with_checks` gives each its own pytest id, as scikit-learn's
``parametrize_with_checks`` does, so that one broken rule does not hide the others:

* the scikit-learn conventions: hyperparameters stored unchanged, ``get_params`` round-trips
  through ``set_params`` and the constructor, ``clone`` gives an unfitted equal-parameter copy,
  ``fit`` returns ``self`` and learns attributes ending in ``_``;
* ``decision_function`` returns finite float scores of shape (images, classes), one column per
  entry of ``classes`` in that order (``classes_``);
* determinism: two fits with the same ``random_state`` give identical scores;
* no test data reaches ``fit``: ``fit`` gets read-only arrays and must not write into them, and
  ``decision_function`` is pure - scoring other images in between, or the same images in another
  batch grouping, does not change any image's scores;
* the unseen classes are scored: images of an unseen class are not all ranked below every seen
  class (a model that ignores the unseen semantics fails here);
* a refit equals a fresh fit (``refit=True``, the default): on one fitted instance, each
  hyperparameter in turn (every other value of the search space, and a nudge of every numeric
  hyperparameter, sub-components' included) is changed with ``set_search_params`` and the model
  refitted on the very same arrays, as the search does; its scores must equal those of a fresh
  instance fitted with the same values. A cache that reuses fitted state it should have
  recomputed (a stale stage) fails here, naming the hyperparameter;
* with ``device_discipline=True``: every tensor names its device. The model is fitted and scored
  with ``device="cpu"`` while torch's default device is ``meta``, so a factory call that names no
  device makes a tensor with no data and the fit fails. On a CPU such a tensor is silently right;
  on a GPU it fails or copies data every step, and this check finds it without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zslbench.components import Component
from zslbench.model import Model


def toy_problem(
    seed: int = 0,
    n_seen: int = 6,
    n_unseen: int = 3,
    dim: int = 32,
    att_dim: int = 12,
    per_class: int = 30,
) -> dict[str, np.ndarray]:
    """A small separable GZSL problem: non-negative features whose class means are a linear map
    of the classes' (non-negative) attributes, as in xlsa17."""
    rng = np.random.default_rng(seed)
    n_cls = n_seen + n_unseen
    att = np.abs(rng.standard_normal((n_cls, att_dim))) + 0.1
    att /= np.linalg.norm(att, axis=1, keepdims=True)
    mix = rng.standard_normal((att_dim, dim))
    means = np.maximum(att @ mix * 3.0 + 1.0, 0.0)
    labels = np.repeat(np.arange(n_cls), per_class)
    feats = np.maximum(means[labels] + 0.3 * rng.standard_normal((len(labels), dim)), 0.0)
    seen = labels < n_seen
    train = np.flatnonzero(seen)[::2]
    test = np.setdiff1d(np.arange(len(labels)), train)
    return {
        "features": feats.astype(np.float32),
        "labels": labels.astype(np.int64),
        "attributes": att.astype(np.float32),
        "train": train,
        "test": test,
        "classes": np.arange(n_cls, dtype=np.int64),
        "n_seen": np.int64(n_seen),
    }


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _fit(model: Model, p: dict[str, np.ndarray]) -> Model:
    x = _readonly(p["features"][p["train"]])
    y = _readonly(p["labels"][p["train"]])
    sem = _readonly(p["attributes"][p["classes"]])
    cls = _readonly(p["classes"])
    out = model.fit(x, y, sem, cls)
    assert out is model, f"{type(model).__name__}.fit must return self"
    return model


def _with_seed(model: Model, seed: int) -> Model:
    """A clone with ``random_state`` set on it and on its sub-components, as the harness does."""
    m = model.clone()
    for comp in [m, *(v for v in m.get_params().values() if isinstance(v, Component))]:
        if "random_state" in comp.get_params():
            comp.set_params(random_state=seed)
    return m


class _Context:
    """What the checks of one model share: the problem, the seed, and fits made once on demand
    (a check that needs a fitted model fits it here; a fit that fails fails every such check)."""

    def __init__(
        self, model: Model, seed: int, problem: dict[str, Any] | None, atol: float
    ) -> None:
        self.model, self.seed, self.atol = model, seed, atol
        self.name = type(model).__name__
        self.p = problem or toy_problem(seed)
        self.test = _readonly(self.p["features"][self.p["test"]])
        self._fitted: Model | None = None
        self._scores: np.ndarray | None = None

    def fresh_fit(self) -> Model:
        return _fit(_with_seed(self.model, self.seed), self.p)

    @property
    def fitted(self) -> Model:
        if self._fitted is None:
            self._fitted = self.fresh_fit()
        return self._fitted

    @property
    def scores(self) -> np.ndarray:
        if self._scores is None:
            self._scores = np.asarray(self.fitted.decision_function(self.test))
        return self._scores


def _check_is_a_named_model(c: _Context) -> None:
    assert isinstance(c.model, Model), f"{c.name} is not a zslbench.model.Model"
    assert isinstance(getattr(type(c.model), "name", None), str) and type(c.model).name, (
        f"{c.name} needs a non-empty class attribute 'name' (its registered name)"
    )


def _check_init_stores_hyperparameters(c: _Context) -> None:
    """The very objects given to the constructor are what it stores (scikit-learn's rule)."""
    params = c.model.get_params()
    rebuilt = type(c.model)(**params)
    for key, value in params.items():
        assert getattr(rebuilt, key) is value, f"{c.name}.__init__ must store {key!r} unchanged"


def _check_params_round_trip(c: _Context) -> None:
    params = c.model.get_params()
    rebuilt = type(c.model)(**params)
    assert _same_params(rebuilt.get_params(), params), (
        f"{c.name}(**get_params()) changes parameters"
    )
    twin = c.model.clone()
    twin.set_params(**{k: v for k, v in params.items() if not isinstance(v, Component)})
    assert _same_params(twin.get_params(), params), f"{c.name}.set_params changes parameters"
    twin.check_params()


def _check_clone_is_unfitted_and_equal(c: _Context) -> None:
    twin = c.fitted.clone()
    assert type(twin) is type(c.model) and _same_params(twin.get_params(), c.fitted.get_params()), (
        f"{c.name}.clone() must keep the hyperparameters"
    )
    assert not [k for k in vars(twin) if k.endswith("_") and not k.startswith("_")], (
        f"{c.name}.clone() must return an unfitted copy"
    )


def _check_fit_learns_attributes(c: _Context) -> None:
    a = c.fitted
    assert [k for k in vars(a) if k.endswith("_") and not k.startswith("_")], (
        f"{c.name}.fit learned no attribute ending in '_'"
    )
    classes = c.p["classes"]
    assert np.array_equal(np.asarray(getattr(a, "classes_", classes)), classes), (
        f"{c.name}.classes_ must be the classes passed to fit, in that order"
    )


def _check_scores_shape_and_values(c: _Context) -> None:
    s, want = c.scores, (len(c.test), len(c.p["classes"]))
    assert s.shape == want, f"{c.name}.decision_function returned {s.shape}, expected {want}"
    assert np.issubdtype(s.dtype, np.floating), f"{c.name}.decision_function must return floats"
    assert np.isfinite(s).all(), f"{c.name}.decision_function returned NaN or infinite scores"


def _check_scoring_is_pure(c: _Context) -> None:
    """Other images in between, and another batch grouping, change no image's scores."""
    s = c.scores
    c.fitted.decision_function(_readonly(c.p["features"][c.p["train"]]))
    half = len(c.test) // 2
    again = np.vstack(
        [c.fitted.decision_function(c.test[:half]), c.fitted.decision_function(c.test[half:])]
    )
    assert np.allclose(s, again, rtol=1e-5, atol=1e-6), (
        f"{c.name}.decision_function is not pure: an image's scores depend on the other images"
    )


def _check_deterministic_under_a_seed(c: _Context) -> None:
    s_b = np.asarray(c.fresh_fit().decision_function(c.test))
    assert np.allclose(c.scores, s_b, rtol=0, atol=c.atol), (
        f"{c.name}: two fits with random_state={c.seed} gave different scores"
    )


def _check_unseen_classes_are_scored(c: _Context) -> None:
    n_seen = int(c.p["n_seen"])
    unseen_rows = c.p["labels"][c.p["test"]] >= n_seen
    top = c.scores[unseen_rows].argmax(axis=1)
    assert (top >= n_seen).any(), f"{c.name} never ranks an unseen class first for unseen images"


def _check_refit_equals_a_fresh_fit(c: _Context) -> None:
    check_refit(c.model, seed=c.seed, problem=c.p, atol=c.atol)


def _check_every_tensor_names_its_device(c: _Context) -> None:
    check_device_discipline(c.model, seed=c.seed, problem=c.p)


#: The checks, in the order ``check_model`` runs them; each fails on its own.
CHECKS: tuple[Callable[[_Context], None], ...] = (
    _check_is_a_named_model,
    _check_init_stores_hyperparameters,
    _check_params_round_trip,
    _check_fit_learns_attributes,
    _check_clone_is_unfitted_and_equal,
    _check_scores_shape_and_values,
    _check_scoring_is_pure,
    _check_deterministic_under_a_seed,
    _check_unseen_classes_are_scored,
    _check_refit_equals_a_fresh_fit,
    _check_every_tensor_names_its_device,
)
#: Checks that only run when asked for (``device_discipline=True``) or unless turned off
#: (``refit=False``).
_OPTIONAL = {
    "every_tensor_names_its_device": "device_discipline",
    "refit_equals_a_fresh_fit": "refit",
}


@dataclass(frozen=True)
class ModelCheck:
    """One named check of the model contract, bound to its settings: ``check(model)`` runs it
    on a fresh context (its own fits), ``AssertionError`` when the rule is broken."""

    name: str
    fn: Callable[[_Context], None]
    seed: int = 0
    problem: dict[str, Any] | None = None
    atol: float = 0.0

    def __call__(self, model: Model) -> None:
        self.fn(_Context(model, self.seed, self.problem, self.atol))

    def __repr__(self) -> str:  # the pytest id
        return self.name


def model_checks(
    *,
    seed: int = 0,
    problem: dict[str, Any] | None = None,
    atol: float = 0.0,
    device_discipline: bool = False,
    refit: bool = True,
) -> list[ModelCheck]:
    """Every check ``check_model`` would run with these settings, each callable alone."""
    wanted = {"device_discipline": device_discipline, "refit": refit}
    out = []
    for fn in CHECKS:
        name = fn.__name__.removeprefix("_check_")
        if name in _OPTIONAL and not wanted[_OPTIONAL[name]]:
            continue
        out.append(ModelCheck(name, fn, seed, problem, atol))
    return out


def parametrize_with_checks(models: list[Model], **settings: Any) -> Any:
    """A ``pytest.mark.parametrize("model, check", ...)`` over every model and every check, each
    its own test id (``MyModel-scoring_is_pure``), as scikit-learn's::

        @parametrize_with_checks([MyModel(epochs=3)])
        def test_contract(model, check):
            check(model)

    ``settings`` are those of :func:`model_checks`."""
    import pytest

    pairs = [(m, chk) for m in models for chk in model_checks(**settings)]
    return pytest.mark.parametrize(
        ("model", "check"), pairs, ids=[f"{type(m).__name__}-{chk.name}" for m, chk in pairs]
    )


def check_model(
    model: Model,
    *,
    seed: int = 0,
    problem: dict[str, Any] | None = None,
    atol: float = 0.0,
    device_discipline: bool = False,
    refit: bool = True,
) -> None:
    """Run every check on ``model`` (an unfitted instance); one ``AssertionError`` listing every
    check that failed (each is run even when another failed). ``atol`` allows tiny differences
    between repeated fits for models that use non-deterministic kernels (keep it 0 on the CPU).
    ``device_discipline`` adds the meta-device check, ``refit`` the refit check (module
    docstring). One context is shared, so the model is fitted as few times as the checks need."""
    context = _Context(model, seed, problem, atol)
    failed = []
    for check in model_checks(
        seed=seed, problem=problem, atol=atol, device_discipline=device_discipline, refit=refit
    ):
        try:
            check.fn(context)
        except AssertionError as exc:
            failed.append(f"[{check.name}] {exc}")
    if failed:
        raise AssertionError("\n".join(failed))


#: Hyperparameters a refit check leaves alone: the harness injects them.
_INJECTED = ("random_state", "device")


def _changes(model: Model) -> list[tuple[str, Any]]:
    """``(key, new value)`` for the refit check: every other value of each searched
    hyperparameter, then a nudge of each numeric one (``role.param`` for sub-components)."""
    out: list[tuple[str, Any]] = []
    for key, values in model.full_search_space().items():
        role, dot, param = key.partition(".")
        current = getattr(getattr(model, role), param) if dot else getattr(model, key)
        out += [(key, v) for v in values if not _same_value(v, current)][:2]
    owners: list[tuple[str, Component]] = [("", model)]
    owners += [
        (f"{role}.", getattr(model, role))
        for role in type(model).components
        if isinstance(getattr(model, role, None), Component)
    ]
    for prefix, comp in owners:
        for param, value in comp.get_params().items():
            if param in _INJECTED or isinstance(value, bool) or f"{prefix}{param}" in dict(out):
                continue
            if isinstance(value, int):
                out.append((f"{prefix}{param}", value + 1))
            elif isinstance(value, float):
                out.append((f"{prefix}{param}", value * 1.5 if value else 0.5))
    return out


def _same_value(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # arrays and the like
        return a is b


def check_refit(
    model: Model, *, seed: int = 0, problem: dict[str, Any] | None = None, atol: float = 0.0
) -> None:
    """A refit after changing one hyperparameter equals a fresh fit with that value, for every
    change of :func:`_changes` that ``check_params`` accepts. The arrays are the same objects in
    every fit, as in the harness's search, so that an identity-keyed cache is exercised."""
    name = type(model).__name__
    p = problem or toy_problem(seed)
    x = _readonly(p["features"][p["train"]])
    y = _readonly(p["labels"][p["train"]])
    sem = _readonly(p["attributes"][p["classes"]])
    cls = _readonly(p["classes"])
    test = _readonly(p["features"][p["test"]])
    m = _with_seed(model, seed)
    m.fit(x, y, sem, cls)
    for key, value in _changes(m):
        role, dot, param = key.partition(".")
        owner = getattr(m, role) if dot else m
        before = getattr(owner, param if dot else key)
        m.set_search_params(**{key: value})
        try:
            m.check_params()
            for comp in (v for v in m.get_params().values() if isinstance(v, Component)):
                comp.check_params()
        except Exception:  # not a valid value for this model: try the next change
            m.set_search_params(**{key: before})
            continue
        refitted = np.asarray(m.fit(x, y, sem, cls).decision_function(test))
        fresh = np.asarray(m.clone().fit(x, y, sem, cls).decision_function(test))
        assert np.allclose(refitted, fresh, rtol=0, atol=atol, equal_nan=True), (
            f"{name}: after set_search_params({key}={value!r}), a refit of the fitted instance "
            f"scores differently from a fresh fit: fitted state that depends on {key!r} was "
            "reused (a stale stage or cache)"
        )


def check_device_discipline(
    model: Model, *, seed: int = 0, problem: dict[str, Any] | None = None
) -> None:
    """Fit and score ``model`` on the CPU with torch's default device set to ``meta``: a tensor
    created without naming its device has no data there, so the fit fails, naming the call.
    ``AssertionError`` says which model and what failed. The scores must equal a plain fit's up
    to float noise."""
    import torch

    name = type(model).__name__
    p = problem or toy_problem(seed)
    test = _readonly(p["features"][p["test"]])
    m = _with_seed(model, seed)
    for comp in [m, *(v for v in m.get_params().values() if isinstance(v, Component))]:
        if "device" in comp.get_params():
            comp.set_params(device="cpu")
    plain = np.asarray(_fit(m.clone(), p).decision_function(test))
    try:
        with torch.device("meta"):
            scores = np.asarray(_fit(m.clone(), p).decision_function(test))
    except (NotImplementedError, RuntimeError) as exc:
        raise AssertionError(
            f"{name}: a tensor names no device (under torch's default device 'meta' the fit "
            f"failed: {type(exc).__name__}: {exc}); pass device= to every factory call "
            f"(device='cpu' for CPU-side draws)"
        ) from exc
    # float noise only: torch's device mode can route an op (e.g. lstsq) through another kernel
    scale = float(np.abs(plain).max()) or 1.0
    assert np.allclose(scores, plain, rtol=1e-5, atol=1e-6 * scale), (
        f"{name}: a tensor names no device (with torch's default device 'meta' the scores "
        f"differ from a plain fit's); pass device= to every factory call"
    )


def _same_params(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, Component) and isinstance(y, Component):
            if type(x) is not type(y) or not _same_params(x.get_params(), y.get_params()):
                return False
        elif not (x is y or x == y):
            return False
    return True
