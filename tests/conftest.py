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
        pytest.skip(
            f"real xlsa17 split files not found at {SHARED_DATA} "
            "(set ZSLBENCH_SHARED_DATA to the folder holding AWA1/ AWA2/ APY/ CUB/ SUN/)"
        )
    return SHARED_DATA


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="re-write tests/golden/toy.json from this run (tests/test_golden.py)",
    )
    parser.addoption(
        "--remake-golden-method",
        default="",
        metavar="NAME[,NAME]",
        help="re-make these methods' numbers in tests/golden/toy.json on this machine, where "
        "the reference environment cannot be re-made (tests/test_golden.py)",
    )
    parser.addoption(
        "--add-golden-environment",
        action="store_true",
        default=False,
        help="add this machine's numbers to tests/golden/toy.json, compared exactly "
        "from then on (refused outside the per-method bands)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # The suite's expectations were made on CPUs: ``--device auto`` means the CPU here, also on a
    # machine with a GPU (and in the CLI subprocesses the tests start). GPU tests say ``cuda``.
    os.environ.setdefault("ZSLBENCH_DEVICE", "cpu")
    # Output is tested as a pipe gets it, whatever terminal runs the suite: tables that honour
    # COLUMNS/LINES would otherwise change width with it. pytest imports readline at start-up,
    # and GNU readline exports COLUMNS=80 LINES=24 into the C environment (unseen by os.environ
    # here, inherited by a subprocess started without an explicit env, as pytest-xdist's workers
    # are), so both levels are cleared, before any worker or subprocess starts.
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
        os.unsetenv(name)
    # The thread policy the CLI applies (zslbench.threads: idle OpenMP threads sleep), also for
    # the runs made in pytest's own processes, before any test imports torch (libgomp reads it
    # once, at load). Under ``pytest -n 2`` on two cores each worker's torch threads otherwise spin
    # waiting for the thread that shares its core with the other worker: the leak test of
    # tf-vaegan took 68 s so, 15 s with PASSIVE. It changes no number; a value the user set wins.
    from zslbench import threads

    threads.apply_defaults(os.environ)
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (pytest -m gpu); skipped without one")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` skip, saying why, where torch sees no CUDA device."""
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if not marked:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(
        reason=f"needs a CUDA GPU: torch {torch.__version__} sees none "
        "(torch.cuda.is_available() is False)"
    )
    for item in marked:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def threads_per_worker():
    """Under ``pytest -n N`` each worker's torch and BLAS get their share of the cores (one each
    for ``-n 2`` on two cores), restored after the test. torch's default is one thread per core in
    every worker: ``-n 2`` on two cores ran four threads that wait on each other, and a test file
    of torch fits (test_golden.py with test_device_discipline.py) took 31-65 s instead of 15-19 s.
    A test pinned to the machine's default thread count overrides this fixture
    (tests/test_golden.py)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers < 2:  # one process: the default threads are its own
        yield
        return
    import threadpoolctl
    import torch

    share = max(1, (os.cpu_count() or 1) // workers)
    before = torch.get_num_threads()
    torch.set_num_threads(min(before, share))
    with threadpoolctl.threadpool_limits(share):
        yield
    torch.set_num_threads(before)


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
