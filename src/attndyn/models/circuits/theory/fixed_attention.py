"""Fixed-attention sensitivity (Fig. 3 of arXiv 2608.06776; docs/circuits-theory.md §3).

The attention of the single-query layer is frozen and only the OV circuit is trained, to
measure how much "pressure" the current OV state puts on attention:

- attention weight α/s₁ on each of the s₁ positions holding a task-relevant (distinct) token
  (id ≥ n_common, the notebooks' ``x > 9``) and (1 − α)/s₂ on each of the s₂ other positions;
- context c(α) = Σ_j a_j e_{x_j} = α c_d + (1 − α) c_c, with c_d, c_c the mean one-hot vectors of
  the relevant and the other positions (one-hot inputs, no positional encoding);
- logits: **collapsed** OV W_P c + b_P (``nn.Linear(50, 50)`` with bias), **factorised** OV
  W_P W_V c (two ``nn.Linear(50, 50, bias=False)``); PyTorch's default init, U(±1/√V) for
  weights and bias; cross-entropy against the label; plain SGD, lr 1e-2, a fresh batch each step;
- recorded on a fixed evaluation set: L^t(α), L^t(α + δ) (the same OV parameters, attention
  moved to α + δ) and the sensitivity (L^t(α) − L^t(α + δ))/δ, δ = 0.005. For α + δ > 1 the
  sensitivity is set to 0 (the α = 1 curve is 0 by construction in the Fig. 3 notebooks).

Reading of the notebooks (FIg-3-Code/Fig-3_Fixed-Self-Attention-Experiments_{Collapsed,
Factorised}.ipynb, read for this module), recorded as config fields:

- ``query_in_common`` (default True): the "other" group is every input position with id ≤ 9,
  so it includes the last input position. In the Fig-3 notebooks the sequence ends [label,
  query] and the input is everything but the last token, so the last input is the label id
  1 + c and the target the query id 5 + c; with A's generator (the Fig-2 order) the last input is
  the query id 5 + c and the target the label 1 + c. Both are a class-identifying token with id
  ≤ 9 in the other group, so the two orders are the same problem up to renaming ids; the
  default reproduces the notebook. ``False`` drops the last position from both groups (the
  model then sees the class only through the distinct tokens).
- ``batch`` (default 128): the notebooks' ``generate_data(32, 64)`` returns 32 sequences of each
  of the 4 classes, i.e. 128 sequences per step with exactly balanced classes; here the classes
  of the 128 sequences are i.i.d. uniform (A's ``sample_batch``).
- the notebooks evaluate each L^t on 1000 fresh batches (128 000 sequences); here a fixed
  evaluation set of ``eval_size`` sequences (default 32 768) is used for every record and both
  α and α + δ, so the finite difference has no sampling noise between its two terms.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from pydantic import Field, field_validator

from attndyn.core.config import SimulationConfig
from attndyn.core.simulate import simulate_problem
from attndyn.core.trainer import Problem
from attndyn.core.updates import optimizer

__all__ = [
    "FixedAttentionConfig",
    "build",
    "simulate",
    "stored_run",
    "contexts",
    "observable_name",
    "ov_matrix",
    "RUN_FAMILY",
]

RUN_FAMILY = "circuits:fixed-attention"
"""Name hashed into the run id of a stored fixed-attention run."""


class FixedAttentionConfig(SimulationConfig):
    """One fixed-attention run: α, the OV parameterisation and SGD settings
    (docs/circuits-theory.md §3).

    The time axis is the SGD step (``t_max`` steps; Fig. 3: 500 epochs × 250 steps).
    """

    alphas: list[float] = Field(
        [0.2, 0.4, 0.6, 0.8, 1.0],
        min_length=1,
        description="attention masses on the distinct tokens (one OV model each)",
    )
    ov: Literal["collapsed", "factorised"] = Field(
        "collapsed", description="OV circuit: W_P (+ bias) or W_P W_V"
    )
    bias: bool | None = Field(
        None, description="bias on W_P; None = the notebooks' (collapsed yes, factorised no)"
    )
    query_in_common: bool = Field(
        True, description="the last input position shares the 1 − α mass (notebook reading)"
    )
    lr: float = Field(1e-2, gt=0, description="SGD step size")
    batch: int = Field(128, ge=1, le=65_536, description="sequences per step (notebook: 4×32)")
    seq_len: int = Field(64, ge=3, le=8192, description="sequence length incl. query and label")
    t_max: float = Field(125_000, gt=0, description="SGD steps (500 epochs × 250)")
    records: int = Field(101, ge=2, le=100_000, description="number of record points")
    grid: Literal["log", "linear"] = Field("linear", description="spacing of the record points")
    delta: float = Field(0.005, gt=0, lt=1, description="δ of the finite-difference sensitivity")
    eval_size: int = Field(32_768, ge=1, le=1_000_000, description="fixed evaluation sequences")
    eval_seed: int = Field(0, ge=0, description="key of the evaluation set (same for all seeds)")
    seeds: int = Field(1, ge=1, le=4096, description="number of seeds, run in parallel")
    seed: int = Field(1234, ge=0, description="first seed (the notebooks use 1234)")

    @field_validator("alphas")
    @classmethod
    def _alphas_in_unit_interval(cls, v: list[float]) -> list[float]:
        if any(not 0.0 <= a <= 1.0 for a in v):
            raise ValueError("every alpha must be in [0, 1]")
        return v

    @property
    def total_steps(self) -> int:
        return max(1, int(np.ceil(self.t_max)))

    @property
    def has_bias(self) -> bool:
        return (self.ov == "collapsed") if self.bias is None else self.bias

    def data_config(self):
        """A circuits family config carrying the task's sizes for ``data.sample_batch``."""
        from attndyn.models.circuits.config import CircuitsConfig

        return CircuitsConfig(seq_len=self.seq_len, param="CACO", batch=self.batch)


