"""The query simulation's peak memory as a formula of its config (the ``memory_terms`` hook of
:mod:`attndyn.models.base`): what :func:`attndyn.models.query.simulation.build` allocates per
sample of a step, times the batch and the seeds run at once under ``vmap``. The tokens are held
whole or a chunk at a time (:func:`attndyn.models.query.simulation.token_spec` decides, as the
run does). Measured at d = 4096 with 10⁵ nuisance tokens (chunked): estimate 2.4 GB, peak
resident memory 0.58 GB above the process's own: XLA fuses part of the token generation into
the reductions, so this over-estimates by up to about 4×."""

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
    # the tokens and their random bits; the chunked route keeps only a chunk's scores
    terms[f"seeds·batch·(n_informative + n_nuisance)·d tokens{what}"] = 2 * B * held * d * w
    if chunk is None:
        terms["seeds·batch·(n_informative + n_nuisance) token scores"] = 4 * B * n * w
    if c.eval_samples > 0:
        terms[f"seeds·(n_informative + n_nuisance)·d evaluation tokens{what}"] = 2 * held * d * w
    return {name: seeds * b for name, b in terms.items()}
