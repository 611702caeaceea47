"""``zslbench.testing``: the model contract as named checks, each failing on its own."""

from __future__ import annotations

import numpy as np
import pytest

from zslbench.model import Model
from zslbench.testing import check_model, model_checks, parametrize_with_checks


class _Projection(Model):
    """Least-squares map from attributes to class means; scores are negative distances."""

    name = "projection-for-checks"

    def __init__(self, ridge: float = 1e-3, random_state: int | None = None) -> None:
        self.ridge = ridge
        self.random_state = random_state

    def fit(self, features, labels, class_semantics, classes):
        seen = np.unique(labels)
        means = np.stack([features[labels == c].mean(0) for c in seen])
        s = np.asarray(class_semantics)[np.searchsorted(classes, seen)]
        self.map_ = np.linalg.solve(s.T @ s + self.ridge * np.eye(s.shape[1]), s.T @ means)
        self.protos_ = np.asarray(class_semantics) @ self.map_
        self.classes_ = np.asarray(classes)
        return self

    def decision_function(self, features):
        f = np.asarray(features, dtype=np.float64)
        return -((f[:, None, :] - self.protos_[None]) ** 2).sum(-1)


class _Broken(_Projection):
    """Two broken rules: ``ridge`` is not stored as given, and scores depend on the batch."""

    name = "broken-for-checks"

    def __init__(self, ridge: float = 1e-3, random_state: int | None = None) -> None:
        self.ridge = ridge * 1.0  # an equal value, but not the object given
        self.random_state = random_state

    def decision_function(self, features):
        scores = super().decision_function(features)
        return scores - scores.mean()  # another batch, another offset


def test_a_model_that_keeps_the_contract_passes_every_check():
    check_model(_Projection())


def test_every_broken_rule_is_reported_not_only_the_first():
    with pytest.raises(AssertionError) as info:
        check_model(_Broken(ridge=0.5))
    lines = str(info.value).splitlines()
    assert [line.split("]")[0] + "]" for line in lines] == [
        "[init_stores_hyperparameters]",
        "[scoring_is_pure]",
    ]


def test_each_check_runs_alone_and_the_optional_ones_follow_their_switch():
    names = [c.name for c in model_checks()]
    assert "refit_equals_a_fresh_fit" in names and "every_tensor_names_its_device" not in names
    assert "refit_equals_a_fresh_fit" not in [c.name for c in model_checks(refit=False)]
    by_name = {c.name: c for c in model_checks()}
    by_name["init_stores_hyperparameters"](_Projection())
    with pytest.raises(AssertionError, match="must store 'ridge' unchanged"):
        by_name["init_stores_hyperparameters"](_Broken(ridge=0.5))
    by_name["scoring_is_pure"](_Projection())
    with pytest.raises(AssertionError, match="not pure"):
        by_name["scoring_is_pure"](_Broken(ridge=0.5))


@parametrize_with_checks([_Projection()])
def test_parametrize_with_checks_gives_each_check_its_own_test(model, check):
    check(model)


def test_the_parametrized_ids_name_the_model_and_the_check():
    mark = parametrize_with_checks([_Projection(), _Broken()], refit=False)
    ids = mark.kwargs["ids"]
    assert ids[0] == "_Projection-is_a_named_model" and "_Broken-scoring_is_pure" in ids
    assert len(ids) == 2 * len(model_checks(refit=False))
