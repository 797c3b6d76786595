"""Per-head parameterisations of the AIM (P1 = arXiv 2609.03858, Eqs. 1–2, App. B.1: each head
its own S^(h)): ``head_params`` and ``teacher_head_kinds`` — their validation and run ids, the
plain config they reduce to, the forms and gradients of a mixed student, a mixed simulation's
records, and the ``population-flow`` theory of mixed heads (docs/aim.md, "Per-head
parameterisations")."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.core.config import canonical, identity, run_id, validate
from attndyn.core.gaussian import antithetic
from attndyn.core.trainer import seed_keys
from attndyn.errors import InputError
from attndyn.models import aim
from attndyn.models.aim import model
from attndyn.models.aim.theory import AIMTheoryConfig, initial_matrices, limit_state, predict
from attndyn.models.aim.theory.population import sampled_drift, theory_drift
from attndyn.models.aim.theory.potential import cached_potential

TINY = dict(d=12, seeds=2, t_max=0.05, records=4, batch=4, test_size=16, activation="h1")
MIXED = dict(
    heads=3,
    param="tied",
    head_params=["tied", "direct", "untied"],
    teacher="wishart",
    teacher_heads=2,
    teacher_head_kinds=["wishart", "product"],
)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        (
            dict(heads=2, head_params=["tied"]),
            r"'head_params': needs one entry per head \(heads = 2\)",
        ),
        (dict(heads=2, head_params=["direct", "untied"]), r"'head_params': param \('tied'\)"),
        (dict(heads=2, head_params=["tied", "symmetric"]), "'tied', 'direct' or 'untied'"),
        (
            dict(heads=2, teacher_head_kinds=["wishart"]),
            r"'teacher_head_kinds': needs one entry per teacher head \(teacher_heads = 2\)",
        ),
        (
            dict(heads=2, teacher_head_kinds=["identity", "product"]),
            r"'teacher_head_kinds': teacher \('wishart'\) must be one of the entries",
        ),
        (dict(heads=2, head_params=["tied", "direct"], init_mean=0.5), "init_mean needs"),
        (
            dict(
                heads=2,
                param="untied",
                head_params=["untied", "tied"],
                teacher="product",
                layers=1,
                values="gaussian",
            ),  # fmt: skip
            "'values': gaussian value matrices need uncentred forms",
        ),
    ],
)
def test_head_lists_are_refused_with_one_line_errors(values, match):
    """Each bad list is refused with one line naming the field and what it allows."""
    with pytest.raises(InputError, match=match):
        validate(aim.Config, values)


def test_theory_methods_other_than_population_flow_refuse_mixed_heads():
    """hierarchy, matrix-flow, direct-ode, untied and auto assume one kind per side; a mixed
    config is refused by name, and population-flow accepts it."""
    for method in ("auto", "hierarchy", "matrix-flow", "direct-ode", "untied"):
        with pytest.raises(InputError, match="need method='population-flow'"):
            validate(AIMTheoryConfig, dict(MIXED, method=method))
    validate(AIMTheoryConfig, dict(MIXED, method="population-flow"))
    with pytest.raises(ValueError, match="uniform heads"):
        limit_state(validate(aim.Config, MIXED))


def test_head_lists_keep_every_stored_run_id():
    """head_params and teacher_head_kinds at None are not hashed (every stored aim run keeps its
    id); a mixed list is hashed and changes the id."""
    plain = validate(aim.Config, dict(d=32, heads=3))
    assert set(identity(plain)) == set(canonical(plain)) - {
        "layers", "values", "value_scale", "head_params", "teacher_head_kinds"
    }  # fmt: skip
    mixed = validate(aim.Config, dict(d=32, **MIXED))
    assert {"head_params", "teacher_head_kinds"} <= set(identity(mixed))
    assert run_id("aim", mixed) != run_id("aim", validate(aim.Config, dict(d=32, heads=3)))


@pytest.mark.parametrize(
    "plain",
    [
        pytest.param(dict(heads=2), id="tied"),
        pytest.param(
            dict(heads=2, param="untied", teacher="product", teacher_heads=3),
            id="untied",
            marks=pytest.mark.slow,  # about 6 CPU s
        ),
    ],
)
def test_uniform_lists_are_the_plain_config_bit_for_bit(plain):
    """A list whose entries all equal param (teacher's kind) is the plain config: the same
    validated config, run id and simulation, every recorded value bit for bit."""
    teacher = "product" if plain.get("param") == "untied" else "wishart"
    listed = dict(
        plain,
        head_params=[plain.get("param", "tied")] * plain["heads"],
        teacher_head_kinds=[teacher] * plain.get("teacher_heads", plain["heads"]),
    )
    a, b = (validate(aim.Config, dict(TINY, **v)) for v in (plain, listed))
    assert a == b and b.head_params is None and b.teacher_head_kinds is None
    assert run_id("aim", a) == run_id("aim", b)
    ta, tb = aim.simulate(a), aim.simulate(b)
    assert set(ta.data_vars) == set(tb.data_vars)
    for name in ta.data_vars:
        np.testing.assert_array_equal(ta[name].values, tb[name].values)


def _mixed_point(values, seed=0):
    config = validate(aim.Config, values)
    problem = aim.build(config)
    init_keys, data_keys = seed_keys(np.array([seed]))
    params, state = problem.init(init_keys[0])
    return config, problem, params, state, problem.sample(data_keys[0])


def test_mixed_forms_are_each_heads_dense_forms():
    """The forms of a mixed side are, index by index, G_ijk = (x_iᵀ S_k x_j − c C_ij Tr S_k)/√d
    of each head's matrix (S = WWᵀ, S, UVᵀ; S*: F F*ᵀ, U*V*ᵀ) with c = 1 except for products
    (c = 0), computed densely in NumPy (float64, L = 2, correlated C, one layer per head)."""
    C = [[1.0, 0.3], [0.3, 0.8]]
    values = dict(MIXED, d=10, L=2, C=C, batch=3, test_size=0, dtype="float64")
    with jax.enable_x64(True):
        _, _, params, state, batch = _mixed_point(values)
        x = np.asarray(batch["x"])
        for side in (aim.student_side(params, "tied"), state["teacher"]):
            g = np.asarray(model.side_forms(side, batch["x"], jnp.asarray(C), True))
            mats = []
            for block in side:
                b = {k: np.asarray(v) for k, v in block.items()}
                if "F" in b:
                    mats += [(f @ f.T, 1.0) for f in b["F"]]
                elif "S" in b:
                    mats += [(s, 1.0) for s in b["S"]]
                else:
                    mats += [(u @ v.T, 0.0) for u, v in zip(b["U"], b["V"], strict=True)]
            assert g.shape[1] == len(mats)
            for k, (s, c) in enumerate(mats):
                dense = np.einsum("bid,de,bje->bij", x, s, x) - c * np.trace(s) * np.asarray(C)
                np.testing.assert_allclose(g[:, k], dense / np.sqrt(10), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "case",
    [
        dict(output="index", activation="h2", layers=0),
        dict(output="softmax", layers=1, teacher="product", teacher_heads=1),
    ],
    ids=["index-h2", "softmax-layers1"],
)
def test_mixed_loss_gradient_matches_finite_differences(case):
    """∂L/∂θ by autodiff against central differences (ε = 1e-6, float64) along a random direction
    in every parameter of every head (W; S; U, V) of a tied + direct + untied student against a
    wishart + product teacher (with one residual softmax layer: a product teacher), L = 2:
    |fd − ad| ≤ 1e-6·max(1, |ad|)."""
    C = [[1.0, 0.3], [0.3, 0.8]]
    values = dict(MIXED, d=10, L=2, C=C, batch=3, test_size=0, dtype="float64") | case
    if case["layers"]:  # 3·2 student and 1·2 teacher indices (at most 9)
        values["teacher_head_kinds"] = None
    with jax.enable_x64(True):
        _, problem, params, state, batch = _mixed_point(values)
        assert [sorted(p) for p in params] == [["W"], ["S"], ["U", "V"]]
        loss = lambda p: problem.loss(p, state, batch)  # noqa: E731
        grads = jax.grad(loss)(params)
        rng = np.random.default_rng(1)
        for h, block in enumerate(params):
            for name, theta in block.items():
                direction = jnp.asarray(rng.standard_normal(theta.shape))
                eps = 1e-6
                plus, minus = list(params), list(params)
                plus[h] = dict(block, **{name: theta + eps * direction})
                minus[h] = dict(block, **{name: theta - eps * direction})
                fd = (loss(plus) - loss(minus)) / (2 * eps)
                ad = jnp.sum(grads[h][name] * direction)
                assert abs(fd - ad) <= 1e-6 * max(1.0, abs(ad)), (h, name, fd, ad)


def test_mixed_simulation_is_finite_and_records_every_index():
    """A short mixed run (3 student heads tied, direct, untied; 2 teacher heads wishart,
    product): every index's t_k, q_kl, p_kl finite; the direct extras (Psi, Omega, pplus) and the
    untied ones (q1, qsym of every pair; m_k, tA/tB of the product indices 3 and 5 only) recorded;
    the time axis is param's (tied: t = 4nα_d/d; direct: nα_d/d) with the fast time nα_d beside
    it; the tied
    head's W and the direct head's S have entries of variance init_scale²/d."""
    config = validate(aim.Config, dict(TINY, **MIXED))
    traj = aim.simulate(config)
    K = config.n_student + config.n_teacher
    assert K == 5 and not traj["diverged"].values.any()
    for k in range(1, K + 1):
        assert np.isfinite(traj[f"t_{k}"].values).all()
        for l in range(k, K + 1):
            for prefix in ("q", "p", "Psi", "Omega", "pplus", "q1", "qsym"):
                assert np.isfinite(traj[f"{prefix}_{k}{l}"].values).all()
    for prefix in ("m", "tA", "tB"):
        recorded = {k for k in range(1, K + 1) if f"{prefix}_{k}" in traj}
        assert recorded == {3, 5}, prefix
    samples = traj["samples"].values
    np.testing.assert_allclose(traj["time"].values, samples * 4 * config.alpha_d / config.d)
    np.testing.assert_allclose(traj["time_fast"].values, samples * config.alpha_d)
    direct = validate(aim.Config, dict(TINY, **MIXED) | {"param": "direct"})  # direct's axis
    axes = aim.time_axes(direct, np.array([0, 10]))
    np.testing.assert_allclose(axes["time"], np.array([0, 40]) * direct.alpha_d / direct.d)
    big = validate(aim.Config, dict(MIXED, d=64, init_scale=1.5))
    params, _ = aim.build(big).init(seed_keys(np.array([0]))[0][0])
    for block in params[:2]:
        (theta,) = block.values()
        assert abs(np.var(np.asarray(theta)) * 64 / 1.5**2 - 1) < 0.05


def _drift_config(d):
    return validate(
        AIMTheoryConfig,
        dict(MIXED, d=d, L=1, activation="h1", seeds=1, batch=8, dtype="float64",
             teacher="identity", teacher_head_kinds=["identity", "product"],
             method="population-flow", quad_log2=10),
    )  # fmt: skip


@pytest.mark.slow  # about 5 CPU s
def test_mixed_initial_drift_is_the_population_gradient():
    """For h1 the loss is quadratic in the forms, whose mean and covariance Theorem 1 gives exactly
    at every d, so Φ_d = E_x L and the population flow's drift −(α_d/τ_d)⟨∇O, ∇Φ⟩ equals the
    drift of the sampled population gradient (2·10⁵ fresh tokens) at the seed's initial state:
    tied + direct + untied students, identity + product teachers (per-index centring and
    symmetry), d = 16, every observable within 4 standard errors (measured ≤ 0.91)."""
    config = _drift_config(16)
    names = ["t_1", "t_2", "t_3", "q_11", "q_22", "q_33", "q_12", "q_13", "q_23", "q_14", "m_3"]
    potential = cached_potential(config, config.quad_log2)
    potential = dataclasses.replace(potential, rule=antithetic(potential.rule), _jit={})
    theory = theory_drift(config, 0, names, potential, 2)
    sampled, se = sampled_drift(config, 0, names, samples=200_000)
    assert np.all(np.abs(theory - sampled) <= 4 * se + 1e-9), (theory, sampled, se)


@pytest.mark.slow  # about 12 CPU s
def test_mixed_population_flow_follows_sgd_seed_mean():
    """The population flow of a mixed 2-head config (tied + untied student, wishart + product
    teacher, h1, d = 32, on the tied axis t = 4nα_d/d) against the mean of 8 online-SGD seeds
    started from the same matrices, at t = 0.5: every observable within 0.005 plus 10 % of the
    distance it moved (measured: the largest gap 0.0061 on q₁₁, which moved 0.30; seed spread of
    the mean 0.024), q₁₁ moved by more than 0.2."""
    base = dict(
        d=32, seeds=8, t_max=0.5, records=4, batch=8, test_size=0, heads=2, param="tied",
        head_params=["tied", "untied"], teacher="wishart", teacher_heads=2,
        teacher_head_kinds=["wishart", "product"], activation="h1", lr=0.05, dtype="float64",
    )  # fmt: skip
    flow = predict(validate(AIMTheoryConfig, dict(base, method="population-flow", quad_log2=10)))
    sgd = aim.simulate(validate(aim.Config, base))
    assert not sgd["diverged"].values.any()
    for name in ("t_1", "t_2", "q_11", "q_22", "q_12", "q_13", "q_24", "m_2", "tA_2", "tB_2"):
        theory, mean = flow[name].values[-1], sgd[name].values[:, -1].mean()
        moved = abs(theory - flow[name].values[0])
        assert abs(theory - mean) <= 0.005 + 0.1 * moved, (name, theory, mean)
    assert abs(flow["q_11"].values[-1] - flow["q_11"].values[0]) > 0.2


def test_initial_matrices_of_mixed_heads_are_per_head_blocks():
    """The theory starts from the simulator's own draws: one block per head in index order, in
    the forms layout (tied W read as F)."""
    student, teacher = initial_matrices(validate(aim.Config, dict(TINY, **MIXED)), 0)
    assert [sorted(b) for b in student] == [["F"], ["S"], ["U", "V"]]
    assert [sorted(b) for b in teacher] == [["F"], ["U", "V"]]
