"""What a record must carry so its numbers can be traced: versions, hardware, commit, code."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path

PACKAGES = (
    "zslbench",
    "torch",
    "gpytorch",
    "linear_operator",
    "numpy",
    "scipy",
    "pluggy",
    "click",
    "rich",
    "pandas",
    "matplotlib",
)


def package_versions(extra: tuple[str, ...] = ()) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in (*PACKAGES, *extra):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def environment(extra_distributions: tuple[str, ...] = ()) -> dict[str, object]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(extra_distributions),
    }


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def resolve_device(requested: str) -> str:
    """``auto`` -> ``$ZSLBENCH_DEVICE`` when set, else ``cuda`` when torch sees a GPU, else
    ``cpu``. ``cuda`` without a GPU is an error.

    ``ZSLBENCH_DEVICE`` lets a machine pin what ``auto`` means: the test suite sets ``cpu``, so
    that its expectations, made on CPUs, hold on a machine with a GPU too (the GPU tests name
    ``cuda`` explicitly)."""
    import torch

    from zslbench.hyperparams import torch_device

    if requested == "auto":
        pinned = os.environ.get("ZSLBENCH_DEVICE", "").strip()
        if pinned and pinned != "auto":
            return str(torch_device("ZSLBENCH_DEVICE", pinned))
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(torch_device("--device", requested))


def cores() -> int:
    """CPU cores this process may run on (its affinity mask, which containers restrict)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def load_snapshot() -> dict[str, float | None]:
    """What :func:`load_report` compares against: wall and CPU clocks and the load average."""
    return {"wall": time.perf_counter(), "cpu": time.process_time(), "load": _loadavg()}


def load_report(start: dict[str, float | None]) -> dict[str, object]:
    """How busy the machine was during a run, so that timings can be trusted or set aside.

    ``cpu_seconds`` is this process's CPU time over the run; ``load_start``/``load_end`` the
    1-minute load average. The load average counts this process's own threads too (and, in a
    grid, the previous run's), so what competes with the run is the load beyond them:
    ``other_load = max(load_start, load_end) - min(threads, cores)``. ``oversubscribed`` is true
    when that is a whole core or more: other processes then held cores the run wanted, and its
    wall time is not comparable (on this project's shared 2-core machine single runs took 10-40x
    their median under such load). ``wait_policy``, ``spincount`` and ``thread_env_source``: the
    OpenMP settings in force (:mod:`zslbench.threads`).
    """
    from zslbench import threads as thread_policy

    end = _loadavg()
    n = cores()
    policy = thread_policy.report()
    threads = int(policy["threads"])
    loads = [v for v in (start["load"], end) if v is not None]
    other = round(max(loads) - min(threads, n), 2) if loads else None
    return {
        "cpu_seconds": round(time.process_time() - float(start["cpu"] or 0.0), 3),
        "wall_seconds": round(time.perf_counter() - float(start["wall"] or 0.0), 3),
        "load_start": start["load"],
        "load_end": end,
        "cores": n,
        "threads": threads,
        "other_load": other,
        "oversubscribed": other is not None and other >= 1.0,
        "wait_policy": policy["wait_policy"],
        "spincount": policy["spincount"],
        "thread_env_source": policy["thread_env_source"],
    }


_WARM: set[str] = set()


def warm_device(device: str) -> float:
    """Start ``device`` before a run is timed; the seconds it took (0.0 for a CPU, or a device
    this process has already started).

    The first CUDA work in a process pays for the context, the cuBLAS and cuSOLVER handles and
    the first kernels' loading (seconds on an H200: bt-gp's APY, run first, took 10.1 s against
    4.2 s for a larger dataset run after it). That is the process's cost, not the method's, so it
    is paid here, outside the train time, and recorded as ``device.startup_seconds``. Nothing
    here draws a random number, so a run's numbers do not depend on it."""
    if not device.startswith("cuda") or device in _WARM:
        return 0.0
    import torch

    start = time.perf_counter()
    a = torch.eye(64, device=device, dtype=torch.float64) * 2.0
    b = torch.linalg.cholesky(a @ a.T)  # cuBLAS and cuSOLVER
    torch.cuda.synchronize(device)
    del a, b
    _WARM.add(device)
    return round(time.perf_counter() - start, 3)


def reset_peak_memory(device: str) -> None:
    """Start counting a run's peak GPU memory (nothing on a CPU)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_mib(device: str) -> float | None:
    """The peak GPU memory torch allocated since :func:`reset_peak_memory`, in MiB (None on a
    CPU, where the process's peak RSS would also count earlier runs)."""
    if not device.startswith("cuda"):
        return None
    import torch

    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def device_info(device: str) -> dict[str, object]:
    import torch

    if device.startswith("cuda"):
        return {
            "type": "cuda",
            "name": torch.cuda.get_device_name(0),
            "cuda": torch.version.cuda,
            "threads": torch.get_num_threads(),
        }
    return {"type": "cpu", "name": cpu_name(), "threads": torch.get_num_threads()}


#: What can change what a run computes, relative to the checkout's root: ``dirty`` looks only here.
#: Result records written into the checkout (``leaderboards/records``) are data, not code, so a
#: grid that re-creates the committed records does not mark its own records dirty.
SOURCE_PATHS = ("zslbench", "plugins", "pyproject.toml", "configs")


def git_state(start: Path | None = None) -> dict[str, object]:
    """Commit of the source tree zslbench runs from, and whether its source differs from it
    (tracked files under :data:`SOURCE_PATHS`, listed in ``dirty_paths``); None outside a
    checkout. Provenance only: the cache key is the run's per-component identity
    (:mod:`zslbench.identity`), which a commit or a dirty tree does not change."""
    here = Path(start or Path(__file__).resolve().parent)
    try:

        def git(*args: str) -> str:
            return subprocess.run(
                ["git", *args], cwd=here, capture_output=True, text=True, timeout=10, check=True
            ).stdout

        commit = git("rev-parse", "HEAD").strip()
        status = git(
            "status", "--porcelain", "--untracked-files=no", "--", *(f":/{p}" for p in SOURCE_PATHS)
        )
        paths = sorted(line[3:] for line in status.splitlines() if line.strip())
        return {"commit": commit, "dirty": bool(paths), "dirty_paths": paths[:20]}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
