"""Stochastic training of attention and LoRA (arXiv 2605.07959, Frangi, Mukherjee, Kumar, Sun &
Sun): Langevin dynamics on regularised regression losses, and test potentials.

Our reconstruction (docs/langevin.md; only the abstract is public): F = L̂ + (λ/2)‖θ‖² on an
attention layer or a LoRA net (potentials.py), trained by the learning-rate-dependent SDE
dΘ = −∇F dt + √s dW (Shi, Su & Jordan, arXiv 2004.06977) whose Gibbs measure is
μ_s ∝ exp(−2F/s), by Langevin Monte Carlo at explicit β = 2/s, or by minibatch SGD at learning
rate s. ``build(config)`` returns the trainer's Problem: the update is optax SGD with step h plus
the trainer's Gaussian noise of variance s·h (:func:`attndyn.core.updates.optimizer` with
``temperature``), drawn from the step's key; chains (seeds) are vmapped and share the data.

Observables (every one a scalar per chain; F and L̂ over all n samples):
``F``, ``loss`` (L̂), ``reg`` ((λ/2)‖θ‖²), ``sq_norm`` (‖θ‖²), ``grad_sq`` (‖∇F‖²), per group
``norm_<g>`` (‖W_g‖_F); LoRA ``balance`` (‖A‖² − ‖B‖²), ``norm_product`` (‖A‖‖B‖),
``delta_norm`` (‖BA‖_F); attention ``balance_qk`` (‖W_Q‖² − ‖W_K‖²); test potentials ``x``
(θ₁) and ``mean_x`` (mean of θ).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.simulate import simulate_problem
from attndyn.core.trainer import Problem
from attndyn.core.updates import optimizer
from attndyn.models.base import Benchmark
from attndyn.models.langevin import potentials
from attndyn.models.langevin.config import BETA_OF_S, TEST_POTENTIALS, LangevinConfig
from attndyn.models.langevin.potentials import Potential, effective_params, n_params, potential

NAME = "langevin"
Config = LangevinConfig
SUMMARY = ("F", "loss", "sq_norm", "grad_sq")
"""Observables ``attndyn simulate langevin`` prints at the final time."""
LABELS = {
    "F": "F = L̂ + (λ/2)‖θ‖²",
    "loss": "training loss L̂",
    "reg": "(λ/2)‖θ‖²",
    "sq_norm": "‖θ‖²",
    "grad_sq": "‖∇F‖²",
    "balance": "‖A‖² − ‖B‖²",
    "norm_product": "‖A‖‖B‖",
    "delta_norm": "‖BA‖_F",
    "balance_qk": "‖W_Q‖² − ‖W_K‖²",
    "x": "θ₁",
    "mean_x": "mean of θ",
}
"""Axis labels of the observables (:func:`attndyn.plot`)."""
TIME_LABEL = "SDE time t = k·h (SGD: k·s)"
"""Axis label of ``time``."""
THEORY = "attndyn.models.langevin.theory"
BENCHMARKS = (
    Benchmark(
        "langevin",
        "attndyn.models.langevin.bench:run_langevin_benchmark",
        "Euler–Maruyama chains × steps/s (double well, LoRA, attention) against NumPy and "
        "PyTorch eager loops",
        (
            "workload",
            "chains",
            "chain_steps_per_s",
            "numpy_chain_steps_per_s",
            "speedup_vs_numpy",
            "reference",
            "speedup_vs_reference",
            "fraction_of_matmul_peak",
        ),
    ),
)

DATA_STREAM = 0x64617461  # "data": folded into PRNGKey(data_seed) for the frozen part

__all__ = [
    "NAME",
    "Config",
    "SUMMARY",
    "OVERFLOW",
    "THEORY",
    "BENCHMARKS",
    "BETA_OF_S",
    "LangevinConfig",
    "Potential",
    "build",
    "frozen_part",
    "observe",
    "simulate",
    "time_axes",
    "n_params",
    "effective_params",
    "potential",
]


def frozen_part(config: LangevinConfig, pot: Potential | None = None) -> dict:
    """Data, labels and frozen weights from ``data_seed`` (the same for every chain)."""
    pot = potential(config) if pot is None else pot
    return pot.frozen(jax.random.fold_in(jax.random.PRNGKey(config.data_seed), DATA_STREAM))


def observe(config: LangevinConfig, pot: Potential, params, frozen) -> dict[str, jax.Array]:
    """The observables of the module docstring for one chain."""
    F, grads = jax.value_and_grad(pot.F)(params, frozen)
    reg = pot.regulariser(params)
    obs = {
        "F": F,
        "loss": F - reg,
        "reg": reg,
        "sq_norm": potentials.sum_sq(params),
        "grad_sq": potentials.sum_sq(grads),
    }
    for g, w in params.items():
        obs[f"norm_{g}"] = jnp.sqrt(jnp.sum(jnp.square(w)))
    if config.model == "lora":
        a2, b2 = jnp.sum(jnp.square(params["A"])), jnp.sum(jnp.square(params["B"]))
        obs["balance"] = a2 - b2
        obs["norm_product"] = jnp.sqrt(a2 * b2)
        obs["delta_norm"] = jnp.linalg.norm(params["B"] @ params["A"])
    elif config.model == "attention" and "Q" in params and "K" in params:
        obs["balance_qk"] = jnp.sum(jnp.square(params["Q"])) - jnp.sum(jnp.square(params["K"]))
    elif config.model in TEST_POTENTIALS:
        obs["x"] = params["theta"][0]
        obs["mean_x"] = jnp.mean(params["theta"])
    return obs


def build(config: LangevinConfig) -> Problem:
    """The trainer's Problem: loss F (full batch, or a minibatch for sgd), update SGD(step) plus
    N(0, s·h) noise (sde, lmc); ``state`` = the frozen part, identical across chains."""
    pot = potential(config)
    n = config.n

    def init(key):
        return pot.init(key), frozen_part(config, pot)

    if config.dynamics == "sgd":

        def sample(key):
            return jax.random.randint(key, (config.batch,), 0, n)

        batch = config.batch
    else:

        def sample(key):
            return jnp.zeros((0,), jnp.int32)  # full batch: nothing to draw

        batch = n if config.model in ("attention", "lora") else 1

    def loss(params, frozen, idx):
        return pot.F(params, frozen, idx if config.dynamics == "sgd" else None)

    rule = optimizer("sgd", config.step, temperature=config.temperature)
    return Problem(
        init=init,
        sample=sample,
        loss=loss,
        observe=lambda params, frozen: observe(config, pot, params, frozen),
        update=rule,
        batch=batch,
    )


def time_axes(config: LangevinConfig, steps: np.ndarray) -> dict[str, np.ndarray]:
    """``time`` = k·h (sde, lmc) or k·s (sgd): the SDE's time."""
    return {"time": np.asarray(steps, dtype=np.float64) * config.step}


