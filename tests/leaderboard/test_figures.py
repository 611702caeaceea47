"""Figure legends never leave the canvas: long names wrap, as many columns as fit, and the canvas
grows by about the legend's height, with 80 methods as with 3 (issue 27 item 12, issue 30 item 2);
the saved image is cut tight around what is drawn, and the pages leave its size to the browser."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from lb_factory import make_record, write_records
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex

from zslbench.leaderboard import model
from zslbench.leaderboard.figures import DPI, FigureSpec, draw, method_colors, render_figure

LONG = (
    "L_BT + GP (ours) · gp.optimizer=adam, embedder.latent_dim=512 · cfg 0123abcd · data 89abcdef, "
    "not compared"
)


def _names(n: int) -> list[str]:
    """``n`` method labels: short, long, and one long word with no space to break at."""
    return [f"method-{i:02d}" if i % 3 else f"{LONG} #{i}" for i in range(n - 1)] + ["x" * 250]


def _series(names: list[str]) -> list[dict]:
    colors = method_colors(names)
    return [{"label": n, "color": colors[n], "ls": "-", "marker": "o"} for n in names]


def _spec(figure: str, names: list[str]) -> FigureSpec:
    series = _series(names)
    if figure == "curves":
        data = {
            "dataset": "toy",
            "series": [
                {
                    **s,
                    "runs": [
                        {"A_U": [60.0, 30.0, 0.0], "A_S": [0.0, 50.0, 70.0], "op": [30.0, 50.0]},
                        {"A_U": [50.0, 20.0, 0.0], "A_S": [0.0, 40.0, 60.0], "op": [None, None]},
                    ],
                }
                for s in series
            ],
        }
    elif figure == "per_class":
        data = {
            "dataset": "toy",
            "series": [
                {
                    **s,
                    "points": [
                        {"name": f"class {c}", "share": 10.0 + c, "acc": [40.0 + c, 1.0]}
                        for c in range(5)
                    ],
                }
                for s in series
            ],
        }
    elif figure == "h_vs_time":
        data = {
            "datasets": ["synth-apy", "synth-cub"],
            "device": "Test CPU",
            "points": [
                {
                    **s,
                    "dataset": "synth-apy",
                    "train": [2.0 + i, 1.5 + i, 2.5 + i],
                    "busy": i == 0,
                    "H": [40.0, 1.0],
                    "excluded": False,
                }
                for i, s in enumerate(series)
            ],
        }
    else:
        data = {
            "param": "embedder.margin",
            "color": "#1f77b4",
            "series": [
                {
                    "label": s["label"],
                    "points": [
                        {
                            "x": x,
                            **{m: [40.0 + x, 1.0] for m in ("H", "A_U", "A_S", "AUSUC", "A_T")},
                        }
                        for x in (1, 2, 4)
                    ],
                }
                for s in series
            ],
        }
    return FigureSpec(
        name=f"synthetic-{figure}-toy",
        kind="synthetic",
        figure=figure,
        title=f"toy: {figure}",
        data=data,
    )


@pytest.mark.parametrize("n", [3, 80])
@pytest.mark.parametrize("figure", ["curves", "per_class", "h_vs_time", "sweep"])
def test_the_legend_and_every_name_in_it_lie_inside_the_canvas(figure: str, n: int) -> None:
    spec = _spec(figure, _names(n))
    fig = draw(spec)
    canvas = FigureCanvasAgg(fig)
    fig.savefig(io.BytesIO(), format="png", dpi=DPI)  # lays the figure out as a render does
    renderer = canvas.get_renderer()
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert (
        fig.bbox.x0 <= box.x0
        and box.x1 <= fig.bbox.x1
        and fig.bbox.y0 <= box.y0
        and box.y1 <= fig.bbox.y1
    ), (box, fig.bbox)
    texts = legend.get_texts()
    # Every name is there in full and once (a curve's second seed adds no entry): wrapped (line
    # breaks where spaces were, or inside a word too long for a line), never cut; and each inside
    # the canvas.
    shown = [t.get_text().replace("\n", "").replace(" ", "") for t in texts]
    for name in _names(n):
        assert shown.count(name.replace(" ", "")) == 1, name
    assert any("\n" in t.get_text() for t in texts)  # the long names did need wrapping
    for t in texts:
        tb = t.get_window_extent(renderer)
        assert (
            fig.bbox.x0 <= tb.x0
            and tb.x1 <= fig.bbox.x1
            and fig.bbox.y0 <= tb.y0
            and tb.y1 <= fig.bbox.y1
        ), (t.get_text(), tb, fig.bbox)
    # The legend sits below the plot: it covers no axes, and the plot keeps room to be read.
    for ax in fig.axes:
        ab = ax.get_window_extent(renderer)
        assert box.y1 <= ab.y0 + 1, (box, ab)
        assert ab.height >= 60, ab


def test_each_legend_name_keeps_its_own_marker_when_plain_lines_and_error_bars_mix() -> None:
    names = _names(4)
    spec = _spec("h_vs_time", names)
    fig = draw(spec)
    FigureCanvasAgg(fig)
    (legend,) = fig.legends
    colors = method_colors(names)
    got = {
        t.get_text().replace("\n", "").replace(" ", ""): to_hex(
            h.get_color()[0] if hasattr(h, "get_segments") else h.get_color()
        )
        for h, t in zip(legend.legend_handles, legend.get_texts(), strict=True)
    }
    assert got == {
        **{n.replace(" ", ""): colors[n] for n in names},
        "synth-apy": "#444444",
        "synth-cub": "#444444",
        "hollow:busymachineonly": "#444444",
    }


@pytest.mark.parametrize("n", [3, 30])
def test_critical_difference_names_lie_inside_the_canvas(n: int) -> None:
    names = _names(n)
    colors = method_colors(names)
    spec = FigureSpec(
        name="synthetic-critical-difference",
        kind="synthetic",
        figure="cd",
        title="ranks",
        data={
            "methods": [
                {"label": m, "color": colors[m], "rank": 1.0 + i * (n - 1) / max(n - 1, 1)}
                for i, m in enumerate(names)
            ],
            "cd": 1.5,
            "alpha": 0.05,
            "n": 5,
            "cliques": [[0, 1]],
        },
    )
    fig = draw(spec)
    canvas = FigureCanvasAgg(fig)
    fig.savefig(io.BytesIO(), format="png", dpi=DPI)
    renderer = canvas.get_renderer()
    squeezed = tuple(n.replace(" ", "") for n in names)
    texts = [
        t
        for ax in fig.axes
        for t in ax.texts
        if t.get_text().replace("\n", "").replace(" ", "").startswith(squeezed)
    ]
    assert len(texts) == n
    for t in texts:
        tb = t.get_window_extent(renderer)
        assert fig.bbox.x0 <= tb.x0 and tb.x1 <= fig.bbox.x1, (t.get_text(), tb, fig.bbox)


def test_a_sweep_over_values_that_are_not_numbers_is_ticked_at_each_value_in_text_order() -> None:
    spec = _spec("sweep", _names(2))
    for s in spec.data["series"]:  # a second line has a value the first lacks
        s["points"] = [
            {**p, "x": x} for p, x in zip(s["points"], ["sgd", "adam", [1, 2]], strict=True)
        ]
    spec.data["series"][1]["points"][0]["x"] = "lbfgs"
    fig = draw(spec)
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["[1, 2]", "adam", "lbfgs", "sgd"]
        xs = [list(bars.lines[0].get_xydata()[:, 0]) for bars in ax.containers]
        assert xs == [[3, 1, 0], [2, 1, 0]]  # each point at its value's tick


def test_the_curves_legend_names_each_row_with_its_ausuc(tmp_path: Path) -> None:
    write_records(
        tmp_path / "res",
        [
            make_record("synth-apy", method, r, metrics={"AUSUC": 30.0 + r + 2 * (method == "gp")})
            for method in ("bt-gp", "gp")
            for r in range(2)
        ],
    )
    b = model.board(tmp_path / "res", tmp_path / "lb", None)
    (spec,) = [s for s in b.figures if s.figure == "curves"]
    fig = draw(spec)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "bt-gp  (AUSUC 30.5 ± 0.7)",
        "gp  (AUSUC 32.5 ± 0.7)",
        "calibrated operating point",
    ]


def test_a_log_share_panel_is_labelled_in_plain_numbers() -> None:
    """Shares spanning more than a decade are drawn on a log axis: its labels read 1, 10, never
    ``$\\mathdefault{10^{1}}$`` (names are plain text, so mathtext would show as code)."""
    spec = _spec("per_class", _names(2))
    for s in spec.data["series"]:
        for c, p in enumerate(s["points"]):
            p["share"] = [60.0, 25.0, 8.0, 4.0, 3.0][c]
    fig = draw(spec)
    fig.savefig(io.BytesIO(), format="png", dpi=DPI)
    top = fig.axes[0]
    assert top.get_yscale() == "log"
    labels = [t.get_text() for t in top.get_yticklabels() + top.get_yticklabels(minor=True)]
    shown = [t for t in labels if t]
    assert shown and all(t.replace(".", "").isdigit() for t in shown), shown


def test_a_users_matplotlib_settings_do_not_change_a_figure() -> None:
    """Figures are drawn over matplotlib's own defaults: the same bytes whatever a user's
    matplotlibrc says, so that a re-render on another machine only rewrites what changed."""
    import matplotlib

    spec = _spec("h_vs_time", _names(3))
    plain = render_figure(spec)
    mine = {"axes.facecolor": "#ff0000", "font.family": "serif", "lines.linewidth": 4.0}
    with matplotlib.rc_context(mine):
        assert render_figure(spec) == plain
