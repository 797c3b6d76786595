"""AIM model: gradients, Theorem 1 of arXiv 2609.03858, observables, reproducibility."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.core.config import validate
from attndyn.core.trainer import seed_keys
from attndyn.models import aim
from attndyn.models.aim import model
from attndyn.models.aim.observables import observe
from attndyn.models.aim.words import canonical_words


def _problem_and_point(values, seed=0):
    config = validate(aim.Config, values)
    problem = aim.build(config)
    init_keys, data_keys = seed_keys(np.array([seed]))
    params, state = problem.init(init_keys[0])
    batch = problem.sample(data_keys[0])
    return config, problem, params, state, batch


CASES = [
    dict(param=p, output=o, activation=a, L=L, heads=h, layers=m)
    for p in ("tied", "direct", "untied")
    for (o, a, L, h, m) in [
        ("index", "h2", 1, 1, 0),
        ("index", "h3", 2, 2, 0),
        ("softmax", "h1", 3, 1, 0),
        ("softmax", "h1", 2, 1, 1),  # the former output='two-layer'
        ("index", "h2", 2, 1, 2),
    ]
] + [
    dict(
        param="untied", output="softmax", activation="h1", L=2, heads=1, layers=2, values="gaussian"
    )
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_loss_gradient_matches_finite_differences(case):
    values = dict(case, d=10, batch=3, dtype="float64", test_size=0, label_noise=0.0)
    if case["L"] == 2:
        values["C"] = [[1.0, 0.3], [0.3, 0.8]]
    with jax.enable_x64(True):
        _, problem, params, state, batch = _problem_and_point(values)
        loss = lambda p: problem.loss(p, state, batch)  # noqa: E731
        grads = jax.grad(loss)(params)
        rng = np.random.default_rng(1)
        for group, theta in params.items():
            direction = jnp.asarray(rng.standard_normal(theta.shape))
            eps = 1e-6
            plus = dict(params, **{group: theta + eps * direction})
            minus = dict(params, **{group: theta - eps * direction})
            fd = (loss(plus) - loss(minus)) / (2 * eps)
            ad = jnp.sum(grads[group] * direction)
            assert abs(fd - ad) <= 1e-6 * max(1.0, abs(ad)), (group, fd, ad)


def test_tied_gradient_matches_lemma_2():
    """P1 Lemma 2: ∇_W G_ij = X_ij W, X_ij = (x_j x_iᵀ + x_i x_jᵀ − 2 C_ij I)/√d; so for
    L = 1, h1 and loss (G1 − G2)²: ∇_W L = 2(G1 − G2)·(2/√d)(xxᵀ − I)W (aim_d3_notes.md)."""
    values = dict(
        d=9,
        L=1,
        activation="h1",
        loss_scale="full",
        batch=1,
        dtype="float64",
        teacher="identity",
        teacher_scale=0.5,
        test_size=0,
    )
    with jax.enable_x64(True):
        config, problem, params, state, batch = _problem_and_point(values)
        grad = jax.grad(problem.loss)(params, state, batch)["W"][0]
        x = np.asarray(batch["x"][0, 0])
        W = np.asarray(params["W"][0])
        d = config.d
        g1 = (x @ W @ W.T @ x - np.sum(W**2)) / np.sqrt(d)
        g2 = 0.5 * (x @ x - d) / np.sqrt(d)
        expected = 2 * (g1 - g2) * (2 / np.sqrt(d)) * (np.outer(x, x) - np.eye(d)) @ W
        np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # 4 CPU s
def test_theorem_1_mean_and_covariance_of_quadratic_forms():
    """P1 Theorem 1 at d = 400: G_ijk = x_iᵀ S_k x_j/√d has mean C_ij μ_k and covariance
    C_ii' C_jj' Ω_kl + C_ij' C_ji' Ψ_kl with μ_k = Tr S_k/√d, Ω_kl = Tr(S_k S_lᵀ)/d,
    Ψ_kl = Tr(S_k S_l)/d. For Gaussian tokens both moments are exact at any d (Isserlis), so the
    only tolerance is Monte Carlo: every entry must lie within 5 standard errors."""
    d, L, n = 400, 2, 20_000
    rng = np.random.default_rng(0)
    C = np.array([[1.0, 0.4], [0.4, 0.7]])
    A = rng.standard_normal((d, d)) / np.sqrt(d)  # non-symmetric, extensive rank
    W = rng.standard_normal((d, d // 2)) / np.sqrt(d)
    S = np.stack([A + 0.5 * np.eye(d), W @ W.T])  # Tr S/√d = O(√d): a non-zero mean
    root = model.covariance_root(C.tolist(), L)
    with jax.enable_x64(True):
        x = model.sample_tokens(jax.random.PRNGKey(3), n, L, d, root, jnp.float64)
        g = np.asarray(model.forms({"S": jnp.asarray(S)}, x, jnp.asarray(C), centred=False))
    mu = np.trace(S, axis1=1, axis2=2) / np.sqrt(d)
    omega = np.einsum("kab,lab->kl", S, S) / d
    psi = np.einsum("kab,lba->kl", S, S) / d
    flat = g.reshape(n, -1)  # index (k, i, j)
    idx = list(itertools.product(range(2), range(L), range(L)))
    mean_th = np.array([C[i, j] * mu[k] for k, i, j in idx])
    se_mean = flat.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(flat.mean(axis=0) - mean_th) < 5 * se_mean)
    centred = flat - mean_th
    for a, (k, i, j) in enumerate(idx):
        for b, (l, i2, j2) in enumerate(idx):
            th = C[i, i2] * C[j, j2] * omega[k, l] + C[i, j2] * C[j, i2] * psi[k, l]
            prod = centred[:, a] * centred[:, b]
            assert abs(prod.mean() - th) < 5 * prod.std() / np.sqrt(n) + 1e-12, (a, b)


@pytest.mark.parametrize("param", ["tied", "direct", "untied"])
def test_observables_match_dense_numpy(param):
    values = dict(d=8, L=1, param=param, moment_degree=4, test_size=0, dtype="float64")
    with jax.enable_x64(True):
        config, problem, params, state, _ = _problem_and_point(values)
        obs = {k: float(v) for k, v in problem.observe(params, state).items()}
    d = config.d
    if param == "tied":
        W = np.asarray(params["W"][0])
        S1 = W @ W.T
    elif param == "direct":
        S1 = np.asarray(params["S"][0])
    else:
        U, V = np.asarray(params["U"][0]), np.asarray(params["V"][0])
        S1 = U @ V.T
    teacher = state["teacher"]
    t = {k: np.asarray(v[0]) for k, v in teacher.items()}
    S2 = t["F"] @ t["F"].T if "F" in t else t["U"] @ t["V"].T
    tr = lambda m: np.trace(m) / d  # noqa: E731
    assert obs["t_1"] == pytest.approx(tr(S1))
    assert obs["q_12"] == pytest.approx(tr(S1 @ S2))
    assert obs["p_12"] == pytest.approx(tr(S1 @ S2) - tr(S1) * tr(S2))
    assert obs["q_22"] == pytest.approx(tr(S2 @ S2))
    if param == "tied":
        assert obs["mu_1.1.2"] == pytest.approx(tr(S1 @ S1 @ S2))
        assert obs["mu_1.2.1.2"] == pytest.approx(tr(S1 @ S2 @ S1 @ S2))
    if param == "direct":
        assert obs["Omega_12"] == pytest.approx(tr(S1 @ S2.T))
        assert obs["Omega_11"] == pytest.approx(tr(S1 @ S1.T))
        p_psi, p_omega = (
            obs["q_12"] - obs["t_1"] * obs["t_2"],
            obs["Omega_12"] - obs["t_1"] * obs["t_2"],
        )
        assert obs["pplus_12"] == pytest.approx((p_omega + p_psi) / 2)
        assert obs["mu_1.1T.2"] == pytest.approx(tr(S1 @ S1.T @ S2))
    if param == "untied":
        assert obs["m_1"] == pytest.approx(np.trace(S1) / np.sqrt(d))
        assert obs["q1_12"] == pytest.approx(tr(S1 @ S2.T))
        assert obs["tA_1"] == pytest.approx(tr(U @ U.T))
        assert obs["tB_1"] == pytest.approx(tr(V @ V.T))
        A1 = U @ U.T
        assert obs["mu_1.A1.2T"] == pytest.approx(tr(S1 @ A1 @ S2.T))


def test_canonical_words_count_tied_necklaces():
    # binary bracelets (rotation + reversal): 4 of length 3, 6 of length 4, 8 of length 5
    sym = {"1": "1", "2": "2"}
    assert [len(canonical_words(["1", "2"], sym, n)) for n in (3, 4, 5)] == [4, 6, 8]


def test_observe_matches_model_layer_directly():
    # the observe() used by the family equals the module function on the same matrices
    with jax.enable_x64(True):
        config, problem, params, state, _ = _problem_and_point(
            dict(d=6, test_size=0, dtype="float64")
        )
        a = problem.observe(params, state)
        b = observe({"F": params["W"]}, state["teacher"], "tied", config.moment_degree)
    assert set(a) == set(b)


def test_vmapped_seeds_equal_seeds_run_alone(tiny):
    together = aim.simulate(validate(aim.Config, dict(tiny, seeds=3, seed=5)))
    for i, s in enumerate([5, 6, 7]):
        alone = aim.simulate(validate(aim.Config, dict(tiny, seeds=1, seed=s)))
        for name in ("q_11", "p_12", "mu_1.1.2", "loss"):
            np.testing.assert_allclose(
                together[name].values[i], alone[name].values[0], rtol=1e-5, atol=1e-6
            )


def test_same_seed_reproduces_and_record_grid_does_not_change_the_path(tiny):
    a = aim.simulate(validate(aim.Config, dict(tiny, grid="linear", records=5)))
    b = aim.simulate(validate(aim.Config, dict(tiny, grid="linear", records=5)))
    np.testing.assert_array_equal(a["q_12"].values, b["q_12"].values)
    c = aim.simulate(validate(aim.Config, dict(tiny, grid="log", records=9)))
    np.testing.assert_allclose(a["q_12"].values[:, -1], c["q_12"].values[:, -1], rtol=1e-6)


def test_untied_trajectory_has_fast_time_axis(tiny):
    traj = aim.simulate(validate(aim.Config, dict(tiny, param="untied")))
    config = validate(aim.Config, dict(tiny, param="untied"))
    np.testing.assert_allclose(traj["time_fast"].values, traj["samples"].values * config.alpha_d)
    np.testing.assert_allclose(traj["time"].values, traj["time_fast"].values / config.d)
    assert {"m_1", "q1_12", "q2_12", "tA_1", "tB_1"} <= set(traj.data_vars)


def test_non_identity_covariance_is_used_in_sampling():
    C = [[1.0, 0.6], [0.6, 2.0]]
    root = model.covariance_root(C, 2)
    x = np.asarray(model.sample_tokens(jax.random.PRNGKey(0), 4000, 2, 50, root, jnp.float32))
    emp = np.einsum("nid,njd->ij", x, x) / (4000 * 50)
    np.testing.assert_allclose(emp, C, atol=0.03)


@pytest.mark.parametrize("L", [2, model.SMALL_L + 2])
@pytest.mark.parametrize("kind", ["F", "S", "UV"])
def test_forms_match_dense_quadratic_forms(kind, L):
    """G_ijk = (x_iᵀ S_k x_j − c C_ij Tr S_k)/√d (P1 Eq. 7) against dense float64 numpy, on the
    elementwise path (L ≤ SMALL_L) and the batched-matmul path."""
    rng = np.random.default_rng(L)
    B, K, d, r = 3, 2, 7, 4
    x = rng.standard_normal((B, L, d))
    cov = np.eye(L) + 0.3 * (np.ones((L, L)) - np.eye(L))
    if kind == "F":
        F = rng.standard_normal((K, d, r))
        side, S = {"F": F}, F @ np.swapaxes(F, 1, 2)
    elif kind == "S":
        S = rng.standard_normal((K, d, d))
        side = {"S": S}
    else:
        U, V = rng.standard_normal((K, d, r)), rng.standard_normal((K, d, r))
        side, S = {"U": U, "V": V}, U @ np.swapaxes(V, 1, 2)
    for centred in (False, True):
        want = np.einsum("bid,kde,bje->bkij", x, S, x)
        if centred:
            want = want - np.trace(S, axis1=1, axis2=2)[None, :, None, None] * cov
        got = model.forms(
            {n: jnp.asarray(v, jnp.float32) for n, v in side.items()},
            jnp.asarray(x, jnp.float32),
            jnp.asarray(cov, jnp.float32),
            centred,
        )
        np.testing.assert_allclose(np.asarray(got), want / np.sqrt(d), rtol=1e-4, atol=1e-4)
