"""One-layer transformer on Markov chains and text: focus–dilution cycles (arXiv 2605.01199).

Chen, Lin, Xu & Luo, "Focus and Dilution: The Multi-stage Learning Process of Attention" (ICML
2026). ``build(config)`` returns the trainer's :class:`~attndyn.core.trainer.Problem` for the model
of Def. 2.2 (model.py) on population (Prop. 2.3), online or fixed Markov data (data.py) or text
(text.py); ``optimizer='flow'`` integrates the population gradient flow of Eq. 4 adaptively
(:mod:`attndyn.core.flow`: the Rosenbrock W-method ROS2 with the Gauss–Newton Jacobian of the
logits, or explicit Bogacki–Shampine). ``time`` = lr·step (flow time). Observables:
observables.py; the model, the data and our readings: docs/focus.md.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.config import canonical
from attndyn.core.flow import integrate_flow
from attndyn.core.grids import record_grid
from attndyn.core.simulate import seed_array
from attndyn.core.trainer import Problem, RunResult, train
from attndyn.core.trajectory import make_trajectory
from attndyn.core.updates import optimizer as update_rule
from attndyn.models.base import Benchmark
from attndyn.models.markov import data, model, observables
from attndyn.models.markov.config import MarkovConfig
from attndyn.models.markov.data import PAPER_PI

NAME = "markov"
SUMMARY = ("loss_gap", "erank_W0", "erank_WQK", "entropy_mean", "align_pi", "align_phi")
"""Observables ``attndyn simulate markov`` prints at the final time."""
LABELS = {
    "loss": "population loss L(θ)",
    "loss_gap": "loss gap L − L*",
    "kl_uniform": "Σπ_i KL(uniform ‖ ℙ_i)",
    "kl_unigram": "Σπ_i KL(π ‖ ℙ_i)",
    "kl_bigram": "Σπ_i KL(P_i ‖ ℙ_i)",
    "erank_W0": "effective rank of W₀",
    "erank_W1": "effective rank of W₁",
    "erank_WQK": "effective rank of W_QK",
    "sv_ratio_W0": "σ₂(W₀)/σ₁(W₀)",
    "gradM_sv1": "σ₁(∂L/∂M)",
    "entropy_mean": "mean attention entropy Σπ_i H(𝔸_i) (nats)",
    "align_pi": "|cos(u₁, π)|",
    "align_phi": "cos_F(Φ, ππᵀ)",
    "thm37": "(1 − π₁)γ₁ − (d − 1)π₁γ̄ (Thm 3.7)",
    "phi_norm": "‖Φ‖_F",
    "m_norm": "‖M‖_F",
}
"""Axis labels of the observables (observables.py; :func:`attndyn.plot`)."""
TIME_LABEL = "flow time t = lr·k"
"""Axis label of ``time``."""
Config = MarkovConfig
FROZEN = ("WQ", "WK")
"""The groups that ``train_attention=false`` freezes."""
THEORY = "attndyn.models.markov.theory"
BENCHMARKS = (
    Benchmark(
        "markov",
        "attndyn.models.markov.bench:run_markov_benchmark",
        "population flow through 10⁶ time units vs fixed-step GD and a PyTorch step; Adam on "
        "100,000 sequences, seeds vmapped, vs PyTorch eager",
        (
            "row",
            "m",
            "seeds",
            "flow_t_reached",
            "flow_wall_s",
            "flow_steps",
            "flow_wall_s_projected",
            "flow_speedup_vs_gd",
            "gd_steps_per_s",
            "gd_speedup_vs_torch",
            "steps_per_s",
            "seed_throughput_ratio",
            "speedup_vs_torch",
        ),
    ),
)

__all__ = [
    "NAME",
    "Config",
    "SUMMARY",
    "OVERFLOW",
    "THEORY",
    "BENCHMARKS",
    "MarkovConfig",
    "PAPER_PI",
    "DataLaw",
    "data_law",
    "tracked_tokens",
    "build",
    "simulate",
    "time_axes",
    "run_records",
]


class DataLaw:
    """π, P and L* of a config (float64 NumPy); for text, the corpus's π̂, P̂ and its tokens."""

    def __init__(self, config: MarkovConfig):
        self.tokens = None
        self.vocab = None
        if config.data == "text":
            from attndyn.models.markov import text

            corpus = text.load_corpus(config)
            self.tokens, self.vocab = corpus.tokens, corpus.vocab
            self.pi, self.P = corpus.unigram(), corpus.bigram()
        else:
            self.pi = data.stationary_law(config)
            self.P = data.transition_matrix(config, self.pi)
        self.entropy_star = data.conditional_entropy(self.pi, self.P)

    @property
    def d(self) -> int:
        return len(self.pi)


