"""Device discipline (issue 19): every tensor names its device.

On a CPU a tensor created without naming its device is silently right; on a GPU it fails or copies
data every step. With torch's default device set to ``meta`` such a tensor has no data, so the run
fails, naming the call: every built-in method must finish on ``toy`` with ``--device cpu`` there.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.cli_helpers import invoke_main
from zslbench.model import Model
from zslbench.registry import BUILTIN_DISTRIBUTION, load_registry
from zslbench.testing import check_device_discipline

BUILTIN_METHODS = sorted(
    name
    for name, item in load_registry().items["method"].items()
    if item.distribution == BUILTIN_DISTRIBUTION
)


#: Shorter schedules for the slow methods: the check is about which device each tensor names, the
#: same on every epoch or episode (each runs the same code), not about the numbers.
SHORT = {
    "bt-gp": ("bt.episodes=5",),
    "bt-krr": ("bt.episodes=5",),
    "t-gp": ("t.episodes=5",),
    "f-clswgan": (
        "generator.nepoch=2",
        "generator.pretrain_epochs=2",
        "generator.ngh=64",
        "generator.ndh=64",
    ),
    # fewer synthetic features; the classifier's epochs stay searched, every candidate's fit runs
    "cada-vae": ("generator.epochs=3", "model.seen_num=10", "model.syn_num=20"),
    "cnzsl": ("model.hid_dim=64",),  # a narrower net; its epochs stay searched
    "tf-vaegan": (
        "generator.nepoch=1",
        "generator.hidden=64",
        "generator.ngh=64",
        "generator.ndh=64",
        "model.syn_num=20",
        "model.classifier_epochs=2",
    ),
    "free": (
        "generator.nepoch=1",
        "generator.hidden=64",
        "generator.ngh=64",
        "generator.ndh=64",
        "model.syn_num=20",
        "model.classifier_epochs=2",
    ),
    "ce-gzsl": (
        "generator.nepoch=2",
        "generator.ngh=64",
        "generator.ndh=64",
        "generator.embed_size=64",
        "generator.nhF=32",
        "model.syn_num=20",
        "model.classifier_epochs=2",
    ),
    "hsva": (
        "generator.epochs=2",
        "generator.encoder_hidden=64",
        "generator.decoder_hidden=64",
        "generator.coarse_size=64",
        "generator.latent_hidden=64",
        "model.classifier_epochs=2",
    ),
    "sdgzsl": (
        "generator.nepoch=1",
        "generator.hidden=64",
        "generator.s_dim=32",
        "generator.ns_dim=32",
        "model.syn_num=20",
        "model.classifier_epochs=2",
    ),
}


def test_every_builtin_method_is_checked() -> None:
    assert {"bt-gp", "gp", "krr", "cnzsl", "ale", "f-clswgan", "cada-vae"} <= set(BUILTIN_METHODS)


def test_every_generative_method_has_a_short_schedule_here() -> None:
    """At official defaults a generative method takes minutes to hours on toy (TF-VAEGAN's 300
    epochs, CE-GZSL's 2000): a new one without a SHORT entry would stall the suite."""
    reg = load_registry()
    generative = {
        name for name in BUILTIN_METHODS if reg.items["method"][name].obj.model == "generative"
    }
    assert generative <= set(SHORT), f"add {sorted(generative - set(SHORT))} to SHORT"


@pytest.mark.parametrize("method", BUILTIN_METHODS)
def test_a_builtin_method_runs_with_meta_as_the_default_device(method: str, tmp_path) -> None:
    sets = [arg for value in SHORT.get(method, ()) for arg in ("--set", value)]
    with torch.device("meta"):
        out = invoke_main(
            "run",
            "--method",
            method,
            "--dataset",
            "toy",
            "--device",
            "cpu",
            "--seeds",
            "1",
            "--results-dir",
            str(tmp_path),
            *sets,
        )
    assert out.exit_code == 0, out.output
    assert len(list(tmp_path.glob("*.json"))) == 1, out.output


class _Prototypes(Model):
    """Nearest class mean projected on the attributes; ``named`` says whether its tensors name a
    device (the bug this check exists to find when it is False)."""

    name = "prototypes-for-device-check"

    def __init__(self, named: bool = True, random_state: int | None = None) -> None:
        self.named = named
        self.random_state = random_state

    def fit(self, features, labels, class_semantics, classes):
        kw = {"device": "cpu"} if self.named else {}
        x = torch.as_tensor(np.asarray(features), **kw)
        s = torch.as_tensor(np.asarray(class_semantics), **kw)
        seen = np.unique(labels)
        onehot = torch.zeros(len(seen), len(labels), **kw)
        onehot[
            torch.as_tensor(np.searchsorted(seen, labels), **kw), torch.arange(len(labels), **kw)
        ] = 1.0
        means = (onehot @ x) / onehot.sum(1, keepdim=True)
        cols = torch.as_tensor(np.searchsorted(np.asarray(classes), seen), **kw)
        self.map_ = torch.linalg.lstsq(s[cols], means).solution.numpy()
        self.protos_ = np.asarray(class_semantics) @ self.map_
        self.classes_ = np.asarray(classes)
        return self

    def decision_function(self, features):
        d = ((np.asarray(features)[:, None, :] - self.protos_[None]) ** 2).sum(-1)
        return -d.astype(np.float64)


def test_the_check_finds_a_tensor_that_names_no_device() -> None:
    check_device_discipline(_Prototypes(named=True))
    with pytest.raises(AssertionError, match="names no device"):
        check_device_discipline(_Prototypes(named=False))
