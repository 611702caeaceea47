"""Every method's ``train`` seconds per synthetic dataset, next to bt-gp's (the paper's Table V view).

Reads the records of a results dir (by default the committed synthetic leaderboard's) and prints,
per method and dataset, the median ``train`` seconds over seeds, the ratio to bt-gp's median on
the same dataset, and the device. Runs taken on an oversubscribed machine (``record.load``) are
left out of the medians and counted in brackets; a cell with only such runs shows their median
marked ``*``. Records are the only source: to time fresh runs, make them first, e.g.::

    zslbench run --config configs/paper-main.toml --dataset synth-all --results-dir results/bench
    python benchmarks/methods_table.py --results-dir results/bench
    zslbench run --config configs/paper-main.toml --dataset synth-all --device cuda ...  # on a GPU

Usage: ``python benchmarks/methods_table.py [--results-dir DIR] [--device cpu|cuda] [--markdown]``
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from zslbench.records import Record, record_files, valid_record

REPO = Path(__file__).resolve().parents[1]
DATASETS = ("synth-awa1", "synth-awa2", "synth-apy", "synth-cub", "synth-sun")


def collect(results_dir: Path, device: str | None) -> dict[tuple[str, str, str], list[Record]]:
    cells: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for path in record_files(results_dir):
        rec = valid_record(path)
        if not isinstance(rec, Record) or rec.config.get("sweep"):
            continue
        dev = str(rec.device.get("type", "cpu"))
        if device and dev != device:
            continue
        cells[(rec.method, rec.dataset, dev)].append(rec)
    return cells


def cell_text(recs: list[Record]) -> tuple[str, float | None]:
    quiet = [r.timings["train"] for r in recs if not r.load.get("oversubscribed")]
    busy = len(recs) - len(quiet)
    if quiet:
        med = statistics.median(quiet)
        return f"{med:.1f}" + (f" [{busy}]" if busy else ""), med
    med = statistics.median(r.timings["train"] for r in recs)
    return f"{med:.1f}*", med


def table(results_dir: Path, device: str | None = None, markdown: bool = False) -> str:
    cells = collect(results_dir, device)
    devices = sorted({d for _, _, d in cells})
    datasets = [d for d in DATASETS if any(k[1] == d for k in cells)] or sorted(
        {k[1] for k in cells}
    )
    lines = []
    for dev in devices:
        methods = sorted({m for m, _, d in cells if d == dev}, key=lambda m: (m != "bt-gp", m))
        base = {
            ds: cell_text(cells[("bt-gp", ds, dev)])[1]
            for ds in datasets
            if ("bt-gp", ds, dev) in cells
        }
        header = ["method"] + [f"{ds} (x bt-gp)" for ds in datasets]
        rows = []
        for m in methods:
            row = [m]
            for ds in datasets:
                recs = cells.get((m, ds, dev))
                if not recs:
                    row.append("-")
                    continue
                text, med = cell_text(recs)
                ratio = f" ({med / base[ds]:.1f}x)" if base.get(ds) and m != "bt-gp" else ""
                row.append(text + ratio)
            rows.append(row)
        lines.append(
            f"train seconds on {dev}: median over seeds; [n] = runs left out, taken on an "
            "oversubscribed machine; * = only such runs"
        )
        if markdown:
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(r) + " |" for r in rows]
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
            lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--results-dir", type=Path, default=REPO / "leaderboards" / "records" / "synthetic"
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    print(table(args.results_dir, args.device, args.markdown))


if __name__ == "__main__":
    main()
