"""Shared fixtures: where the real split files live, and how to run the CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ZSLBENCH_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real xlsa17 split files (../shared/data); tests that need them skip when absent."""
    if not (SHARED_DATA / "AWA2" / "att_splits.mat").exists():
        pytest.skip(f"real xlsa17 split files not found at {SHARED_DATA} "
                    "(set ZSLBENCH_SHARED_DATA to the folder holding AWA1/ AWA2/ APY/ CUB/ SUN/)")
    return SHARED_DATA


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="re-write tests/golden/toy.json from this run (tests/test_golden.py)")


@pytest.fixture
def one_thread():
    """One torch thread for tests on tiny tensors (OpenMP barriers cost more than they give on a
    shared machine); the previous count is restored after. Use with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
