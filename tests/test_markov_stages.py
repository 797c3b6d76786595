"""The markov family's stages: the detector (attndyn.models.markov.stages) on trajectories whose
stages are known, and the markov-stages experiment's measurement helpers on inputs with known
answers, the snapshots against the simulator, the π/λ plumbing of ``--set`` and the figure."""

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
from attndyn.models.markov.stages import (
    EDGE,
    detect_stages,
    legs,
    rank_signal,
    stages_of,
)

T = np.geomspace(0.1, 1e4, 801)
W = 0.15  # logistic width in log t


def _step(t0: float) -> np.ndarray:
    """0 → 1 logistically in log t around t0."""
    return 1.0 / (1.0 + np.exp(-(np.log(T) - np.log(t0)) / W))


def _edge(t0: float, rising_to: float) -> float:
    """Time at which _step(t0) reaches ``rising_to`` (exact inverse)."""
    return float(t0 * np.exp(W * np.log(rising_to / (1.0 - rising_to))))


def test_rank_signals_on_a_condensed_matrix_with_an_untrained_bulk():
    """σ = (1, .03, .03, .03): the paper-init W₀ after Stage I. The count and the stable rank say
    rank one; the entropy rank counts the bulk (exp H(p) = 1.46 for p ∝ σ)."""
    sv = np.array([1.0, 0.03, 0.03, 0.03])
    p = sv / sv.sum()
    obs = {
        "sv_ratio_W0": np.array([0.03, 0.5]),
        "sv_ratio3_W0": np.array([0.03, 0.25]),
        "sv_ratio4_W0": np.array([0.03, 0.03]),
        "stable_rank_W0": np.array([1.0027, 1.3134]),
        "erank_W0": np.array([np.exp(-np.sum(p * np.log(p))), 2.2]),
    }
    np.testing.assert_array_equal(rank_signal(obs, "count", 0.2), [1.0, 3.0])
    np.testing.assert_array_equal(rank_signal(obs, "count", 0.3), [1.0, 2.0])
    assert rank_signal(obs, "stable")[0] == pytest.approx(1 + 3 * 0.03**2, abs=1e-4)
    assert rank_signal(obs, "erank")[0] == pytest.approx(1.46, abs=0.01)
    with pytest.raises(ValueError, match="rank signal must be one of count, stable, erank"):
        rank_signal(obs, "entropy")


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


# --- the markov-stages experiment (experiments/markov/stages.py) ---


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
        np.full(50, 1e-4),  # never escapes (uniform π: σ₁ = 0)
        np.r_[0.05, 0.08, 0.2 * np.ones(48)],  # only 2 records before the top
    ],
)
def test_stage1_is_nan_without_a_window(u):
    t = np.linspace(0.0, 10.0, 50)
    rate, worst, ta, tb = stage1(t, u, np.zeros(50), top=0.1)
    assert np.isnan([rate, worst, ta, tb]).all()


def test_stage1_window_is_empty_when_u_starts_above_the_top():
    """The large-init control: no Stage I, so no rate or drift, and the window ends at t = 0."""
    t = np.linspace(0.0, 10.0, 50)
    rate, worst, ta, tb = stage1(t, np.full(50, 0.5), np.zeros(50), top=0.1)
    assert np.isnan([rate, worst]).all() and ta == tb == 0.0


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


def test_attention_stays_frozen_in_stage1():
    """Thm 3.2 (Eq. 9): ∂L/∂Φ = 0 at θ = 0, so over the Stage-I window (the mode below 0.1)
    W_QK moves only through Lemma 3.1's O(‖Δθ‖²) remainder: its relative drift stays far below
    the window's own size 0.1 (measured ~10⁻⁷ at tiny; formerly the claim `attention-frozen`)."""
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
    for s in range(2):
        k = np.flatnonzero(snap["stage1_mode"][s] < 0.1)
        assert len(k) >= 8
        assert np.max(snap["wqk_drift"][s, k]) < 1e-2


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
    _, config = experiment_config("markov-stages", "tiny", values)
    law = markov.DataLaw(config.base)
    np.testing.assert_allclose(law.pi, [0.5, 0.3, 0.2])
    np.testing.assert_allclose(law.P, 0.3 * np.eye(3) + 0.7 * np.outer(np.ones(3), law.pi))


def test_geometric_pi_is_appendix_e1():
    overrides = {"base.pi_kind": "geometric", "base.d": 5}
    _, config = experiment_config("markov-stages", "tiny", overrides)
    law = markov.DataLaw(config.base)
    p = 0.5 ** np.arange(1, 6)
    np.testing.assert_allclose(law.pi, p / p.sum())


@pytest.mark.e2e
def test_the_figure_is_written(tmp_path):
    outcome = run_experiment(
        "markov-stages",
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
        experiment_config("markov-stages", "tiny", {"base.pi_kind": "geometric", "base.d": 9})
    with pytest.raises(InputError, match="base.pi_kind"):
        experiment_config("markov-stages", "tiny", {"base.pi_kind": "two-group"})
