"""The Markov simulation's peak memory as a formula of its config (the ``memory_terms`` hook of
:mod:`attndyn.models.base`): the chain's law built on the host, then what
:func:`attndyn.models.markov.simulation.build` allocates per seed, times the seeds run at once
under ``vmap`` (the d×d transition matrix is part of every seed's state)."""

from __future__ import annotations

from attndyn.models.markov.config import MarkovConfig

COPIES = 5
"""Live copies of the weights in a step: in and out of the loop, gradients, updates, the kept
(finite) weights."""

SLOTS = {"gd": 0, "adam": 2, "flow": 8}
"""Extra copies per weight: Adam's moments; the flow's Runge–Kutta stages and error estimate."""


def memory_terms(config: MarkovConfig, seeds: int) -> dict[str, float]:
    """{term: bytes} for ``seeds`` seeds (module doc)."""
    c, w = config, 8 if config.dtype == "float64" else 4
    if c.data == "text":
        d = c.vocab
    else:
        d = len(c.pi) if c.pi is not None else c.d
    m, mk, s = c.m, c.key_width, c.seq_len
    n_weights = 2 * d * m + 2 * m * mk + (m * m if c.value else 0)
    terms: dict[str, float] = {
        "d² transition matrix on the host (transition)": (
            (5 if c.transition == "metropolis" else 3) * d * d * 8
        ),
        "seeds·d² transition matrix and logits (population)": seeds * 6 * d * d * w,
        "seeds·d·m weights (m_k, value, optimizer) with gradients": (
            seeds * (COPIES + SLOTS[c.optimizer]) * n_weights * w
        ),
    }
    if c.data != "population":
        per_sequence = (s + 1) * (m + 2 * mk + d + s)
        terms["seeds·batch·seq_len·(m + d) activations"] = seeds * 3 * c.batch * per_sequence * w
    if c.data == "fixed":
        terms["seeds·n_sequences·seq_len sequences"] = seeds * c.n_sequences * (s + 1) * 4
    if c.data == "text":
        terms["max_tokens corpus"] = 2 * c.max_tokens * 8
    return terms
