"""Generation time of every synthetic stand-in (generator v3: integer draws, exact products).

The stand-ins are generated on every load, so their generation is part of every run's start-up.
Run with::

    pytest benchmarks/test_bench_synthetic.py --benchmark-only
"""

from __future__ import annotations

import pytest

from zslbench.data.synthetic import generate
from zslbench_plugins.synthetic import SHAPES


@pytest.mark.parametrize("name", list(SHAPES))
def test_generate(benchmark, name: str) -> None:
    data = benchmark.pedantic(lambda: generate(SHAPES[name]), rounds=3, iterations=1)
    assert data.features.shape == (SHAPES[name].total, SHAPES[name].feature_dim)
