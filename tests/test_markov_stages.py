"""The stage detector (attndyn.models.markov.stages) on trajectories whose stages are known."""

from __future__ import annotations

import numpy as np
import pytest

from attndyn.core.config import validate
from attndyn.models import markov
from attndyn.models.markov.stages import EDGE, detect_stages, legs, stages_of

T = np.geomspace(0.1, 1e4, 801)
W = 0.15  # logistic width in log t


def _step(t0: float) -> np.ndarray:
    """0 → 1 logistically in log t around t0."""
    return 1.0 / (1.0 + np.exp(-(np.log(T) - np.log(t0)) / W))


def _edge(t0: float, rising_to: float) -> float:
    """Time at which _step(t0) reaches ``rising_to`` (exact inverse)."""
    return float(t0 * np.exp(W * np.log(rising_to / (1.0 - rising_to))))


def test_legs_finds_the_zigzag_extrema():
    v = np.array([0.0, 0.01, 1.0, 0.98, 0.3, 0.31, 0.9, 0.89])
    assert legs(v, 0.5) == [(0, 2), (2, 4), (4, 6)]
    assert legs(v, 0.8) == [(0, 2)]
    assert legs(np.array([1.0, 1.01, 0.99]), 0.1) == []


def test_synthetic_cycle_is_segmented_at_its_known_times():
    """erank 4 → 1 at t = 5, F rises at t = 80, D falls at t = 150, erank 1 → 2 at t = 400 and
    2 → 3 at t = 3000: every boundary within one grid step of the logistic's 5 %/95 % points."""
    erank = 1.0 + 3.0 * (1.0 - _step(5.0)) + _step(400.0) + _step(3000.0)
    focus = 0.75 + 0.2 * _step(80.0)
    dil = 0.75 - 0.4 * _step(150.0)
    stages = detect_stages(T, erank, focus, dil)
    assert [s.name for s in stages] == ["condensation", "focus", "dilution", "restart", "restart"]
    tol = np.log(T[1] / T[0]) * 1.01
    lo, hi = EDGE, 1 - EDGE
    expected = [
        (_edge(5.0, lo), _edge(5.0, 1 - 0.15 / 3.0)),  # erank ≤ 1.15 ⇔ step ≥ 1 − 0.05
        (_edge(80.0, lo), _edge(80.0, hi)),
        (_edge(150.0, lo), _edge(150.0, hi)),
        (_edge(400.0, 0.15), _edge(400.0, 1 - 0.15)),
        (_edge(3000.0, 0.15), _edge(3000.0, 1 - 0.15)),
    ]
    for stage, (start, end) in zip(stages, expected, strict=True):
        assert abs(np.log(stage.start / start)) <= tol, stage
        assert abs(np.log(stage.end / end)) <= tol, stage


def test_no_stage_without_a_signal():
    flat = np.ones_like(T)
    assert detect_stages(T, 4 * flat, 0.75 * flat, 0.75 * flat) == []


@pytest.mark.parametrize("seed", [0, 1])
def test_population_flow_goes_through_the_four_stages_in_order(seed):
    """Population gradient flow (π of Section 4.1, m = 8, ε = 10⁻³): condensation, then focus,
    then dilution, then a restart (arXiv 2605.01199, abstract and Section 3)."""
    cfg = validate(
        markov.Config,
        dict(
            m=8,
            t_max=600.0,
            records=80,
            seeds=1,
            seed=seed,
            optimizer="flow",
            dtype="float64",
            init_scale=1e-3,
        ),
    )
    traj = markov.simulate(cfg)
    stages = stages_of(traj, np.array(markov.PAPER_PI), (0, 1, 2, 3))
    names = [s.name for s in stages]
    first = {n: names.index(n) for n in ("condensation", "focus", "dilution", "restart")}
    assert first["condensation"] < first["focus"] < first["dilution"] < first["restart"]
    by = {n: stages[i] for n, i in first.items()}
    assert by["condensation"].end < by["focus"].start
    assert by["dilution"].end <= by["restart"].end
