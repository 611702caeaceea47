"""The xlsa17 files' own checks: 1-based labels, attributes, features, and the error they raise."""

from __future__ import annotations

import numpy as np
import pytest

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
    assert checks.check_attributes("a.mat", att, expected_dim=4) == []
    att[:, 1] = 0
    f = checks.check_attributes("a.mat", att)
    assert f[0].check == "attributes" and "class 2" in f[0].message and f[0].structural
    att[:, 1] = np.nan
    assert "NaN" in checks.check_attributes("a.mat", att)[0].message
    f = checks.check_attributes("a.mat", np.ones((5, 3)), expected_dim=4)
    assert f[0].check == "attribute-dim" and not f[0].structural


def test_feature_checks() -> None:
    assert checks.check_features("r.mat", (10, 2048), 10, expected_dim=2048, nonfinite=None) == []
    f = checks.check_features("r.mat", (10, 2047), 10, expected_dim=2048, nonfinite=None)
    assert f[0].check == "feature-dim" and "2047-d" in f[0].message and "2048-d" in f[0].message
    f = checks.check_features("r.mat", (10, 2048), 11, expected_dim=2048, nonfinite=None)
    assert f[0].check == "count" and f[0].structural
    f = checks.check_features("r.mat", (10, 2048), 10, expected_dim=2048, nonfinite=(3, 7))
    assert f[0].check == "finite" and "image 4, dimension 8" in f[0].message


def test_enforce_policy_and_structure() -> None:
    policy = Failure("a.mat", "disjoint", "leak", "fix", False)
    policy2 = Failure("a.mat", "fingerprint", "other", "fix", False)
    struct = Failure("a.mat", "index-range", "range", "fix", True)
    assert checks.enforce([], allow_nonstandard=False) == (True, "")
    with pytest.raises(SplitError, match=r"^a.mat: leak \(also failing: fingerprint\) — fix$"):
        checks.enforce([policy, policy2], allow_nonstandard=False)
    assert checks.enforce([policy, policy2], allow_nonstandard=True) == (False, "a.mat: leak; a.mat: other")
    with pytest.raises(SplitError, match="range"):
        checks.enforce([policy, struct], allow_nonstandard=True)
    with pytest.raises(DataError) as info:
        checks.enforce([Failure("r.mat", "finite", "nan", "fix", True)], allow_nonstandard=True)
    assert not isinstance(info.value, SplitError)
