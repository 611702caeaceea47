"""Regression tests for issue 18's leaderboard defects: a board rendered from records anyone can
contribute. Names are data everywhere; the leaderboard writes only inside --out, never through a
link, never half-written; damaged records are skipped with a warning naming the file.

Each test failed on the code before its fix (the f-string HTML and regex Markdown of the old
leaderboard, its fixed temporary names and unguarded deletes).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from lb_factory import fake_render_figure, make_record, write_records

from tests.cli_helpers import invoke_main

REPO = Path(__file__).resolve().parents[2]
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@pytest.fixture
def no_drawing(monkeypatch) -> None:
    monkeypatch.setattr("zslbench.leaderboard.build.render_figure", fake_render_figure)


def _render(results: Path, out: Path, *extra: str):
    return invoke_main("leaderboard", "--results-dir", str(results), "--out", str(out), *extra)


class _Links(HTMLParser):
    """Every href and src of a page, and the tags it opens."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.targets += [v or "" for k, v in attrs if k in ("href", "src")]


def _html_links(text: str) -> _Links:
    parser = _Links()
    parser.feed(text)
    return parser


#: Markdown link targets: `](target)` not preceded by a backslash (an escaped `\]` is text).
_MD_LINK = re.compile(r"(?<!\\)\]\(([^)\s]*)\)")


def _assert_safe_target(target: str) -> None:
    """A relative path (each part percent-encoded), an anchor, or http(s): never a script."""
    assert "javascript:" not in target.lower(), target
    if SCHEME.match(target):
        assert urlsplit(target).scheme in ("http", "https"), target
    assert not target.startswith("//"), target


# -- script injection ---------------------------------------------------------------------------

HOSTILE = {
    "dataset": "[c](javascript:alert`1`)",
    "method": "<img src=x onerror=alert(1)>",
    "config_file": "[x](javascript:alert(2)) <u>injected</u>",
    "override": "[y](javascript:alert(3))",
    "class": "<script>alert(4)</script>",
}


def _hostile_records(results: Path) -> None:
    classes = [HOSTILE["class"], "b|c\nd", "[e](javascript:alert(5))"]
    records = []
    for rep in range(2):
        records.append(
            make_record(
                HOSTILE["dataset"],
                HOSTILE["method"],
                rep,
                kind="custom",
                class_names=classes,
                config_file=HOSTILE["config_file"],
                overrides={"embedder.note": HOSTILE["override"]},
            )
        )
        records.append(
            make_record(
                HOSTILE["dataset"],
                "gp",
                rep,
                kind="custom",
                metrics={"H": 20.0 + rep},
                class_names=classes,
            )
        )
        records.append(
            make_record(
                HOSTILE["dataset"],
                "krr",
                rep,
                kind="custom",
                metrics={"H": 10.0 + rep},
                class_names=classes,
            )
        )
    write_records(results, records)


def test_hostile_names_make_no_link_and_no_markup_in_html_or_markdown(
    tmp_path: Path, no_drawing
) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    _hostile_records(results)
    result = _render(results, out)
    assert result.exit_code == 0, result.output
    for page in ("custom.html", "index.html", "real.html", "synthetic.html"):
        html = (out / page).read_text()
        links = _html_links(html)
        for target in links.targets:
            _assert_safe_target(target)
        assert all(
            t.startswith(("figures/", "#", "records/", "../"))
            or t.endswith((".md", ".html", ".csv"))
            for t in links.targets
        ), links.targets
        # Every name is shown, escaped: no unescaped "<" from a name reaches the page.
        assert (
            "<img src=x" not in html and "<script>alert" not in html and "<u>injected" not in html
        )
    custom = (out / "custom.html").read_text()
    assert "&lt;img src=x onerror=alert(1)&gt;" in custom and "&lt;script&gt;alert(4)" in custom
    assert custom.count("<script>") == 1  # ours, the sorting code
    for page in ("custom.md", "README.md", "synthetic.md"):
        md = (out / page).read_text()
        # A fenced block (the Reproduce commands) shows its lines verbatim: no links, no markup.
        md = re.sub(r"(?ms)^(`{3,})sh\n.*?^\1$", "", md)
        text = re.sub(r"`[^`\n]*`", "", md)  # a code span shows its content verbatim, as text
        for target in _MD_LINK.findall(text):
            _assert_safe_target(target)
        assert not re.search(r"(?<!\\)<(img|script|u>)", text), page  # only escaped: \<img
    assert "\\[c\\](javascript:alert\\`1\\`)" in (out / "custom.md").read_text()  # shown, escaped


