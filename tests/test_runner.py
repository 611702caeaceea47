"""Seeds, overrides and determinism of the runner."""

from __future__ import annotations

import pytest

from zslbench.errors import ConfigError
from zslbench.protocol import run_protocol
from zslbench.registry import load_registry
from zslbench.runner import derive_seed, parse_overrides, prepare_method, split_names


def test_seed_depends_only_on_its_own_run():
    s = derive_seed(0, "synth-awa2", "bt-gp", 0)
    assert s == derive_seed(0, "synth-awa2", "bt-gp", 0)
    others = {derive_seed(0, "synth-awa2", "bt-gp", 1), derive_seed(0, "synth-awa2", "krr", 0),
              derive_seed(0, "synth-awa1", "bt-gp", 0), derive_seed(1, "synth-awa2", "bt-gp", 0)}
    assert s not in others and len(others) == 4
    assert 0 <= s < 2**31


def test_overrides_parse_values_as_literals():
    assert parse_overrides(["embedder.latent_dim=64", "gp.optimizer=adam", "bt.margin=4.5",
                            "calibrator.x=true", "krr.y=None"]) == {
        "embedder": {"latent_dim": 64}, "gp": {"optimizer": "adam"}, "bt": {"margin": 4.5},
        "calibrator": {"x": True}, "krr": {"y": None}}
    with pytest.raises(ConfigError):
        parse_overrides(["latent_dim=64"])


def test_split_names_accepts_commas_and_repeats():
    assert split_names(("bt-gp,gp", "krr", "gp")) == ["bt-gp", "gp", "krr"]


def test_override_reaches_the_component_by_role_or_by_name():
    reg = load_registry()
    by_role = prepare_method(reg, "bt-gp", parse_overrides(["embedder.episodes=7"]))
    by_name = prepare_method(reg, "bt-gp", parse_overrides(["bt.episodes=7"]))
    assert by_role.params["embedder"]["episodes"] == 7 == by_name.params["embedder"]["episodes"]
    assert by_role.config_id() == by_name.config_id()
    assert by_role.config_id() != prepare_method(reg, "bt-gp", {}).config_id()
    parts = by_role.instantiate(seed=5, device="cpu")
    assert parts.embedder.episodes == 7 and parts.embedder.random_state == 5


def test_a_fixed_seed_gives_identical_metrics_twice_on_cpu():
    reg = load_registry()
    data = reg.get("dataset", "toy").obj.load(None)
    prep = prepare_method(reg, "bt-gp", parse_overrides(["embedder.episodes=40"]))
    runs = [run_protocol(data, prep.instantiate(seed=11, device="cpu"), seed=11) for _ in range(2)]
    a, b = (r.evaluation for r in runs)
    assert {k: a[k] for k in ("A_T", "A_U", "A_S", "H", "AUSUC")} == \
           {k: b[k] for k in ("A_T", "A_U", "A_S", "H", "AUSUC")}
    assert runs[0].gamma == runs[1].gamma