def data_law(config: MarkovConfig) -> DataLaw:
    """:class:`DataLaw` of ``config``."""
    return DataLaw(config)


def tracked_tokens(config: MarkovConfig, pi: np.ndarray) -> tuple[int, ...]:
    """``config.track``, else every token when d ≤ 8, else the 3 most frequent and the 3 around
    the median frequency (Section 4.2 tracks the top 3 and 3 medium-frequency tokens)."""
    d = len(pi)
    if config.track is not None:
        bad = [t for t in config.track if not 0 <= t < d]
        if bad:
            from attndyn.errors import InputError

            raise InputError(
                f"invalid value for 'track': token ids must be in [0, {d}) (got {bad})"
            )
        return tuple(config.track)
    if d <= 8:
        return tuple(range(d))
    order = np.argsort(-pi, kind="stable")
    mid = d // 2
    return tuple(int(t) for t in (*order[:3], *order[mid - 1 : mid + 2]))


def build(config: MarkovConfig, law: DataLaw | None = None) -> Problem:
    """The Problem (init, sample, loss, observe, update) of ``config``."""
    law = law or DataLaw(config)
    dtype = jnp.dtype(config.dtype)
    arch = model.Arch.of(config)
    d, s = law.d, config.seq_len
    track = tracked_tokens(config, law.pi)
    pi = jnp.asarray(law.pi, dtype)
    P = jnp.asarray(law.P, dtype)
    tokens = None if law.tokens is None else jnp.asarray(law.tokens, jnp.int32)
    if tokens is not None:
        from attndyn.models.markov.text import require_windows

        require_windows(tokens.shape[0], s)

    def init(key):
        k_params, k_data = jax.random.split(key)
        params = model.init_params(
            k_params, d, config.m, config.key_width, config.epsilon, arch, dtype
        )
        state = {"pi": pi, "P": P}
        if config.data == "fixed":
            state["sequences"] = data.sample_sequences(k_data, P, config.n_sequences, s + 1)
        return params, state

    def sample(key):
        if config.data == "online":
            return data.sample_sequences(key, P, config.batch, s + 1)
        if config.data == "text":
            starts = jax.random.randint(key, (config.batch,), 0, tokens.shape[0] - s)
            return jax.vmap(lambda a: jax.lax.dynamic_slice(tokens, (a,), (s + 1,)))(starts)
        if config.data == "fixed":
            return jax.random.randint(key, (config.batch,), 0, config.n_sequences)
        return key  # population: nothing is sampled

    def loss(params, state, batch):
        if config.data == "population":
            return model.population_loss(params, state["pi"], state["P"], arch)
        if config.data == "fixed":
            batch = state["sequences"][batch]
        return model.sequence_loss(params, batch, arch)

    def observe(params, state):
        return observables.observe(params, state["pi"], state["P"], law.entropy_star, track, arch)

    value_and_grad = None
    if not config.train_attention:
        full = jax.value_and_grad(loss)

        def value_and_grad(params, state, batch):
            """∇L with the W_Q, W_K blocks zeroed: attention stays at its init."""
            value, grads = full(params, state, batch)
            return value, {
                k: jnp.zeros_like(g) if k in ("WQ", "WK") else g for k, g in grads.items()
            }

    name = "adam" if config.optimizer == "adam" else "sgd"  # flow: the update is unused
    return Problem(
        init=init,
        sample=sample,
        loss=loss,
        observe=observe,
        update=update_rule(name, config.lr),
        batch=1 if config.data == "population" else config.batch,
        value_and_grad=value_and_grad,
    )


