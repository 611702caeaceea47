"""The selection audit (issue 17): what a method's official code would have reported had it kept
the epoch of best *test* H, measured on the same fit, after the clean evaluation.

Pinned down: the audit scores every checkpoint the model kept, its last entry is the clean H
(the final model is the last checkpoint), the best is what selection on test reports, it never
changes the clean numbers, it runs only for a model that declares an official selection rule, and
a record's audit is validated when the record is read (``clean_H`` must be the record's H)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.leaderboard.lb_factory import make_record
from zslbench.prepare import prepare_method
from zslbench.protocol import run_protocol
from zslbench.records import Record, RecordError, parse
from zslbench.registry import load_registry
from zslbench.request import parse_overrides

pytestmark = pytest.mark.usefixtures("one_thread")

#: f-CLSWGAN small enough for seconds on toy, with enough classifier epochs to have a choice.
SMALL = [
    "generator.ngh=64",
    "generator.ndh=64",
    "generator.nepoch=2",
    "generator.pretrain_epochs=2",
    "model.syn_num=50",
    "model.classifier_epochs=6",
]


@pytest.fixture(scope="module")
def toy():
    reg = load_registry()
    return reg, reg.get("dataset", "toy").obj.load(None)


def _run(toy, name: str, sets: list[str]):
    reg, data = toy
    method = prepare_method(reg, name, parse_overrides(sets)).instantiate(seed=2, device="cpu")
    return method, run_protocol(data, method, seed=2)


def test_the_audit_scores_every_classifier_epoch_and_ends_at_the_clean_h(toy):
    _, res = _run(toy, "f-clswgan", SMALL)
    audit = res.selection_audit
    assert audit is not None and "classifier2.py" in audit["rule"]
    hs = audit["H_by_epoch"]
    assert len(hs) == 6  # one per classifier epoch
    assert audit["clean_H"] == res.evaluation["H"] == hs[-1]
    assert audit["test_selected_H"] == max(hs) >= audit["clean_H"]
    assert hs[audit["test_selected_epoch"] - 1] == audit["test_selected_H"]


def test_the_audit_does_not_change_the_clean_numbers(toy, monkeypatch):
    _, with_audit = _run(toy, "f-clswgan", SMALL)
    from zslbench_plugins.fclswgan import WGANGenerator

    monkeypatch.setattr(WGANGenerator, "official_selection", None)
    _, without = _run(toy, "f-clswgan", SMALL)
    assert without.selection_audit is None
    assert json.dumps(with_audit.evaluation, sort_keys=True) == json.dumps(
        without.evaluation, sort_keys=True
    )
    assert with_audit.gamma == without.gamma


def test_a_method_without_a_selection_rule_has_no_audit(toy):
    _, res = _run(toy, "eszsl", [])
    assert res.selection_audit is None
    assert make_record().body()["selection_audit"] is None


def _audit(h: float = 48.0, hs: list[float] | None = None, epoch: int = 2) -> dict:
    hs = hs if hs is not None else [40.0, 55.0, h]
    return {
        "rule": "best test H over classifier epochs",
        "clean_H": h,
        "test_selected_H": max(hs),
        "test_selected_epoch": epoch,
        "H_by_epoch": hs,
    }


def _reread(record: Record) -> Record:
    return parse(json.loads(record.sealed().to_json()))


def test_a_valid_audit_round_trips_through_a_record():
    rec = _reread(make_record(metrics={"H": 48.0}, selection_audit=_audit()))
    assert rec.selection_audit["test_selected_H"] == 55.0


@pytest.mark.parametrize(
    "audit, message",
    [
        (dict(_audit(), clean_H=47.0), "clean_H differs"),
        (dict(_audit(), test_selected_H=50.0), "not the best"),
        (dict(_audit(), test_selected_epoch=3), "not the best"),
        (dict(_audit(), test_selected_epoch=4), "not an epoch"),
        (dict(_audit(), H_by_epoch=[40.0, float("nan"), 48.0]), "H values"),
        (dict(_audit(), rule=""), "rule"),
        ({"clean_H": 48.0}, "is not an object"),
    ],
)
def test_a_damaged_audit_is_refused_when_the_record_is_read(audit, message):
    # fields are checked before the digest, so a damaged body is named for what is wrong in it
    raw = make_record(metrics={"H": 48.0}, selection_audit=audit).body()
    raw["digest"] = "not checked first"
    with pytest.raises(RecordError, match=message):
        parse(raw)


def test_h_by_epoch_matches_a_direct_computation(toy):
    """Each entry is the H of that epoch's classifier at the calibrated gamma, recomputed here
    from the kept weights with numpy alone."""
    method, res = _run(toy, "f-clswgan", SMALL)
    reg, data = toy
    # refit exactly as the protocol's final fit did, then score each checkpoint by hand
    from zslbench.protocol import _columns

    pre = method.preprocessor.clone().fit(data.features[data.trainval_idx])
    classes = np.concatenate([data.seen_classes, data.unseen_classes])
    model = method.model.clone()
    model.set_search_params(**(res.search or {}).get("chosen", {}))
    att = np.asarray(data.attributes, dtype=np.float64)
    model.fit(
        pre.transform(data.features[data.trainval_idx]),
        data.labels[data.trainval_idx],
        att[classes],
        classes,
    )
    col = _columns(classes, data.n_classes)
    seen_cols = np.arange(len(classes)) < len(data.seen_classes)
    expect = []
    for w, b in model.checkpoints_:
        accs = {}
        for part, idx in (("s", data.test_seen_idx), ("u", data.test_unseen_idx)):
            x = pre.transform(data.features[idx]).astype(np.float32)
            logits = x @ w.numpy().T + b.numpy()
            logp = (
                logits
                - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))
                - logits.max(1, keepdims=True)
            )
            margin = logp[:, seen_cols].max(1) - logp[:, ~seen_cols].max(1)
            pred = np.where(
                margin > res.gamma,
                np.flatnonzero(seen_cols)[logp[:, seen_cols].argmax(1)],
                np.flatnonzero(~seen_cols)[logp[:, ~seen_cols].argmax(1)],
            )
            y = col[data.labels[idx]]
            accs[part] = np.mean([np.mean(pred[y == c] == c) for c in np.unique(y)]) * 100
        expect.append(
            2 * accs["s"] * accs["u"] / (accs["s"] + accs["u"]) if accs["s"] + accs["u"] else 0.0
        )
    np.testing.assert_allclose(res.selection_audit["H_by_epoch"], expect, atol=0.5)