def contexts(tokens, dcfg, query_in_common: bool = True):
    """(c_d, c_c, has_distinct): mean one-hot vectors of the relevant positions (id ≥ n_common)
    and of the others, [batch, vocab] each, so that c(α) = α c_d + (1 − α) c_c."""
    from attndyn.models.circuits.data import relevant_mask

    rel = relevant_mask(tokens, dcfg)
    other = ~rel
    if not query_in_common:
        other = other.at[:, -1].set(False)
    onehot = jax.nn.one_hot(tokens, dcfg.vocab, dtype=jnp.float32)
    s1 = rel.sum(axis=1, keepdims=True)
    s2 = other.sum(axis=1, keepdims=True)
    c_d = jnp.einsum("btv,bt->bv", onehot, rel.astype(jnp.float32)) / jnp.maximum(s1, 1)
    c_c = jnp.einsum("btv,bt->bv", onehot, other.astype(jnp.float32)) / jnp.maximum(s2, 1)
    return c_d, c_c, s1[:, 0] > 0


def _context(c_d, c_c, has_d, a):
    """α c_d + (1 − α) c_c for each α in ``a`` ([K] → [K, batch, vocab]); a sequence without
    distinct tokens (probability 0.645^62 ≈ 2e-12 at the defaults) attends to the others only."""
    a = a[:, None, None]
    return jnp.where(has_d[None, :, None], a * c_d[None] + (1.0 - a) * c_c[None], c_c[None])


def ov_matrix(params):
    """W_OV per model, [K, vocab, vocab]: W_P (collapsed) or W_P W_V (factorised)."""
    if "W_V" in params:
        return params["W_P"] @ params["W_V"]
    return params["W_P"]


def _logits(params, c):
    """[K, batch, vocab] logits of the K stacked models on contexts c [K, batch, vocab]."""
    h = jnp.einsum("kbv,kov->kbo", c, ov_matrix(params))
    if "b_P" in params:
        h = h + params["b_P"][:, None, :]
    return h


def _ce(logits, labels):
    """Cross-entropy per model and sequence, [K, batch]."""
    picked = jnp.take_along_axis(logits, labels[None, :, None], axis=-1)[..., 0]
    return jax.nn.logsumexp(logits, axis=-1) - picked


def observable_name(name: str, alpha: float) -> str:
    """Name of observable ``name`` of the model trained at ``alpha``, e.g. ``loss_alpha0.2``."""
    return f"{name}_alpha{alpha:g}"


