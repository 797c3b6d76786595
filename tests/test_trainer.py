"""The generic trainer on toy problems whose trajectories are known exactly."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.schedules import inverse_power
from attndyn.core.trainer import Problem, train
from attndyn.core.updates import optimizer


def quadratic_problem(lr=0.1, weight_decay=0.0, schedule=None, gain_max=1.0):
    """L(w) = ½ a w² with a fixed per-seed gain a ~ U(0, gain_max) and no data noise:
    w_{k+1} = w_k (1 − η s(k)(a + λ)), exactly."""

    def init(key):
        return {"w": jnp.ones(())}, {"a": gain_max * jax.random.uniform(key)}

    return Problem(
        init=init,
        sample=lambda key: jax.random.normal(key, ()),
        loss=lambda p, s, batch: 0.5 * s["a"] * p["w"] ** 2 + 0.0 * batch,
        observe=lambda p, s: {"w": p["w"], "a": s["a"]},
        update=optimizer("sgd", lr, schedule, weight_decay),
    )


def test_sgd_step_matches_closed_form_with_weight_decay_and_schedule():
    sched = inverse_power(k0=3.0, gamma=1.0)
    problem = quadratic_problem(lr=0.2, weight_decay=0.5, schedule=sched)
    steps = np.array([0, 1, 5, 20])
    res = train(problem, steps, np.array([0, 1]))
    a = res.observables["a"][:, 0]
    w = np.ones_like(a)
    expected = [w.copy()]
    for k in range(20):
        w = w * (1 - 0.2 * (3.0 / (k + 3.0)) * (a + 0.5))
        if k + 1 in steps:
            expected.append(w.copy())
    np.testing.assert_allclose(res.observables["w"], np.stack(expected, axis=1), rtol=2e-5)


def test_diverged_seed_is_marked_frozen_and_run_completes():
    # η = 1: seeds with gain a > 2 have |1 − a| > 1 and blow up; the others converge.
    problem = quadratic_problem(lr=1.0, gain_max=4.0)
    seeds = np.arange(8)
    res = train(problem, np.array([0, 10, 2000]), seeds)
    a = res.observables["a"][:, 0]
    unstable = a > 2.0
    assert unstable.any() and (~unstable).any()
    assert np.all((res.diverged_step >= 0) == unstable)
    assert np.all(np.isfinite(res.observables["w"]))  # frozen at the last finite value
    assert np.all(np.abs(res.observables["w"][~unstable, -1]) < 1e-3)
    # the first non-finite step is where the float32 loss ½ a w² overflows (> 3.4e38),
    # with |w_k| = |1 − a|^k
    au = a[unstable].astype(np.float64)
    k_overflow = 0.5 * np.log(2 * 3.4e38 / au) / np.log(np.abs(1 - au))
    assert np.all(np.abs(res.diverged_step[unstable] - k_overflow) <= 3)


def test_custom_value_and_grad_replaces_autodiff():
    """With ``value_and_grad`` given, the step uses its gradient, not ∇loss: a supplied gradient
    of 2w (while ``loss`` would give a w) yields w_k = (1 − 2η)^k exactly."""
    base = quadratic_problem(lr=0.1)
    problem = dataclasses.replace(
        base,
        value_and_grad=lambda p, s, batch: (jnp.zeros(()), {"w": 2.0 * p["w"]}),
    )
    res = train(problem, np.array([0, 3, 10]), np.array([0, 1]))
    expected = np.array([1.0, 0.8**3, 0.8**10])
    np.testing.assert_allclose(res.observables["w"], np.tile(expected, (2, 1)), rtol=1e-6)


def test_projection_after_each_step():
    """Projected GD on the unit circle: ascent on ⟨w, e1⟩ from angle φ0 via
    w ← (w + η e1)/‖w + η e1‖, compared with the same recursion computed in numpy."""

    def init(key):
        phi = 2.0
        return {"w": jnp.array([np.cos(phi), np.sin(phi)], jnp.float32)}, {}

    problem = Problem(
        init=init,
        sample=lambda key: jnp.zeros(()),
        loss=lambda p, s, batch: -p["w"][0],
        observe=lambda p, s: {"w0": p["w"][0], "norm": jnp.linalg.norm(p["w"])},
        update=optimizer("sgd", 0.3),
        project=lambda p: {"w": p["w"] / jnp.linalg.norm(p["w"])},
    )
    res = train(problem, np.array([0, 1, 4, 12]), np.array([0]))
    w = np.array([np.cos(2.0), np.sin(2.0)])
    expected = [w[0]]
    for k in range(12):
        w = w + 0.3 * np.array([1.0, 0.0])
        w = w / np.linalg.norm(w)
        if k + 1 in (1, 4, 12):
            expected.append(w[0])
    np.testing.assert_allclose(res.observables["w0"][0], expected, rtol=1e-5)
    np.testing.assert_allclose(res.observables["norm"][0], 1.0, rtol=1e-6)


def test_one_non_finite_parameter_entry_freezes_the_seed_at_that_step():
    """The guard checks every parameter entry, not a sum that can overflow: w = (counter, big,
    big, poison) with the two big entries growing by 0.6e38 a step (finite, but their sum passes
    the float32 maximum 3.4e38 after step 2) and NaN put into the last entry at step 4, while the
    loss stays finite. The seed is frozen at step 4 with its values after step 3."""

    def init(key):
        return {"w": jnp.zeros(4)}, {"nan_step": 4.0 + 0.0 * jax.random.uniform(key)}

    def value_and_grad(p, s, batch):
        k = p["w"][0]  # w[0] = k before step k
        poison = jnp.where(k >= s["nan_step"], jnp.nan, 0.0)
        return jnp.zeros(()), {"w": jnp.array([-1.0, -0.6e38, -0.6e38, poison])}

    problem = Problem(
        init=init,
        sample=lambda key: jnp.zeros(()),
        loss=lambda p, s, batch: jnp.zeros(()),
        value_and_grad=value_and_grad,
        observe=lambda p, s: {"w0": p["w"][0], "big": p["w"][1]},
        update=optimizer("sgd", 1.0),
    )
    res = train(problem, np.array([0, 2, 10]), np.array([0]))
    assert res.diverged_step[0] == 4
    np.testing.assert_array_equal(res.observables["w0"][0], [0.0, 2.0, 4.0])
    assert res.observables["big"][0, -1] == np.float32(4 * np.float32(0.6e38))
