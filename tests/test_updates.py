"""Update rules as optax transformations, through the trainer."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from attndyn.core.schedules import inverse_power, linear_ramp
from attndyn.core.trainer import Problem, init_seeds, make_advance, seed_keys, train
from attndyn.core.updates import by_group, gaussian_noise, optimizer
from attndyn.errors import InputError

LR = {"a": 0.05, "b": 0.02}
DECAY = {"a": 0.1, "b": 0.0}
SCHEDULE = {"a": inverse_power(k0=50.0, gamma=0.75)}


def regression_problem(update) -> Problem:
    """A two-layer tanh student learning a fixed random teacher on fresh Gaussian batches of 8:
    group ``a`` is a dict {W: (4, 3), c: ()} and group ``b`` a vector (3,)."""

    def init(key):
        k1, k2, k3 = jax.random.split(key, 3)
        params = {
            "a": {"W": 0.5 * jax.random.normal(k1, (4, 3)), "c": jnp.zeros(())},
            "b": 0.5 * jax.random.normal(k2, (3,)),
        }
        return params, {"teacher": jax.random.normal(k3, (4,))}

    def loss(params, state, x):
        pred = jnp.tanh(x @ params["a"]["W"] + params["a"]["c"]) @ params["b"]
        return 0.5 * jnp.mean((pred - jnp.tanh(x @ state["teacher"])) ** 2)

    def observe(params, state):
        flat = jax.tree.leaves(params)
        return {f"p{i}": leaf for i, leaf in enumerate(flat)}

    return Problem(
        init=init,
        sample=lambda key: jax.random.normal(key, (8, 4)),
        loss=loss,
        observe=observe,
        update=update,
        batch=8,
    )


def reference_sgd_run(problem: Problem, seeds, steps: int):
    """The trainer's update before optax, written out literally: per group g and leaf,
    grad ← grad + λ_g θ (if λ_g ≠ 0); θ ← θ − asarray(η_g s_g(k), θ.dtype) · grad."""
    init_keys, data_keys = seed_keys(np.asarray(seeds))
    params, state = jax.vmap(problem.init)(init_keys)

    def step(k, params, state, data_key):
        grads = jax.grad(problem.loss)(
            params, state, problem.sample(jax.random.fold_in(data_key, k))
        )
        new = {}
        for g, theta in params.items():
            eta = LR[g]
            if g in SCHEDULE:
                eta = eta * SCHEDULE[g](k)
            lam = DECAY[g]

            def update(theta, grad, eta=eta, lam=lam):
                if lam:
                    grad = grad + lam * theta
                return theta - jnp.asarray(eta, theta.dtype) * grad

            new[g] = jax.tree.map(update, theta, grads[g])
        return new

    def run(params, state, data_key):
        return jax.lax.fori_loop(0, steps, lambda k, p: step(k, p, state, data_key), params)

    return jax.jit(jax.vmap(run))(params, state, data_keys)


def test_default_sgd_reproduces_the_former_update_over_1000_float32_steps():
    """Same float operations in the same order, so the two agree to float32 rounding (bitwise on
    the machine this was written on; a 0.1% change of λ moves them by > 2000 ulp). We allow 4 ulp
    of each leaf's scale: XLA may fuse the multiply-subtract differently in the two programs,
    and the contracting dynamics keep such a difference from growing."""
    rules = {g: optimizer("sgd", LR[g], SCHEDULE.get(g), DECAY[g]) for g in LR}
    problem = regression_problem(by_group(rules))
    seeds = [0, 1, 2]
    result = train(problem, np.array([0, 400, 1000]), np.array(seeds))
    ref = jax.tree.leaves(reference_sgd_run(problem, seeds, 1000))
    for i, leaf in enumerate(ref):
        got = result.observables[f"p{i}"][:, -1]
        leaf = np.asarray(leaf)
        assert got.dtype == np.float32
        scale = np.max(np.abs(leaf))
        np.testing.assert_allclose(got, leaf, rtol=0, atol=4 * np.finfo(np.float32).eps * scale)
        start = result.observables[f"p{i}"][:, 0]
        assert np.max(np.abs(got - start)) > 100 * np.finfo(np.float32).eps * scale  # it moved


def test_adam_state_is_carried_across_record_points():
    """optax.adam through the trainer (records at 0, 7, 30) equals a hand-written optax loop."""
    update = by_group({"a": optimizer("adam", 0.01), "b": optimizer("adam", 0.03)})
    problem = regression_problem(update)
    result = train(problem, np.array([0, 7, 30]), np.array([5]))
    init_keys, data_keys = seed_keys(np.array([5]))
    params, state = problem.init(init_keys[0])
    tx = {"a": optax.adam(0.01), "b": optax.adam(0.03)}
    opt = {g: tx[g].init(params[g]) for g in tx}
    for k in range(30):
        x = problem.sample(jax.random.fold_in(data_keys[0], k))
        grads = jax.grad(problem.loss)(params, state, x)
        for g in tx:
            u, opt[g] = tx[g].update(grads[g], opt[g], params[g])
            params[g] = optax.apply_updates(params[g], u)
    for i, leaf in enumerate(jax.tree.leaves(params)):
        np.testing.assert_allclose(result.observables[f"p{i}"][0, -1], leaf, rtol=1e-5, atol=1e-6)


def test_unknown_optimizer_is_an_input_error():
    with pytest.raises(InputError, match="'optimizer'.*adam"):
        optimizer("lbfgs", 0.1)


def test_by_group_needs_one_rule_per_group():
    for rules in ({"a": optimizer("sgd", 0.1)}, {g: optimizer("sgd", 0.1) for g in "abc"}):
        problem = regression_problem(by_group(rules))
        with pytest.raises(InputError, match=r"the parameters have \['a', 'b'\]"):
            train(problem, np.array([0, 1]), np.array([0]))


def noise_problem(update, dim=64) -> Problem:
    """Zero gradient, so θ_k − θ_0 is the sum of the update's noise; two groups of one shape."""
    return Problem(
        init=lambda key: ({"u": jnp.zeros(dim), "v": jnp.zeros(dim)}, {}),
        sample=lambda key: jax.random.normal(key, ()),
        loss=lambda p, s, x: 0.0 * (jnp.sum(p["u"]) + jnp.sum(p["v"])) * x,
        observe=lambda p, s: {"u": p["u"], "v": p["v"]},
        update=update,
    )


