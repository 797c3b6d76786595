"""QK/OV circuits toy of Vashisht & Ramaswamy, "Faster Query-Key Learning Sharpens Attention in
Self-Attention Models" (ICML 2026, arXiv 2608.06776). Model, data and training follow the
authors' code (docs/references.md); see docs/circuits.md.

``build(config)`` returns the trainer's :class:`~attndyn.core.trainer.Problem` (the config's
optimizer, SGD by default, with a fresh batch per step; groups ``qk`` with η_QK = ratio·lr (times the QK schedule) and ``ov`` with
η_OV = lr); ``simulate(config)`` runs it and returns a Trajectory whose time axis is the SGD step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attndyn.core.schedules import linear_ramp
from attndyn.core.simulate import simulate_problem
from attndyn.core.trainer import Problem
from attndyn.core.updates import by_group, optimizer
from attndyn.models.base import Benchmark
from attndyn.models.circuits import data, model
from attndyn.models.circuits.config import CircuitsConfig
from attndyn.models.circuits.observables import attention_observables, circuit_observables

NAME = "circuits"
SUMMARY = ("loss", "accuracy", "attn_distinct", "frac_sharp", "separability", "qk_fro", "ov_fro")
"""Observables ``attndyn simulate circuits`` prints at the final time."""
LABELS = {
    "loss": "test cross-entropy",
    "accuracy": "test accuracy",
    "prob_correct": "probability of the correct token",
    "attn_distinct": "attention mass on distinct tokens",
    "attn_entropy": "attention entropy (nats)",
    "attn_query": "attention of the query on itself",
    "frac_sharp": "fraction of sharp sequences (mass ≥ threshold)",
    "separability": "separability max a_distinct − min a_other",
    "qk_fro": "‖W_QK‖_F",
    "ov_fro": "‖W_OV‖_F",
    "qk_erank": "effective rank of W_QK",
    "ov_erank": "effective rank of W_OV",
    "qk_gap": "score gap μ_QK",
    "ov_gap": "OV logit margin μ_OV",
    "qk_balance": "‖AᵀA − BBᵀ‖_F (QK)",
    "ov_balance": "‖AᵀA − BBᵀ‖_F (OV)",
}
"""Axis labels of the observables (observables.py; :func:`attndyn.plot`)."""
TIME_LABEL = "SGD step k"
"""Axis label of ``time``."""
Config = CircuitsConfig
THEORY = "attndyn.models.circuits.theory"
BENCHMARKS = (
    Benchmark(
        "circuits",
        "attndyn.models.circuits.bench:run_circuits_benchmark",
        "vmapped SGD seed-steps/s against the notebooks' PyTorch loop",
        (
            "seeds",
            "seed_steps_per_s",
            "steps_per_s_each_seed",
            "torch_seed_steps_per_s",
            "torch_steps_per_s_1thread",
            "speedup_vs_torch_reference",
            "speedup_vs_best_torch",
            "paper_preset_minutes",
        ),
    ),
    Benchmark(
        "circuits-fixed-attention",
        "attndyn.models.circuits.theory.bench:run_fixed_attention_benchmark",
        "Fig. 3 fixed-attention step (5 α stacked) against the notebooks' PyTorch loop",
        (
            "ov",
            "alphas",
            "ms_per_step",
            "ms_per_model_step",
            "torch_ms_per_model_step",
            "speedup_per_model_step",
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
    "CircuitsConfig",
    "build",
    "simulate",
    "test_set",
]


def test_set(cfg: CircuitsConfig):
    """The fixed test set: ``test_size`` sequences from PRNGKey(test_seed), identical for every
    seed and disjoint from the training streams' keys."""
    return data.sample_batch(jax.random.PRNGKey(cfg.test_seed), cfg, cfg.test_size)


def build(config: CircuitsConfig) -> Problem:
    """The circuits training problem as pure functions for the trainer."""
    dtype = jnp.dtype(config.dtype)
    scale = config.scale

    def init(key):
        params = model.init_params(key, config, dtype)
        tokens, labels = test_set(config)
        return params, {"tokens": tokens, "labels": labels}

    def sample(key):
        return data.sample_batch(key, config, config.batch)

    def loss(params, state, batch):
        return model.loss(params, batch[0], batch[1], scale)

    def observe(params, state):
        obs = circuit_observables(params, config)
        obs.update(attention_observables(params, state["tokens"], state["labels"], config))
        return obs

    qk_schedule = None
    if config.qk_schedule == "linear":
        qk_schedule = linear_ramp(config.qk_ramp_start, config.qk_ramp_end, config.total_steps)
    update = by_group(
        {
            "qk": optimizer(config.optimizer, config.lr_qk, qk_schedule),
            "ov": optimizer(config.optimizer, config.lr),
        }
    )
    return Problem(
        init=init, sample=sample, loss=loss, observe=observe, update=update, batch=config.batch
    )


def simulate(config: CircuitsConfig, seeds=None):
    """Train the toy by SGD for every seed.

    Args:
        config: the validated CircuitsConfig.
        seeds: explicit seeds; default ``config.seed … config.seed + config.seeds − 1``.

    Returns:
        Trajectory (xarray.Dataset), dims ``(seed, time)`` = (S, R), ``time`` = SGD steps: the
        circuit and attention observables of :mod:`attndyn.models.circuits.observables` (e.g.
        ``loss``, ``attn_distinct``, ``frac_sharp``, ``qk_sv1``, ``ov_gap``), each (S, R)
        float64; coordinates ``samples``, ``step``, ``diverged``/``diverged_step`` per seed.
    """
    return simulate_problem(lambda: build(config), config, seeds, family=NAME, overflow=OVERFLOW)


EXAMPLE = dict(param="CACO", t_max=20, seeds=2, records=3, test_size=32)
"""A small config that runs in about a second (contract tests, docs)."""

OVERFLOW = 1e10
"""|value| marking a seed as diverged (:mod:`attndyn.models.base`): losses are cross-entropies
(O(log vocabulary) at init), accuracies and attention masses lie in [0, 1], histograms in
[0, 100] %, and the weight norms ``qk_fro``, ``ov_fro`` stay O(10²) in every documented run."""
