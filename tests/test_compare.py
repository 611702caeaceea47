"""How ``zslbench compare`` reads a configuration named on the command line."""

from __future__ import annotations

import pytest

from tests.cli_helpers import invoke_main
from zslbench.compare import parse_config_spec
from zslbench.errors import UserError


def test_a_spec_reads_each_setting():
    spec = parse_config_spec("krr[regressor.alpha=5,regressor.width=1]")
    assert spec.method == "krr"
    assert spec.settings == {"regressor.alpha": 5, "regressor.width": 1}


def test_a_key_given_twice_is_one_line_naming_it(tmp_path):
    with pytest.raises(UserError, match="'regressor.alpha' is given twice"):
        parse_config_spec("krr[regressor.alpha=5,regressor.alpha=1]")
    out = invoke_main(
        "compare",
        "krr[regressor.alpha=5, regressor.alpha=1]",
        "krr",
        "-d",
        "toy",
        "--results-dir",
        str(tmp_path),
    )
    assert out.exit_code != 0
    assert "given twice" in out.stderr and out.stderr.count("\n") == 1, out.stderr
