"""How long the quick commands take: every ``--help`` and ``zslbench list`` (issue 44: under 1 s).

Usage (from the repository root, with zslbench installed)::

    python benchmarks/cli_latency.py              # every --help and `list`, 5 runs each
    python benchmarks/cli_latency.py --rounds 3 --only "list" --only "run --help"
    python benchmarks/cli_latency.py --exe /other/checkout/.venv/bin/zslbench

Each command runs ``--rounds`` times back to back, each time as a fresh process (what a user
waits for), and the table gives the median, min and max wall time, with the machine's load average
(a loaded host is slower: say so when quoting the numbers). The commands are found by walking the
command line that ``zslbench`` builds (plugins' commands included), so a new command is measured
without editing this script. Then the heaviest imports of ``zslbench list`` are listed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def commands() -> list[list[str]]:
    """``[]`` (the top level), then every subcommand's path, each asked for ``--help``, and
    ``list``: what should answer at once."""
    import click

    from zslbench import cli as cli_mod

    cli_mod._add_plugin_commands(["list"])  # the plugins' commands, as main() adds them

    def walk(group: click.Group, path: list[str]) -> list[list[str]]:
        out = []
        for name in sorted(group.commands):
            sub = group.commands[name]
            out.append([*path, name])
            if isinstance(sub, click.Group):
                out += walk(sub, [*path, name])
        return out

    helps = [[*p, "--help"] for p in [[], *walk(cli_mod.cli, [])]]
    return [["list"], *helps]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--exe", default=str(Path(sys.executable).with_name("zslbench")), help="zslbench to time"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--only", action="append", default=None, metavar="ARGS", help='e.g. "run --help"'
    )
    args = parser.parse_args()
    todo = [a.split() for a in args.only] if args.only else commands()
    load_before = os.getloadavg()[0]
    rows = []
    for argv in todo:
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            subprocess.run([args.exe, *argv], check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        rows.append((" ".join(["zslbench", *argv]), times))
    width = max(len(name) for name, _ in rows)
    print(f"{'command':<{width}}  median     min     max  (s, {args.rounds} runs each)")
    for name, times in rows:
        med, lo, hi = statistics.median(times), min(times), max(times)
        print(f"{name:<{width}}  {med:6.2f}  {lo:6.2f}  {hi:6.2f}")
    print(
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
        f"({os.cpu_count()} CPUs)"
    )
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from zslbench.cli import main; main(['list'])"],
        capture_output=True,
        text=True,
    )
    imports = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            imports.append((int(parts[1]), parts[2].rstrip()))
    print("heaviest imports of `zslbench list` (cumulative us):")
    for cumulative, name in sorted(imports, reverse=True)[:8]:
        print(f"  {cumulative:>9} {name}")


if __name__ == "__main__":
    main()
