""" "Did you mean": the closest known names to a mistyped one (:mod:`difflib`), as a short
phrase to append to a one-line error."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``choices`` that look like ``name`` (best first; case ignored)."""
    options = [str(c) for c in choices]
    lowered = {c.lower(): c for c in options}
    hits = difflib.get_close_matches(str(name).lower(), list(lowered), n=n, cutoff=0.6)
    if not hits:  # a prefix ("circ") or a name inside a longer one ("solvable")
        key = str(name).lower()
        hits = [c for c in lowered if key and (c.startswith(key) or key in c)][:n]
    return [lowered[h] for h in hits]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` (or ``'x' or 'y'``) when a choice looks like ``name``;
    else ``""``."""
    hits = closest(name, choices, n=2)
    if not hits:
        return ""
    return " (did you mean " + " or ".join(repr(h) for h in hits) + "?)"
