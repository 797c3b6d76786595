"""The focus–dilution family's data, model and population loss (arXiv 2605.01199, Defs 2.1–2.2,
Prop. 2.3), against explicit implementations, finite differences and Monte Carlo."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.core.config import validate
from attndyn.errors import InputError
from attndyn.models import markov
from attndyn.models.markov import data, model

PI = np.array(markov.PAPER_PI)


def test_two_group_pi_is_eq1():
    pi = data.two_group_pi(3, 0.6, 0.05)
    assert pi == pytest.approx([0.6, 0.2 + 0.05, 0.2 - 0.05])  # Thm 3.9's π̃
    pi5 = data.two_group_pi(5, 0.5, 0.01, "alternating")
    assert pi5.sum() == pytest.approx(1.0)
    assert pi5[1:] - 0.125 == pytest.approx([0.01, -0.01, 0.01, -0.01])
    with pytest.raises(InputError, match="delta"):
        data.two_group_pi(4, 0.7, 0.5)
    with pytest.raises(InputError, match="pi1"):
        data.two_group_pi(4, 0.2)


def test_geometric_pi_sums_to_one_with_halving_ratios():
    pi = data.geometric_pi(5)
    assert pi.sum() == pytest.approx(1.0)
    assert pi[1:] / pi[:-1] == pytest.approx(np.full(4, 0.5))


@pytest.mark.parametrize("kind", ["lazy", "metropolis"])
def test_chains_are_stochastic_and_pi_stationary(kind):
    P = data.lazy_chain(PI, 0.3) if kind == "lazy" else data.metropolis_chain(PI, 0.3, seed=1)
    assert P.min() >= 0
    assert P.sum(axis=1) == pytest.approx(np.ones(4), abs=1e-14)
    assert PI @ P == pytest.approx(PI, abs=1e-14)


def test_metropolis_chains_differ_between_seeds():
    a, b = (data.metropolis_chain(PI, 0.5, seed=s) for s in (0, 1))
    assert np.abs(a - b).max() > 1e-3


def test_sampler_follows_def21():
    """First token uniform, transitions P: empirical frequencies within 5 binomial standard
    errors."""
    P = data.metropolis_chain(PI, 0.5, seed=3)
    seqs = np.asarray(data.sample_sequences(jax.random.PRNGKey(0), jnp.asarray(P), 20_000, 30))
    first = np.bincount(seqs[:, 0], minlength=4) / len(seqs)
    se = np.sqrt(0.25 * 0.75 / len(seqs))
    assert np.abs(first - 0.25).max() < 5 * se
    counts = np.zeros((4, 4))
    np.add.at(counts, (seqs[:, :-1].ravel(), seqs[:, 1:].ravel()), 1)
    rows = counts.sum(axis=1, keepdims=True)
    freq = counts / rows
    se = np.sqrt(P * (1 - P) / rows) + 1e-12
    assert np.all(np.abs(freq - P) < 5 * se + 1e-9)


def _params(key, d=4, m=6, scale=0.7, value=False):
    arch = model.Arch(value=value)
    return model.init_params(key, d, m, m, scale, arch, jnp.float64)


def test_forward_is_def22_written_out():
    """softmax(Z W_Q W_Kᵀ Zᵀ) Z W₁ at the last row, Z = E_X W₀ (NumPy), against the M/Φ gather;
    causal row j against the last position of the prefix x₁…x_j."""
    with jax.enable_x64():
        p = _params(jax.random.PRNGKey(1))
        X = jax.random.randint(jax.random.PRNGKey(2), (5, 7), 0, 4)
        got = np.asarray(model.last_position_logits(p, X))
        causal = np.asarray(model.causal_logits(p, X))
    q = {k: np.asarray(v) for k, v in p.items()}
    for b, x in enumerate(np.asarray(X)):
        Z = np.eye(4)[x] @ q["W0"]
        S = Z @ q["WQ"] @ q["WK"].T @ Z.T
        for j in range(1, 8):
            a = np.exp(S[j - 1, :j] - S[j - 1, :j].max())
            want = (a / a.sum()) @ Z[:j] @ q["W1"]
            np.testing.assert_allclose(causal[b, j - 1], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[b], want, rtol=1e-12, atol=1e-12)


def test_options_change_the_model_as_documented():
    with jax.enable_x64():
        p = _params(jax.random.PRNGKey(3), value=True)
        X = jax.random.randint(jax.random.PRNGKey(4), (3, 5), 0, 4)
        plain = model.last_position_logits(p, X, model.Arch(value=True))
        res = model.last_position_logits(p, X, model.Arch(value=True, residual=True))
        np.testing.assert_allclose(res - plain, (p["W0"] @ p["W1"])[X[:, -1]], atol=1e-12)
        sh = model.shorthands(p, model.Arch(logit_scale=0.5, value=True))
        np.testing.assert_allclose(sh["M"], p["W0"] @ p["WV"] @ p["W1"], atol=1e-12)
        np.testing.assert_allclose(
            sh["Phi"], 0.5 * p["W0"] @ p["WQ"] @ p["WK"].T @ p["W0"].T, atol=1e-12
        )


def test_population_gradients_are_prop23():
    """∂L/∂M = −Σ_i π_i 𝔸_iᵀ(P_i − ℙ_i), ∂L/∂Φ = −Σ_i π_i e_i (P_i − ℙ_i) Mᵀ Var(𝔸_i)."""
    with jax.enable_x64():
        pi, P = jnp.asarray(PI), jnp.asarray(data.lazy_chain(PI, 0.5))
        k1, k2 = jax.random.split(jax.random.PRNGKey(5))
        M = jax.random.normal(k1, (4, 4), jnp.float64)
        Phi = jax.random.normal(k2, (4, 4), jnp.float64)

        def loss(M, Phi):
            A = model.population_attention(Phi, pi)
            return -jnp.sum(pi[:, None] * P * jax.nn.log_softmax(A @ M, axis=1))

        gM, gPhi = jax.grad(loss, argnums=(0, 1))(M, Phi)
        A = model.population_attention(Phi, pi)
        pred = jax.nn.softmax(A @ M, axis=1)
        wantM = -sum(pi[i] * jnp.outer(A[i], P[i] - pred[i]) for i in range(4))
        var = lambda a: jnp.diag(a) - jnp.outer(a, a)  # noqa: E731
        wantPhi = -sum(
            pi[i] * jnp.outer(jnp.eye(4)[i], (P[i] - pred[i]) @ M.T @ var(A[i])) for i in range(4)
        )
        np.testing.assert_allclose(gM, wantM, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gPhi, wantPhi, rtol=1e-12, atol=1e-14)


def test_population_loss_gradient_matches_finite_differences():
    with jax.enable_x64():
        pi, P = jnp.asarray(PI), jnp.asarray(data.lazy_chain(PI, 0.5))
        p = _params(jax.random.PRNGKey(6))
        f = lambda q: model.population_loss(q, pi, P)  # noqa: E731
        g = jax.grad(f)(p)
        for i, name in enumerate(sorted(p)):
            v = jax.random.normal(jax.random.PRNGKey(10 + i), p[name].shape, jnp.float64)
            h = 1e-5
            up = {**p, name: p[name] + h * v}
            dn = {**p, name: p[name] - h * v}
            fd = (f(up) - f(dn)) / (2 * h)
            assert float(jnp.sum(g[name] * v)) == pytest.approx(float(fd), rel=1e-7, abs=1e-10)


def test_population_loss_is_the_long_sequence_limit():
    """Prop. 2.3's (N, s) → ∞ limit: the mean sequence loss at s = 1000 over 2000 chains is within
    5 Monte-Carlo standard errors plus 5/s (the O(1/s) bias of finite context frequencies) of L."""
    with jax.enable_x64():
        pi, P = jnp.asarray(PI), jnp.asarray(data.lazy_chain(PI, 0.5))
        p = _params(jax.random.PRNGKey(7), scale=0.8)
        s = 1000
        seqs = data.sample_sequences(jax.random.PRNGKey(8), P, 2000, s + 1)
        per = jax.vmap(lambda x: model.sequence_loss(p, x[None]))(seqs)
        se = float(jnp.std(per)) / np.sqrt(len(per))
        gap = abs(float(jnp.mean(per)) - float(model.population_loss(p, pi, P)))
        assert gap < 5 * se + 5.0 / s


def test_group_losses_are_the_per_query_limits():
    """``loss_gap_i`` = KL(P_i‖ℙ_i): Σ_i π_i loss_gap_i = loss_gap (identity), and each is the
    long-sequence limit of the mean excess loss over Appendix E.1's group S_i (sequences whose
    X[−2] is i, ``data.group_by_query``): within 5 Monte-Carlo standard errors plus 5/s."""
    from attndyn.models.markov import observables

    with jax.enable_x64():
        pi, P = jnp.asarray(PI), jnp.asarray(data.lazy_chain(PI, 0.5))
        p = _params(jax.random.PRNGKey(7), scale=0.8)
        obs = observables.observe(p, pi, P, data.conditional_entropy(PI, np.asarray(P)), range(4))
        total = sum(PI[i] * float(obs[f"loss_gap_{i}"]) for i in range(4))
        assert total == pytest.approx(float(obs["loss_gap"]), rel=1e-12)
        s = 1000
        seqs = data.sample_sequences(jax.random.PRNGKey(8), P, 2000, s + 1)
        per = np.asarray(jax.vmap(lambda x: model.sequence_loss(p, x[None]))(seqs))
        for i, idx in enumerate(data.group_by_query(np.asarray(seqs), 4)):
            entropy = -float(jnp.sum(P[i] * jnp.log(P[i])))
            se = float(np.std(per[idx])) / np.sqrt(len(idx))
            gap = abs(float(np.mean(per[idx])) - entropy - float(obs[f"loss_gap_{i}"]))
            assert gap < 5 * se + 5.0 / s, i


def test_loss_at_origin_is_log_d_and_entropy_star_is_conditional_entropy():
    with jax.enable_x64():
        p = {k: jnp.zeros_like(v) for k, v in _params(jax.random.PRNGKey(0)).items()}
        P = data.lazy_chain(PI, 0.5)
        assert float(model.population_loss(p, jnp.asarray(PI), jnp.asarray(P))) == pytest.approx(
            np.log(4), rel=1e-14
        )
        h = -sum(PI[i] * sum(P[i, j] * np.log(P[i, j]) for j in range(4)) for i in range(4))
        assert data.conditional_entropy(PI, P) == pytest.approx(h, rel=1e-14)


def _cfg(**kw):
    return validate(markov.Config, {"m": 8, "records": 6, "seeds": 1, **kw})


def test_gd_converges_to_the_flow_at_first_order():
    """GD with step h is Euler's method for Eq. 4's flow: its error halves with h (ratio of the
    errors at h and h/2 in [1.6, 2.4], first order)."""
    common = dict(t_max=40.0, dtype="float64", init_scale=0.05, grid="linear")
    flow = markov.simulate(_cfg(optimizer="flow", solver="bs3", lr=0.05, rtol=1e-10, **common))
    errs = []
    for lr in (0.05, 0.025):
        gd = markov.simulate(_cfg(optimizer="gd", lr=lr, **common))
        errs.append(float(np.max(np.abs(gd.loss.values - flow.loss.values))))
    assert 1.6 < errs[0] / errs[1] < 2.4


@pytest.mark.parametrize("mode", ["online", "fixed"])
def test_sampled_training_lowers_the_loss(mode):
    tr = markov.simulate(
        _cfg(data=mode, t_max=30.0, lr=0.5, init_scale=0.1, n_sequences=2000, batch=128, seeds=2)
    )
    assert np.all(tr.loss.values[:, -1] < tr.loss.values[:, 0] - 0.05)


@pytest.mark.parametrize(
    "values, field",
    [
        ({"data": "text"}, "corpus"),
        ({"optimizer": "flow", "data": "online"}, "flow"),
        ({"pi": [0.5, 0.4]}, "pi"),
        ({"pi_kind": "two-group", "pi1": 0.2}, "pi1"),
        ({"lam": 1.0}, "lam"),
    ],
)
def test_bad_configs_give_one_line_errors(values, field):
    with pytest.raises(InputError) as err:
        validate(markov.Config, values)
    assert field in str(err.value) and "\n" not in str(err.value)


def test_track_out_of_range_is_an_input_error():
    with pytest.raises(InputError, match="track"):
        markov.simulate(_cfg(track=(0, 9), t_max=1.0))


def test_ros2_and_bs3_flows_agree_through_the_first_cycle():
    """The two integrators of Eq. 4's flow (rtol 1e-5) agree on the loss gap and the attention
    of query 1 on token 0 through condensation, focus and dilution (t ≤ 300) to 1e-3."""
    common = dict(t_max=300.0, dtype="float64", init_scale=1e-3, rtol=1e-5, optimizer="flow")
    a = markov.simulate(_cfg(solver="ros2", **common))
    b = markov.simulate(_cfg(solver="bs3", **common))
    for name in ("loss_gap", "attn_1_0", "erank_W0"):
        np.testing.assert_allclose(a[name].values, b[name].values, atol=1e-3)


@pytest.mark.parametrize(
    "opt", [{"optimizer": "gd"}, {"optimizer": "adam", "lr": 0.01}, {"optimizer": "flow"}]
)
def test_train_attention_false_keeps_wq_wk_at_init(opt):
    """The control switch: W_Q, W_K stay exactly at their init for every optimizer (the flow's
    Gauss–Newton Jacobian has no columns for them), while W₀ moves."""
    import dataclasses

    def adapt(problem):
        def observe(params, state):
            return {k: params[k] for k in ("WQ", "WK", "W0")}

        return dataclasses.replace(problem, observe=observe)

    cfg = _cfg(t_max=100.0, records=3, init_scale=1e-2, train_attention=False, **opt)
    result, _, _ = markov.run_records(cfg, adapt=adapt)
    obs = result.observables
    for k in ("WQ", "WK"):
        np.testing.assert_array_equal(obs[k][:, -1], obs[k][:, 0])
    assert np.abs(obs["W0"][:, -1] - obs["W0"][:, 0]).max() > 1e-3


def test_full_batch_of_a_fixed_set_is_the_whole_set():
    """data='fixed' with batch = n_sequences takes every sequence each step (one epoch per
    step, markov-adam's reading of Appendix E): the batch does not depend on the key and the
    loss is the mean over the whole set; a smaller batch draws indices with replacement."""
    cfg = validate(markov.Config, dict(data="fixed", n_sequences=50, batch=50, seq_len=5, m=4))
    problem = markov.build(cfg)
    params, state = problem.init(jax.random.PRNGKey(0))
    a, b = problem.sample(jax.random.PRNGKey(1)), problem.sample(jax.random.PRNGKey(2))
    np.testing.assert_array_equal(a, np.arange(50))
    np.testing.assert_array_equal(a, b)
    whole = model.sequence_loss(params, state["sequences"])
    assert float(problem.loss(params, state, a)) == pytest.approx(float(whole), rel=1e-6)
    cfg = validate(markov.Config, dict(data="fixed", n_sequences=50, batch=49, seq_len=5, m=4))
    drawn = markov.build(cfg).sample(jax.random.PRNGKey(1))
    assert drawn.shape == (49,) and len(np.unique(np.asarray(drawn))) < 49


@pytest.mark.parametrize(
    "arch, frozen",
    [
        (model.Arch(), ()),
        (model.Arch(), ("WQ", "WK")),
        (model.Arch(logit_scale=0.3, residual=True), ()),
        (model.Arch(value=True), ()),
        (model.Arch(value=True, residual=True, logit_scale=0.5), ("WQ", "WK")),
    ],
)
def test_closed_form_linearization_and_gram_of_the_shorthands_are_autodiff_s(arch, frozen):
    """For u = (M, Φ[, R]) (model.shorthand_vector) and L = ∂u/∂θ over the trained groups: the
    closed-form Lv, Lᵀw (model.shorthand_linearization) and LLᵀ (model.shorthand_gram) equal
    autodiff's (flow.autodiff_linearize, flow.autodiff_gram of u with frozen groups held
    constant) to float64 rounding, for every architecture option and with W_Q, W_K frozen; and
    the solver's LᵀGᵀHGL is the Gauss–Newton matrix JᵀHJ of the logits z(θ) formed directly."""
    from jax.flatten_util import ravel_pytree

    from attndyn.core.flow import autodiff_gram, autodiff_linearize

    def inner(p, st):
        p = {k: jax.lax.stop_gradient(v) if k in frozen else v for k, v in p.items()}
        return model.shorthand_vector(p, arch)

    with jax.enable_x64(True):
        d, m, mk = 3, 6, 5
        params = model.init_params(jax.random.PRNGKey(1), d, m, mk, 0.7, arch, jnp.float64)
        st = {"pi": jnp.asarray([0.5, 0.3, 0.2])}
        gn = model.gauss_newton(arch, frozen)
        u, jvp, vjp = gn.linearize(params, st)
        u_ad, jvp_ad, vjp_ad = autodiff_linearize(inner)(params, st)
        tangent = model.init_params(jax.random.PRNGKey(2), d, m, mk, 1.0, arch, jnp.float64)
        cotangent = jax.random.normal(jax.random.PRNGKey(3), u.shape, jnp.float64)
        np.testing.assert_allclose(u, u_ad, rtol=1e-13)
        np.testing.assert_allclose(jvp(tangent), jvp_ad(tangent), rtol=1e-11, atol=1e-12)
        for g, w in vjp(cotangent).items():
            assert w.shape == params[g].shape
            np.testing.assert_allclose(w, vjp_ad(cotangent)[g], rtol=1e-11, atol=1e-12)
        gram = gn.gram(params, st)
        np.testing.assert_allclose(gram, autodiff_gram(inner)(params, st), rtol=1e-11, atol=1e-12)
        flat, unravel = ravel_pytree(params)
        L = jax.jacrev(lambda v: inner(unravel(v), st))(flat)
        G = jax.jacrev(lambda w: gn.outputs(w, st))(u)
        H = gn.curvature(gn.outputs(u, st), st)
        J = jax.jacrev(
            lambda v: model.population_logits(
                {k: jax.lax.stop_gradient(x) if k in frozen else x for k, x in unravel(v).items()},
                st["pi"],
                arch,
            ).reshape(-1)
        )(flat)
        np.testing.assert_allclose(L.T @ G.T @ H @ G @ L, J.T @ H @ J, rtol=1e-10, atol=1e-12)
        assert np.abs(J).max() > 0.1


