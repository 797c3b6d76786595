"""Seed offsets nobody tuned on (docs/claims.md, "Seeds"; issue 49).

A verdict must hold at seeds drawn after the claim is final. :func:`fresh_offsets` derives seed
offsets from a commit's hash, so nobody picks them: the offsets of a commit are fixed once the
commit is, and differ from commit to commit. They are multiples of 1000 from 10,000 on, above every
offset a preset was ever adjusted at (0 … 6000), so a run at a fresh offset shares no seed with
one.
"""

from __future__ import annotations

import hashlib
import math
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FRESH_FROM = 10_000
"""The smallest fresh offset: above the offsets 0 … 6000 used while presets were adjusted."""

FRESH_STEP = 1000
"""Fresh offsets are multiples of this, so two of them share no seed below 1000 seeds a run."""

FRESH_SLOTS = 9000
"""How many fresh offsets there are: 10,000 … 9,009,000."""


def fresh_offsets(commit: str, n: int = 3) -> list[int]:
    """``n`` distinct seed offsets from ``commit`` (a hash): offset i is 10,000 + 1000·k_i with
    k_i = SHA-256("commit:i") mod 9000, skipping repeats."""
    if not commit:
        raise ValueError("commit: a non-empty hash is required")
    out: list[int] = []
    i = 0
    while len(out) < n:
        digest = hashlib.sha256(f"{commit}:{i}".encode()).hexdigest()
        offset = FRESH_FROM + FRESH_STEP * (int(digest, 16) % FRESH_SLOTS)
        if offset not in out:
            out.append(offset)
        i += 1
    return out


def head_commit(root: str | Path = ".") -> str | None:
    """The full hash of ``root``'s checked-out commit, or None outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


MIN_MARGIN = 3.0
"""The margin, in standard errors, at which a preset's verdict is re-drawn at a fresh offset in CI:
its deciding interval end then lies 3 SE inside the target, a flip about once in 700 draws per
claim if the value measured is the true one."""


@dataclass(frozen=True)
class Margin:
    """A preset's smallest margin over its claims and the offsets measured: ``value`` in standard
    errors (``-inf`` when a row did not pass; ``nan`` when a claim that varies with the seeds
    has no interval to measure it), and the ``claim`` and ``seed`` offset where it is."""

    experiment: str
    preset: str
    value: float
    claim: str
    seed: int | None

    @property
    def thick(self) -> bool:
        """Wide enough for CI to re-draw at a fresh offset (:data:`MIN_MARGIN`)."""
        return self.value >= MIN_MARGIN


def claim_margin(rows: list[dict[str, Any]], name: str) -> float:
    """The smallest margin of claim ``name`` over ``rows``; a claim without an interval counts
    as exact (``inf``) only if every row gives it the same value and passes it."""
    claims = [c for row in rows for c in row["claims"] if c["name"] == name]
    if not all(c["passed"] for c in claims):
        return -math.inf
    margins = [c.get("margin") for c in claims]
    if all(m is not None for m in margins):
        return min(margins)
    if any(c.get("ci_low") is not None for c in claims):
        # an interval whose margin is not recorded as a number: infinite (exact) or a range
        # target's extra check; not measurable here
        return min((m for m in margins if m is not None), default=math.nan)
    return math.inf if len({c["value"] for c in claims}) == 1 else math.nan


def margins(record: Mapping[str, Any]) -> list[Margin]:
    """Per experiment and preset of a re-draw ``record`` (``scripts/seed_offsets.py --record``),
    its smallest claim margin."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in record["rows"]:
        groups.setdefault((row["experiment"], row["preset"]), []).append(row)
    out = []
    for (experiment, preset), rows in groups.items():
        if any(row["verdict"] != "passed" for row in rows):
            bad = next(row for row in rows if row["verdict"] != "passed")
            failed = [c["name"] for c in bad["claims"] if not c["passed"]]
            out.append(Margin(experiment, preset, -math.inf, ", ".join(failed), bad["seed"]))
            continue
        names = dict.fromkeys(c["name"] for row in rows for c in row["claims"])
        worst = None
        for name in names:
            m = claim_margin(rows, name)
            key = -math.inf if math.isnan(m) else m
            if worst is None or key < worst[0]:
                seed = _worst_seed(rows, name)
                worst = (key, m, name, seed)
        value, claim, seed = (math.inf, "", None) if worst is None else worst[1:]
        out.append(Margin(experiment, preset, value, claim, seed))
    return sorted(out, key=lambda m: (m.experiment, m.preset))


def _worst_seed(rows: list[dict[str, Any]], name: str) -> int | None:
    best = None
    for row in rows:
        for c in row["claims"]:
            if c["name"] == name and c.get("margin") is not None:
                if best is None or c["margin"] < best[0]:
                    best = (c["margin"], row["seed"])
    return None if best is None else best[1]
