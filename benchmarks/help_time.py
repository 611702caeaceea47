"""How long ``zslbench --help`` takes, and what it imports (issue 30: under 1 s on a quiet machine).

Usage (from the repository root, with zslbench installed)::

    python benchmarks/help_time.py --rounds 5
    python benchmarks/help_time.py --exe /other/checkout/.venv/bin/zslbench --rounds 5

Each round runs every executable once (interleaved, so that a drift in the machine's load hits
each alike) and prints the median wall time per executable, then the heaviest imports of one
``python -X importtime -c "import zslbench.cli"`` (cumulative microseconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--exe",
        action="append",
        default=None,
        help="a zslbench executable (repeatable) [default: the one beside this python]",
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    exes = args.exe or [str(Path(sys.executable).with_name("zslbench"))]
    times: dict[str, list[float]] = {exe: [] for exe in exes}
    for _ in range(args.rounds):
        for exe in exes:
            start = time.perf_counter()
            subprocess.run([exe, "--help"], check=True, capture_output=True)
            times[exe].append(time.perf_counter() - start)
    for exe, ts in times.items():
        print(
            f"{exe}: median {statistics.median(ts):.2f} s (min {min(ts):.2f}, max {max(ts):.2f}, "
            f"{len(ts)} runs; load average {os.getloadavg()[0]:.1f})"
        )
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import zslbench.cli"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print("heaviest imports of `import zslbench.cli` (cumulative us):")
    for cumulative, name in sorted(rows, reverse=True)[:8]:
        print(f"  {cumulative:>9} {name}")


if __name__ == "__main__":
    main()
