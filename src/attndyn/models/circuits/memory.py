"""The circuits simulation's peak memory as a formula of its config (the ``memory_terms`` hook
of :mod:`attndyn.models.base`): what :func:`attndyn.models.circuits.simulation.build` allocates
per seed, times the seeds run at once under ``vmap``."""

from __future__ import annotations

from attndyn.models.circuits.config import MATRICES, CircuitsConfig

COPIES = 5
"""Live copies of the parameters in a step: in and out of the loop, gradients, updates, the kept
(finite) parameters."""

SLOTS = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2, "rmsprop": 1}
"""Optimiser state per parameter."""


def memory_terms(config: CircuitsConfig, seeds: int) -> dict[str, float]:
    """{term: bytes} for ``seeds`` seeds (module doc)."""
    w = 8 if config.dtype == "float64" else 4
    V, T, B, n_test = config.vocab, config.seq_len, config.batch, config.test_size
    n_params = len(MATRICES[config.param]) * V * V
    terms = {
        "seeds·vocab² circuit matrices (param, optimizer) with gradients": (
            (COPIES + SLOTS[config.optimizer]) * n_params * w
        ),
        "seeds·vocab² observation (products, SVDs)": 6 * V * V * w,
        "seeds·batch·seq_len sampled tokens": 6 * B * T * 4,
        "seeds·batch·(seq_len + vocab) activations": 3 * B * (2 * T + 3 * V) * w,
        "seeds·test_size·(seq_len + vocab) test set": n_test * T * 4 + 3 * n_test * (T + V) * w,
    }
    return {name: seeds * b for name, b in terms.items()}
