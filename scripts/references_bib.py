"""Write src/attndyn/references.bib from the ```bibtex blocks of docs/references.md (the one
source of attndyn's references; the package ships the copy, since docs/ is not in a wheel).

    python scripts/references_bib.py          # rewrite the copy
    python scripts/references_bib.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

from attndyn.core.bibtex import from_markdown, split

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "docs" / "references.md"
COPY = ROOT / "src" / "attndyn" / "references.bib"


def main(argv: list[str]) -> int:
    expected = from_markdown(SOURCE.read_text("utf-8"))
    if "--check" in argv:
        stale = not COPY.is_file() or COPY.read_text("utf-8") != expected
        if stale:
            print(f"{COPY.relative_to(ROOT)} is stale: run python scripts/references_bib.py")
        return int(stale)
    COPY.write_text(expected, "utf-8")
    print(f"wrote {COPY.relative_to(ROOT)} ({len(split(expected))} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
