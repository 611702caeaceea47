"""Harness-owned staged fitting (``zslbench.stages``, issue 17) and ``check_model``'s refit check.

What is pinned down: a stage is reused across refits on the same arrays while nothing it declares
changes, and refitted otherwise (and so is every stage after it); a stage that reads an undeclared
hyperparameter stops the fit, naming it; and ``check_refit`` catches a hand-rolled cache keyed on
an allowlist that misses a hyperparameter (the bug f-CLSWGAN's ``_gan_cache`` invited)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zslbench.model import Model
from zslbench.stages import Stage, StagedModel, StageReadError
from zslbench.testing import check_refit, toy_problem
from zslbench_plugins.fclswgan import WGANGenerator
from zslbench_plugins.generative import GenerativeModel

TINY = dict(
    ngh=16,
    ndh=16,
    nepoch=2,
    batch_size=16,
    critic_iter=1,
    pretrain_epochs=1,
    syn_num=10,
    classifier_epochs=2,
    random_state=0,
)


def _arrays():
    p = toy_problem(0)
    return (
        p["features"][p["train"]],
        p["labels"][p["train"]],
        p["attributes"],
        p["classes"],
        p["features"][p["test"]],
    )


class Counting(StagedModel):
    """Two stages: a class-mean "encoder" (reads ``shift``) and a scale (reads ``scale``)."""

    name = "counting"
    stages = (
        Stage("encode", reads=("shift",)),
        Stage("score", reads=("scale",), after=("encode",)),
    )

    def __init__(
        self,
        shift: float = 0.0,
        scale: float = 1.0,
        sneaky: float = 0.0,
        random_state: int | None = None,
    ) -> None:
        self.shift = shift
        self.scale = scale
        self.sneaky = sneaky
        self.random_state = random_state
        self.calls: list[str] = []

    def fit_encode(self, inputs):
        self.calls.append("encode")
        return np.asarray(inputs.features, dtype=np.float64).mean(0) + self.shift

    def fit_score(self, inputs, encode):
        self.calls.append("score")
        return encode * self.scale

    def end_fit(self, inputs, outputs):
        self.w_ = outputs["score"]
        self.classes_ = inputs.classes

    def decision_function(self, features):
        return np.outer(
            np.asarray(features, dtype=np.float64) @ self.w_, np.ones(len(self.classes_))
        )


def test_a_stage_is_reused_while_nothing_it_reads_changes():
    x, y, sem, cls, _ = _arrays()
    m = Counting()
    m.fit(x, y, sem, cls)
    m.set_params(scale=2.0).fit(x, y, sem, cls)  # only the second stage reads scale
    assert m.calls == ["encode", "score", "score"]
    m.set_params(shift=1.0).fit(x, y, sem, cls)  # the first stage and everything after it
    assert m.calls[3:] == ["encode", "score"]
    m.fit(x.copy(), y, sem, cls)  # other arrays (equal contents): refit, never assume
    assert m.calls[5:] == ["encode", "score"]
    m.fit(x.copy(), y, sem, cls)
    assert m.calls[7:] == ["encode", "score"]
    m.set_params(random_state=3).fit(x, y, sem, cls)  # injected: every stage reads it
    assert m.calls[9:] == ["encode", "score"]


def test_a_stage_that_reads_an_undeclared_hyperparameter_stops_the_fit():
    class Sneaky(Counting):
        def fit_score(self, inputs, encode):
            return encode * self.scale + self.sneaky

    x, y, sem, cls, _ = _arrays()
    with pytest.raises(StageReadError, match="stage 'score' read hyperparameter 'sneaky'"):
        Sneaky().fit(x, y, sem, cls)


def test_stages_must_come_after_declared_stages():
    with pytest.raises(TypeError, match="comes after"):

        class Bad(StagedModel):  # noqa: F841
            stages = (Stage("b", after=("a",)), Stage("a"))


class Walk(StagedModel):
    """A seeded random walk of ``steps`` steps that can resume: its output carries the stream."""

    name = "walk"
    stages = (Stage("walk", reads=("steps", "size"), resumes="steps"),)

    def __init__(
        self,
        steps: int = 3,
        size: float = 1.0,
        random_state: int | None = 0,
        resume_bug: bool = False,
    ) -> None:
        self.steps = steps
        self.size = size
        self.random_state = random_state
        self.resume_bug = resume_bug
        self.log: list[tuple[int, int]] = []  # (resumed from, steps)

    def fit_walk(self, inputs, resume=None):
        if resume is None:
            rng = np.random.default_rng(self.random_state)
            start = {
                "pos": np.zeros(inputs.features.shape[1]),
                "rng": rng.bit_generator.state,
                "done": 0,
            }
        else:
            start = resume
        rng = np.random.default_rng()
        rng.bit_generator.state = start["rng"]
        pos = start["pos"].copy()
        for _ in range(start["done"], int(self.steps)):
            pos += self.size * rng.standard_normal(len(pos))
        if self.__dict__["resume_bug"]:  # forgets the stream: a resumed fit drifts
            rng = np.random.default_rng(self.random_state)
        self.log.append((start["done"], int(self.steps)))
        return {"pos": pos, "rng": rng.bit_generator.state, "done": int(self.steps)}

    def end_fit(self, inputs, outputs):
        self.w_ = outputs["walk"]["pos"]
        self.classes_ = inputs.classes

    def decision_function(self, features):
        return np.outer(
            np.asarray(features, dtype=np.float64) @ self.w_,
            np.arange(1, len(self.classes_) + 1, dtype=np.float64),
        )


def test_a_resumable_stage_continues_from_fewer_iterations_and_equals_a_fresh_fit():
    x, y, sem, cls, test = _arrays()
    m = Walk(steps=2)
    m.fit(x, y, sem, cls)
    m.set_params(steps=5).fit(x, y, sem, cls)  # continues 2 -> 5
    m.set_params(steps=5).fit(x, y, sem, cls)  # same count: reused, not refitted
    m.set_params(steps=3).fit(x, y, sem, cls)  # fewer: a fresh fit
    m.set_params(size=2.0).fit(x, y, sem, cls)  # another read changed: a fresh fit
    m.fit(x.copy(), y, sem, cls)  # other arrays: a fresh fit
    assert m.log == [(0, 2), (2, 5), (0, 3), (0, 3), (0, 3)]
    m.set_params(size=1.0, steps=2).fit(x, y, sem, cls)
    resumed = m.set_params(steps=7).fit(x, y, sem, cls).decision_function(test)
    assert m.log[-1] == (2, 7)
    np.testing.assert_array_equal(
        resumed, Walk(steps=7).fit(x, y, sem, cls).decision_function(test)
    )


def test_check_refit_finds_a_resume_that_is_not_a_fresh_fit():
    with pytest.raises(AssertionError, match="'steps'"):
        check_refit(Walk(steps=3, resume_bug=True))
    check_refit(Walk(steps=3))


def test_a_resumable_count_must_be_read():
    with pytest.raises(TypeError, match="not among its reads"):

        class Bad(StagedModel):  # noqa: F841
            stages = (Stage("a", reads=("lr",), resumes="epochs"),)


class AllowlistCache(Model):
    """A hand-rolled cache keyed on an allowlist that forgets ``offset``: the stale-stage bug."""

    name = "allowlist"

    def __init__(self, scale: float = 1.0, offset: float = 0.0) -> None:
        self.scale = scale
        self.offset = offset

    def fit(self, features, labels, class_semantics, classes):
        key = (id(features), self.scale)  # offset missing
        if getattr(self, "_key", None) != key:
            self._w = np.asarray(features, dtype=np.float64).mean(0) * self.scale + self.offset
            self._key = key
        self.w_, self.classes_ = self._w, np.asarray(classes)
        return self

    def decision_function(self, features):
        s = np.asarray(features, dtype=np.float64) @ self.w_
        return np.outer(s, np.arange(1, len(self.classes_) + 1, dtype=np.float64))


def test_check_refit_finds_a_stale_cache_and_names_the_hyperparameter():
    with pytest.raises(AssertionError, match="'offset'"):
        check_refit(AllowlistCache())


def FCLSWGAN(generator: type = WGANGenerator, **params) -> GenerativeModel:  # noqa: N802
    return GenerativeModel.with_generator(generator, **params)


def test_fclswgan_refits_its_gan_for_a_gan_hyperparameter_and_not_for_a_classifier_one():
    torch.set_num_threads(1)
    x, y, sem, cls, test = _arrays()
    m = FCLSWGAN(**TINY)
    m.fit(x, y, sem, cls)
    gan = m.generator_
    m.set_params(syn_num=12).fit(x, y, sem, cls)
    assert m.generator_ is gan  # a classifier candidate reuses the GAN
    m.set_search_params(**{"generator.lambda1": 3.0}).fit(x, y, sem, cls)
    assert m.generator_ is not gan
    fresh = FCLSWGAN(**{**TINY, "syn_num": 12, "lambda1": 3.0}).fit(x, y, sem, cls)
    assert np.array_equal(m.decision_function(test), fresh.decision_function(test))


def test_a_new_generator_hyperparameter_cannot_reuse_a_stale_generator():
    """The allowlist of the old ``_gan_cache`` had to be kept by hand: a subclass that adds a
    GAN hyperparameter and forgets it there got a stale GAN. Now the generator stage reads the
    whole generator component (its every constructor parameter), so a new one needs no
    declaration: changing it refits the generator."""

    class Scaled(WGANGenerator):
        # explicit parameters, as the component contract asks (clone rebuilds from them)
        def __init__(
            self,
            critic_scale: float = 1.0,
            ngh: int = 16,
            ndh: int = 16,
            nepoch: int = 2,
            batch_size: int = 16,
            critic_iter: int = 1,
            pretrain_epochs: int = 1,
        ):
            super().__init__(
                ngh=ngh,
                ndh=ndh,
                nepoch=nepoch,
                batch_size=batch_size,
                critic_iter=critic_iter,
                pretrain_epochs=pretrain_epochs,
            )
            self.critic_scale = critic_scale

    x, y, sem, cls, test = _arrays()
    m = FCLSWGAN(Scaled, **TINY)
    m.fit(x, y, sem, cls)
    gan = m.generator_
    m.set_params(syn_num=11).fit(x, y, sem, cls)
    assert m.generator_ is gan
    m.set_search_params(**{"generator.critic_scale": 2.0}).fit(x, y, sem, cls)
    assert m.generator_ is not gan


def test_a_classifier_stage_cannot_read_the_generator_hyperparameters():
    """The classifier stage declares the classifier's settings only: reading ``generator``
    inside it stops the fit, naming it."""

    class Peeking(GenerativeModel):
        def fit_classifier(self, ctx, generator):
            _ = self.generator
            return super().fit_classifier(ctx, generator)

    x, y, sem, cls, _ = _arrays()
    gen_params = {k: v for k, v in TINY.items() if k in WGANGenerator._param_names()}
    with pytest.raises(StageReadError, match="'generator'"):
        Peeking(WGANGenerator(**gen_params), syn_num=10).fit(x, y, sem, cls)
