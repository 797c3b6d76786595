"""Every pipe table in the README and docs/ renders as a table (CommonMark with GFM tables, the
parser rich ships: markdown-it-py): a header whose cell count differs from its separator's, or a
missing separator, makes GitHub print the block as a paragraph of pipes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]


SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _pipe_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line indices of each meant table: a run of lines starting with '|', outside
    code fences, whose second line is a separator (prose may start a line with |x|)."""
    blocks, start, fenced = [], None, False
    for i, line in enumerate([*lines, ""]):
        if line.startswith("```"):
            fenced = not fenced
        is_row = not fenced and line.startswith("|")
        if is_row and start is None:
            start = i
        if not is_row and start is not None:
            if i - start >= 2 and SEPARATOR.match(lines[start + 1]):
                blocks.append((start, i - 1))
            start = None
    return blocks


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_pipe_block_is_a_table(page):
    text = page.read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables = {tok.map[0] for tok in tokens if tok.type == "table_open" and tok.map}
    blocks = _pipe_blocks(text.splitlines())
    broken = [first + 1 for first, _ in blocks if first not in tables]
    assert not broken, f"{page.name}: pipe blocks that do not render as tables at lines {broken}"


def test_the_readme_command_table_renders():
    """The README's command table, which once had a two-cell header over a three-cell separator."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    heads = [
        [t.children[0].content for t in tokens[i:] if t.type == "inline"][:2]
        for i, tok in enumerate(tokens)
        if tok.type == "thead_open"
    ]
    assert ["command", "what it does"] in heads