def simulate(config: LangevinConfig, seeds=None):
    """Run every chain (seed) of the config's dynamics on its F.

    Returns:
        Trajectory, dims ``(seed, time)``, ``time`` = SDE time; the observables of the module
        docstring; coordinates ``step``, ``samples`` (gradient samples used), ``diverged``.
    """
    return simulate_problem(
        lambda: build(config),
        config,
        seeds,
        family=NAME,
        overflow=OVERFLOW,
        times=lambda s: time_axes(config, s),
    )


EXAMPLE = dict(n=16, d=4, tokens=4, heads=1, d_k=2, t_max=0.5, records=4, seeds=2)
"""A small config that runs in about a second (contract tests, docs)."""

THEORY_EXAMPLE = dict(model="double-well", lam=0.0, s=0.5, x0=1.0, init_scale=0.2, t_max=1.0)
"""Values over EXAMPLE for the contract test of the theory, which covers the test potentials only."""

OVERFLOW = 1e30
"""|value| marking a chain as diverged (:mod:`attndyn.models.base`), far above the default 1e10:
a test potential started at |x0| ≤ 1e3 in up to 1e6 dimensions legitimately has F up to ~1e18
and ‖∇F‖² up to ~1e25 at t = 0 (double well: F ∝ x⁴); float32 overflows at 3.4e38."""
