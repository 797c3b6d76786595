"""The Langevin family's potentials and dynamics (docs/langevin.md): gradients against finite
differences, the GL / O symmetries and p_eff, the shared data part, the lmc ⇔ sde convention
β = 2/s, the minibatch gradient's expectation, s = 0 as gradient descent, and config errors
through the command line."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import null_space

from attndyn.core.trainer import Carry, make_advance, seed_keys
from attndyn.models import langevin as L
from attndyn.models.langevin.model import flat_directions, n_params, potential

ATTENTION = dict(model="attention", n=5, d=3, tokens=4, d_k=2, d_v=2, lam=0.3, dtype="float64")
LORA = dict(model="lora", n=6, d=4, width=5, rank=2, lam=0.3, dtype="float64")


def _generic_point(values, seed=0):
    """(config, potential, frozen part, params) at a generic float64 point: data, labels,
    frozen and trained weights N(0, 1) from NumPy (the identities tested hold at any point, and
    this skips compiling the random draws; the data path itself is tested below)."""
    c = L.LangevinConfig(**values)
    pot = potential(c)
    rng = np.random.default_rng(seed)
    if c.model == "attention":
        shapes = L.model.attention_shapes(c)
        weights = {g: rng.standard_normal(shape) for g, (shape, _) in shapes.items()}
        y_shape = (c.n, c.tokens, c.d_out) if c.pooling == "none" else (c.n, c.d_out)
        trained = L.model.attention_trained(c)
        frozen = {
            "X": rng.standard_normal((c.n, c.tokens, c.d)),
            "Y": rng.standard_normal(y_shape),
            "fixed": {g: w for g, w in weights.items() if g not in trained},
        }
        params = {g: w for g, w in weights.items() if g in trained}
    elif c.model == "lora":
        frozen = {
            "X": rng.standard_normal((c.n, c.d)),
            "Y": rng.standard_normal(c.n),
            "W0": rng.standard_normal((c.width, c.d)) / np.sqrt(c.d),
            "a": rng.standard_normal(c.width) / np.sqrt(c.width),
        }
        B = rng.standard_normal((c.width, c.rank))
        if c.lora_init == "zero-b":  # the LoRA start (init is checked in the data test)
            B = np.zeros_like(B)  # then ∇_A L̂ = 0 and ∇_B L̂ ≠ 0
        params = {"A": rng.standard_normal((c.rank, c.d)), "B": B}
        if c.train_outer:
            params["a"] = rng.standard_normal(c.width)
    else:
        frozen, params = {}, {"theta": rng.standard_normal(c.dim)}
    return c, pot, frozen, params


def _grad_and_fd(pot, frozen, params, eps=1e-6):
    """(∇F by autodiff, ∇F by central differences along every coordinate), as NumPy dicts."""
    names = sorted(params)
    sizes = [int(np.size(params[g])) for g in names]
    offsets = np.cumsum([0, *sizes])
    flat = np.concatenate([np.ravel(params[g]) for g in names])
    assert flat.dtype == np.float64

    def unravel(x):
        return {g: x[o : o + n].reshape(np.shape(params[g]))
                for g, o, n in zip(names, offsets[:-1], sizes, strict=True)}  # fmt: skip

    def f(x):
        return pot.F(unravel(x), frozen)

    @jax.jit
    def both(x):
        basis = jnp.eye(x.size, dtype=x.dtype)
        fd = jax.vmap(lambda e: (f(x + eps * e) - f(x - eps * e)) / (2 * eps))(basis)
        return jax.grad(f)(x), fd

    grad, fd = (np.asarray(a) for a in both(flat))
    assert np.max(np.abs(grad)) > 1e-3  # not a trivially flat point
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    return unravel(grad)


@pytest.mark.parametrize(
    "values",
    [
        {**ATTENTION, "pooling": "mean", "heads": 2, "d_k": 3},
        {**ATTENTION, "pooling": "last", "heads": 3, "output": True, "d_v": 3},
        {**ATTENTION, "pooling": "none", "heads": 1, "d_out": 2, "d_k": 3, "output": True,
         "train_q": False},
        {**ATTENTION, "pooling": "mean", "heads": 2, "d_k": 3, "train_k": False, "output": True,
         "train_v": False, "d": 1, "d_v": 4},
        {**ATTENTION, "pooling": "none", "heads": 1, "d": 1, "d_k": 4},  # d_k > 2d: a stabiliser
        {**LORA, "rank": 3, "activation": "sigmoid", "lora_init": "gaussian"},
        {**LORA, "rank": 2, "activation": "tanh", "train_outer": True, "lora_init": "zero-b"},
        {**LORA, "rank": 1, "activation": "softplus", "train_outer": True},
    ],
)  # fmt: skip
def test_gradient_n_params_and_flat_directions(values):
    """∇F = central differences (float64); p = the trained scalars; flat_directions = the rank of
    the tangent space of the symmetry orbit (from the Lie-algebra generators, admissible ones
    only when a group is frozen), and every admissible generator v has ∇F · v = 0."""
    with jax.enable_x64(True):
        c, pot, frozen, params = _generic_point(values)
        grad = _grad_and_fd(pot, frozen, params)
        assert n_params(c) == sum(int(np.size(w)) for w in params.values())
        rank = _orbit_rank(c, frozen, params)
        assert flat_directions(c) == rank
        assert L.effective_params(c) == n_params(c) - rank
        W = {**frozen.get("fixed", {}), **params}
        for gen in _tangents(c, W):
            if all(g in params for g in gen if g != "h"):
                dot = sum(np.sum(grad[g] * _full(gen, g, grad[g].shape)) for g in params)
                assert abs(dot) < 1e-10


@pytest.mark.parametrize(
    "model, lam", [("double-well", 0.0), ("double-well", 0.7), ("quadratic", 1.3)]
)
def test_test_potentials_gradients_are_the_closed_forms(model, lam):
    """double well: ∇F = 4θ(θ² − 1) + λθ; quadratic: ∇F = λθ."""
    with jax.enable_x64(True):
        c, pot, frozen, params = _generic_point(dict(model=model, lam=lam, dim=5, dtype="float64"))
        theta = params["theta"]
        grad = np.asarray(_grad_and_fd(pot, frozen, params)["theta"])
        well = 4 * theta * (theta**2 - 1) if model == "double-well" else 0.0
        np.testing.assert_allclose(grad, well + lam * theta, rtol=1e-12, atol=1e-14)


# --- symmetries -------------------------------------------------------------------------------


RNG = np.random.default_rng(0)


def _orthogonal(k):
    q, r = np.linalg.qr(RNG.standard_normal((k, k)))
    return q * np.sign(np.diag(r))


def _invertible(k):
    return np.eye(k) + 0.4 * RNG.standard_normal((k, k))


def _values(pot, frozen):
    """A jitted θ ↦ (L̂, F, (λ/2)‖θ‖²) in float64: one compilation serves every transformed θ."""
    return jax.jit(lambda p: (pot.empirical(p, frozen, None), pot.F(p, frozen), pot.regulariser(p)))


def test_lora_gl_invariance_of_loss_and_orthogonal_invariance_of_F():
    with jax.enable_x64(True):
        c, pot, frozen, params = _generic_point({**LORA, "rank": 3, "train_outer": True})
        values = _values(pot, frozen)
        A, B = np.asarray(params["A"]), np.asarray(params["B"])
        L0, F0, reg0 = map(float, values(params))
        G = _invertible(3)
        L1, F1, reg1 = map(float, values({**params, "A": np.linalg.solve(G, A), "B": B @ G}))
        assert L1 == pytest.approx(L0, rel=1e-11)
        # F changes by exactly the regulariser's change, which is not zero for G ∉ O(r)
        assert abs(reg1 - reg0) > 1e-3 and F1 - F0 == pytest.approx(reg1 - reg0, rel=1e-9)
        R = _orthogonal(3)
        _, F2, _ = map(float, values({**params, "A": R.T @ A, "B": B @ R}))
        assert F2 == pytest.approx(F0, rel=1e-11)


def test_attention_per_head_symmetries():
    """(W_Q, W_K) → (W_Q G, W_K G⁻ᵀ) per head keeps L̂; G ∈ O(d_k) keeps F, and so does
    (W_V, W_O) → (W_V R, Rᵀ W_O), R ∈ O(d_v); a non-orthogonal G changes F when λ > 0."""
    with jax.enable_x64(True):
        c, pot, frozen, params = _generic_point({**ATTENTION, "heads": 2, "d_k": 3, "output": True})
        values = _values(pot, frozen)
        Q, K, V, O = (np.asarray(params[g]) for g in "QKVO")
        L0, F0, _ = map(float, values(params))
        G = np.stack([_invertible(3) for _ in range(2)])
        moved = {
            **params,
            "Q": np.einsum("hde,hef->hdf", Q, G),
            "K": np.einsum("hde,hfe->hdf", K, np.linalg.inv(G)),  # K G⁻ᵀ
        }
        L1, F1, _ = map(float, values(moved))
        assert L1 == pytest.approx(L0, rel=1e-11) and abs(F1 - F0) > 1e-3
        R = np.stack([_orthogonal(3) for _ in range(2)])
        S = np.stack([_orthogonal(2) for _ in range(2)])
        rotated = {
            "Q": np.einsum("hde,hef->hdf", Q, R),
            "K": np.einsum("hde,hef->hdf", K, R),
            "V": np.einsum("hdv,hvw->hdw", V, S),
            "O": np.einsum("hwv,hwo->hvo", S, O),  # Sᵀ W_O
        }
        assert float(values(rotated)[1]) == pytest.approx(F0, rel=1e-11)


def _generator(pot, frozen, params, s, g):
    """𝓛g(θ) = (s/2)Δg − ∇F·∇g, the generator of dΘ = −∇F dt + √s dW (docs/langevin.md,
    "A bound on the Poincaré constant"), by autodiff in the flat coordinates."""
    from jax.flatten_util import ravel_pytree

    x, unravel = ravel_pytree(params)

    def F(z):
        return pot.F(unravel(z), frozen)

    def G(z):
        return g(unravel(z))

    lap = jnp.trace(jax.hessian(G)(x))
    return float(0.5 * s * lap - jnp.vdot(jax.grad(F)(x), jax.grad(G)(x))), float(G(x))


@pytest.mark.parametrize(
    "values, pair, per_head",
    [
        ({**LORA, "rank": 3}, ("A", "B"), False),
        ({**LORA, "rank": 2, "train_outer": True, "activation": "softplus"}, ("A", "B"), False),
        ({**ATTENTION, "heads": 2, "d_k": 3}, ("Q", "K"), True),
        ({**ATTENTION, "heads": 2, "d_k": 2, "output": True, "d_out": 2}, ("V", "O"), True),
    ],
)
def test_balance_is_an_exact_eigenfunction_of_the_generator(values, pair, per_head):
    """b = ‖W₁‖² − ‖W₂‖² for a pair on which L̂ is GL-invariant ((A, B); per head (W_Q, W_K) and
    (W_V, W_O)) obeys 𝓛b = s(#W₁ − #W₂) − 2λb at every point, whatever the data (⟨W₁, ∇₁L̂⟩ =
    ⟨W₂, ∇₂L̂⟩). So b − s(#W₁ − #W₂)/(2λ) is an eigenfunction with eigenvalue 2λ: the spectral
    gap is at most 2λ and the Poincaré constant at least s/(4λ), for any data and size. The
    check fails for ‖W₁‖² alone (not an eigenfunction)."""
    s = 0.07
    with jax.enable_x64(True):
        c, pot, frozen, params = _generic_point(values, seed=3)
        one, two = pair
        heads = range(c.heads) if per_head else [None]
        for h in heads:
            part = (lambda w, h=h: w[h]) if per_head else (lambda w: w)

            def b(p, part=part):
                return jnp.sum(part(p[one]) ** 2) - jnp.sum(part(p[two]) ** 2)

            sizes = np.size(part(np.asarray(params[one]))) - np.size(part(np.asarray(params[two])))
            Lb, bval = _generator(pot, frozen, params, s, b)
            assert Lb == pytest.approx(s * sizes - 2 * c.lam * bval, rel=1e-10, abs=1e-10)

            def first(p, part=part):
                return jnp.sum(part(p[one]) ** 2)

            Lf, fval = _generator(pot, frozen, params, s, first)
            assert abs(Lf - (s * np.size(part(np.asarray(params[one]))) - 2 * c.lam * fval)) > 1e-3


def _antisymmetric_basis(k):
    out = []
    for i in range(k):
        for j in range(i + 1, k):
            X = np.zeros((k, k))
            X[i, j], X[j, i] = 1.0, -1.0
            out.append(X)
    return out


def _tangents(c, W):
    """Tangent vectors {group: δW} at the weights W of every generator of the O(·) actions."""
    gens = []
    if c.model == "lora":
        for X in _antisymmetric_basis(c.rank):  # (B e^{tX}, e^{−tX} A)
            gens.append({"B": W["B"] @ X, "A": -X @ W["A"]})
        return gens
    for h in range(c.heads):
        for X in _antisymmetric_basis(c.d_k):  # (Q e^{tX}, K e^{tX})
            gens.append({"Q": np.asarray(W["Q"][h]) @ X, "K": np.asarray(W["K"][h]) @ X, "h": h})
        if c.output:
            for X in _antisymmetric_basis(c.d_v):  # (V e^{tX}, e^{−tX} O)
                gens.append(
                    {"V": np.asarray(W["V"][h]) @ X, "O": -X @ np.asarray(W["O"][h]), "h": h}
                )
    return gens


def _full(gen, g, shape):
    """Generator ``gen``'s tangent on group g as a full-shaped array (zero where it acts not)."""
    full = np.zeros(shape)
    if g in gen:
        if "h" in gen:
            full[gen["h"]] = gen[g]
        else:
            full = np.asarray(gen[g])
    return full


def _orbit_rank(c, frozen, params):
    """Rank of the orbit's tangent space in the trained coordinates: generators restricted to
    those that fix the frozen groups (null space of their frozen components)."""
    W = {**frozen.get("fixed", {}), **{g: np.asarray(w) for g, w in params.items()}}
    trained, fixed = sorted(params), sorted(set(W) - set(params))
    gens = _tangents(c, W)
    if not gens:
        return 0

    def matrix(groups):
        return np.array(
            [np.concatenate([np.ravel(_full(gen, g, np.shape(W[g]))) for g in groups] or [[]])
             for gen in gens]
        )  # fmt: skip

    Mt, Mf = matrix(trained), matrix(fixed)
    N = null_space(Mf.T) if Mf.shape[1] else np.eye(len(gens))
    return 0 if N.size == 0 else int(np.linalg.matrix_rank(N.T @ Mt, tol=1e-9))


# --- data, dynamics ---------------------------------------------------------------------------


def test_data_shared_by_chains_and_set_by_data_seed():
    """build().init gives every chain the same frozen part (data, labels, W₀, a); data_seed
    changes it (the attention model's sharing is checked in the s = 0 test)."""
    with jax.enable_x64(True):
        c = L.LangevinConfig(**LORA, lora_init="zero-b")
        problem = L.build(c)
        (p1, s1), (p2, s2) = (
            jax.jit(problem.init)(jax.random.PRNGKey(0)),
            jax.jit(problem.init)(jax.random.PRNGKey(1)),
        )
        for a, b in zip(jax.tree.leaves(s1), jax.tree.leaves(s2), strict=True):
            np.testing.assert_array_equal(a, b)
        assert any(
            not np.array_equal(a, b)
            for a, b in zip(jax.tree.leaves(p1), jax.tree.leaves(p2), strict=True)
        )
        _, s3 = jax.jit(L.build(c.model_copy(update={"data_seed": 1})).init)(jax.random.PRNGKey(0))
        for g in ("X", "Y", "W0"):
            assert not np.allclose(s1[g], s3[g])
        assert not np.any(p1["B"]) and np.all(np.abs(p1["A"]) > 0)  # lora_init = zero-b


def test_lmc_at_beta_is_the_sde_at_s_two_over_beta_bit_for_bit():
    common = dict(model="double-well", dim=3, t_max=0.3, h=0.01, records=3, seeds=3)
    lmc = L.LangevinConfig(**common, dynamics="lmc", beta=4.0)
    sde = L.LangevinConfig(**common, dynamics="sde", s=0.5)
    assert lmc.temperature == sde.temperature == 0.5
    a, b = L.simulate(lmc), L.simulate(sde)
    for name in ("F", "sq_norm", "mean_x", "grad_sq"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert np.all(np.diff(a["sq_norm"].values[:, -2:], axis=1) != 0)  # the noise moved them


def test_minibatch_gradient_is_unbiased_exactly():
    """E over the b i.i.d. uniform indices of ∇F_B equals ∇F: the mean over all n^b index tuples
    of the trainer's sgd loss gradient equals the full-batch gradient."""
    with jax.enable_x64(True):
        values = {**LORA, "n": 4, "train_outer": True}
        c, _, frozen, params = _generic_point({**values, "dynamics": "sgd", "s": 0.1, "batch": 2})
        problem = L.build(c)
        idx = np.array([(i, j) for i in range(4) for j in range(4)])
        grads = jax.jit(
            jax.vmap(lambda b, fz: jax.grad(problem.loss)(params, fz, b), in_axes=(0, None))
        )(idx, frozen)
        full = jax.jit(jax.grad(potential(c).F))(params, frozen)
        for g in full:
            mean = np.mean(np.asarray(grads[g]), axis=0)
            np.testing.assert_allclose(mean, np.asarray(full[g]), rtol=1e-12, atol=1e-14)
            assert np.max(np.std(np.asarray(grads[g]), axis=0)) > 1e-4  # the draws do differ
        draw = np.asarray(jax.jit(problem.sample)(jax.random.PRNGKey(0)))
        assert draw.shape == (2,) and np.all((draw >= 0) & (draw < 4))


def test_zero_temperature_is_gradient_descent():
    """s = 0: the trainer's step is θ_k+1 = θ_k − h∇F(θ_k) exactly (no noise), and F is
    non-increasing at this small h."""
    with jax.enable_x64(True):
        values = {**ATTENTION, "heads": 2, "s": 0.0, "h": 0.05, "seeds": 2}
        c, pot, frozen, _ = _generic_point(values)
        problem = L.build(c)
        chains = [_generic_point(values, seed)[3] for seed in (1, 2)]
        params = {g: np.stack([p[g] for p in chains]) for g in chains[0]}
        state = jax.tree.map(lambda x: np.stack([x, x]), frozen)
        opt, keys = jax.jit(
            lambda: (jax.vmap(problem.update.init)(params), seed_keys(np.arange(2))[1])
        )()  # one jitted set-up: eager JAX ops compile one by one
        carry = Carry(params, opt, np.full(2, -1, np.int32))
        after = make_advance(problem)(carry, state, keys, 0, 40)
        assert np.all(np.asarray(after.diverged_step) == -1)

        @jax.jit
        def gd(theta):
            def body(th, _):
                value, g = jax.value_and_grad(pot.F)(th, frozen)
                return jax.tree.map(lambda w, gw: w - 0.05 * gw, th, g), value

            theta, values = jax.lax.scan(body, theta, None, length=40)
            return theta, jnp.append(values, pot.F(theta, frozen))

        for seed in range(2):
            theta, values = gd(chains[seed])
            for g in theta:
                np.testing.assert_allclose(after.params[g][seed], theta[g], rtol=1e-12, atol=1e-14)
            assert np.all(np.diff(values) <= 1e-15) and values[-1] < values[0]


# --- config errors through the command line -----------------------------------------------------

BAD = [
    (["dynamics=lmc"], "beta"),
    (["beta=2"], "beta"),
    (["dynamics=sgd", "h=0.1"], "h"),
    (["model=double-well", "dynamics=sgd"], "dynamics"),
    (["model=quadratic", "lam=0"], "lam"),
    (["model=lora", "rank=20"], "rank"),
    (["model=lora", "teacher_rank=9", "width=4"], "teacher_rank"),
    (["dynamics=sgd", "s=0"], "s"),
]


@pytest.mark.parametrize("sets, field", BAD)
def test_bad_config_exits_2_naming_the_field(tmp_path, monkeypatch, capsys, sets, field):
    """The CLI entry point in-process (one real process below)."""
    from attndyn.cli import main

    out = tmp_path / "results"
    argv = ["attndyn", "simulate", "langevin", "--out", str(out)]
    for s in sets:
        argv += ["--set", s]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"'{field}'" in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_bad_config_in_a_real_process(tmp_path):
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "attndyn", "simulate", "langevin", "--set", "dynamics=lmc",
         "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'beta'" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_input_laws():
    """``inputs``: Gaussian by default (the data every experiment used before the field), a
    unit-variance Student-t(3) with a heavier tail, and pairs of near-duplicates."""
    from attndyn.models.langevin.model import frozen_part

    def X(kind, n=4000):
        return np.asarray(frozen_part(L.LangevinConfig(model="lora", n=n, d=4, inputs=kind))["X"])

    g, t, dup = X("gaussian"), X("heavy-tailed"), X("near-duplicate", 11)
    assert abs(g.var() - 1) < 0.05 and abs(t.var() - 1) < 0.25
    assert np.mean(t**4) > 2 * np.mean(g**4)  # Gaussian 3; Student-t(3)'s is infinite
    pairs = np.abs(dup[0:10:2] - dup[1:11:2]).max()
    assert pairs < 0.1 and np.abs(dup[0] - dup[2]).max() > 0.1 and dup.shape == (11, 4)
    default = L.LangevinConfig(model="attention", n=8)
    assert default.inputs == "gaussian"
