"""What a user sees while a grid runs: named phases, steps with an ETA, a line per finished run."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from zslbench import console as console_mod
from zslbench.console import Reporter, print_results, results_lines


def _record(h: float = 63.4, train: float = 12.3, oversubscribed: bool = False, sweep=None):
    return SimpleNamespace(
        metrics={"A_T": 56.1, "A_U": 53.8, "A_S": 77.2, "H": h, "AUSUC": 51.4},
        timings={"train": train},
        load={"oversubscribed": oversubscribed},
        config={"sweep": sweep} if sweep else {},
    )


def _outcome(method="bt-gp", status="ran", **kw):
    return SimpleNamespace(
        dataset="synth-awa2",
        method=method,
        repetition=0,
        seed=1,
        status=status,
        record=_record(**kw),
        path=Path("results/synth-awa2__bt-gp__x.json"),
        error=None,
    )


def test_plain_mode_names_the_phase_and_gives_an_eta(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(console_mod, "err_console", Console(file=buf, width=200))
    monkeypatch.setattr(console_mod, "PLAIN_STEP_SECONDS", 0.0)
    now = [0.0]
    rep = Reporter(Console(file=io.StringIO()), total=2, clock=lambda: now[0])
    assert not rep.live  # not a terminal: plain lines, no bars
    with rep:
        rep.event("dataset", {"dataset": "synth-awa2"})
        rep.event("run", {"dataset": "synth-awa2", "method": "bt-gp", "repetition": 0})
        rep.event("phase", {"phase": "fit_final"})
        rep.event("stage_start", {"stage": "embedder_fit"})
        rep.event("step", {"label": "episodes", "done": 0, "total": 500})
        now[0] = 10.0
        rep.event("step", {"label": "episodes", "done": 100, "total": 500})
        rep.finished(_outcome(oversubscribed=True))
    lines = buf.getvalue().splitlines()
    assert lines[0] == "loading synth-awa2"
    assert lines[1] == "run 1/2: synth-awa2 · bt-gp · r0"
    step = [ln for ln in lines if "episodes 100/500" in ln]
    assert step and "final fit" in step[0] and "embedder_fit" in step[0] and "ETA 40 s" in step[0]
    assert lines[-1] == (
        "done synth-awa2 · bt-gp · r0: H 63.4, train 12.3 s (machine "
        "oversubscribed) -> results/synth-awa2__bt-gp__x.json"
    )


def test_the_results_table_fits_80_columns_without_cutting_values():
    buf = io.StringIO()
    outcomes = [
        _outcome(),
        _outcome(method="f-clswgan", status="cached", h=100.0, train=1234.5),
        _outcome(method="bt-gp", sweep={"embedder.margin": 0.25}),
    ]
    print_results(outcomes, "cpu", console=Console(file=buf, width=200))
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    long = _outcome(
        sweep={
            "embedder.margin": 0.25,
            "embedder.latent_dim": 128,
            "preprocessor.clip": 9,
            "embedder.n_cb": 16,
        }
    )
    lines = results_lines([long])
    assert max(len(line) for line in lines) <= 80
    start = lines[0].index("method")
    width = lines[0].index(" r ") - start
    label = "".join(line[start : start + width] for line in lines[2:])
    assert label.replace(" ", "") == "bt-gpmargin=0.25latent_dim=128clip=9n_cb=16"
    assert lines[3].startswith(" " * start)  # the continuation line holds the label only
    for value in ("f-clswgan", "100.0", "1234.5", "cached", "margin=0.25", "63.4"):
        assert value in text


def test_a_long_label_wraps_between_settings_never_inside_one():
    """``krr krr.alpha=0.1 krr.width=1.0`` used to wrap as ``krr.width=1`` / ``.0``."""
    run = _outcome(method="krr")
    run.record.config = {"overrides": {"krr.alpha": 0.1, "krr.width": 1.0}}
    lines = results_lines([run])  # 80 columns
    assert max(len(line) for line in lines) <= 80
    start = lines[0].index("method")
    chunks = [line[start:].split("  ")[0].strip() for line in lines[2:]]
    assert len(chunks) > 1  # it did wrap
    assert " ".join(chunks) == "krr krr.alpha=0.1 krr.width=1.0"


# -- escape sequences (issue 27 item 7) ----------------------------------------------------------


def test_terminal_text_strips_escape_sequences_and_shows_other_controls():
    from zslbench.console import terminal_text

    assert terminal_text("a\x1b]0;pwned\x07b") == "ab"  # OSC: sets the terminal's title
    assert terminal_text("x\x1b[31mred\x1b[0m") == "xred"  # CSI: colour
    assert terminal_text("\x9b2Jc") == "c"  # C1 CSI: clears the screen
    assert terminal_text("bell\x07") == "bell\\x07"
    assert terminal_text("two\nlines\tand a tab") == "two\nlines\tand a tab"


def test_record_fields_reach_no_terminal_escape_in_run_output_or_compare(tmp_path, monkeypatch):
    """Not on a TTY either: a title-setting ``ESC ] 0;`` sequence in a record's config survived."""
    evil = "\x1b]0;pwned\x07hi"
    buf = io.StringIO()
    print_results([_outcome(sweep={"embedder.note": evil})], "cpu", Console(file=buf, width=200))
    assert "\x1b" not in buf.getvalue() and "note=hi" in buf.getvalue()

    import sys

    sys.path.insert(0, str(Path(__file__).parent / "leaderboard"))
    from lb_factory import make_record, write_records

    from tests.cli_helpers import invoke_main

    res = tmp_path / "res"
    write_records(
        res,
        [
            make_record("toy", method, r, overrides={"embedder.note": evil})
            for method in ("gp", "bt-gp")
            for r in range(2)
        ],
    )
    # compare lists the configurations it found (a plain name is the default configuration, and
    # these records all carry the override): the record's value is printed, stripped
    out = invoke_main("compare", "gp", "bt-gp", "-d", "toy", "--results-dir", str(res))
    assert out.exit_code == 2, out.output
    assert "gp[embedder.note=hi] (2 run(s))" in out.output
    assert "\x1b" not in out.output and "\x07" not in out.output


