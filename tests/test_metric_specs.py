"""A metric is declared once (issue 41 item 4): a new one is its function plus one
:class:`~zslbench.records.MetricSpec`, and it reaches the record, ``load_results`` and ``compare``."""

from __future__ import annotations

import pytest

import zslbench
from tests.cli_helpers import invoke_main
from zslbench.records import METRIC_SPECS, MetricSpec, read_record

pytestmark = pytest.mark.usefixtures("one_thread")


def seen_unseen_gap(evaluation) -> float:
    """How much better seen classes are recognised than unseen ones (points; lower is better)."""
    return float(evaluation["A_S"]) - float(evaluation["A_U"])


GAP = MetricSpec(
    "gap",
    "A_S - A_U: the seen classes' lead in GZSL",
    higher_is_better=False,
    tested=True,
    required=False,
    compute=seen_unseen_gap,
)


@pytest.fixture
def gap_declared():
    """GAP declared in the one list (every reader sees it), for one test."""
    METRIC_SPECS.append(GAP)
    yield
    METRIC_SPECS.remove(GAP)


def test_a_metric_declared_once_is_recorded_tabled_and_compared(tmp_path, gap_declared):
    res = tmp_path / "res"
    for sets in (("--set", "regressor.alpha=1.0"), ()):
        out = invoke_main(
            "run",
            "--method",
            "krr",
            "--dataset",
            "toy",
            "--seeds",
            "2",
            "--results-dir",
            str(res),
            *sets,
        )
        assert out.exit_code == 0, out.output
    records = [read_record(p) for p in sorted(res.glob("*.json"))]
    assert len(records) == 4
    for rec in records:
        assert rec.metrics["gap"] == rec.metrics["A_S"] - rec.metrics["A_U"]

    frame = zslbench.load_results(res)
    assert "gap" in frame.columns and frame.attrs["refused"] == []
    assert (frame["gap"] == frame["A_S"] - frame["A_U"]).all()

    cmp = invoke_main(
        "compare", "krr[regressor.alpha=1.0]", "krr", "-d", "toy", "--results-dir", str(res)
    )
    assert cmp.exit_code == 0, cmp.output
    (line,) = [x for x in cmp.stdout.splitlines() if x.split()[:1] == ["gap"]]
    assert len(line.split()) >= 6, line  # both sides, the difference, its interval and p


def test_an_undeclared_metric_is_still_refused_in_a_record(tmp_path):
    from tests.leaderboard.lb_factory import make_record, write_records
    from zslbench.records import RecordError, valid_record

    (path,) = write_records(tmp_path, [make_record("toy", "krr", 0, metrics={"H": 40.0})])
    assert not isinstance(valid_record(path), RecordError)
    rec = read_record(path)
    rec.metrics["gap"] = 3.0
    (path,) = write_records(tmp_path, [rec])
    found = valid_record(path)
    assert isinstance(found, RecordError) and "metric gap=3.0 is unknown" in str(found)
