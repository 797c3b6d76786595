"""``attndyn cite [EXPERIMENT]`` and ``attndyn.cite``: BibTeX for attndyn (from attndyn.version,
as CITATION.cff), JAX and the papers an experiment reproduces, from docs/references.md, whose
entries the package ships as attndyn/references.bib (this test keeps the copy in step)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from helpers import cli

import attndyn
from attndyn.claims import experiment_names
from attndyn.claims import papers as papers_mod
from attndyn.claims.papers import arxiv_ids, paper, paper_of
from attndyn.core import bibtex
from attndyn.version import RELEASED, __version__

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_bib_is_docs_references():
    """One source: references.bib is exactly what docs/references.md's bibtex blocks give
    (stale: run python scripts/references_bib.py), and the wheel ships it."""
    markdown = (ROOT / "docs" / "references.md").read_text("utf-8")
    shipped = (ROOT / "src" / "attndyn" / "references.bib").read_text("utf-8")
    assert shipped == bibtex.from_markdown(markdown), "stale: python scripts/references_bib.py"
    keys = re.findall(r"^@\w+\{([^,]+),", markdown, re.M)
    assert list(bibtex.references()) == keys and len(set(keys)) == len(keys)
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "references.bib" in data["package-data"]["attndyn"]


def test_split_and_field():
    text = "x\n@article{a1,\n  title = {A {B} c},\n  eprint = {1234.56789}\n}\n@misc{b,\n}\n"
    entries = bibtex.split(text)
    assert list(entries) == ["a1", "b"]
    assert bibtex.field(entries["a1"], "title") == "A {B} c"
    assert bibtex.field(entries["a1"], "eprint") == "1234.56789"
    assert bibtex.field(entries["b"], "title") is None
    with pytest.raises(ValueError, match="unbalanced"):
        bibtex.split("@misc{c,\n  title = {x\n")


def test_every_experiment_cites_a_paper_attndyn_holds():
    """Each experiment's "paper:" line (its module docstring's opening parenthesis) names an
    arXiv id that attndyn's references resolve: cite prints a full entry, not a stub."""
    for name in experiment_names():
        ids = arxiv_ids(paper_of(name))
        assert ids, name
        for arxiv_id in ids:
            assert bibtex.by_eprint(arxiv_id) is not None, (name, arxiv_id)


def test_paper_line_convention():
    assert paper("``x`` (P1 = arXiv 2609.03858, Fig. 2): what") == "P1 = arXiv 2609.03858, Fig. 2"
    assert paper("Something else, see arXiv 2605.01199 later.") == "arXiv 2605.01199"
    assert paper("no paper") == ""
    assert arxiv_ids("arXiv 2609.03858v2 and 2004.06977, again 2609.03858") == [
        "2609.03858",
        "2004.06977",
    ]


def _entries(text: str) -> dict[str, str]:
    return bibtex.split(text)


def test_cite_attndyn_jax_and_the_paper():
    text = attndyn.cite("aim-parameterization")
    entries = _entries(text)
    assert list(entries) == ["attndyn", "jax2018github", "xu2026aim"]
    assert bibtex.field(entries["xu2026aim"], "eprint") == "2609.03858"
    assert bibtex.field(entries["attndyn"], "version") == __version__
    assert bibtex.field(entries["attndyn"], "date") == RELEASED
    # nothing but comments and entries
    rest = text
    for entry in entries.values():
        rest = rest.replace(entry, "")
    assert all(line.startswith("%") for line in rest.splitlines() if line.strip())
    assert list(_entries(attndyn.cite())) == ["attndyn", "jax2018github"]


def test_cite_an_id_attndyn_does_not_hold(monkeypatch):
    """A plug-in experiment citing a paper outside attndyn's references gets a stub to
    complete; one with no arXiv id gets a comment saying so."""
    monkeypatch.setattr(papers_mod, "paper_of", lambda name: "arXiv 2999.00001, Fig. 1")
    entries = _entries(papers_mod.cite("aim-solvable"))
    assert bibtex.field(entries["arXiv:2999.00001"], "eprint") == "2999.00001"
    monkeypatch.setattr(papers_mod, "paper_of", lambda name: "")
    text = papers_mod.cite("aim-solvable")
    assert list(_entries(text)) == ["attndyn", "jax2018github"]
    assert "% aim-solvable names no arXiv paper" in text


def test_cli_cite(monkeypatch, capsys):
    code, out, err = cli(monkeypatch, capsys, "cite", "aim-parameterization")
    assert code == 0 and err == ""
    assert out == attndyn.cite("aim-parameterization") and "2609.03858" in out
    code, out, err = cli(monkeypatch, capsys, "cite", "circuits-ode")
    assert code == 0 and "eprint        = {2608.06776}" in out
    code, out, err = cli(monkeypatch, capsys, "cite", "aim-parametrization")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "'aim-parametrization'" in err and "did you mean 'aim-parameterization'" in err