def time_axes(config: MarkovConfig, steps: np.ndarray) -> dict[str, np.ndarray]:
    """``time`` = lr·step (the gradient-flow time of GD; nominal for Adam)."""
    return {"time": config.lr * np.asarray(steps, dtype=np.float64)}


def run_records(
    config: MarkovConfig,
    seeds=None,
    adapt: Callable[[Problem], Problem] | None = None,
) -> tuple[RunResult, np.ndarray, np.ndarray]:
    """Train (gd, adam: :func:`attndyn.core.trainer.train`) or integrate (flow:
    :func:`attndyn.core.flow.integrate_flow`, ROS2 with :func:`model.gauss_newton` or bs3) every
    seed on the record grid. ``adapt(problem)`` may replace the Problem's ``init`` or
    ``observe`` (whose values may be arrays: they come back with shape (seed, time, …)).

    Returns:
        (RunResult, record steps, seed ids).
    """
    law = DataLaw(config)
    steps = record_grid(config)
    seed_ids = seed_array(config, seeds)
    with jax.enable_x64(config.dtype == "float64"):
        problem = build(config, law)
        if adapt is not None:
            problem = adapt(problem)
        if config.optimizer != "flow":
            return train(problem, steps, seed_ids), steps, seed_ids
        frozen = () if config.train_attention else FROZEN
        gauss_newton = None
        if config.solver == "ros2":
            gauss_newton = model.gauss_newton(model.Arch.of(config), frozen)
        if problem.value_and_grad is None:
            grad = jax.grad(lambda p, st: problem.loss(p, st, None))
        else:
            grad = lambda p, st: problem.value_and_grad(p, st, None)[1]  # noqa: E731
        result = integrate_flow(
            problem.init,
            grad,
            problem.observe,
            time_axes(config, steps)["time"],
            seed_ids,
            rtol=config.rtol,
            gauss_newton=gauss_newton,
        )
    return result, steps, seed_ids


def simulate(config: MarkovConfig, seeds=None):
    """Train every seed and record the observables (observables.py) on the record grid.

    Returns:
        Trajectory, dims ``(seed, time)``, ``time`` = lr·step, ``samples`` = step·batch (batch 1
        for population data). For ``optimizer='flow'`` the record times are the same lr·step
        grid, ``step`` counts the adaptive steps taken and ``samples`` is 0.
    """
    result, steps, seed_ids = run_records(config, seeds)
    flow = config.optimizer == "flow"
    batch = 0 if flow else 1 if config.data == "population" else config.batch
    div = result.diverged_step
    if flow:  # the flow marks a record index: its step count there
        div = np.where(div >= 0, result.steps[np.maximum(div, 0)], -1)
    traj = make_trajectory(
        result.observables,
        time=time_axes(config, steps)["time"],
        samples=steps * batch,
        step=result.steps if flow else steps,
        seeds=seed_ids,
        diverged_step=div,
        family=NAME,
        overflow=OVERFLOW,
        config=canonical(config),
    )
    traj.attrs["devices"] = result.devices  # seeds sharded over (attndyn.core.devices)
    return traj


EXAMPLE = dict(m=16, t_max=20.0, lr=0.1, records=5, seeds=2)
"""A small config that runs in about a second (contract tests, docs)."""

OVERFLOW = 1e10
"""|value| marking a seed as diverged (:mod:`attndyn.models.base`): effective ranks lie in
[1, m], entropies in [0, log T], alignments in [−1, 1] and the loss gap is O(log m)."""
