"""The fixed-attention model of Fig. 3 (arXiv 2608.06776; qkov.md §6) in
attndyn.models.circuits.theory.fixed_attention.

References are independent of the code under test: the notebooks' attention formula
``attn = α·mask/s1 + (1 − α)·(1 − mask)/s2`` followed by ``attn @ one_hot`` written in NumPy, a
NumPy forward pass and cross-entropy, central finite differences of it, and single-α runs
against the α-stacked run.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.core.config import validate
from attndyn.errors import InputError
from attndyn.models.circuits.data import sample_batch
from attndyn.models.circuits.theory.fixed_attention import (
    FixedAttentionConfig,
    build,
    contexts,
    observable_name,
    simulate,
)


def _cfg(**kw) -> FixedAttentionConfig:
    base = dict(t_max=40, records=3, eval_size=256, batch=16, seq_len=16)
    return validate(FixedAttentionConfig, {**base, **kw})


def _np_context(tokens: np.ndarray, alpha: float, vocab: int, query_in_common: bool):
    """The notebooks' forward (Fig-3 ``Net_p1_fixed_attn``): attention α/s1 on ids > 9 and
    (1 − α)/s2 on the others, context = attn @ one_hot."""
    index = tokens > 9
    other = ~index
    if not query_in_common:
        other[:, -1] = False
    s1 = index.sum(1, keepdims=True)
    s2 = other.sum(1, keepdims=True)
    attn = alpha * index / s1 + (1 - alpha) * other / s2
    onehot = np.eye(vocab)[tokens]
    return np.einsum("bt,btv->bv", attn, onehot)


def _np_loss(c, W_P, W_V, b, labels):
    logits = c @ (W_P if W_V is None else W_P @ W_V).T + (0 if b is None else b)
    m = logits.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(1))
    return np.mean(lse - logits[np.arange(len(labels)), labels])


@pytest.mark.parametrize("query_in_common", [True, False])
def test_contexts_match_notebook_attention(query_in_common):
    cfg = _cfg(query_in_common=query_in_common)
    dcfg = cfg.data_config()
    tokens, _ = sample_batch(jax.random.PRNGKey(3), dcfg, 64)
    c_d, c_c, has_d = contexts(tokens, dcfg, query_in_common)
    assert bool(jnp.all(has_d))
    for alpha in (0.0, 0.2, 0.7, 1.0):
        ref = _np_context(np.asarray(tokens), alpha, dcfg.vocab, query_in_common)
        ours = alpha * np.asarray(c_d) + (1 - alpha) * np.asarray(c_c)
        np.testing.assert_allclose(ours, ref, atol=1e-6)
        np.testing.assert_allclose(ref.sum(1), 1.0, atol=1e-6)
    # the query position (id 5..8, also a common id) counts in the "other" group only under
    # query_in_common: its count there is the context count plus one
    toks = np.asarray(tokens)
    q = toks[:, -1]
    other = toks[:, :-1] <= 9
    s2 = other.sum(1) + (1 if query_in_common else 0)
    count_q = (toks[:, :-1] == q[:, None]).sum(1) + (1 if query_in_common else 0)
    np.testing.assert_allclose(np.asarray(c_c)[np.arange(len(q)), q], count_q / s2, atol=1e-6)


@pytest.mark.parametrize(  # collapsed: 10 CPU s
    "ov", [pytest.param("collapsed", marks=pytest.mark.slow), "factorised"]
)
def test_forward_init_and_gradient(ov):
    """Batch loss equals a NumPy forward; default init U(±1/√50), bias only for collapsed;
    the autodiff gradient matches central finite differences (float64, h = 1e-6)."""
    cfg = _cfg(ov=ov, alphas=[0.3], dtype="float64")
    with jax.enable_x64(True):
        problem = build(cfg)
        params, state = problem.init(jax.random.PRNGKey(0))
        assert set(params) == ({"W_P", "b_P"} if ov == "collapsed" else {"W_P", "W_V"})
        bound = 1 / np.sqrt(50)
        for v in params.values():
            assert v.dtype == jnp.float64 and float(jnp.max(jnp.abs(v))) <= bound
            assert float(jnp.std(v)) > 0.5 * bound / np.sqrt(3)  # spread over the interval
        c, labels = problem.sample(jax.random.PRNGKey(1))
        np_params = {k: np.asarray(v[0]) for k, v in params.items()}
        ref = _np_loss(
            np.asarray(c[0]),
            np_params["W_P"],
            np_params.get("W_V"),
            np_params.get("b_P"),
            np.asarray(labels),
        )
        assert abs(float(problem.loss(params, state, (c, labels))) - ref) < 1e-12
        grads = jax.grad(problem.loss)(params, state, (c, labels))
        rng = np.random.default_rng(0)
        h = 1e-6
        for name, g in grads.items():
            for _ in range(3):
                idx = tuple(rng.integers(0, s) for s in np_params[name].shape)
                plus = {k: v.copy() for k, v in np_params.items()}
                minus = {k: v.copy() for k, v in np_params.items()}
                plus[name][idx] += h
                minus[name][idx] -= h
                args = lambda p: (  # noqa: E731
                    np.asarray(c[0]),
                    p["W_P"],
                    p.get("W_V"),
                    p.get("b_P"),
                    np.asarray(labels),
                )
                fd = (_np_loss(*args(plus)) - _np_loss(*args(minus))) / (2 * h)
                assert abs(float(g[(0, *idx)]) - fd) < 1e-7


def test_bias_override():
    with jax.enable_x64(False):
        params, _ = build(_cfg(ov="factorised", bias=True)).init(jax.random.PRNGKey(0))
    assert "b_P" in params


@pytest.mark.slow  # 8 CPU s
def test_stacked_models_are_independent():
    """Training α ∈ {0.2, 0.6} side by side gives, for α = 0.6, the same trajectory as training
    α = 0.6 alone (same batches, same init; float64 round-off only)."""
    both = simulate(_cfg(alphas=[0.2, 0.6], dtype="float64"))
    alone = simulate(_cfg(alphas=[0.6], dtype="float64"))
    for name in ("loss", "loss_delta", "sensitivity", "ov_norm"):
        key = observable_name(name, 0.6)
        np.testing.assert_allclose(both[key].values, alone[key].values, rtol=1e-10)


def test_trajectory_observables_and_sensitivity():
    traj = simulate(_cfg(alphas=[0.2, 1.0], ov="factorised", t_max=200, records=5))
    assert traj.sizes["time"] == 5 and traj["step"].values[-1] == 200
    la, ld = traj[observable_name("loss", 0.2)], traj[observable_name("loss_delta", 0.2)]
    sens = traj[observable_name("sensitivity", 0.2)]
    np.testing.assert_allclose(sens.values, (la - ld).values / 0.005, rtol=1e-4, atol=1e-3)
    assert np.all(traj[observable_name("sensitivity", 1.0)].values == 0.0)  # α + δ > 1
    assert float(la[0, -1]) < float(la[0, 0])  # it trains
    assert np.all(traj[observable_name("accuracy", 0.2)].values <= 1.0)


@pytest.mark.parametrize(
    "values, field",
    [
        ({"alphas": [0.2, 1.5]}, "alphas"),
        ({"alphas": []}, "alphas"),
        ({"ov": "diagonal"}, "ov"),
        ({"delta": 0}, "delta"),
    ],
)
def test_config_errors(values, field):
    with pytest.raises(InputError, match=field):
        validate(FixedAttentionConfig, values)


def test_one_ov_controls_train_one_parameterisation_in_both_runs(monkeypatch):
    """``all-collapsed`` / ``all-factorised`` train the same OV circuit under both names."""
    from attndyn.claims.runner import experiment_config
    from attndyn.experiments.circuits import fixed_attention

    trained = []
    monkeypatch.setattr(fixed_attention, "stored_run", lambda cfg, ctx: trained.append(cfg.ov))
    exp, plain = experiment_config("circuits-fixed-attention", "tiny", {})
    fixed_attention.CircuitsFixedAttention().run(plain, None)
    for ov in ("collapsed", "factorised"):
        _, control = experiment_config("circuits-fixed-attention", "tiny", {"one_ov": ov})
        fixed_attention.CircuitsFixedAttention().run(control, None)
    assert trained == ["collapsed", "factorised", *["collapsed"] * 2, *["factorised"] * 2]
    assert exp.must_fail("all-factorised", plain) == ("collapsed-sensitivity-still-rising",)
