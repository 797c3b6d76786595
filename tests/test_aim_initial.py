"""Where the AIM theory starts (attndyn.models.aim.theory.initial): the d → ∞ initial order
parameters of tied AIM against the simulator's own initial observables at large d."""

from __future__ import annotations

import numpy as np
import pytest

import attndyn
from attndyn.core.config import validate
from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.theory import limit_state


@pytest.mark.parametrize(
    "values",
    [
        dict(rho=0.3, teacher_rho=0.7, init_scale=1.2, teacher_scale=0.8),
        dict(rho=1.0, init_scale=0.5, teacher="identity", teacher_scale=1.5, heads=2),
    ],
)
def test_limit_state_matches_simulator_at_large_d(values):
    """The simulator's t = 0 record at d = 512 (6 seeds) against the d → ∞ values: the mean's
    finite-d bias is O(1/d) (E q_kk = σ⁴ρ(ρ + 1 + 1/d)), its seed-to-seed spread measured ≈ 5/d
    on q_kk; tolerance 4 standard errors + 2/d."""
    d = 512
    cfg = dict(values, param="tied", d=d, seeds=6, t_max=1e-6, records=2, test_size=0)
    limit = limit_state(validate(AIMConfig, cfg))
    sim = attndyn.simulate("aim", **cfg)
    K = 2 * values.get("heads", 1)
    assert set(limit) == {f"t_{k}" for k in range(1, K + 1)} | {
        f"q_{k}{l}" for k in range(1, K + 1) for l in range(k, K + 1)
    }
    for name, value in limit.items():
        start = sim[name].isel(time=0).values
        tol = 4 * start.std(ddof=1) / np.sqrt(len(start)) + 2 / d
        assert float(start.mean()) == pytest.approx(value, abs=tol), name
    assert limit["q_11"] > limit["t_1"] ** 2  # not vacuous: q_11 ≠ t_1², so q_12 = t_1 t_2 differs


def test_limit_state_of_the_defaults():
    """rho = teacher_rho = 0.5 and unit scales: t = 0.5, q_kk = 0.75, q_12 = 0.25 (the values
    aim-recovery-scaling states for Cor. 3)."""
    limit = limit_state(validate(AIMConfig, {"param": "tied"}))
    assert limit == pytest.approx(
        {"t_1": 0.5, "t_2": 0.5, "q_11": 0.75, "q_22": 0.75, "q_12": 0.25}
    )


def test_limit_state_is_tied_only():
    with pytest.raises(ValueError, match="tied"):
        limit_state(validate(AIMConfig, {"param": "untied"}))