def test_ros2_through_the_shorthands_gives_the_solution_of_the_full_jacobian_solver(monkeypatch):
    """The ROS2 flow with its Jacobian through (M, Φ) (the default) against the same W-method
    with the Gauss–Newton Jacobian of the d² logits formed by d² vector–Jacobian products through
    all weights (the solver before 2026-12-06: u = z, G = I), at rtol 1e-6 through the first
    cycle (t ≤ 300): loss gap and attention agree to 1e-5 (both are within O(rtol) of the flow),
    and the step counts within 30 % (the same stiff directions)."""
    from attndyn.core.flow import GaussNewton, autodiff_gram, autodiff_linearize

    cfg = _cfg(t_max=300.0, dtype="float64", init_scale=1e-3, rtol=1e-6, optimizer="flow")
    arch = model.Arch.of(cfg)
    new = markov.run_records(cfg)[0]

    def logits(p, st):
        return model.population_logits(p, st["pi"], arch).reshape(-1)

    through_logits = GaussNewton(
        autodiff_linearize(logits),
        lambda u, st: u,
        lambda z, st: model.population_curvature(z, st["pi"]),
        autodiff_gram(logits),
    )
    monkeypatch.setattr(model, "gauss_newton", lambda arch, frozen: through_logits)
    old = markov.run_records(cfg)[0]
    for name in ("loss_gap", "attn_1_0"):
        np.testing.assert_allclose(new.observables[name], old.observables[name], atol=1e-5)
    assert 0.7 < new.steps[-1] / old.steps[-1] < 1.3
