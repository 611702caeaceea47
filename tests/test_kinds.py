"""Open component kinds (issue 17): a plugin adds a kind and its hook, as pytest plugins add hooks
with ``pytest_addhooks``; the core declares only family-neutral kinds."""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import invoke_main
from tests.test_registry import write_plugin
from zslbench import registry as registry_mod
from zslbench.errors import PluginError
from zslbench.registry import load_registry

SCORER_PLUGIN = """
    import numpy as np

    from zslbench.components import Component
    from zslbench.hookspecs import Kind, hookimpl
    from zslbench.methods import MethodSpec
    from zslbench.model import Model


    class Scorer(Component):
        '''Scores images against class semantics through a fixed random projection.'''


    class RandomProjection(Scorer):
        name = "randproj"

        def __init__(self, scale: float = 1.0, random_state=None):
            self.scale = scale
            self.random_state = random_state


    class ScorerModel(Model):
        '''A composite model whose one sub-component is of the plugin's own kind.'''

        name = "scorer-model"
        components = {"scorer": "scorer"}

        def __init__(self, scorer=None, random_state=None):
            self.scorer = scorer
            self.random_state = random_state

        def fit(self, features, labels, class_semantics, classes):
            inp = self.check_fit_inputs(features, labels, class_semantics, classes)
            rng = np.random.default_rng(self.random_state)
            self.w_ = self.scorer.scale * rng.standard_normal((features.shape[1],
                                                               inp.class_semantics.shape[1]))
            self.sem_ = inp.class_semantics
            self.classes_ = inp.classes
            return self

        def decision_function(self, features):
            return (np.asarray(features, dtype=np.float64) @ self.w_) @ self.sem_.T


    @hookimpl
    def zslbench_add_kinds():
        return [Kind("scorer", "zslbench_scorers", doc="Scorer classes.", base=Scorer)]


    @hookimpl
    def zslbench_scorers():
        return [RandomProjection]


    @hookimpl
    def zslbench_models():
        return [ScorerModel]


    @hookimpl
    def zslbench_methods():
        return [MethodSpec("scored", model="scorer-model", components={"scorer": "randproj"},
                           preprocessor="none")]
"""


def test_the_core_declares_only_family_neutral_kinds():
    assert set(registry_mod.KINDS.values()) == {
        "dataset",
        "preprocessor",
        "calibrator",
        "model",
        "method",
        "citation",
    }
    reg = load_registry()  # the prototype pipeline's kinds come from its own plugin
    assert reg.added_kinds["embedder"][0] == "prototype_kinds"
    assert reg.added_kinds["regressor"][0] == "prototype_kinds"
    assert {"bt", "t", "identity"} <= set(reg.names("embedder"))


def test_a_plugin_adds_a_kind_whose_component_a_method_uses(tmp_path, monkeypatch):
    name = write_plugin(tmp_path, monkeypatch, "zsl_scorer_kind", SCORER_PLUGIN)
    reg = load_registry([name])
    assert not reg.problems, reg.problems
    assert reg.names("scorer") == ["randproj"] and "scorer" in reg.component_kinds()
    res = tmp_path / "res"
    out = invoke_main(
        "-p",
        name,
        "run",
        "--method",
        "scored",
        "--dataset",
        "toy",
        "--set",
        "scorer.scale=0.5",
        "--results-dir",
        str(res),
    )
    assert out.exit_code == 0, out.output
    (record,) = [json.loads(p.read_text()) for p in res.glob("*.json")]
    assert record["config"]["components"]["scorer"]["name"] == "randproj"
    assert record["config"]["components"]["scorer"]["params"]["scale"] == 0.5
    listing = invoke_main("-p", name, "list")
    assert "scorer" in listing.stdout and "randproj" in listing.stdout


@pytest.mark.parametrize(
    "kinds, says",
    [
        (
            '[Kind("embedder", "zslbench_embedders2")]',
            "already declared by plugin 'prototype_kinds'",
        ),
        ('[Kind("mine", "zslbench_models")]', "already declared by zslbench itself"),
        ('[Kind("Bad Kind", "zslbench_bad")]', "a kind is a lower-case identifier"),
        ('[Kind("fine", "no_prefix")]', "starts with 'zslbench_'"),
        ('["generator"]', "not a zslbench.hookspecs.Kind"),
    ],
)
def test_a_bad_or_clashing_kind_is_one_line_and_the_rest_work(tmp_path, monkeypatch, kinds, says):
    name = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_bad_kind",
        f"""
        from zslbench.hookspecs import Kind, hookimpl

        @hookimpl
        def zslbench_add_kinds():
            return {kinds}
    """,
    )
    reg = load_registry([name])
    lines = [p for p in reg.problems if "zsl_bad_kind" in p]
    assert len(lines) == 1 and says in lines[0], reg.problems
    assert "bt" in reg.names("embedder")  # the built-in kinds still work
    with pytest.raises(PluginError):
        load_registry([name], strict=True)