def build(config: FixedAttentionConfig) -> Problem:
    """The fixed-attention run as a core :class:`~attndyn.core.trainer.Problem`.

    The models of all α are stacked on a leading axis and trained side by side on the same
    batches (the batch loss is the sum over models of each model's mean cross-entropy, so each
    model gets exactly its own gradient); each model starts from the same initial matrices, as
    the notebooks reset the seed before every α.
    """
    from attndyn.models.circuits.data import sample_batch

    dcfg = config.data_config()
    V, K = dcfg.vocab, len(config.alphas)
    bound = 1.0 / np.sqrt(V)  # nn.Linear default: U(−1/√fan_in, 1/√fan_in), weight and bias
    dtype = jnp.float64 if config.dtype == "float64" else jnp.float32
    a = jnp.asarray(config.alphas, dtype)
    a_d = a + config.delta
    eval_tokens, eval_labels = sample_batch(
        jax.random.PRNGKey(config.eval_seed), dcfg, config.eval_size
    )
    ev_d, ev_c, ev_has = contexts(eval_tokens, dcfg, config.query_in_common)
    ev_d, ev_c = ev_d.astype(dtype), ev_c.astype(dtype)

    def init(key):
        k1, k2, k3 = jax.random.split(key, 3)

        def u(k, shape):
            one = jax.random.uniform(k, shape, dtype, -bound, bound)
            return jnp.broadcast_to(one, (K, *shape))

        params = {"W_P": u(k1, (V, V))}
        if config.ov == "factorised":
            params["W_V"] = u(k2, (V, V))
        if config.has_bias:
            params["b_P"] = u(k3, (V,))
        return params, {}

    def sample(key):
        tokens, labels = sample_batch(key, dcfg, config.batch)
        c_d, c_c, has_d = contexts(tokens, dcfg, config.query_in_common)
        return _context(c_d.astype(dtype), c_c.astype(dtype), has_d, a), labels

    def loss(params, state, batch):
        c, labels = batch
        return jnp.sum(jnp.mean(_ce(_logits(params, c), labels), axis=1))

    def observe(params, state):
        logits = _logits(params, _context(ev_d, ev_c, ev_has, a))
        la = jnp.mean(_ce(logits, eval_labels), axis=1)
        ld = jnp.mean(_ce(_logits(params, _context(ev_d, ev_c, ev_has, a_d)), eval_labels), 1)
        sens = jnp.where(a_d <= 1.0, (la - ld) / config.delta, 0.0)
        acc = jnp.mean(jnp.argmax(logits, axis=-1) == eval_labels[None], axis=1)
        norm = jnp.sqrt(jnp.sum(ov_matrix(params) ** 2, axis=(1, 2)))
        out = {}
        for i, al in enumerate(config.alphas):
            out[observable_name("loss", al)] = la[i]
            out[observable_name("loss_delta", al)] = ld[i]
            out[observable_name("sensitivity", al)] = sens[i]
            out[observable_name("accuracy", al)] = acc[i]
            out[observable_name("ov_norm", al)] = norm[i]
        return out

    return Problem(
        init=init,
        sample=sample,
        loss=loss,
        observe=observe,
        update=optimizer("sgd", config.lr),
        batch=config.batch,
    )


def simulate(config: FixedAttentionConfig, seeds=None) -> xr.Dataset:
    """Train every seed; Trajectory (seed × time, time = SGD step) with, for each α in
    ``alphas`` (names from :func:`observable_name`, e.g. ``loss_alpha0.2``): loss = L^t(α),
    loss_delta = L^t(α + δ), sensitivity, accuracy (at α) and ov_norm = ‖W_OV‖_F."""
    return simulate_problem(
        lambda: build(config),
        config,
        seeds,
        family="circuits",
        config_extra={"model": "fixed-attention"},
    )


def stored_run(config: FixedAttentionConfig, ctx) -> xr.Dataset:
    """:func:`simulate` through an experiment's RunContext store (reused unless forced)."""
    return ctx.compute(RUN_FAMILY, config, lambda: simulate(config))
