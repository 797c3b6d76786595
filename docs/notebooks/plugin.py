# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A plug-in family and experiment
#
# A new model family and an experiment on it, written from this notebook, with no edit to
# attndyn: the toy of `docs/plugins.md` (a linear student learning a teacher
# vector, with its exact theory) and its experiment `toy-decay` (two claims and a negative
# control). The cells below write the package into a temporary folder and register its entry
# points there; a real plug-in would declare them in its `pyproject.toml` and be
# `pip install`ed (docs/plugins.md). Runs go to a temporary results folder.

# %%
# %matplotlib inline
import importlib
import sys
import tempfile
from pathlib import Path

from IPython.display import Image

import attndyn

work = Path(tempfile.mkdtemp(prefix="attndyn-nb-plugin-"))
pkg = work / "site" / "attndyn_toy"
pkg.mkdir(parents=True)
out = work / "results"

# %% [markdown]
# ## The family
#
# `attndyn_toy/__init__.py`: `NAME`, a `Config`, `build` (the `Problem`: init, sample, loss,
# observe and the update), `simulate` with the one core helper `simulate_problem`, `SUMMARY`,
# and the closed-form `predict` that `THEORY` points to.

# %%
# %%writefile {pkg}/__init__.py
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


# %% [markdown]
# `attndyn_toy/theory.py`, the theory module `THEORY` names:

# %%
# %%writefile {pkg}/theory.py
"""The toy's closed-form theory (see the package docstring)."""

from attndyn_toy import SUMMARY, predict
from attndyn_toy import Grid as Config

__all__ = ["Config", "SUMMARY", "predict"]

# %% [markdown]
# ## The experiment
#
# `attndyn_toy/experiment.py`: SGD's seed mean of R at t = 4 must equal the closed form within
# 0.01 with its whole 95 % interval, and R must fall below a tenth of its start; the control
# `step-off` computes the closed form at a step 30 % too large, so `sgd-tracks-theory` must fail.

# %%
# %%writefile {pkg}/experiment.py
"""``toy-decay`` (the toy family's closed form, no paper): online SGD on the linear student
follows E R_k = (1 − 2η/d + η²(d + 2)/d²)^k, and R falls below a tenth of its start by t = 4."""

import numpy as np
from pydantic import Field

from attndyn.claims import (
    Base,
    Check,
    Control,
    Experiment,
    ExperimentConfig,
    below,
    claim,
    mean_ci,
    within,
)
from attndyn.figures import new_figure, save_figure
from attndyn_toy import Config as ToyConfig


class Config(ExperimentConfig):
    base: ToyConfig = Base(ToyConfig, "the toy at step 0.5 up to t = 4", lr=0.5, t_max=4.0)
    seeds: int = Field(64, ge=2)
    theory_lr_factor: float = Field(1.0, gt=0, description="the theory's step is factor·η")
    track_tol: float = Field(0.01, gt=0, description="largest |mean R − E R| at t_max")


