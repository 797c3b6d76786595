"""aim-rate-limit's estimators on exact laws: per-seed stability edges on a grid, and the
exponents fitted over d (docs/aim-open-questions.md, Q6)."""

from __future__ import annotations

import numpy as np
import pytest

from attndyn.claims.runner import experiment_config
from attndyn.experiments.aim.rate_limit import (
    edge_exponent,
    edge_interval,
    edge_log_power,
    nwr_exponent,
    rate_rss,
    seed_brackets,
)

DS = [32, 64, 128, 256]


def test_seed_brackets_hold_each_seeds_threshold():
    rates = [0.5, 1.0, 2.0, 4.0]
    thresholds = np.array([0.7, 1.5, 3.0, 0.3, 9.0])  # the last two fall outside the grid
    diverged = np.array([[c > t for t in thresholds] for c in rates])
    brackets, non_monotone = seed_brackets(rates, diverged)
    np.testing.assert_allclose(brackets[:, :3], [[0.5, 1.0, 2.0], [1.0, 2.0, 4.0]])
    assert np.isnan(brackets[:, 3:]).all() and non_monotone == 0
    # a seed that diverges at 1 but not at 2 is counted, its bracket ends at the first divergence
    diverged[:, 0] = [False, True, False, True]
    brackets, non_monotone = seed_brackets(rates, diverged)
    assert tuple(brackets[:, 0]) == (0.5, 1.0) and non_monotone == 1


def test_edge_interval_covers_the_grid_resolution():
    """Every seed in the same bracket (1, 2): no seed-to-seed spread, yet the interval spans the
    bracket, and the point is its geometric midpoint."""
    edge = edge_interval(np.array([[1.0] * 8, [2.0] * 8]))
    assert edge.value == pytest.approx(np.sqrt(2)) and (edge.low, edge.high) == (1.0, 2.0)


@pytest.mark.parametrize("beta", [-0.5, 0.0, 0.3])
def test_edge_exponent_recovers_a_power_law(beta):
    logs = [np.full(4, beta * np.log(d)) + np.array([-0.1, 0.0, 0.0, 0.1]) for d in DS]
    assert edge_exponent(DS, *logs) == pytest.approx(beta, abs=1e-12)


@pytest.mark.parametrize("k", [0.0, 1.0, 2.0])
def test_edge_log_power_recovers_log_factors(k):
    """α_max ∝ 1/(d (log d)^k) means c* = α_max·d ∝ (log d)^−k."""
    logs = [np.full(3, 0.2 - k * np.log(np.log(d))) for d in DS]
    assert edge_log_power(DS, *logs) == pytest.approx(k, abs=1e-12)
    rss = rate_rss(DS, [g.mean() for g in logs])
    best = "1/d" if k == 0 else "1/(d log d)" if k == 1 else None
    if best is not None:
        assert rss[best] == pytest.approx(0.0, abs=1e-20)
        assert rss[best] < min(v for name, v in rss.items() if name != best)


def test_nwr_exponent_of_d_squared_and_of_d_squared_log_d():
    n2 = [np.full(3, 0.3 * d**2) for d in DS]
    assert nwr_exponent(DS, *n2) == pytest.approx(2.0, abs=1e-12)
    n2log = [np.full(3, d**2 * np.log(d)) for d in DS]
    # the local exponent of d² log d is 2 + 1/ln d: above 2 by 1/ln d̄ over the range
    assert 2.15 < nwr_exponent(DS, *n2log) < 2.3


def test_grid_moves_with_d_and_bad_grids_are_refused():
    _, config = experiment_config("aim-rate-limit", "small", {})
    h2 = config.grid("tied-h2", 64)
    assert h2[0] == pytest.approx(2 * config.rates["tied-h2"][0], rel=1e-3)  # γ = 1
    assert config.grid("tied-h1", 128) == config.rates["tied-h1"]  # γ = 0
    with pytest.raises(ValueError, match="increasing"):
        experiment_config("aim-rate-limit", "small", {"rates": {"tied-h1": [1.0, 0.5]}})


def test_untied_runs_see_the_tied_runs_samples_and_their_own_signal():
    from attndyn.experiments.aim.rate_limit import _run_changes, crossing_samples
    from attndyn.models.aim.config import AIMConfig

    _, config = experiment_config("aim-rate-limit", "small", {})
    untied = _run_changes(config, "untied-h1", 64, 0.5)
    tied = _run_changes(config, "tied-h1", 64, 0.5)
    assert untied["param"] == "untied" and "param" not in tied
    # τ = nα_d/d on the untied axis, t = 4nα_d/d on the tied one: the same n at t_max/4
    assert untied["t_max"] == pytest.approx(config.base.t_max / 4)
    u = AIMConfig(**(config.base.model_dump() | untied))
    t = AIMConfig(**(config.base.model_dump() | tied))
    assert u.total_steps == t.total_steps
    # crossing_samples reads Eq. 41's signal on an untied trajectory (and NaN for a diverged seed)
    import xarray as xr

    samples = np.array([0, 10, 20, 30])
    q1 = np.array([[0.0, 0.05, 0.15, 0.3], [0.0, 0.2, 0.3, 0.4]])
    q2 = np.zeros_like(q1)
    traj = xr.Dataset(
        {"q1_12": (("seed", "time"), q1), "q2_12": (("seed", "time"), q2)},
        coords={"samples": ("time", samples), "diverged": ("seed", [False, True])},
        attrs={"config": u.model_dump_json()},
    )
    n = crossing_samples(traj, 0.1)
    assert n[0] == pytest.approx(15.0) and np.isnan(n[1])
