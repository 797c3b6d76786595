"""Untied AIM (S = UVᵀ): P1 = arXiv 2609.03858, statements of App. F and §4.1 that the other
untied tests do not reach (issue 47, item 4). Offsets are into P1's full text (search
``read_file`` id 60574488703; docs/aim-paper-notes.md explains them; "page N" = inside the
16,000-character page that starts at N).

- Lemma 12 (App. F.1.3, page 286000): ⟨g_U, U⟩_F = ⟨g_V, V⟩_F (Eq. 554), so
  δ = t^A − t^B obeys δ⁽ⁿ⁺¹⁾ = a_d² δ⁽ⁿ⁾ + r⁽ⁿ⁾, r⁽ⁿ⁾ = (α_d²/d)(‖g_U‖² − ‖g_V‖²) (Eq. 555),
  a_d = 1 − α_dγ/d;
- Eq. 37 (Theorem 3, @≈56,800, not exact; its proof Eqs. 851, 889–891): on the slow scale the
  mean is slaved, m(τ) → m*(q(τ)) for τ ∈ [T₁, T₂], T₁ > 0;
- Cor. 8 (App. F.2, page 444000, ≈ @459,300, not exact; Eq. 908): the untied hierarchy
  truncated at degree M converges geometrically in M.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attndyn
from attndyn.core.config import validate
from attndyn.models.aim import model as aim_model
from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.simulation import build
from attndyn.models.aim.theory import AIMTheoryConfig, initial_matrices
from attndyn.models.aim.theory.potential import potential_for
from attndyn.models.aim.theory.untied.fast import MeanDynamics, fast_image
from attndyn.models.aim.theory.untied.moments import (
    factors,
    letter_matrices,
    order_parameters,
    word_moments,
)
from attndyn.models.aim.theory.untied.slow import (
    UntiedHierarchy,
    UntiedMatrixFlow,
    canonical_untied,
)

# --------------------------------------------------------------------------------------------
# Lemma 12


@pytest.mark.parametrize(
    "values",
    [
        dict(L=2, output="index", activation="h2", heads=2),
        dict(L=3, output="softmax", activation="h1", heads=1),
        dict(L=1, output="index", activation="h3", heads=1, init_mean=0.3, teacher_mean=-0.5),
    ],
)
def test_lemma12_gradient_inner_products_are_equal(values):
    """P1 Lemma 12, Eq. 554 (page 286000): "⟨g_U⁽ⁿ⁾, U⁽ⁿ⁾⟩_F = Σ_ij ∂_ijk L(G⁽ⁿ⁾) G⁽ⁿ⁾_ijk =
    ⟨g_V⁽ⁿ⁾, V⁽ⁿ⁾⟩_F": G_ijk = x_iᵀU_kV_kᵀx_j/√d is linear in U_k and in V_k separately (Euler's
    identity), whatever the loss. Checked per head k with jax.grad of the simulator's own
    per-sample loss (``build(config).loss``) on single samples, and against Σ ∂L/∂G·G from
    jax.grad with respect to the forms. float64; tolerance 1e-10 relative (round-off of sums
    of d·r products of O(1) terms)."""
    with jax.enable_x64(True):
        config = validate(
            AIMConfig,
            dict(param="untied", d=24, batch=1, test_size=0, dtype="float64", **values),
        )
        problem = build(config)
        params, state = problem.init(jax.random.PRNGKey(3))
        cov = jnp.eye(config.L, dtype=jnp.float64)
        args = (config.output, config.activation, config.beta)
        out = aim_model.make_output(*args, config.heads, config.layer_c)
        out_teacher = aim_model.make_output(*args, config.n_teacher_heads, config.layer_c)
        grad = jax.jit(jax.grad(problem.loss))

        @jax.jit
        def f_times_G(x):  # Σ_ij ∂L/∂G_ijk G_ijk per head k
            y_star = out_teacher(aim_model.forms(state["teacher"], x, cov, False))

            def loss_of_forms(G):
                return jnp.mean(aim_model.squared_error(out(G), y_star, config.loss_scale))

            G = aim_model.forms(params, x, cov, False)
            return jnp.sum(jax.grad(loss_of_forms)(G) * G, axis=(0, 2, 3))

        checked = 0
        for i in range(4):
            batch = problem.sample(jax.random.PRNGKey(100 + i))
            g = grad(params, state, batch)
            fG = f_times_G(batch["x"])
            for k in range(config.heads):
                gu = float(jnp.sum(g["U"][k] * params["U"][k]))
                gv = float(jnp.sum(g["V"][k] * params["V"][k]))
                scale = abs(gu) + abs(gv) + 1e-300
                assert abs(gu - gv) <= 1e-10 * scale, (k, gu, gv)
                assert gu == pytest.approx(float(fG[k]), rel=1e-10), (k, gu, float(fG[k]))
                checked += abs(gu) > 1e-6  # a nonzero identity, not 0 = 0
        assert checked >= 3


LEMMA12 = dict(
    param="untied", activation="h1", L=1, d=32, seeds=4, batch=1, test_size=0,
    moment_degree=2, dtype="float64", lr_scaling="raw", grid="linear", init_mean=0.0,
    teacher_mean=1.0, v_scale=0.8,
)  # fmt: skip


def _run(lr: float, steps: int, gamma: float = 0.0, records: int | None = None):
    """Online SGD (batch 1, α_d = lr) for ``steps`` steps; untied slow time τ = nα_d/d."""
    d = LEMMA12["d"]
    return attndyn.simulate(
        "aim",
        lr=lr,
        t_max=steps * lr / d,
        records=steps + 1 if records is None else records,
        weight_decay=gamma,
        **LEMMA12,
    )


def _delta_and_tA(sim):
    tA, tB = sim["tA_1"].values, sim["tB_1"].values  # (seed, time)
    return tA - tB, tA


@pytest.mark.slow  # 5 CPU s (two simulations, one compile each)
def test_lemma12_delta_moves_at_second_order_in_the_step():
    """P1 Lemma 12, Eq. 555 (page 286000): with γ = 0 (a_d = 1) the change of δ = t^A − t^B in one
    step is r⁽ⁿ⁾ = (α_d²/d)(‖g_U‖² − ‖g_V‖²) = O(α_d²): the O(α_d) terms −2α_d⟨g_U, U⟩/d and
    −2α_d⟨g_V, V⟩/d cancel by Eq. 554, while t^A alone moves by O(α_d/d) + O(α_d²).

    Runs at α_d = 1e-3 and 5e-4 (d = 32, batch 1, 4 seeds, 40 steps recorded after every step);
    a seed draws the same samples at both rates, so the first step starts from the same state
    with the same sample. Measured: first-step ratio Δδ(α)/Δδ(α/2) = 4.000000 (every seed, to
    5e-8), over 40 steps rms Δδ/α_d² = 1.348 and 1.358 (0.7 % apart), rms Δt^A/α_d = 0.0658
    and 0.0671 while rms Δt^A/α_d² = 65.8 and 134; rms Δδ/rms Δt^A = 0.020 at α_d = 1e-3.
    Tolerances: the first step 1e-6 (exact up to round-off: no O(α) term at all); over 40 steps
    10 % (the two runs' states drift apart by O(nα_d) = 4 % in fast time)."""
    big, small = 1e-3, 5e-4
    delta_b, tA_b = _delta_and_tA(_run(big, 40))
    delta_s, tA_s = _delta_and_tA(_run(small, 40))
    dd_b, dd_s = np.diff(delta_b, axis=1), np.diff(delta_s, axis=1)
    dA_b, dA_s = np.diff(tA_b, axis=1), np.diff(tA_s, axis=1)
    # first step: same state, same sample, Δδ ∝ α² exactly
    assert np.all(np.abs(dd_b[:, 0] / dd_s[:, 0] - 4.0) < 1e-6), dd_b[:, 0] / dd_s[:, 0]
    assert np.all(np.abs(dd_b[:, 0]) > 0)

    def rms(x):
        return float(np.sqrt(np.mean(x**2)))

    # δ: second order (rms/α² equal at both rates); t^A: first order (rms/α equal, rms/α² not)
    assert rms(dd_b) / big**2 == pytest.approx(rms(dd_s) / small**2, rel=0.1)
    assert rms(dA_b) / big == pytest.approx(rms(dA_s) / small, rel=0.1)
    assert rms(dA_s) / small**2 > 1.8 * rms(dA_b) / big**2
    # δ's steps are a fraction O(dα_d) of t^A's (measured 0.020 at dα_d = 0.032)
    assert rms(dd_b) < 0.1 * rms(dA_b)


@pytest.mark.slow  # 6 CPU s (two simulations)
def test_lemma12_delta_decays_like_a_d_squared_per_step():
    """P1 Lemma 12, Eqs. 555–557 (page 286000): with weight decay, δ⁽ⁿ⁾ − a_d²ⁿ δ⁽⁰⁾ =
    Σ_j a_d^{2(n−1−j)} r⁽ʲ⁾, a sum of O(α_d²) terms; t^A alone does not decay like a_d²ⁿ.

    α_d = 5e-4, d = 32, γ = 16, n = 2000 steps (τ = 0.031, a_d²ⁿ = 0.368), 4 seeds. The size of
    the O(α_d²) sum is taken from a γ = 0 run of the same seeds, Σ_n |Δδ⁽ⁿ⁾| (1.9e-4 – 2.7e-4).
    Measured: max_n |δ⁽ⁿ⁾ − a_d²ⁿ δ⁽⁰⁾| = 5e-5 – 1.0e-4 per seed (≤ 0.4 of that sum) while δ
    itself falls by 0.08 – 0.17; t^A departs from a_d²ⁿ t^A(0) by 2.7e-3 – 3.4e-3. Asserted:
    the deviation ≤ the γ = 0 sum (the decay factors a_d^{2(n−1−j)} ≤ 1 can only shrink it;
    the trajectories differ, hence no tighter factor), the decay ≥ 100 times that, and t^A's
    departure ≥ 10 times δ's."""
    lr, steps, gamma, d = 5e-4, 2000, 16.0, LEMMA12["d"]
    delta0, _ = _delta_and_tA(_run(lr, steps))
    budget = np.sum(np.abs(np.diff(delta0, axis=1)), axis=1)  # per seed, Σ|r| at γ = 0
    sim = _run(lr, steps, gamma=gamma, records=21)
    delta, tA = _delta_and_tA(sim)
    n = np.round(sim["time"].values * d / lr)
    decay = (1.0 - lr * gamma / d) ** (2 * n)  # a_d^{2n}
    assert decay[-1] == pytest.approx(np.exp(-2 * gamma * steps * lr / d), rel=1e-3)
    dev = np.max(np.abs(delta - delta[:, :1] * decay), axis=1)
    assert np.all(dev <= budget), (dev, budget)
    assert np.all(np.abs(delta[:, 0]) * (1 - decay[-1]) > 100 * budget)
    dev_tA = np.max(np.abs(tA - tA[:, :1] * decay), axis=1)
    assert np.all(dev_tA > 10 * dev), (dev_tA, dev)
