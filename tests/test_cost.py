"""XLA's operation count of the simulation loops (attndyn.core.cost) and its use in estimates."""

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core import cost
from attndyn.core.flow import integrate_flow
from attndyn.core.trainer import Problem, train
from attndyn.core.updates import optimizer
from attndyn.runs import estimate

N = 96


def matmul_problem():
    """L(w) = ½‖A w‖² with a fixed N×N matrix A per seed: the step's matmul work is the forward
    A w and the backward Aᵀ(A w), 2·N² flops each."""

    def init(key):
        return {"w": jnp.ones(N)}, {"A": jax.random.normal(key, (N, N)) / N}

    def loss(p, s, batch):
        return 0.5 * jnp.sum((s["A"] @ p["w"]) ** 2) + 0.0 * batch

    return Problem(
        init=init,
        sample=lambda key: jax.random.normal(key, ()),
        loss=loss,
        observe=lambda p, s: {"w0": p["w"][0]},
        update=optimizer("sgd", 0.1),
    )


def test_trainer_reports_one_step_of_all_seeds_whatever_the_length():
    """The while body is counted once: per step, the count does not depend on how many steps ran,
    and it is at least the two matrix–vector products of each of the 3 seeds (4·N² flops each),
    with the elementwise work (O(N) per seed) adding little."""
    per_step = []
    for steps in (10, 40):
        with cost.recording() as reports:
            train(matmul_problem(), np.array([0, steps]), np.arange(3))
        assert len(reports) == 1 and reports[0]["iterations"] == steps
        per_step.append(cost.per_step(reports, steps))
    assert per_step[0] == per_step[1]
    matmul = 3 * 4 * N**2
    assert matmul <= per_step[0]["flops"] <= 1.2 * matmul
    assert per_step[0]["bytes"] > 0 and per_step[0]["iterations"] == 1


def test_nothing_is_counted_outside_recording():
    assert cost._active == []
    train(matmul_problem(), np.array([0, 5]), np.arange(2))  # report() returns at once
    assert cost.per_step([], 5) is None


def test_flow_reports_its_runge_kutta_steps():
    """The flow's loop is a Runge–Kutta step; its report counts them (``iterations``)."""

    def init(key):
        return {"w": jnp.ones(4)}, {"a": 1.0 + jax.random.uniform(key)}

    with cost.recording() as reports:
        res = integrate_flow(
            init,
            lambda p, s: {"w": s["a"] * p["w"]},
            lambda p, s: {"w0": p["w"][0]},
            np.array([0.0, 1.0]),
            np.arange(2),
        )
    assert len(reports) == 1
    assert reports[0]["iterations"] == res.steps[-1] > 0
    assert reports[0]["flops"] > 0


def test_estimate_carries_the_count_and_the_summary_prints_it():
    from attndyn.runs import family_config

    config = family_config("aim", {"d": 16, "t_max": 0.2, "seeds": 2, "batch": 4})
    est = estimate.calibrate("aim", config)
    assert est.flops_per_step is not None and est.flops_per_step > 0
    assert est.as_json()["flops"] == est.flops_per_step * est.steps
    assert "FLOPs: " in estimate.summary_line(est)
