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