class ToyDecay(Experiment):
    name = "toy-decay"
    description = "toy family: SGD against the closed form E R_k; R falls tenfold by t = 4"
    Config = Config
    presets = {"tiny": {"base.d": 32}, "small": {"base.d": 256, "seeds": 256}}
    controls = {"step-off": Control({"theory_lr_factor": 1.3}, "the theory's step is 30 % off")}
    claims = (
        claim(
            "sgd-tracks-theory",
            "the seed mean of R(t_max) is E R at t_max",
            statistic="per seed R(t_max) − E R(t_max); seed mean (Student-t 95 % CI)",
            target=within(0.0, "track_tol"),
            reason="E R_k is exact (the family's docstring); the tolerance is a chosen precision",
            controls=("step-off",),
        ),
        claim(
            "error-falls-tenfold",
            "R(t_max) is below a tenth of R(0)",
            statistic="per seed R(t_max)/R(0); seed mean (Student-t 95 % CI)",
            target=below(0.1),
            reason="E R(t = 4) ≈ exp(−4(2η − η²)) ≈ 0.05 at η = 0.5",
        ),
    )

    def run(self, config, ctx):
        b, lr = config.base, config.base.lr * config.theory_lr_factor
        theory = ctx.predict("toy", d=b.d, lr=lr, t_max=b.t_max, records=b.records)
        return {"sim": ctx.simulate("toy", b), "theory": theory}

    def measure(self, config, results):
        R, ER = results["sim"]["R"].values, results["theory"]["R"].values
        return {
            "gap": mean_ci(R[:, -1] - ER[-1]),
            "fall": mean_ci(R[:, -1] / R[:, 0]),
            "finite": bool(np.isfinite(R).all()),
        }

    def preconditions(self, config, m):
        return [Check("every seed finite", m["finite"])]

    def evaluate(self, config, m):
        return {"sgd-tracks-theory": m["gap"], "error-falls-tenfold": m["fall"]}

    def figure(self, config, results, m, path):
        sim, theory = results["sim"], results["theory"]
        fig, ax = new_figure(figsize=(5, 3.5))
        ax.plot(sim.time, sim["R"].values.T, color="C0", alpha=0.2, lw=0.8)
        ax.plot(theory.time, theory["R"], "k--", label="E R (closed form)")
        ax.set(xlabel="t = k/d", ylabel="R = ‖w − w*‖²/d", yscale="log")
        ax.legend()
        return save_figure(fig, path)


# %% [markdown]
# ## Registering it
#
# attndyn finds families and experiments through the entry-point groups `attndyn.families` and
# `attndyn.experiments`. `pip install` would write them into the package's `.dist-info` folder
# from its `pyproject.toml`; here we write that folder by hand beside the package, put the
# folder on `sys.path` and tell attndyn to look again.

# %%
dist = work / "site" / "attndyn_toy-0.1.0.dist-info"
dist.mkdir()
(dist / "METADATA").write_text("Metadata-Version: 2.1\nName: attndyn-toy\nVersion: 0.1.0\n")
(dist / "entry_points.txt").write_text(
    "[attndyn.families]\ntoy = attndyn_toy\n\n"
    "[attndyn.experiments]\ntoy-decay = attndyn_toy.experiment:ToyDecay\n"
)
sys.path.insert(0, str(work / "site"))
importlib.invalidate_caches()

from attndyn.core import registry  # noqa: E402
from attndyn.models import family_names  # noqa: E402

registry.refresh()
print(family_names())
print(registry.names(registry.EXPERIMENTS)[-3:])

# %% [markdown]
# ## Simulate, predict, overlay
#
# The new family works with every part of attndyn: the API, the store, plotting.

# %%
sim = attndyn.simulate("toy", out=out, d=64, seeds=16, t_max=4.0, progress=False)
theory = attndyn.predict("toy", out=out, d=64, t_max=4.0, progress=False)
attndyn.plot(sim, theory, ["R", "m"], ncols=2)

# %% [markdown]
# ## Run the experiment and its control
#
# The `tiny` preset: 64 seeds at d = 32. Each claim is judged over the seeds with its 95 %
# confidence interval.

# %%
outcome = attndyn.run("toy-decay", preset="tiny", out=out, progress=False)
print(outcome.verdict)
for c in outcome.claims:
    print(f"{c.name}: {c.value:.4f} [{c.ci_low:.4f}, {c.ci_high:.4f}] passed={c.passed}")

# %%
Image(filename=str(outcome.figure))

# %%
control = attndyn.run("toy-decay", preset="tiny", control="step-off", out=out, progress=False)
print(control.verdict)
for c in control.claims:
    print(f"{c.name}: {c.value:.4f} [{c.ci_low:.4f}, {c.ci_high:.4f}] passed={c.passed}")

# %% [markdown]
# ## Query the results store
#
# The experiment's records and claims are stored beside the runs; the new family has its typed
# view `runs_toy`.

# %%
res = attndyn.results(out)
res.query(
    """
    SELECT c.experiment, e.control, e.verdict, c.claim, round(c.value, 4) AS value, c.passed
    FROM claims c JOIN experiments e USING (key)
    ORDER BY e.control NULLS FIRST, c.claim
    """
)

# %%
res.query("SELECT kind, d, lr, seeds, t_max, experiment FROM runs_toy ORDER BY kind, d")
