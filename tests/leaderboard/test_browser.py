"""The HTML report in real headless Chromium: tables render, images load, nothing errs, and every
page reads at 1400 px without horizontal scrolling.

Uses the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (see ``lb_cdp.py``), so console
errors, uncaught exceptions and failed loads are observed directly rather than inferred. The board
is :func:`lb_factory.showcase_grid`, shaped like the committed one (five stand-ins with their class
counts, the paper's five methods, a sweep, real runs beside reported rows, a custom dataset). The
full-page screenshots are written to ``$ZSLBENCH_SCREENSHOT_DIR`` (default: pytest's tmp dir) and
their paths printed: look at them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from lb_cdp import Browser
from lb_factory import showcase_grid

from tests.cli_helpers import invoke_main

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH = 1400

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="Chromium is not installed (Debian package `chromium`; "
        "`.ci/run` installs it, or run `apt-get install -y chromium`)",
    ),
]

PAGE_STATE = """(() => {
  const imgs = Array.from(document.images).map(i => ({src: i.getAttribute('src'), complete: i.complete,
      width: i.naturalWidth, height: i.naturalHeight, shown: i.getBoundingClientRect().width, box: i.parentElement.clientWidth}));
  const tables = Array.from(document.querySelectorAll('table.lb[data-table]'))
      .map(t => ({id: t.dataset.table, rows: t.tBodies[0].rows.length}));
  return {title: document.title, imgs, tables, h1: document.querySelector('h1').textContent};
})()"""

#: Horizontal scrolling anywhere: the page itself, or any table (each sits in a scrollable box).
OVERFLOW = """(() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const doc = document.documentElement;
  const out = [];
  if (doc.scrollWidth > doc.clientWidth) out.push(`page: ${doc.scrollWidth} > ${doc.clientWidth}`);
  document.querySelectorAll('.table-wrap').forEach(w => {
    if (w.scrollWidth > w.clientWidth) {
      const t = w.querySelector('table');
      out.push(`${t.dataset.table || t.closest('section').id}: ${w.scrollWidth} > ${w.clientWidth}`);
    }
  });
  document.querySelectorAll('details').forEach(d => d.open = false);
  return out;
})()"""

COLUMN_VALUES = """((table, col) => Array.from(document.querySelector(`table[data-table="${table}"]`).tBodies[0].rows)
   .map(r => r.cells[col].getAttribute('data-sort')))"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "lb"
    showcase_grid(out / "records")
    result = invoke_main(
        "leaderboard",
        *[
            "--results-dir",
            str(out / "records"),
            "--out",
            str(out),
            "--reported",
            str(REPO / "leaderboards" / "reported" / "ye2022_icpr.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize(
    "page, n_figures, title_word",
    [("real.html", 4, "real"), ("synthetic.html", 10, "SYNTHETIC"), ("custom.html", 2, "CUSTOM")],
)
def test_report_renders_in_chromium(
    tmp_path: Path, rendered: Path, page: str, n_figures: int, title_word: str
) -> None:
    out = rendered
    shots = Path(os.environ.get("ZSLBENCH_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    browser = Browser(CHROMIUM, tmp_path / f"profile-{page}")
    try:
        browser.open((out / page).as_uri(), width=WIDTH)
        state = browser.evaluate(PAGE_STATE)
        assert title_word in state["h1"]
        # Tables: H and AUSUC, ZSL, A_U and A_S, training time (+ ablation and reported per-class on the
        # real page), per class.
        ids = [t["id"] for t in state["tables"]]
        assert all(any(i.endswith(end) for i in ids) for end in ("-h", "-zsl", "-au-as"))
        assert all(t["rows"] > 0 for t in state["tables"]), state["tables"]
        # Images: every figure PNG decoded, none broken; the browser sizes each to its box.
        assert len(state["imgs"]) == n_figures
        for img in state["imgs"]:
            assert img["complete"] and img["width"] > 0 and img["height"] > 0, img
            assert 0 < img["shown"] <= img["box"], img
        # Reads at 1400 px: no horizontal scrolling of the page or of any table (folded ones opened).
        assert browser.evaluate(OVERFLOW) == []
        # The page as a reader first sees it (before the sorting below).
        shot = browser.screenshot(
            shots / f"leaderboard-{page.removesuffix('.html')}.png", width=WIDTH
        )
        print(f"screenshot: {shot}")
        assert shot.stat().st_size > 10_000
        # Sorting: clicking the H header of the first GZSL dataset sorts descending, then ascending.
        gzsl = next(i for i in ids if i.endswith("-h"))
        col = browser.evaluate(f"""(() => {{
            const ths = Array.from(document.querySelectorAll('table[data-table="{gzsl}"] thead tr:last-child th'));
            return ths.findIndex(th => th.textContent === 'H'); }})()""")
        assert col > 0
        for order in ("descending", "ascending"):
            browser.evaluate(
                f"""document.querySelectorAll('table[data-table="{gzsl}"] thead tr:last-child th')[{col}].click()"""
            )
            values = [float(v) for v in browser.evaluate(f"{COLUMN_VALUES}('{gzsl}', {col})") if v]
            assert len(values) >= 2
            assert values == sorted(values, reverse=(order == "descending")), (order, values)
        assert browser.problems() == []
    finally:
        browser.close()


def test_broken_image_console_error_and_overflow_are_caught(tmp_path: Path, rendered: Path) -> None:
    """The checks above can fail: a missing figure, a script error and a too-wide table are all seen."""
    out = tmp_path / "lb"
    shutil.copytree(rendered, out)
    (out / "figures" / "synthetic-h-vs-time.png").unlink()
    page = out / "synthetic.html"
    wide = '<td style="min-width:3000px">x</td>'
    page.write_text(
        page.read_text()
        .replace("</body>", "<script>console.error('boom')</script></body>")
        .replace("<td ", wide + "<td ", 1)
    )
    browser = Browser(CHROMIUM, tmp_path / "profile-broken")
    try:
        browser.open(page.as_uri(), width=WIDTH)
        imgs = browser.evaluate(PAGE_STATE)["imgs"]
        broken = [i["src"] for i in imgs if i["width"] == 0]
        assert broken == ["figures/synthetic-h-vs-time.png"]
        # the first cell of the page is in its first table, the "cite this" table
        assert browser.evaluate(OVERFLOW) == [
            "synthetic-cite: "
            + browser.evaluate(
                "(() => { const w = document.querySelector('.table-wrap'); return `${w.scrollWidth} > ${w.clientWidth}`; })()"
            )
        ]
        problems = browser.problems()
        assert any("boom" in p for p in problems)
        assert any("ERR_FILE_NOT_FOUND" in p or "load failed" in p for p in problems), problems
    finally:
        browser.close()
