"""focus-stages (arXiv 2605.01199): its measurement helpers on inputs with known answers, the
snapshots against the simulator, the π/λ plumbing of ``--set`` and the figure."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.claims.runner import experiment_config, run_experiment
from attndyn.core.config import parse_assignments, validate
from attndyn.experiments.markov.stages import (
    plateau_after_drop,
    rank_levels,
    stage1,
)
from attndyn.models import markov
from attndyn.models.markov.snapshots import snapshots, stage1_mode


def test_stage1_recovers_a_known_rate_and_window():
    t = np.linspace(0.0, 40.0, 401)
    u = 1e-4 * np.exp(0.37 * t)  # exact exponential growth
    u = np.where(u > 1.0, 1.0, u)  # then saturates
    drift = 1e-3 * t
    rate, worst, ta, tb = stage1(t, u, drift, top=0.1)
    assert rate == pytest.approx(0.37, rel=1e-9)
    # window: from t = 0 to u = 0.1 (t = ln 1000/0.37)
    assert ta == 0.0
    assert tb == pytest.approx(np.log(1000) / 0.37, abs=0.1)
    assert worst == pytest.approx(1e-3 * tb)


@pytest.mark.parametrize(
    "u",
    [
        np.full(50, 0.5),  # beyond the window from the start (the large-init control)
        np.full(50, 1e-4),  # never escapes (uniform π: σ₁ = 0)
        np.r_[0.05, 0.08, 0.2 * np.ones(48)],  # only 2 records before the top
    ],
)
def test_stage1_is_nan_without_a_window(u):
    t = np.linspace(0.0, 10.0, 50)
    rate, worst, ta, tb = stage1(t, u, np.zeros(50), top=0.1)
    assert np.isnan([rate, worst, ta, tb]).all()


def test_stage1_mode_is_the_growing_combination():
    """‖W₀ᵀπ̂ + W₁v̂‖/√2 against numpy, v̂ = 0 for uniform π (σ₁ = 0: no mode)."""
    rng = np.random.default_rng(0)
    W0, W1 = rng.normal(size=(4, 6)), rng.normal(size=(6, 4))
    pi = np.array([0.75, 0.19, 0.05, 0.01])
    v = pi - 0.25
    want = np.linalg.norm(pi @ W0 / np.linalg.norm(pi) + W1 @ v / np.linalg.norm(v)) / np.sqrt(2)
    got = stage1_mode({"W0": jnp.asarray(W0), "W1": jnp.asarray(W1)}, jnp.asarray(pi))
    assert float(got) == pytest.approx(want, rel=1e-6)
    flat = np.full(4, 0.25)
    got = stage1_mode({"W0": jnp.asarray(W0), "W1": jnp.asarray(W1)}, jnp.asarray(flat))
    assert float(got) == pytest.approx(np.linalg.norm(flat @ W0) / 0.5 / np.sqrt(2), rel=1e-6)


def test_stage1_mode_grows_at_sigma1_from_t0():
    """Thm 3.2's linearisation: at ε√m = 1/16 (the paper preset's init scale; here m = 16,
    ε = 1/64) the mode is e^{σ₁t} from t = 0 while ‖πᵀW₀‖/‖π‖ is not: it mixes in the decaying
    mode, and grows by less than ×10 before 0.1. Checked while the mode is below 0.1."""
    from attndyn.models.markov.theory.closed_forms import stage1_rate

    cfg = validate(
        markov.Config,
        dict(
            BASE,
            m=16,
            init_scale=1 / 64,
            t_max=0.8,
            records=17,
            grid="linear",
            solver="bs3",
            optimizer="flow",
        ),
    )
    snap = snapshots(cfg)
    t, u, x = snap["time"], snap["stage1_mode"], snap["w0_pi"]
    sigma = stage1_rate(markov.DataLaw(cfg).pi)
    for s in range(2):
        k = np.flatnonzero(u[s] < 0.1)  # the linear window: every record before the top
        assert len(k) >= 8 and k[-1] == len(k) - 1
        np.testing.assert_allclose(u[s, k] / (u[s, 0] * np.exp(sigma * t[k])), 1.0, atol=2e-3)
        assert abs(x[s, k[-1]] / (x[s, 0] * np.exp(sigma * t[k[-1]])) - 1) > 0.1


def test_plateau_after_drop_skips_the_origin_saddle():
    """A loss flat near θ = 0 (flatter in log t than the plateau), a drop, then a slowly
    sloping plateau at 0.4 before focus: the plateau is read after the drop."""
    from attndyn.models.markov.stages import Stage

    t = np.r_[0.0, np.geomspace(0.05, 100.0, 200)]
    gap = 1.08 - 1e-4 * np.log1p(t) - 0.68 / (1 + np.exp(-3 * (t - 7)))  # drop near t = 7
    gap = gap - 0.002 * np.log1p(t) * (t > 10)  # the plateau slopes a little
    focus = [Stage("focus", 30.0, 40.0, "", 0.75, 0.9)]
    value, at = plateau_after_drop(t, gap, 1.0, focus)
    assert 10 < at < 30 and value == pytest.approx(0.4, abs=0.01)
    # the flattest pair from t = 1 on is the origin's tail, 1.08 (what a plain search returns)
    k = np.flatnonzero((t >= 1) & (t <= 30))
    flat = np.argmin(np.abs(np.diff(gap[k]) / np.diff(np.log(t[k]))))
    assert gap[k][flat] > 1.0
    assert np.isnan(plateau_after_drop(t, gap, np.nan, focus)).all()
    assert np.isnan(plateau_after_drop(t, gap, 1.0, [])).all()


@pytest.mark.parametrize(
    "erank, levels",
    [
        ([3.7, 2.0, 1.02, 1.03, 1.6, 2.0, 2.4, 2.9], 3),
        ([3.7, 1.02, 1.9, 2.1], 2),
        ([3.7, 3.0, 2.6], 0),  # never condenses to ≈ 1
        ([3.7, 1.1, 1.2, 1.4], 1),
        ([3.7, 1.1, 3.0], 3),  # one jump through two levels counts both
    ],
)
def test_rank_levels(erank, levels):
    assert rank_levels(np.asarray(erank)) == levels


BASE = dict(m=4, init_scale=1e-3, t_max=40.0, records=12, seeds=2, dtype="float64")


@pytest.mark.parametrize("optimizer, solver", [("flow", "ros2"), ("flow", "bs3"), ("gd", "ros2")])
def test_snapshots_match_the_simulator(optimizer, solver):
    cfg = validate(markov.Config, dict(BASE, optimizer=optimizer, solver=solver, lr=0.05))
    traj = markov.simulate(cfg)
    snap = snapshots(cfg)
    assert snap["W0"].shape == (2, len(traj["time"]), 4, 4)
    np.testing.assert_allclose(snap["time"], traj["time"].values)
    for name in ("loss_gap", "erank_W0", "attn_1_0", "align_phi"):
        np.testing.assert_allclose(snap[name], traj[name].values, rtol=1e-9, atol=1e-12)
    # the added scalars are functions of the returned W₀ and of the observables
    fro = np.sqrt(sum(snap[f"norm_{i}"] ** 2 for i in range(4)))
    np.testing.assert_allclose(snap["w0_norm"], fro, rtol=1e-12)
    np.testing.assert_allclose(snap["w0_norm"], np.linalg.norm(snap["W0"], axis=(2, 3)))
    pi = markov.DataLaw(cfg).pi
    proj = np.linalg.norm(np.einsum("i,stim->stm", pi, snap["W0"]), axis=-1) / np.linalg.norm(pi)
    np.testing.assert_allclose(snap["w0_pi"], proj, rtol=1e-10)
    assert np.all(snap["wqk_drift"][:, 0] == 0.0)


def test_snapshots_refuse_sampled_data():
    from attndyn.errors import InputError

    cfg = validate(markov.Config, dict(BASE, data="online", optimizer="gd"))
    with pytest.raises(InputError, match="population"):
        snapshots(cfg)


def test_set_pi_and_lam_reach_the_markov_run():
    values = parse_assignments(["base.pi=[0.5, 0.3, 0.2]", "base.lam=0.3"])
    _, config = experiment_config("focus-stages", "tiny", values)
    law = markov.DataLaw(config.base)
    np.testing.assert_allclose(law.pi, [0.5, 0.3, 0.2])
    np.testing.assert_allclose(law.P, 0.3 * np.eye(3) + 0.7 * np.outer(np.ones(3), law.pi))


def test_geometric_pi_is_appendix_e1():
    overrides = {"base.pi_kind": "geometric", "base.d": 5}
    _, config = experiment_config("focus-stages", "tiny", overrides)
    law = markov.DataLaw(config.base)
    p = 0.5 ** np.arange(1, 6)
    np.testing.assert_allclose(law.pi, p / p.sum())


@pytest.mark.e2e
def test_the_figure_is_written(tmp_path):
    outcome = run_experiment(
        "focus-stages",
        "tiny",
        {"base.t_max": 150.0, "seeds": 2, "base.records": 50},
        out=tmp_path,
    )
    path = outcome.figure
    assert path.exists() and path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    names = [s["name"] for s in outcome.summary["stages"][0]]
    assert names[0] == "condensation" and "focus" in names
    for key in ("plateau_gap_theory", "plateau_gap_measured", "sigma1_theory", "sigma1_measured"):
        assert np.isfinite(outcome.summary[key])


def test_more_tokens_than_tracked_is_refused():
    from attndyn.errors import InputError

    with pytest.raises(InputError, match="base.d"):
        experiment_config("focus-stages", "tiny", {"base.pi_kind": "geometric", "base.d": 9})
    with pytest.raises(InputError, match="base.pi_kind"):
        experiment_config("focus-stages", "tiny", {"base.pi_kind": "two-group"})