def test_langevin_noise_has_variance_eta_s_per_step_and_groups_are_independent():
    """Euler–Maruyama with T = 1: θ_{k+1} − θ_k ~ N(0, η s(k)). 256 seeds × 64 coordinates per
    increment: the sample variance has relative standard error √(2/16384) ≈ 1.1%; we allow 6%
    (≈ 5σ). The two groups' increments are uncorrelated (|ρ| < 5/√16384 ≈ 0.04)."""
    lr, schedule = 0.1, linear_ramp(1.0, 3.0, 100)
    rule = optimizer("sgd", lr, schedule, temperature=1.0)
    problem = noise_problem(by_group({"u": rule, "v": rule}))
    result = train(problem, np.array([0, 1, 50, 51]), np.arange(256))
    u, v = result.observables["u"], result.observables["v"]
    for k0, i in ((0, 0), (50, 2)):
        du, dv = u[:, i + 1] - u[:, i], v[:, i + 1] - v[:, i]
        expected = lr * float(schedule(k0))
        assert np.var(du) == pytest.approx(expected, rel=0.06)
        assert np.var(dv) == pytest.approx(expected, rel=0.06)
        assert abs(np.corrcoef(du.ravel(), dv.ravel())[0, 1]) < 0.04
    assert abs(np.corrcoef(u[:, 1].ravel(), u[:, 3].ravel() - u[:, 2].ravel())[0, 1]) < 0.04


def test_noisy_trajectory_does_not_depend_on_the_record_grid_or_the_other_seeds():
    rule = optimizer("adam", 0.05, temperature=0.01)
    problem = regression_problem(by_group({"a": rule, "b": rule}))
    coarse = train(problem, np.array([0, 60]), np.array([3, 4]))
    fine = train(problem, np.array([0, 1, 7, 30, 59, 60]), np.array([3, 4]))
    alone = train(problem, np.array([0, 60]), np.array([4]))
    for name, values in coarse.observables.items():
        np.testing.assert_array_equal(values[:, -1], fine.observables[name][:, -1])
        # vmapped over another batch size, XLA may round differently: float tolerance
        np.testing.assert_allclose(
            values[1, -1], alone.observables[name][0, -1], rtol=1e-5, atol=1e-6
        )
        assert not np.array_equal(values[0, -1], values[1, -1])  # seeds draw their own noise


def test_gaussian_noise_alone_is_a_transformation_of_any_tree():
    rule = gaussian_noise(lambda count: 4.0)
    state = rule.init({"x": jnp.zeros(3)})
    out, _ = rule.update({"x": jnp.zeros(20_000)}, state, key=jax.random.PRNGKey(0))
    assert np.std(out["x"]) == pytest.approx(2.0, rel=0.03)  # std error ≈ 0.5%


def test_divergence_freezes_parameters_and_optimizer_state():
    """Heavy ball (β = 0.5) on ½ a w² with η = 1 is stable iff a < 2(1 + β) = 3; a diverged seed
    keeps its last finite parameters and momentum, and the others converge."""
    problem = Problem(
        init=lambda key: ({"w": jnp.ones(())}, {"a": 4.0 * jax.random.uniform(key)}),
        sample=lambda key: jnp.zeros(()),
        loss=lambda p, s, x: 0.5 * s["a"] * p["w"] ** 2 + x,
        observe=lambda p, s: {"w": p["w"]},
        update=optimizer("momentum", 1.0, momentum=0.5),
    )
    carry, state, keys = init_seeds(problem, np.arange(16))
    advance = make_advance(problem)
    carry = advance(carry, state, keys, 0, 3000)
    later = advance(carry, state, keys, 3000, 3500)
    diverged = np.asarray(carry.diverged_step) >= 0
    assert np.array_equal(diverged, np.asarray(state["a"]) > 3.0)
    assert diverged.any() and (~diverged).any()
    for before, after in zip(jax.tree.leaves(carry), jax.tree.leaves(later), strict=True):
        before, after = np.asarray(before), np.asarray(after)
        assert np.all(np.isfinite(after))
        np.testing.assert_array_equal(after[diverged], before[diverged])  # frozen
    assert len(jax.tree.leaves(carry.opt_state)) == 1  # the momentum, frozen with θ above
    assert np.all(np.abs(np.asarray(carry.params["w"])[~diverged]) < 1e-3)
