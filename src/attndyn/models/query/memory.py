"""The query simulation's peak memory as a formula of its config (the ``memory_terms`` hook of
:mod:`attndyn.models.base`): what :func:`attndyn.models.query.simulation.build` allocates per
sample of a step, times the batch and the seeds run at once under ``vmap``. The tokens are held
whole or a chunk at a time (:func:`attndyn.models.query.simulation.token_spec` decides, as the
run does); the per-token scores are held whole either way."""

from __future__ import annotations

from attndyn.models.query.config import QueryConfig
from attndyn.models.query.simulation import token_spec


def memory_terms(config: QueryConfig, seeds: int) -> dict[str, float]:
    """{term: bytes} for ``seeds`` seeds (module doc)."""
    c, w = config, 8 if config.dtype == "float64" else 4
    n, d, B = c.n_tokens, c.d, c.batch
    terms = {"seeds·d query with gradients": 8 * d * w}
    if c.sampler == "reduced":
        terms["seeds·batch·(n_informative + n_nuisance) reduced scalars"] = 4 * B * n * w
        return {name: seeds * b for name, b in terms.items()}
    chunk = token_spec(c, seeds).chunk_tokens
    held = n if chunk is None else min(chunk, n)
    what = "" if chunk is None else " (chunk)"
    terms[f"seeds·batch·(n_informative + n_nuisance)·d tokens{what}"] = 3 * B * held * d * w
    terms["seeds·batch·(n_informative + n_nuisance) token scores"] = 4 * B * n * w
    if c.eval_samples > 0:
        terms[f"seeds·(n_informative + n_nuisance)·d evaluation tokens{what}"] = 2 * held * d * w
    return {name: seeds * b for name, b in terms.items()}