def test_a_record_file_named_javascript_links_as_a_relative_file(
    tmp_path: Path, no_drawing
) -> None:
    """When --out is the records folder, a record's file name is a link target of its own."""
    folder = tmp_path / "same"
    for rep in range(2):
        record = make_record("toy", "gp", rep)
        folder.mkdir(exist_ok=True)
        (folder / f"javascript:alert({rep}).json").write_text(record.sealed().to_json())
    assert _render(folder, folder).exit_code == 0
    html = (folder / "synthetic.html").read_text()
    targets = _html_links(html).targets
    for target in targets:
        _assert_safe_target(target)
    records = [t for t in targets if t.endswith(".json")]
    assert records == ["javascript%3Aalert%280%29.json", "javascript%3Aalert%281%29.json"]
    assert all((folder / unquote(t)).is_file() for t in records)


def test_a_hash_in_a_dataset_name_keeps_every_provenance_link_working(
    tmp_path: Path, no_drawing
) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    write_records(results, [make_record("mine#1", "gp", rep, kind="custom") for rep in range(2)])
    assert _render(results, out).exit_code == 0
    for page in ("custom.html",):  # the Markdown page links to the HTML report's provenance
        text = (out / page).read_text()
        targets = _html_links(text).targets
        records = [t for t in targets if t.endswith(".json")]
        assert len(records) == 2
        for target in records:
            assert "#" not in target and (out / unquote(target)).is_file(), target


# -- Markdown structure -------------------------------------------------------------------------


def _cells(line: str) -> int:
    """The number of cells of a Markdown table row: unescaped pipes, minus the outer two."""
    return len(re.findall(r"(?<!\\)\|", line)) - 1


def test_a_pipe_or_line_break_in_a_name_never_breaks_a_markdown_table(
    tmp_path: Path, no_drawing
) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    names = ["a|b", "c\nd", "<i>e</i>"]
    records = [
        make_record(
            "my|data\nset", m, rep, kind="custom", class_names=names, metrics={"H": 30.0 + i}
        )
        for i, m in enumerate(("gp|x", "krr\n# heading"))
        for rep in range(2)
    ]
    write_records(results, records)
    assert _render(results, out).exit_code == 0
    md = (out / "custom.md").read_text()
    assert "\n# heading" not in md and "<i>e" not in md
    blocks = [b for b in md.split("\n\n") if b.startswith("| ")]
    assert blocks
    for block in blocks:
        rows = block.splitlines()
        assert len({_cells(row) for row in rows}) == 1, block


# -- names that slug alike ------------------------------------------------------------------------


def test_datasets_whose_names_slug_alike_get_their_own_figures(tmp_path: Path, no_drawing) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    write_records(
        results,
        [
            make_record(ds, "gp", rep, kind="custom", metrics={"H": h + rep})
            for ds, h in (("mine_1", 10.0), ("mine-1", 60.0))
            for rep in range(2)
        ],
    )
    assert _render(results, out).exit_code == 0
    per_class = sorted(p.name for p in (out / "figures").glob("custom-per-class-*.png"))
    curves = sorted(p.name for p in (out / "figures").glob("custom-curves-*.png"))
    assert len(per_class) == 2 and len(curves) == 2
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    hashes = {manifest[f"figures/{name}"]["data_sha256"] for name in curves}
    assert len(hashes) == 2  # each file plots its own dataset
    html = (out / "custom.html").read_text()
    ids = re.findall(r' id="([^"]+)"', html)
    assert len(ids) == len(set(ids))  # anchors unique too


# -- Reproduce lines ----------------------------------------------------------------------------


