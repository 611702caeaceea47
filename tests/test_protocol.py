"""The protocol never lets a test image into fitting or tuning (proved on the real AWA2 split)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io

from zslbench.data.dataset import ZSLData
from zslbench.prepare import prepare_method
from zslbench.protocol import leak_free_validation, run_protocol
from zslbench.registry import load_registry
from zslbench.request import parse_overrides


class AccessLog:
    """Stands in for the feature matrix and logs every row index read, per protocol stage."""

    def __init__(self, features: np.ndarray) -> None:
        self._f = features
        self.shape = features.shape
        self.dtype = features.dtype
        self.stage = "setup"
        self.reads: dict[str, set[int]] = {}

    def __getitem__(self, idx):
        rows = np.arange(self.shape[0])[idx]
        self.reads.setdefault(self.stage, set()).update(np.atleast_1d(rows).tolist())
        return self._f[idx]


def real_awa2(shared_data) -> tuple[ZSLData, dict[str, np.ndarray]]:
    mat = scipy.io.loadmat(shared_data / "AWA2" / "att_splits.mat")
    labels1 = np.load(shared_data / "AWA2" / "derived" / "labels_reconstructed_1based.npy")
    locs = {
        k: mat[k].ravel().astype(np.int64) - 1
        for k in ("trainval_loc", "test_seen_loc", "test_unseen_loc", "train_loc", "val_loc")
    }
    labels = labels1.astype(np.int64) - 1
    rng = np.random.default_rng(0)
    feats = rng.random((labels.size, 8), dtype=np.float32)
    data = ZSLData(
        name="awa2-real-split",
        features=feats,
        labels=labels,
        attributes=mat["att"].T.astype(np.float32),
        trainval_idx=locs["trainval_loc"],
        test_seen_idx=locs["test_seen_loc"],
        test_unseen_idx=locs["test_unseen_loc"],
        val_classes=np.unique(labels[locs["val_loc"]]),
    )
    return data, locs


def test_the_official_train_val_locs_leak_but_ours_do_not(shared_data):
    data, locs = real_awa2(shared_data)
    test = set(locs["test_seen_loc"]) | set(locs["test_unseen_loc"])
    official = set(locs["train_loc"]) | set(locs["val_loc"])
    assert len(official & set(locs["test_seen_loc"])) == 5882  # the leak we refuse to use
    split = leak_free_validation(data, seed=3)
    ours = set(split.all_indices().tolist())
    assert ours == set(locs["trainval_loc"].tolist())
    assert not ours & test
    # class-disjoint validation: validation-unseen classes are the official val classes...
    assert set(np.unique(data.labels[split.val_unseen_idx])) == set(
        np.unique(data.labels[locs["val_loc"]])
    )
    assert not set(split.val_classes) & set(np.unique(data.labels[split.train_idx]))
    # ...and validation-seen images are held out from the training classes' trainval images.
    assert set(np.unique(data.labels[split.val_seen_idx])) == set(split.train_classes)
    assert not set(split.val_seen_idx) & set(split.train_idx)


#: Every built-in method with settings small enough to run on the real AWA2 split (37 322 images,
#: 8-d random features) in seconds. A new built-in method must be added here: the test below
#: refuses a registry that has a method this table does not know.
FAST = {
    "bt-gp": ["bt.episodes=3", "embedder.latent_dim=4"],
    "t-gp": ["t.episodes=3", "embedder.latent_dim=4"],
    "gp": [],
    "krr": [],
    "bt-krr": ["bt.episodes=3", "embedder.latent_dim=4"],
    "eszsl": [],
    "sae": [],
    "sae-s2v": [],
    "ale": ["model.lr_grid=[0.1]", "model.epochs_grid=[1]"],
    "devise": ["model.lr_grid=[0.1]", "model.epochs_grid=[1]"],
    "sje": ["model.lr_grid=[0.1]", "model.epochs_grid=[1]"],
    "cnzsl": ["model.hid_dim=16", "model.epochs=1", "model.batch_size=4096"],
    "f-clswgan": [
        "generator.ngh=16",
        "generator.ndh=16",
        "generator.nepoch=1",
        "generator.pretrain_epochs=1",
        "generator.batch_size=4096",
        "model.syn_num=5",
        "model.classifier_epochs=1",
        "model.classifier_batch_size=4096",
        "generator.pretrain_batch_size=4096",
    ],
    "tf-vaegan": [
        "generator.hidden=16",
        "generator.ngh=16",
        "generator.ndh=16",
        "generator.nepoch=1",
        "generator.loops=2",
        "generator.batch_size=4096",
        "model.syn_num=5",
        "model.classifier_epochs=1",
        "model.classifier_batch_size=4096",
    ],
    "free": [
        "generator.hidden=16",
        "generator.ngh=16",
        "generator.ndh=16",
        "generator.nepoch=1",
        "generator.loops=1",
        "generator.batch_size=4096",
        "model.syn_num=5",
        "model.classifier_epochs=1",
        "model.classifier_batch_size=4096",
    ],
    "ce-gzsl": [
        "generator.ngh=16",
        "generator.ndh=16",
        "generator.embed_size=16",
        "generator.outz_size=4",
        "generator.nhF=8",
        "generator.nepoch=1",
        "generator.critic_iter=1",
        # not 4096 as the others: its contrastive losses grow with the square of the batch
        "generator.batch_size=512",
        "model.syn_num=5",
        "model.classifier_epochs=1",
        "model.classifier_batch_size=4096",
    ],
    "hsva": [
        "generator.latent_size=4",
        "generator.coarse_size=8",
        "generator.encoder_hidden=8",
        "generator.latent_hidden=8",
        "generator.decoder_hidden=8",
        "generator.classifier_hidden=8",
        "generator.projections=2",
        "generator.epochs=1",
        "generator.batch_size=4096",
        "model.seen_num=2",
        "model.syn_num=2",
        "model.classifier_epochs=1",
        "model.classifier_batch_size=4096",
    ],
    "sdgzsl": [
        "generator.latent_dim=2",
        "generator.encoder_out=4",
        "generator.hidden=8",
        "generator.s_dim=4",
        "generator.ns_dim=4",
        "generator.nepoch=1",
        "generator.batch_size=4096",
        "model.syn_num=5",
        "model.classifier_epochs=1",
        "model.classifier_batch_size=4096",
    ],
    "cada-vae": [
        "generator.latent_size=4",
        "generator.image_encoder_hidden=8",
        "generator.image_decoder_hidden=8",
        "generator.attribute_encoder_hidden=8",
        "generator.attribute_decoder_hidden=8",
        "generator.epochs=1",
        "generator.batch_size=4096",
        "model.seen_num=2",
        "model.syn_num=2",
        "model.classifier_epochs=1",
        "model.classifier_batch_size=4096",
    ],
}


def test_every_builtin_method_is_covered_by_the_leak_test():
    reg = load_registry()
    builtin = {n for n, p in reg.items["method"].items() if p.distribution == "zslbench"}
    assert builtin == set(FAST), "add the new method to FAST with settings that run in seconds"


#: One torch thread (tests/conftest.py): which rows a method reads does not depend on how many
#: threads compute with them, and OpenMP barriers on these small products cost more than they give
#: beside another busy process (tf-vaegan: 5 s with one thread, 15 s with two under ``pytest -n 2``).
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", sorted(FAST))
def test_no_test_image_is_read_before_evaluation(shared_data, name):
    data, locs = real_awa2(shared_data)
    log = AccessLog(np.asarray(data.features))
    data.features = log
    reg = load_registry()
    method = prepare_method(reg, name, parse_overrides(FAST[name])).instantiate(
        seed=1, device="cpu"
    )

    phases: list[str] = []

    def on_event(kind: str, info: dict) -> None:
        if kind == "phase":
            log.stage = info["phase"]
            phases.append(info["phase"])

    result = run_protocol(data, method, seed=1, on_event=on_event)
    test = set(locs["test_seen_loc"].tolist()) | set(locs["test_unseen_loc"].tolist())
    # The selection audit (a method whose official code selects on test) reads test images, but
    # only after the clean evaluation, which is then the last phase before it.
    after = ("evaluation", "selection_audit")
    if "selection_audit" in phases:
        assert phases[-2:] == list(after) and phases.count("selection_audit") == 1
        assert result.selection_audit["clean_H"] == result.evaluation["H"]
    before_eval = set().union(*(rows for stage, rows in log.reads.items() if stage not in after))
    assert before_eval, "the protocol read no rows at all?"
    assert before_eval <= set(locs["trainval_loc"].tolist())
    assert not before_eval & test
    assert log.reads["evaluation"] >= test


def test_validation_without_val_classes_falls_back_to_a_seeded_third(shared_data):
    data, _ = real_awa2(shared_data)
    data.val_classes = None
    a = leak_free_validation(data, seed=0)
    b = leak_free_validation(data, seed=5)
    assert np.array_equal(a.val_classes, b.val_classes)  # class choice does not depend on the run
    assert len(a.val_classes) == round(40 / 3)


@pytest.mark.parametrize("seed", [0, 1])
def test_validation_seen_share_is_twenty_percent_per_class(shared_data, seed):
    data, _ = real_awa2(shared_data)
    split = leak_free_validation(data, seed=seed)
    for c in split.train_classes:
        n_val = np.sum(data.labels[split.val_seen_idx] == c)
        n_all = n_val + np.sum(data.labels[split.train_idx] == c)
        assert n_val == round(0.2 * n_all)


def test_a_search_grid_reads_in_one_short_line():
    from zslbench.console import compact_value as value_text
    from zslbench.console import grid_text

    alphas = [10.0 ** (k / 2) for k in range(-4, 15)]
    assert grid_text(alphas) == "[0.01, 0.0316, …, 3.16e+06, 1e+07] (19 values)"
    assert grid_text([0.25, 0.5, 1]) == "[0.25, 0.5, 1]"
    assert grid_text(["adam", "lbfgs"]) == "['adam', 'lbfgs']"
    assert value_text(0.03162277660168379) == "0.0316" and value_text(64) == "64"