def test_done_lines_and_the_results_table_show_swept_and_set_values(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(console_mod, "err_console", Console(file=buf, width=300))
    swept = _outcome(sweep={"embedder.margin": 0.25})
    adam = _outcome()
    adam.record.config = {"overrides": {"gp.optimizer": "adam"}}
    reporter = Reporter(console_mod.err_console, total=2)
    reporter.live = False
    for outcome in (swept, adam):
        reporter.finished(outcome)
    assert buf.getvalue().splitlines() == [
        "done synth-awa2 · bt-gp margin=0.25 · r0: H 63.4, train 12.3 s -> results/synth-awa2__bt-gp__x.json",
        "done synth-awa2 · bt-gp gp.optimizer=adam · r0: H 63.4, train 12.3 s -> results/synth-awa2__bt-gp__x.json",
    ]
    labels = [line.split()[1:4] for line in results_lines([swept, adam])[2:]]
    assert labels == [["bt-gp", "margin=0.25", "0"], ["bt-gp", "gp.optimizer=adam", "0"]]


def test_a_failure_with_the_same_reason_on_another_seed_is_one_short_line(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(console_mod, "err_console", Console(file=buf, width=300))
    reporter = Reporter(console_mod.err_console, total=3)
    reporter.live = False
    for seed, why in ((11, "boom"), (12, "boom"), (13, "other")):
        reporter.finished(
            SimpleNamespace(status="failed", seed=seed, error=f"krr on toy (seed {seed}): {why}")
        )
    assert buf.getvalue().splitlines() == [
        "zslbench: error: krr on toy (seed 11): boom",
        "zslbench: error: krr on toy (seed 12): failed as seed 11 did (the same reason, above)",
        "zslbench: error: krr on toy (seed 13): other",
    ]


def test_the_live_bar_stays_put_whatever_the_description(monkeypatch):
    from rich.progress import BarColumn, TextColumn

    monkeypatch.setenv("ZSLBENCH_PROGRESS", "1")
    reporter = Reporter(Console(file=io.StringIO(), width=200), total=2)
    with reporter:
        columns = reporter.progress.columns
    assert isinstance(columns[0], BarColumn) and isinstance(columns[-1], TextColumn)
