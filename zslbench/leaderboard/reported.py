"""The curated file of numbers quoted from papers (``leaderboards/reported/*.json``).

Reported numbers are kept in their own file, with a citation on every row, so that a leaderboard
can show them beside measured rows without ever mixing the two: they never pass through the
aggregation of records, and every page marks them as *reported*.

Format (schema 1)::

    {"schema": 1, "about": "what the file holds (for its readers; pages do not show it)",
     "source": "the work the numbers are quoted from, as pages name it (\"Smith et al. (CVPR 2020)\")",
     "tables": {"main": {"title", "paper_table", "latex_label", "metrics": [...]}, ...},
     "references": {key: "full reference", ...},
     "rows": [{"table": "main" | "ablation" | "train_time" | "per_class",
               "method": "as printed in the paper", "zslbench_method": "bt-gp" | null,
               "citation": "where in which paper", "refs": [reference keys],
               "values": {"CUB": {"A_T": 59.9, ...}, ...},      # main / ablation / train_time
               "device": "NVIDIA RTX 2080 Ti",                   # train_time
               "dataset": "APY", "classes": [{"name", "share_of_unseen_pct", "accuracy"}]  # per_class
              }, ...]}

``null`` stands for a ``-`` cell of the paper (not reported). Values are percent, except
``train_min`` (minutes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zslbench.errors import UserError
from zslbench.leaderboard.collect import is_number

#: The folder of the curated file, beside the board (the committed ``leaderboards/reported/``).
DEFAULT_DIR = Path("reported")
#: The committed board's folder, relative to the current directory (a clone's root).
BOARD_REPORTED = Path("leaderboards") / DEFAULT_DIR


def find_reported(out_dir: Path) -> Path | None:
    """Where ``--reported`` is looked for when not given: the curated file of the first of these
    folders that holds one: the folder beside the output (the committed ``leaderboards/reported/``)
    and ``leaderboards/reported/`` of the current directory (a render of one's own records from a
    clone's root). A folder holding several is refused (name the one to use)."""
    for folder in (Path(out_dir) / DEFAULT_DIR, BOARD_REPORTED):
        found = sorted(folder.glob("*.json")) if folder.is_dir() else []
        if len(found) > 1:
            raise UserError(
                f"{folder}: holds {len(found)} reported-numbers files",
                hint="pass the one to show with --reported FILE",
            )
        if found:
            return found[0]
    return None


TABLES = ("main", "ablation", "train_time", "per_class")


@dataclass(frozen=True)
class ReportedRow:
    """One row of a paper's table, as printed there."""

    table: str
    method: str
    citation: str
    refs: tuple[str, ...]
    zslbench_method: str | None = None
    values: dict[str, dict[str, float | None]] = field(default_factory=dict)
    device: str | None = None
    dataset: str | None = None
    classes: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Reported:
    """The whole curated file; ``path`` is where it was read from (for links and errors)."""

    path: Path | None
    #: The work the numbers are quoted from, as the pages name it.
    source: str = ""
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)
    rows: tuple[ReportedRow, ...] = ()

    def rows_for(self, table: str) -> list[ReportedRow]:
        return [row for row in self.rows if row.table == table]

    def table_info(self, table: str) -> dict[str, Any]:
        return self.tables.get(table, {})

    def method_order(self) -> list[str]:
        """The zslbench methods the paper's tables name, in their order (ablation first: the paper's
        own compositions), which is the row order of methods on every page."""
        tables = ("ablation", *(t for t in TABLES if t != "ablation"))
        names = (r.zslbench_method for t in tables for r in self.rows_for(t) if r.zslbench_method)
        return list(dict.fromkeys(names))


EMPTY = Reported(path=None)


def _fail(path: Path, where: str, problem: str) -> UserError:
    return UserError(
        f"{path}: {where}: {problem}",
        hint="fix the entry (see the format in zslbench/leaderboard/reported.py)",
    )


def _value(path: Path, where: str, value: Any) -> float | None:
    if value is not None and not is_number(value):
        raise _fail(path, where, f"{value!r} is not a number or null")
    return None if value is None else float(value)


def load_reported(path: Path) -> Reported:
    """Read and validate the curated file; every problem names the file and the row."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(
            f"{path}: not a readable reported-numbers file ({exc})",
            hint="pass --reported FILE with a valid JSON file",
        ) from None
    if not isinstance(doc, dict) or doc.get("schema") != 1:
        raise _fail(path, "top level", 'expected an object with "schema": 1')
    references = {str(k): str(v) for k, v in (doc.get("references") or {}).items()}
    rows = tuple(
        _row(path, f"rows[{i}]", raw, references) for i, raw in enumerate(doc.get("rows") or [])
    )
    source = str(doc.get("source") or "").strip()
    return Reported(path, source, dict(doc.get("tables") or {}), references, rows)


def _row(path: Path, where: str, raw: Any, references: dict[str, str]) -> ReportedRow:
    """One validated row of the curated file."""
    if not isinstance(raw, dict):
        raise _fail(path, where, "not an object")
    if raw.get("table") not in TABLES:
        raise _fail(path, where, f"table {raw.get('table')!r} is not one of {', '.join(TABLES)}")
    for key in ("method", "citation"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _fail(path, where, f"{key!r} is missing (every reported row needs a citation)")
    refs = tuple(str(r) for r in raw.get("refs") or ())
    unknown = [r for r in refs if r not in references]
    if unknown:
        raise _fail(path, where, f'refs {", ".join(unknown)} are not in "references"')
    values = _values(path, where, raw.get("values") or {})
    classes = _classes(path, where, raw.get("classes") or [])
    if raw["table"] == "per_class" and not (raw.get("dataset") and classes):
        raise _fail(path, where, 'a per_class row needs "dataset" and "classes"')
    method, citation = raw["method"].strip(), raw["citation"].strip()
    ours, device = raw.get("zslbench_method") or None, raw.get("device") or None
    dataset = str(raw["dataset"]).upper() if raw.get("dataset") else None
    return ReportedRow(raw["table"], method, citation, refs, ours, values, device, dataset, classes)


def _values(path: Path, where: str, raw: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    values: dict[str, dict[str, float | None]] = {}
    for dataset, cells in raw.items():
        if not isinstance(cells, dict):
            raise _fail(path, f"{where}.values.{dataset}", "not an object")
        values[str(dataset).upper()] = {
            str(m): _value(path, f"{where}.values.{dataset}.{m}", v) for m, v in cells.items()
        }
    return values


def _classes(path: Path, where: str, raw: list[Any]) -> tuple[dict[str, Any], ...]:
    classes = []
    for j, cls in enumerate(raw):
        if not isinstance(cls, dict) or "name" not in cls:
            raise _fail(path, f"{where}.classes[{j}]", "needs a name")
        at = f"{where}.classes[{j}]"
        values = {k: _value(path, at, cls.get(k)) for k in ("share_of_unseen_pct", "accuracy")}
        classes.append({"name": str(cls["name"]), **values})
    return tuple(classes)
