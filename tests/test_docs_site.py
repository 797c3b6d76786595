"""The documentation site (mkdocs.yml): .ci/run builds it with ``mkdocs build --strict``, which
fails on a page missing from the nav; this test says the same in the quick suite, where a new
experiment's generated page (scripts/claims_pages.py) is first written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def nav_pages() -> set[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:") :]
    return set(re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", nav, flags=re.M))


def test_nav_lists_every_page_of_docs():
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    missing = sorted(pages - nav_pages())
    assert not missing, f"pages missing from mkdocs.yml's nav: {missing}"


def test_nav_names_no_missing_page():
    gone = sorted(p for p in nav_pages() if not (DOCS / p).is_file())
    assert not gone, f"mkdocs.yml's nav names pages that do not exist: {gone}"