def test_a_component_not_of_the_kinds_base_class_is_refused(tmp_path, monkeypatch):
    name = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_wrong_base",
        """
        from zslbench.components import Component
        from zslbench.hookspecs import hookimpl

        class NotAnEmbedder(Component):
            name = "imposter"

        @hookimpl
        def zslbench_embedders():
            return [NotAnEmbedder]
    """,
    )
    reg = load_registry([name])
    assert "imposter" not in reg.names("embedder")
    (line,) = [p for p in reg.problems if "zsl_wrong_base" in p]
    assert "not a subclass of Embedder" in line


GENERATOR_PLUGIN = """
    import torch

    from zslbench.hookspecs import hookimpl
    from zslbench.methods import MethodSpec
    from zslbench_plugins.generative import FeatureGenerator


    class LinearGenerator(FeatureGenerator):
        '''Class means regressed on attributes by ridge, plus Gaussian noise: the whole method.
        The shared ``generative`` model adds seeds, staged fitting, the softmax and the audit.'''

        name = "linear-gen"
        classifier_defaults = {"syn_num": 50, "seen_num": None, "classifier_lr": 1e-3,
                               "classifier_beta1": 0.5, "classifier_epochs": 6,
                               "classifier_batch_size": None, "classifier_init": "normal",
                               "classifier_batches": "stream"}
        classifier_search = {"syn_num": (20, 50)}
        official_selection = "best test H over the classifier's epochs (as its paper's code)"

        def __init__(self, ridge: float = 1.0, noise: float = 0.1):
            self.ridge = ridge
            self.noise = noise

        def fit(self, x, y, att, seen_columns, seed):
            means = torch.stack([x[y == c].mean(0) for c in seen_columns.tolist()])
            a = att[seen_columns]
            eye = torch.eye(a.shape[1], device=a.device)
            self.w_ = torch.linalg.solve(a.T @ a + self.ridge * eye, a.T @ means)
            return self

        def synthesise(self, att_rows, gen):
            mean = att_rows @ self.w_
            return mean + self.noise * torch.randn(mean.shape, generator=gen,
                                                   device=mean.device)


    @hookimpl
    def zslbench_generators():
        return [LinearGenerator]


    @hookimpl
    def zslbench_methods():
        return [MethodSpec("linear-gen", model="generative",
                           components={"generator": "linear-gen"}, preprocessor="minmax")]
"""


def test_a_third_party_generator_is_a_whole_generative_method(tmp_path, monkeypatch):
    """A generator component of ~25 lines, registered through the ``generator`` kind that the
    built-in ``generative`` plugin adds, runs end to end: searched classifier settings, its own
    hyperparameters under ``generator.``, and the selection audit its rule asks for."""
    name = write_plugin(tmp_path, monkeypatch, "zsl_linear_gen", GENERATOR_PLUGIN)
    reg = load_registry([name])
    assert not reg.problems, reg.problems
    assert "linear-gen" in reg.names("generator")
    from zslbench.testing import check_model
    from zslbench_plugins.generative import GenerativeModel

    gen_cls = reg.get("generator", "linear-gen").obj
    check_model(GenerativeModel.with_generator(gen_cls, ridge=0.1))
    res = tmp_path / "res"
    out = invoke_main(
        "-p",
        name,
        "run",
        "--method",
        "linear-gen",
        "--dataset",
        "toy",
        "--set",
        "generator.ridge=0.5",
        "--results-dir",
        str(res),
    )
    assert out.exit_code == 0, out.output
    (record,) = [json.loads(p.read_text()) for p in res.glob("*.json")]
    assert record["config"]["components"]["generator"]["params"]["ridge"] == 0.5
    assert [t["params"] for t in record["search"]["tried"]] == [{"syn_num": 20}, {"syn_num": 50}]
    audit = record["selection_audit"]
    assert audit["clean_H"] == record["metrics"]["H"] == audit["H_by_epoch"][-1]
    assert len(audit["H_by_epoch"]) == 6 and "paper's code" in audit["rule"]
