"""The single-query attention model (qkov.md §2): forward vs the one-hot transcription,
gradients vs finite differences (float64), initialisations, observables and training."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.models.circuits import model
from attndyn.models.circuits.config import MATRICES, PARAMS, CircuitsConfig
from attndyn.models.circuits.data import sample_batch
from attndyn.models.circuits.observables import (
    attention_observables,
    circuit_observables,
    effective_rank,
    factored_svals,
)


def _random_params(key, cfg, dtype=jnp.float32, scale=0.5):
    """Every matrix random (so no structure hides a transposition mistake)."""
    params = model.init_params(key, cfg, dtype)
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.fold_in(key, 1), len(leaves))
    new = [scale * jax.random.normal(k, x.shape, dtype) for k, x in zip(keys, leaves, strict=True)]
    return jax.tree.unflatten(tree, new)


@pytest.mark.parametrize("param", PARAMS)
def test_forward_matches_onehot_matmuls(param):
    cfg = CircuitsConfig(param=param, seq_len=16)
    params = _random_params(jax.random.PRNGKey(0), cfg)
    tokens, _ = sample_batch(jax.random.PRNGKey(1), cfg, 6)
    a1, l1 = model.forward(params, tokens, cfg.scale)
    a2, l2 = model.forward_onehot(params, tokens, cfg.scale)
    np.testing.assert_allclose(a1, a2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(l1, l2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(a1).sum(1), 1.0, rtol=1e-6)


def test_onehot_reference_against_numpy_by_hand():
    """The reference itself, for FAFO, against an explicit loop over positions (nn.Linear
    convention y = W x)."""
    cfg = CircuitsConfig(param="FAFO", seq_len=6)
    params = _random_params(jax.random.PRNGKey(2), cfg)
    tokens, _ = sample_batch(jax.random.PRNGKey(3), cfg, 2)
    wq, wk = (np.asarray(params["qk"][n], np.float64) for n in ("Wq", "Wk"))
    wv, wp = (np.asarray(params["ov"][n], np.float64) for n in ("Wv", "Wp"))
    eye = np.eye(50)
    for b, seq in enumerate(np.asarray(tokens)):
        q = wq @ eye[seq[-1]]
        s = np.array([q @ (wk @ eye[t]) / np.sqrt(50) for t in seq])
        a = np.exp(s - s.max())
        a /= a.sum()
        logits = wp @ sum(a[j] * (wv @ eye[t]) for j, t in enumerate(seq))
        _, ref = model.forward_onehot(params, tokens, cfg.scale)
        np.testing.assert_allclose(np.asarray(ref)[b], logits, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("param", PARAMS)
def test_gradient_matches_finite_differences(param):
    cfg = CircuitsConfig(param=param, seq_len=10)
    with jax.enable_x64(True):
        params = _random_params(jax.random.PRNGKey(4), cfg, jnp.float64)
        tokens, labels = sample_batch(jax.random.PRNGKey(5), cfg, 5)

        def f(p):
            return model.loss(p, tokens, labels, cfg.scale)

        grads = jax.grad(f)(params)
        rng = np.random.default_rng(0)
        h = 1e-6
        for group in ("qk", "ov"):
            for name, w in params[group].items():
                # directional derivative along a random direction, plus 3 single entries
                # that matter (rows of the query/label ids)
                d = rng.standard_normal(w.shape)
                up = jax.tree.map(lambda x: x, params)
                dn = jax.tree.map(lambda x: x, params)
                up[group][name] = w + h * d
                dn[group][name] = w - h * d
                fd = (f(up) - f(dn)) / (2 * h)
                an = float(jnp.sum(grads[group][name] * d))
                assert fd == pytest.approx(an, rel=1e-6, abs=1e-9), (group, name)
                for i, j in ((int(tokens[0, -1]), int(tokens[0, 0])), (int(labels[1]), 12)):
                    e = np.zeros(w.shape)
                    e[i, j] = 1.0
                    up[group][name] = w + h * e
                    dn[group][name] = w - h * e
                    fd = (f(up) - f(dn)) / (2 * h)
                    assert fd == pytest.approx(float(grads[group][name][i, j]), abs=1e-8)
                up[group][name] = dn[group][name] = w


def test_initialisations_follow_the_paper_defaults():
    for param in PARAMS:
        cfg = CircuitsConfig(param=param)
        params = model.init_params(jax.random.PRNGKey(0), cfg)
        names = sorted(n for g in params.values() for n in g)
        assert names == sorted(model.NAMES[m] for m in MATRICES[param])
    fafo = model.init_params(jax.random.PRNGKey(0), CircuitsConfig(param="FAFO"))
    np.testing.assert_allclose(fafo["ov"]["Wv"], 1e-6 * np.eye(50))
    wq = np.asarray(fafo["qk"]["Wq"])
    bound = 1 / np.sqrt(50)
    assert np.abs(wq).max() <= bound and np.abs(wq).max() > 0.9 * bound  # U(-1/√50, 1/√50)
    assert abs(wq.std() - bound / np.sqrt(3)) < 0.01
    caco = model.init_params(jax.random.PRNGKey(0), CircuitsConfig(param="CACO", init_kq="eye"))
    np.testing.assert_allclose(caco["qk"]["Wkq"], 1e-6 * np.eye(50))


def test_factored_svals_match_the_product():
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    a = jax.random.normal(k1, (50, 7))
    b = jax.random.normal(k2, (7, 40))
    np.testing.assert_allclose(
        factored_svals(a, b), np.linalg.svd(np.asarray(a @ b), compute_uv=False)[:7], rtol=1e-4
    )
    assert float(effective_rank(jnp.array([3.0, 0.0, 0.0]))) == pytest.approx(1.0)
    assert float(effective_rank(jnp.ones(4))) == pytest.approx(4.0)


def test_attention_observables_uniform_attention():
    """With W_QK = 0 attention is uniform: mass = share of distinct tokens, separability 0,
    entropy log T; W_OV = 0 gives loss log V and probability 1/V."""
    cfg = CircuitsConfig(param="CACO", seq_len=20)
    params = {"qk": {"Wkq": jnp.zeros((50, 50))}, "ov": {"Wp": jnp.zeros((50, 50))}}
    tokens, labels = sample_batch(jax.random.PRNGKey(0), cfg, 300)
    obs = attention_observables(params, tokens, labels, cfg)
    share = np.mean(np.asarray(tokens) >= 10, axis=1)
    assert float(obs["attn_distinct"]) == pytest.approx(share.mean(), rel=1e-5)
    assert float(obs["separability"]) == pytest.approx(0.0, abs=1e-6)
    assert float(obs["attn_entropy"]) == pytest.approx(np.log(19), rel=1e-5)
    assert float(obs["loss"]) == pytest.approx(np.log(50), rel=1e-6)
    hist = np.array([float(obs[f"hist_a{i}_p{j}"]) for i in range(5) for j in range(5)])
    assert hist.sum() == pytest.approx(100.0)
    # every probability is 1/50 (< 0.2) so only column p0 is filled, rows by the mass share
    expect = [100 * np.mean(np.minimum(np.floor(share * 5), 4) == i) for i in range(5)]
    np.testing.assert_allclose(hist.reshape(5, 5)[:, 0], expect, atol=1e-3)


def test_balance_of_a_balanced_and_an_unbalanced_circuit():
    cfg = CircuitsConfig(param="FAFO")
    q = jax.random.normal(jax.random.PRNGKey(0), (50, 50))
    o = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(1), (50, 50)))[0]
    params = {"qk": {"Wq": q, "Wk": o @ q}, "ov": {"Wp": 2 * jnp.eye(50), "Wv": jnp.eye(50)}}
    obs = circuit_observables(params, cfg)
    # W_q W_qᵀ − W_k W_kᵀ = q qᵀ − o q qᵀ oᵀ ≠ 0 in general; use the OV pair for exact numbers
    assert float(obs["ov_balance"]) == pytest.approx(np.sqrt(50) * 3.0, rel=1e-5)
    assert float(obs["ov_balance_rel"]) == pytest.approx(0.75, rel=1e-5)
    bal = {"qk": {"Wq": q, "Wk": q}, "ov": {"Wp": o, "Wv": o.T}}
    obs = circuit_observables(bal, cfg)
    assert float(obs["qk_balance_rel"]) < 1e-5 and float(obs["ov_balance_rel"]) < 1e-5


def test_gaps_read_the_relevant_blocks():
    """qk_gap = scale·(distinct − common score of each class's query); ov_gap = the label's OV
    entry on its own distinct tokens minus the other labels' entries there."""
    cfg = CircuitsConfig(param="CACO")
    kq = np.zeros((50, 50))
    wp = np.zeros((50, 50))
    for c in range(4):
        distinct = slice(10 + 10 * c, 20 + 10 * c)
        kq[5 + c, distinct] = 3.0 * np.sqrt(50)  # scale = 1/√50
        kq[5 + c, :10] = 1.0 * np.sqrt(50)
        wp[1 + c, distinct] = 2.0
        for other in range(4):
            if other != c:
                wp[1 + other, distinct] = -1.0
    obs = circuit_observables({"qk": {"Wkq": jnp.asarray(kq)}, "ov": {"Wp": jnp.asarray(wp)}}, cfg)
    assert float(obs["qk_gap"]) == pytest.approx(2.0, rel=1e-6)
    assert float(obs["ov_gap"]) == pytest.approx(3.0, rel=1e-6)