def _commands(md: str) -> list[list[str]]:
    block = md.split("## Reproduce", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [shlex.split(line) for line in block.splitlines()]


def test_reproduce_quotes_every_argument_and_names_a_file_dataset_by_its_path(
    tmp_path: Path, no_drawing
) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    data = tmp_path / "data" / "x;touch PWN3D;#.npz"
    records = []
    for rep in range(2):
        record = make_record(
            "x;touch PWN3D;#",
            "gp;rm -rf ~",
            rep,
            kind="custom",
            overrides={"embedder.name": "$(touch PWN3D)"},
        )
        record.data["source"] = {
            "format": "npz",
            "layout": "npz",
            "path": str(data),
            "kind": "custom",
        }
        records.append(record)
    write_records(results, records)
    assert _render(results, out).exit_code == 0
    (words,) = _commands((out / "custom.md").read_text())
    assert words[:2] == ["zslbench", "run"]
    options = dict(zip(words[2::2], words[3::2], strict=True))
    assert (
        options["--method"] == "gp;rm -rf ~" and options["--set"] == "embedder.name=$(touch PWN3D)"
    )
    # Paths relative to the project root (here the results dir's parent), as every command says them.
    assert options["--dataset"] == "data/x;touch PWN3D;#.npz" and options["--results-dir"] == "res"
    html = (out / "custom.html").read_text()
    command = html.split('<pre class="commands"><code>', 1)[1].split("</code>", 1)[0]
    from html import unescape

    assert shlex.split(unescape(command)) == words


@pytest.mark.parametrize(
    "name",
    ["x\ny", "it's a \\ \t$(touch PWN3D)\r", "caf\xe9\xa0\x85\n", "a\u2028b\x7f", "plain;name"],
)
def test_a_shell_word_is_one_line_that_bash_reads_back_as_the_name(name: str) -> None:
    """A control character is written with $'...' escapes (UTF-8 beyond ASCII, never a raw byte:
    a no-break space must not come back as byte 0xa0); every other character as it is."""
    from zslbench.leaderboard.markup import shell_word

    word = shell_word(name)
    assert "\n" not in word and "\r" not in word
    printed = subprocess.run(
        ["bash", "-c", f"printf %s {word}"],
        capture_output=True,
        check=True,
        env={"LANG": "C.UTF-8"},
    ).stdout
    assert printed.decode("utf-8") == name


def test_the_committed_boards_reproduce_lines_name_what_they_ran() -> None:
    """Every Reproduce command of the committed board parses, names a configuration file that
    exists, methods and datasets the registry knows, and the records folder as --results-dir.
    (The coordinator also executes them with ``zslbench run --dry-run`` after the merge.)"""
    from zslbench.cli import State
    from zslbench.request import expand_datasets, split_names

    registry = State().registry()
    checked = 0
    for page in ("synthetic.md", "real.md"):
        md = (REPO / "leaderboards" / page).read_text()
        if page == "real.md" and "No measured runs on the real benchmarks yet" in md:
            continue
        commands = _commands(md)
        assert commands, page
        checked += len(commands)
        for words in commands:
            assert words[:2] == ["zslbench", "run"]
            options = dict(zip(words[2::2], words[3::2], strict=True))
            assert {"--method", "--dataset", "--seeds", "--results-dir"} <= set(options), words
            if "--config" in options:
                assert (REPO / options["--config"]).is_file(), words
            for method in split_names(options["--method"]):
                registry.get("method", method)
            assert expand_datasets(split_names(options["--dataset"]), registry)
            folder = REPO / options["--results-dir"]
            assert folder.is_dir() and folder.resolve().is_relative_to(
                (REPO / "leaderboards" / "records").resolve()
            )
            assert any(folder.glob("*.json")), words
    assert checked


# -- names matplotlib would parse as maths --------------------------------------------------------


def test_dollar_signs_in_names_are_drawn_as_text(tmp_path: Path) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    write_records(
        results,
        [
            make_record(
                "syn$\\undefinedcommand{$",
                "gp$\\frac{$",
                rep,
                kind="custom",
                class_names=["$\\nope$", "b", "c"],
            )
            for rep in range(2)
        ],
    )
    result = _render(results, out)
    assert result.exit_code == 0, result.output
    assert len(list((out / "figures").glob("*.png"))) >= 2


# -- damaged records ------------------------------------------------------------------------------


def _damaged(results: Path) -> dict[str, str]:
    """Records damaged in their free-form content, each named, and what the warning says."""
    write_records(
        results, [make_record("toy", "gp", rep, metrics={"H": 30.0 + rep}) for rep in range(2)]
    )
    good = json.loads(next(results.glob("*.json")).read_text())
    files = {}
    nan = dict(good, config=dict(good["config"], lr=float("nan")))
    (results / "nan.json").write_text(json.dumps(nan))
    files["nan.json"] = "holds NaN or Infinity"
    (results / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    files["deep.json"] = "nested too deeply"
    for name, change, reason in (
        (
            "per_class.json",
            {"per_class": {"unseen": [{"class": "x", "accuracy": 1.0}]}},
            "per_class.unseen[0].class is not a distinct integer",
        ),
        (
            "curve.json",
            {"curve": {"A_U": [1.0, 2.0], "A_S": [1.0]}},
            "curve does not hold two lists",
        ),
        (
            "overrides.json",
            {"config": {**good["config"], "method": "krr", "overrides": "lr=1"}},
            "config.overrides is not an object",
        ),
    ):
        record = make_record("toy", "krr", len(files))
        for key, value in change.items():
            setattr(record, key, value)
        results.mkdir(parents=True, exist_ok=True)
        (results / name).write_text(record.sealed().to_json())  # sealed: the digest is valid
        files[name] = reason
    return files


def test_one_damaged_record_is_skipped_with_a_warning_naming_it(tmp_path: Path, no_drawing) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    damaged = _damaged(results)
    result = _render(results, out)
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    for name, reason in damaged.items():
        line = next(w for w in warnings if f"{(results / name).as_posix()}: skipped" in w)
        assert reason in line
    assert "(2 records)" in result.stdout
    check = _render(results, out, "--check")
    assert check.exit_code == 1 and "internal error" not in check.output
    for name in damaged:
        assert (
            f"{(results / name).as_posix()}: refused, not a valid zslbench record" in check.stdout
        )


# -- writes and deletes outside --out -------------------------------------------------------------


def _board(tmp_path: Path) -> tuple[Path, Path]:
    results, out = tmp_path / "res", tmp_path / "lb"
    write_records(
        results, [make_record("toy", "gp", rep, metrics={"H": 30.0 + rep}) for rep in range(2)]
    )
    assert _render(results, out).exit_code == 0
    return results, out


def test_a_planted_temporary_file_link_never_gets_its_target_overwritten(
    tmp_path: Path, no_drawing
) -> None:
    results, out = _board(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / ".README.md.tmp").symlink_to(victim)
    (out / ".synthetic.md.tmp").symlink_to(victim)
    write_records(results, [make_record("toy", "gp", 2, metrics={"H": 99.0})])  # the board changes
    assert _render(results, out).exit_code == 0
    assert victim.read_text() == "precious"
    assert "53.3" in (out / "synthetic.md").read_text()  # (30 + 31 + 99) / 3: rendered


@pytest.mark.parametrize("where", ["README.md", "figures", "figures/synthetic-h-vs-time.png"])
def test_a_link_where_the_board_writes_is_refused_and_its_target_untouched(
    tmp_path: Path, no_drawing, where: str
) -> None:
    results, out = _board(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "synthetic-h-vs-time.png").write_bytes(b"theirs")
    (outside / "README.md").write_text("theirs")
    planted = out / where
    if planted.is_dir():
        for child in planted.iterdir():
            child.unlink()
        planted.rmdir()
    else:
        planted.unlink()
    planted.symlink_to(outside / Path(where).name if where != "figures" else outside)
    write_records(results, [make_record("toy", "gp", 2, metrics={"H": 99.0})])
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    for args in ((), ("--overwrite-foreign",)):
        result = _render(results, out, *args)
        assert result.exit_code == 2, result.output
        errors = [
            line for line in result.stderr.splitlines() if line.startswith("zslbench: error: ")
        ]
        assert len(errors) == 1 and "symbolic link" in errors[0] and planted.as_posix() in errors[0]
        assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
    assert "53.3" not in (out / "synthetic.md").read_text()  # nothing half-written either
    check = _render(results, out, "--check")
    assert check.exit_code == 1 and f"{planted.as_posix()}: a symbolic link" in check.stdout


def test_a_manifest_entry_under_a_linked_folder_deletes_nothing_outside(
    tmp_path: Path, no_drawing
) -> None:
    results, out = _board(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    (out / "elsewhere").symlink_to(outside)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["files"]["elsewhere/precious.txt"] = {"sha256": "0" * 64}
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = _render(results, out, "--overwrite-foreign")
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert (outside / "precious.txt").read_text() == "keep me"


# -- a write that fails -------------------------------------------------------------------------


def _run_limited(args: list[str], max_bytes: int) -> subprocess.CompletedProcess[str]:
    """``zslbench ARGS`` in a child whose files may not grow past ``max_bytes`` (a full disk, as
    far as the writer can tell: writes fail with EFBIG)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    exe = Path(sys.executable).with_name("zslbench")
    env = {k: v for k, v in os.environ.items() if k != "ZSLBENCH_TRACEBACK"}
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, preexec_fn=limit, env=env, timeout=600
    )


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_write_that_fails_is_one_line_and_leaves_the_board_as_it_was(tmp_path: Path) -> None:
    results, out = tmp_path / "res", tmp_path / "lb"
    write_records(
        results,
        [
            make_record("toy", "gp", rep, with_curve=False, metrics={"H": 30.0 + rep})
            for rep in range(2)
        ],
    )
    args = ["leaderboard", "--results-dir", str(results), "--out", str(out)]
    first = _run_limited(args, 10**9)
    assert first.returncode == 0, first.stderr
    before = _snapshot(out)
    write_records(results, [make_record("toy", "gp", 2, with_curve=False, metrics={"H": 99.0})])
    # Small files still fit, the HTML pages do not: a disk that fills up half-way.
    result = _run_limited(args, 30_000)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("zslbench: error: ")]
    assert (
        len(errors) == 1
        and "cannot write the leaderboard" in errors[0]
        and "nothing was changed" in errors[0]
    )
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert _snapshot(out) == before  # no temporary file left, no file replaced


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_output_folder_is_one_line(tmp_path: Path, no_drawing) -> None:
    results, out = _board(tmp_path)
    write_records(results, [make_record("toy", "gp", 2, metrics={"H": 99.0})])
    before = _snapshot(out)
    for folder in (out, out / "figures"):
        folder.chmod(0o555)
    try:
        result = _render(results, out)
    finally:
        for folder in (out, out / "figures"):
            folder.chmod(0o755)
    assert result.exit_code == 2 and "cannot write the leaderboard" in result.stderr
    assert _snapshot(out) == before


# -- formulas in CSV files ------------------------------------------------------------------------


def test_names_that_start_a_formula_are_text_in_every_csv(tmp_path: Path, no_drawing) -> None:
    """Issue 42 item 4: a name starting with =, +, - or @ was written raw into every CSV, where a
    spreadsheet runs it (``=HYPERLINK(...)``); it gets a leading ``'``, numbers stay numbers."""
    import csv
    import io

    link = '=HYPERLINK("http://evil.example","click")'
    results, out = tmp_path / "res", tmp_path / "lb"
    records = [
        make_record(
            "+mine",
            method,
            rep,
            kind="custom",
            metrics={"H": 20.0 + rep + (5 if method == "gp" else 0)},
            class_names=[link, "@sum(A1)", "-2+3"],
            config_file="-cfg.toml",
        )
        for method in ("gp", "krr")
        for rep in range(2)
    ]
    write_records(results, records)
    assert _render(results, out).exit_code == 0
    cells = [
        cell
        for path in sorted(out.glob("*.csv"))
        for row in csv.reader(io.StringIO(path.read_text()))
        for cell in row
    ]
    assert "'" + link in cells and "'@sum(A1)" in cells and "'-2+3" in cells
    assert "'+mine" in cells and "'-cfg.toml" in cells
    assert not [
        c for c in cells if c.startswith(("=", "+", "@")) or (c[:1] == "-" and not _number(c))
    ]


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
