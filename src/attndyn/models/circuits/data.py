"""The distinct-vs-common-token task of the authors' notebooks (docs/circuits.md, "Data").

API (used by the circuits family and by its theory experiments):

- :func:`class_distribution` ``(cfg) -> float64 [n_classes, vocab]``: p_c, the context-token
  distribution of each class (rows sum to 1);
- :func:`sample_batch` ``(key, cfg, batch) -> (tokens int32 [batch, seq_len-1], labels int32
  [batch])``: pure JAX, jit- and vmap-safe; the last input token is the class's query id;
- :func:`sample_classes` — the same with the classes returned too;
- :func:`relevant_mask` ``(tokens, cfg) -> bool``: the task-relevant (distinct) tokens,
  ids ≥ n_common (the notebooks' ``inputs > 9``); the query token is not relevant;
- :func:`uniform_distinct_mass` ``(cfg)``: expected distinct-token attention mass under uniform
  attention, (seq_len−2)·P(distinct)/(seq_len−1) (≈ 0.35 for the defaults).

Every class puts the same weights on its support (common_weight on each common id, the ramp on its
own distinct ids), so a context token is drawn as an index into one shared cumulative table of
n_common + n_distinct entries and mapped to a vocabulary id by the class: exact sampling from p_c.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def support_weights(cfg) -> np.ndarray:
    """Unnormalised weights of the n_common + n_distinct support entries (common first)."""
    ramp = np.linspace(cfg.distinct_min, cfg.distinct_max, cfg.n_distinct)
    return np.concatenate([np.full(cfg.n_common, cfg.common_weight), ramp])


def class_distribution(cfg) -> np.ndarray:
    """p_c over the vocabulary, shape [n_classes, vocab] (docs/circuits.md, "Data")."""
    w = support_weights(cfg)
    p = np.zeros((cfg.n_classes, cfg.vocab))
    for c in range(cfg.n_classes):
        p[c, : cfg.n_common] = w[: cfg.n_common]
        start = cfg.n_common + c * cfg.n_distinct
        p[c, start : start + cfg.n_distinct] = w[cfg.n_common :]
    return p / p.sum(axis=1, keepdims=True)


def distinct_probability(cfg) -> float:
    """P(a context token is distinct) = Σ ramp / (Σ ramp + n_common·common_weight)."""
    w = support_weights(cfg)
    return float(w[cfg.n_common :].sum() / w.sum())


def uniform_distinct_mass(cfg) -> float:
    """E[distinct attention mass] under uniform attention over the seq_len−1 inputs."""
    return (cfg.seq_len - 2) * distinct_probability(cfg) / (cfg.seq_len - 1)


def sample_classes(key: jax.Array, cfg, batch: int):
    """(tokens [batch, seq_len−1] int32, labels [batch] int32, classes [batch] int32)."""
    k_class, k_tok = jax.random.split(key)
    classes = jax.random.randint(k_class, (batch,), 0, cfg.n_classes, dtype=jnp.int32)
    w = support_weights(cfg)
    # searchsorted on the interior edges: index i has probability w_i / Σw
    edges = jnp.asarray(np.cumsum(w)[:-1] / w.sum(), jnp.float32)
    u = jax.random.uniform(k_tok, (batch, cfg.seq_len - 2), jnp.float32)
    idx = jnp.searchsorted(edges, u, side="right").astype(jnp.int32)
    distinct_id = cfg.n_common + classes[:, None] * cfg.n_distinct + (idx - cfg.n_common)
    context = jnp.where(idx < cfg.n_common, idx, distinct_id)
    query = (cfg.query_start + classes)[:, None]
    tokens = jnp.concatenate([context, query], axis=1).astype(jnp.int32)
    labels = (cfg.label_start + classes).astype(jnp.int32)
    return tokens, labels, classes


def sample_batch(key: jax.Array, cfg, batch: int) -> tuple[jax.Array, jax.Array]:
    """(tokens int32 [batch, seq_len−1], labels int32 [batch]): ``batch`` fresh sequences."""
    tokens, labels, _ = sample_classes(key, cfg, batch)
    return tokens, labels


def relevant_mask(tokens, cfg):
    """Task-relevant (distinct) positions: token id ≥ n_common (the code's ``inputs > 9``)."""
    return tokens >= cfg.n_common


def test_set(cfg):
    """The fixed test set: ``test_size`` sequences from PRNGKey(test_seed), identical for every
    seed and disjoint from the training streams' keys."""
    return sample_batch(jax.random.PRNGKey(cfg.test_seed), cfg, cfg.test_size)
