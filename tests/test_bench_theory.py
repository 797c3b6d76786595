"""Smoke test of the theory benchmark (attndyn.models.aim.theory.bench): row structure only, no
timing assertions (timings depend on the machine and its load)."""

from __future__ import annotations

import json
import math

import pytest

from attndyn.models.aim.theory import bench as theory


@pytest.fixture
def small(monkeypatch):
    """The benchmark at d = 48 and t = 2, so that the smoke test takes seconds."""
    monkeypatch.setattr(theory, "D", 48)
    monkeypatch.setattr(theory, "HORIZON", 2.0)
    monkeypatch.setattr(theory, "M", 3)
    original = theory.bench_config
    monkeypatch.setattr(theory, "bench_config", lambda: original(d=48, t_max=2.0))


@pytest.mark.slow  # 5 CPU s
def test_theory_benchmark_rows(small):
    rows = theory.run_theory_benchmark(quick=True)
    assert [r["name"] for r in rows] == ["hierarchy", "matrix-flow", "simulator"]
    for row in rows:
        assert row["family"] == "aim-theory"
        assert math.isfinite(row["seconds"]) and row["seconds"] > 0
        assert math.isfinite(row["ratio_to_simulator"]) and row["ratio_to_simulator"] > 0
    hierarchy, flow, sim = rows
    assert hierarchy["moments"] == 9  # words of degree ≤ 3 over two letters
    assert isinstance(hierarchy["target_met"], bool)
    # the truncation is close to the flow in this convergent regime (γ = 8)
    assert hierarchy["max_abs_diff_vs_flow"] < 0.05
    assert sim["steps"] > sim["steps_timed"]
    json.dumps(rows)  # rows are JSON-serialisable
