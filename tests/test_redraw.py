"""Fresh seed offsets from a commit and preset margins from a re-draw record
(src/attndyn/claims/redraw.py; docs/claims.md, "Seeds")."""

from __future__ import annotations

import math

import pytest

from attndyn.claims.redraw import FRESH_FROM, MIN_MARGIN, fresh_offsets, head_commit, margins


def test_fresh_offsets_are_fixed_by_the_commit_distinct_and_above_the_tuned_ones():
    a = fresh_offsets("c32e7f2899b7b94da338bb93879befc2d8e4dd4c")
    assert a == fresh_offsets("c32e7f2899b7b94da338bb93879befc2d8e4dd4c")
    assert len(set(a)) == 3 and all(o >= FRESH_FROM and o % 1000 == 0 for o in a)
    assert fresh_offsets("0" * 40) != a
    assert fresh_offsets("abc", 5)[:3] == fresh_offsets("abc")
    with pytest.raises(ValueError, match="commit"):
        fresh_offsets("")


def test_head_commit_is_none_outside_a_checkout(tmp_path):
    assert head_commit(tmp_path) is None


def _row(experiment, seed, verdict="passed", **claims):
    out = []
    for name, (value, margin, passed) in claims.items():
        ci = None if margin is None else value
        out.append({"name": name, "value": value, "ci_low": ci, "ci_high": ci,
                    "margin": margin, "passed": passed})  # fmt: skip
    return {"experiment": experiment, "preset": "tiny", "seed": seed, "verdict": verdict,
            "claims": out}  # fmt: skip


def test_a_presets_margin_is_its_worst_claim_at_its_worst_offset():
    rows = [
        _row("x", 0, a=(1.0, 5.0, True), b=(2.0, 9.0, True)),
        _row("x", 1000, a=(1.1, 3.5, True), b=(2.0, 4.0, True)),
        # a claim without an interval that never changes is exact; one that changes is not
        _row("y", 0, a=(1.0, None, True), b=(0.3, 8.0, True)),
        _row("y", 1000, a=(1.0, None, True), b=(0.3, 7.0, True)),
        _row("z", 0, a=(0.2, None, True)),
        _row("z", 1000, a=(0.4, None, True)),
        _row("w", 0, a=(0.2, 6.0, True)),
        _row("w", 1000, "failed", a=(0.2, -1.0, False)),
    ]
    by = {m.experiment: m for m in margins({"rows": rows})}
    assert (by["x"].value, by["x"].claim, by["x"].seed) == (3.5, "a", 1000) and by["x"].thick
    assert by["y"].value == 7.0 and by["y"].thick
    assert math.isnan(by["z"].value) and not by["z"].thick
    assert by["w"].value == -math.inf and by["w"].seed == 1000 and not by["w"].thick
    assert MIN_MARGIN == 3.0
