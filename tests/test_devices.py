"""Which device a run uses, and what it pays before its timed part (the CUDA side is in
``tests/test_gpu.py``)."""

from __future__ import annotations

import pytest

from zslbench import provenance
from zslbench.errors import ConfigError


def test_a_cpu_needs_no_warm_up_before_the_timed_part():
    """Only CUDA pays a start-up (``provenance.warm_device``); a CPU run records none."""
    assert provenance.warm_device("cpu") == 0.0
    assert "cpu" not in provenance._WARM


def test_the_suite_pins_auto_to_the_cpu_even_where_a_gpu_is_seen(monkeypatch):
    import os

    assert os.environ["ZSLBENCH_DEVICE"] == "cpu"  # tests/conftest.py
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    assert provenance.resolve_device("auto") == "cpu"
    monkeypatch.setenv("ZSLBENCH_DEVICE", "")
    assert provenance.resolve_device("auto") == "cuda"  # torch (patched) sees a GPU
    monkeypatch.setenv("ZSLBENCH_DEVICE", "tpu")
    with pytest.raises(ConfigError, match="ZSLBENCH_DEVICE"):
        provenance.resolve_device("auto")
