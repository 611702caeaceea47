"""The xlsa17 files' own checks: 1-based labels, attributes, features, and the error they raise."""

from __future__ import annotations

import numpy as np

from zslbench.data.splits import Failure
from zslbench.errors import DataError, SplitError
from zslbench_plugins.xlsa17 import checks


def test_labels_checks() -> None:
    assert checks.check_labels("r.mat", np.array([1, 2, 3]), 3, "a.mat") == []
    f = checks.check_labels("r.mat", np.array([0, 1, 2]), 3, "a.mat")
    assert f[0].check == "labels-range" and "0-based" in f[0].hint
    f = checks.check_labels("r.mat", np.array([1, 2, 4]), 3, "a.mat")
    assert f[0].check == "labels-range" and "does not match the number of classes" in f[0].message
    f = checks.check_labels("r.mat", np.array([1, 2, 2]), 3, "a.mat")
    assert f[0].check == "attributes" and f[0].file == "a.mat"
    f = checks.check_labels("r.mat", np.array([1, 2.5, 3]), 3, "a.mat")
    assert f[0].check == "labels" and "2.5" in f[0].message


def test_attribute_checks() -> None:
    att = np.ones((4, 3))
    assert checks.check_attributes("a.mat", att) == []
    att[:, 1] = 0
    f = checks.check_attributes("a.mat", att)
    assert f[0].check == "attributes" and "class 2" in f[0].message and f[0].structural
    att[:, 1] = np.nan
    assert "NaN" in checks.check_attributes("a.mat", att)[0].message


def test_feature_checks() -> None:
    # Any dimension reads (whether it is the benchmark's is the runner's policy check).
    assert checks.check_features("r.mat", (10, 2047), 10, nonfinite=None) == []
    f = checks.check_features("r.mat", (10, 2048), 11, nonfinite=None)
    assert f[0].check == "count" and f[0].structural
    f = checks.check_features("r.mat", (10, 2048), 10, nonfinite=(3, 7))
    assert f[0].check == "finite" and "image 4, dimension 8" in f[0].message


def test_primary_error_names_the_first_failure_and_the_others() -> None:
    assert checks.primary_error([]) is None
    index = Failure("a.mat", "index-range", "range", "fix", True)
    finite = Failure("r.mat", "finite", "nan", "fix it", True)
    err = checks.primary_error([index, finite])
    assert (
        isinstance(err, SplitError)
        and err.one_line() == "a.mat: range (also failing: finite) — fix"
    )
    err = checks.primary_error([finite])
    assert isinstance(err, DataError) and not isinstance(err, SplitError)
