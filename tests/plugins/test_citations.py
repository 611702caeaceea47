"""Every built-in method names its paper and the authors' code (issue 44 item 5)."""

from __future__ import annotations

import re

import pytest

from tests.cli_helpers import invoke_main
from zslbench.methods import Citation
from zslbench.registry import BUILTIN_DISTRIBUTION, load_registry


def _builtin_methods() -> list[str]:
    reg = load_registry()
    return sorted(
        n for n, p in reg.items["method"].items() if p.distribution == BUILTIN_DISTRIBUTION
    )


def test_every_builtin_method_has_a_complete_citation():
    reg = load_registry()
    cited = reg.items["citation"]
    methods = _builtin_methods()
    assert len(methods) >= 19
    for name in methods:
        assert name in cited, f"built-in method {name!r} has no citation"
        c = cited[name].obj
        assert c.missing() == [], (name, c.missing())
        assert c.code.startswith("https://") or c.code.startswith("none"), (name, c.code)
        assert not c.arxiv or re.fullmatch(r"\d{4}\.\d{4,5}", c.arxiv), (name, c.arxiv)
        assert not c.doi or re.fullmatch(r"10\.\d{4,9}/\S+", c.doi), (name, c.doi)
    assert set(cited) <= set(reg.items["method"]), "a citation names no registered method"


def test_an_incomplete_citation_says_what_it_lacks():
    c = Citation("m", authors="A", title="", venue="CVPR", year=15, code="")
    assert c.missing() == ["title", "code", "year", "doi, arxiv or url"]


@pytest.mark.parametrize(
    "method, needles",
    [
        ("bt-gp", ("ICPR 2022", "arXiv:2210.06120", "Changkun Ye", "code: ")),
        ("eszsl", ("ICML 2015", "proceedings.mlr.press", "github.com/bernard24")),
        ("hsva", ("NeurIPS 2021", "arXiv:2109.15163", "github.com/shiming-chen/HSVA")),
    ],
)
def test_list_method_prints_the_citation(method, needles):
    out = invoke_main("list", "--method", method)
    assert out.exit_code == 0, out.stderr
    text = " ".join(out.stdout.split())  # rich may wrap a long line
    assert "citation:" in text
    for needle in needles:
        assert needle in text, (needle, text[:400])
