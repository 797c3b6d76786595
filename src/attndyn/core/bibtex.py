"""The BibTeX entries attndyn cites: docs/references.md is the one source, and its ```bibtex
blocks are shipped inside the package as ``attndyn/references.bib`` (written by
``python scripts/references_bib.py``; tests/test_cite.py fails when the copy is stale), since
docs/ is not part of an installed wheel."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

HEADER = (
    "% attndyn's references: generated from docs/references.md by scripts/references_bib.py.\n"
    "% Do not edit: edit docs/references.md and run the script (tests/test_cite.py checks).\n"
)

_BLOCK = re.compile(r"^```bibtex\n(.*?)^```", re.M | re.S)
_START = re.compile(r"^@(\w+)\{([^,\s]+),", re.M)


def from_markdown(markdown: str) -> str:
    """The text of ``references.bib``: :data:`HEADER`, then every entry of the ```bibtex blocks
    of ``markdown`` in their order, one blank line between entries."""
    entries = [e for block in _BLOCK.findall(markdown) for e in split(block).values()]
    return HEADER + "\n" + "\n\n".join(entries) + "\n"


def split(text: str) -> dict[str, str]:
    """BibTeX ``text`` → {citation key: the entry's text from ``@`` to its closing brace}."""
    out: dict[str, str] = {}
    for found in _START.finditer(text):
        depth, end = 0, None
        for i in range(found.start(2) - 1, len(text)):  # from the entry's opening brace
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        if end is None:
            raise ValueError(f"unbalanced braces in the BibTeX entry {found.group(2)!r}")
        out[found.group(2)] = text[found.start() : end]
    return out


def field(entry: str, name: str) -> str | None:
    """The value of field ``name`` of one entry (the braces around it removed), None if absent."""
    found = re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?\s*$", entry, re.M | re.I)
    return found.group(1) if found else None


@cache
def references() -> dict[str, str]:
    """{citation key: entry} of the shipped ``attndyn/references.bib``."""
    return split(resources.files("attndyn").joinpath("references.bib").read_text("utf-8"))


def by_eprint(arxiv_id: str) -> tuple[str, str] | None:
    """(key, entry) of the reference whose ``eprint`` is ``arxiv_id``, None if none is."""
    for key, entry in references().items():
        if field(entry, "eprint") == arxiv_id:
            return key, entry
    return None
