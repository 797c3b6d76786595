"""Single-query self-attention on one-hot tokens (the notebooks' Net_p1..Net_p4; docs/circuits.md).

nn.Linear convention y = W x with W of shape (out, in) and d_model = vocab; a one-hot input e_t
makes W x = W[:, t], so the model is written with gathers instead of one-hot matmuls:

    s_j   = scale · W_QK[x_T, x_j],      W_QK = W_qᵀ W_k (FA) or W_KQ (CA)
    a     = softmax_j(s),                 j = 1..T over every input position (the query too)
    logit = W_OV h,  h = Σ_j a_j e_{x_j}, W_OV = W_P W_V (FO) or W_P (CO)
    loss  = cross-entropy(logit, label)   (batch mean)

which is x_Tᵀ W_qᵀ W_k x_j/√d and W_P Σ_j a_j W_V x_j of the notebooks exactly (the CA query is the
raw one-hot x_T). :func:`forward_onehot` is the direct one-hot-matmul transcription used to test it.

Parameters: two top-level groups so that the trainer's per-group step sizes give η_QK and η_OV:
``{"qk": {"Wq", "Wk"} | {"Wkq"}, "ov": {"Wv", "Wp"} | {"Wp"}}``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.models.circuits.config import MATRICES

NAMES = {"q": "Wq", "k": "Wk", "kq": "Wkq", "v": "Wv", "p": "Wp"}
GROUP = {"q": "qk", "k": "qk", "kq": "qk", "v": "ov", "p": "ov"}


def init_params(key: jax.Array, cfg, dtype=jnp.float32) -> dict:
    """Each V×V matrix is ``eye_scale·I`` ('eye') or PyTorch's nn.Linear default ('default':
    kaiming_uniform(a=√5), i.e. U(−1/√fan_in, 1/√fan_in) with fan_in = vocab)."""
    v = cfg.vocab
    bound = 1.0 / np.sqrt(v)
    params: dict = {"qk": {}, "ov": {}}
    keys = jax.random.split(key, len(MATRICES[cfg.param]))
    for k, m in zip(keys, MATRICES[cfg.param], strict=True):
        if cfg.init_of(m) == "eye":
            w = cfg.eye_scale * jnp.eye(v, dtype=dtype)
        else:
            w = jax.random.uniform(k, (v, v), dtype, -bound, bound)
        params[GROUP[m]][NAMES[m]] = w
    return params


def qk_matrix(params: dict) -> jax.Array:
    """W_QK (rows: query id, columns: key id): W_qᵀ W_k or W_KQ."""
    qk = params["qk"]
    return qk["Wkq"] if "Wkq" in qk else qk["Wq"].T @ qk["Wk"]


def ov_matrix(params: dict) -> jax.Array:
    """W_OV (rows: output id, columns: input id): W_P W_V or W_P."""
    ov = params["ov"]
    return ov["Wp"] @ ov["Wv"] if "Wv" in ov else ov["Wp"]


def forward(params: dict, tokens: jax.Array, scale: float):
    """(attention [B, T], logits [B, V]) for int tokens [B, T]; the last token is the query."""
    w_qk = qk_matrix(params)
    rows = w_qk[tokens[:, -1]]  # [B, V]: scores of the query against every key id
    scores = scale * jnp.take_along_axis(rows, tokens, axis=1)
    attn = jax.nn.softmax(scores, axis=-1)
    b = tokens.shape[0]
    hist = jnp.zeros((b, w_qk.shape[1]), attn.dtype).at[jnp.arange(b)[:, None], tokens].add(attn)
    logits = hist @ ov_matrix(params).T
    return attn, logits


def forward_onehot(params: dict, tokens: jax.Array, scale: float):
    """The same model as one-hot matmuls through each nn.Linear, as the notebooks write it."""
    v = next(iter(params["ov"].values())).shape[1]
    x = jax.nn.one_hot(tokens, v, dtype=next(iter(params["ov"].values())).dtype)  # [B, T, V]
    qk, ov = params["qk"], params["ov"]
    if "Wkq" in qk:
        q, k = x[:, -1], x @ qk["Wkq"].T
    else:
        q, k = x[:, -1] @ qk["Wq"].T, x @ qk["Wk"].T
    attn = jax.nn.softmax(scale * jnp.einsum("bd,btd->bt", q, k), axis=-1)
    values = x @ ov["Wv"].T if "Wv" in ov else x
    context = jnp.einsum("bt,btd->bd", attn, values)
    return attn, context @ ov["Wp"].T


def cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Per-sequence −log softmax(logits)[label]."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]


def loss(params: dict, tokens: jax.Array, labels: jax.Array, scale: float) -> jax.Array:
    """Batch-mean cross-entropy (torch.nn.CrossEntropyLoss)."""
    _, logits = forward(params, tokens, scale)
    return jnp.mean(cross_entropy(logits, labels))
