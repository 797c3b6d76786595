"""Toy family: a linear student w learns a teacher w* (‖w*‖² = d) from y = ⟨w*, x⟩/√d,
x ~ N(0, I_d), by online SGD on ½(y − ⟨w, x⟩/√d)² from w = 0 with step η; time t = k/d.
E R_k = (1 − 2η/d + η²(d + 2)/d²)^k exactly for R = ‖w − w*‖²/d, and m = ⟨w, w*⟩/d has
E m_k = 1 − (1 − η/d)^k."""

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from attndyn.core.config import GridConfig, SimulationConfig, canonical
from attndyn.core.grids import record_grid
from attndyn.core.simulate import simulate_problem
from attndyn.core.trainer import Problem
from attndyn.core.trajectory import make_trajectory
from attndyn.core.updates import optimizer

NAME, SUMMARY, THEORY = "toy", ("R", "m"), "attndyn_toy.theory"


class Grid(GridConfig):
    d: int = Field(64, ge=2, description="dimension")
    lr: float = Field(0.5, gt=0, lt=2, description="step η")

    @property
    def total_steps(self) -> int:
        return max(1, round(self.t_max * self.d))


class Config(Grid, SimulationConfig):
    """The toy's simulation config."""


def build(c: Config) -> Problem:
    def init(key):
        w_star = jax.random.normal(key, (c.d,))
        return {"w": jnp.zeros(c.d)}, w_star * jnp.sqrt(c.d) / jnp.linalg.norm(w_star)

    def loss(p, w_star, x):
        return 0.5 * jnp.mean(((x @ (w_star - p["w"])) / np.sqrt(c.d)) ** 2)

    def observe(p, w_star):
        return {"R": jnp.sum((p["w"] - w_star) ** 2) / c.d, "m": p["w"] @ w_star / c.d}

    sample = lambda key: jax.random.normal(key, (1, c.d))  # noqa: E731
    return Problem(init, sample, loss, observe, optimizer("sgd", c.lr))


def simulate(config: Config, seeds=None):
    times = lambda steps: {"time": steps / config.d}  # noqa: E731
    return simulate_problem(lambda: build(config), config, seeds, family=NAME, times=times)


def predict(c: Grid):
    k = record_grid(c)
    R = (1 - 2 * c.lr / c.d + c.lr**2 * (c.d + 2) / c.d**2) ** k
    obs = {"R": R, "m": 1 - (1 - c.lr / c.d) ** k}
    return make_trajectory(obs, time=k / c.d, samples=k, family=NAME, config=canonical(c))
