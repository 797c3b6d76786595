"""The Langevin simulation's peak memory as a formula of its config (the ``memory_terms`` hook
of :mod:`attndyn.models.base`): what :func:`attndyn.models.langevin.simulation.build` allocates
per chain, times the chains (seeds) run at once under ``vmap``. The data set (the frozen part)
is held by every chain."""

from __future__ import annotations

from attndyn.models.langevin.config import LangevinConfig
from attndyn.models.langevin.model import n_params

COPIES = 8
"""Live copies of θ: in and out of the loop, gradient, noise, update, the kept (finite) θ, and the
observation's gradient and θ."""


def memory_terms(config: LangevinConfig, seeds: int) -> dict[str, float]:
    """{term: bytes} for ``seeds`` chains (module doc)."""
    c, w = config, 8 if config.dtype == "float64" else 4
    terms: dict[str, float] = {}
    if c.model == "attention":
        dv = c.d_v if c.output else c.d_out
        per_sample = c.heads * (c.tokens * c.tokens + c.tokens * (2 * c.d_k + dv))
        terms["seeds·n·tokens·d data set"] = c.n * c.tokens * (c.d + c.d_out) * w
        terms["seeds·n·heads·tokens² activations"] = 3 * c.n * per_sample * w
        terms["seeds·heads·d·(d_k, d_v) parameters"] = COPIES * n_params(c) * w
    elif c.model == "lora":
        terms["seeds·n·d data set"] = c.n * (c.d + 1) * w
        terms["seeds·width·d frozen net"] = c.width * (c.d + 1) * w
        terms["seeds·n·width activations"] = 3 * c.n * (c.width + c.rank) * w
        terms["seeds·rank·(width + d) adapters"] = COPIES * n_params(c) * w
    else:
        terms["seeds·dim parameters"] = COPIES * c.dim * w
    if c.dynamics in ("sme1", "sme2"):
        terms["seeds·n step noise"] = 2 * c.n * w
    return {name: seeds * b for name, b in terms.items()}
