"""The AIM's multi-layer, multi-head network (P1 = arXiv 2609.03858, Eqs. 1–2, App. B.1):
the base-form recursion, the network on the tokens with value matrices, Eq. 53, and run ids."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.core.config import canonical, identity, run_id, validate
from attndyn.errors import InputError
from attndyn.models import aim
from attndyn.models.aim import model
from attndyn.models.aim.theory import AIMTheoryConfig


def _softmax(z, beta):
    e = np.exp(beta * (z - z.max(axis=-1, keepdims=True)))
    return e / e.sum(axis=-1, keepdims=True)


def test_layers_recursion_is_the_paper_network_with_identity_values():
    """make_output at M = 2 layers, 2 heads against the recursion X_m = (c I + Σ_h
    softmax(β X_{m−1} S X_{m−1}ᵀ/√d)) X_{m−1} written out in NumPy on the base forms of X₀
    (P1 Eq. 51 with V = I; index h·(M+1) + m)."""
    rng = np.random.default_rng(0)
    B, H, M, L, beta, c = 3, 2, 2, 3, 0.7, 0.8
    g = rng.standard_normal((B, H * (M + 1), L, L))
    with jax.enable_x64(True):
        y = np.asarray(model.make_output("softmax", "h1", beta, H, c, M)(jnp.asarray(g)))
    for b in range(B):
        a = np.eye(L)
        for m in range(M):
            att = sum(_softmax(a @ g[b, h * (M + 1) + m] @ a.T, beta) for h in range(H))
            a = (c * np.eye(L) + att) @ a
        expected = sum(_softmax(a @ g[b, h * (M + 1) + M] @ a.T, beta) for h in range(H))
        np.testing.assert_allclose(y[b], expected, rtol=1e-12)


def test_one_layer_is_the_former_two_layer_output():
    """layers = 1 with a softmax readout is the former output='two-layer' (2506.01582 Eqs. 4–5):
    A = c·I + Σ_h softmax(β G₁,h), y = Σ_h softmax(β A G₂,h Aᵀ), bit for bit."""
    rng = np.random.default_rng(1)
    g = jnp.asarray(rng.standard_normal((4, 4, 2, 2)).astype(np.float32))
    y = model.make_output("softmax", "h1", 1.3, 2, 1.0, 1)(g)
    g1, g2 = g[:, 0::2], g[:, 1::2]
    a = jnp.eye(2) + jnp.sum(jax.nn.softmax(1.3 * g1, axis=-1), axis=1)
    inner = jnp.einsum("bij,bhjk,blk->bhil", a, g2, a)
    former = jnp.sum(jax.nn.softmax(1.3 * inner, axis=-1), axis=1)
    assert np.array_equal(np.asarray(y), np.asarray(former))


def test_two_layer_spelling_is_one_layer_softmax():
    """output='two-layer' is read as output='softmax', layers=1: the same config and run id."""
    old = validate(aim.Config, dict(output="two-layer", L=2, d=16))
    new = validate(aim.Config, dict(output="softmax", layers=1, L=2, d=16))
    assert old == new and run_id("aim", old) == run_id("aim", new)
    with pytest.raises(InputError, match="output"):
        validate(aim.Config, dict(output="two-layer", layers=2, L=2))


def test_new_fields_keep_every_stored_run_id():
    """layers, values, value_scale, head_params and teacher_head_kinds at their neutral values
    are not hashed: a config's identity is what it was before they existed (every stored aim run
    keeps its id); set otherwise, they are."""
    config = validate(aim.Config, dict(d=32, param="untied"))
    added = {"layers", "values", "value_scale", "head_params", "teacher_head_kinds"}
    assert set(identity(config)) == set(canonical(config)) - added
    for change in (dict(layers=1), dict(layers=1, values="gaussian", teacher="product")):
        changed = validate(aim.Config, dict(d=32, param="untied", **change))
        assert set(change) <= set(identity(changed))
        assert run_id("aim", changed) != run_id("aim", config)


def test_gaussian_values_need_uncentred_forms():
    with pytest.raises(InputError, match="values"):
        validate(aim.Config, dict(param="tied", layers=1, values="gaussian"))
    with pytest.raises(InputError, match="values"):
        validate(AIMTheoryConfig, dict(param="untied", layers=1, values="gaussian"))


def _network(values, side, x, heads, layers, output="softmax", activation="h1"):
    readout = model.make_output(output, activation, 0.9, heads, 1.0, 0)
    return model.network_output(side, x, values, readout, heads, layers, 0.9, 1.0)


def test_network_with_identity_values_is_the_base_form_recursion():
    """On the tokens with V = I, the network equals the recursion on X₀'s uncentred base forms
    (float64, two layers, two heads)."""
    rng = np.random.default_rng(2)
    B, L, d, r, H, M = 5, 3, 12, 4, 2, 2
    K = H * (M + 1)
    with jax.enable_x64(True):
        side = {"U": jnp.asarray(rng.standard_normal((K, d, r)) / np.sqrt(d)),
                "V": jnp.asarray(rng.standard_normal((K, d, r)) / np.sqrt(d))}  # fmt: skip
        x = jnp.asarray(rng.standard_normal((B, L, d)))
        eye = jnp.broadcast_to(jnp.eye(d), (H * M, d, d))
        on_tokens = _network(eye, side, x, H, M)
        forms = model.forms(side, x, jnp.eye(L), centred=False)
        on_forms = model.make_output("softmax", "h1", 0.9, H, 1.0, M)(forms)
        np.testing.assert_allclose(np.asarray(on_tokens), np.asarray(on_forms), rtol=1e-12)


def test_second_layer_form_is_eq_53():
    """P1 Eq. 53: with one head and value matrix V, X₁ = X₀ + softmax(G₀) X₀ V and
    X₁ S₁ X₁ᵀ/√d = G(S₁) + P G(V S₁) + G(S₁ Vᵀ) Pᵀ + P G(V S₁ Vᵀ) Pᵀ, G(M) = X₀ M X₀ᵀ/√d,
    P = softmax(β G₀). The readout h1 (the identity) returns X₁ S₁ X₁ᵀ/√d itself."""
    rng = np.random.default_rng(3)
    B, L, d, r = 4, 3, 10, 5
    with jax.enable_x64(True):
        U = rng.standard_normal((2, d, r)) / np.sqrt(d)
        W = rng.standard_normal((2, d, r)) / np.sqrt(d)
        Vmat = rng.standard_normal((1, d, d)) / np.sqrt(d)
        x = rng.standard_normal((B, L, d))
        side = {"U": jnp.asarray(U), "V": jnp.asarray(W)}
        y = np.asarray(_network(jnp.asarray(Vmat), side, jnp.asarray(x), 1, 1, "index", "h1"))
    S0, S1, V = U[0] @ W[0].T, U[1] @ W[1].T, Vmat[0]

    def G(M, b):
        return x[b] @ M @ x[b].T / np.sqrt(d)

    for b in range(B):
        P = _softmax(G(S0, b), 0.9)
        eq53 = G(S1, b) + P @ G(V @ S1, b) + G(S1 @ V.T, b) @ P.T + P @ G(V @ S1 @ V.T, b) @ P.T
        np.testing.assert_allclose(y[b], eq53, rtol=1e-10)


@pytest.mark.parametrize("values", ["identity", "gaussian"])
def test_layered_runs_simulate_and_record_every_index(values):
    """Two residual layers, one head, untied (K = 3 indices a side): every student and teacher
    index is observed and the loss stays finite; more than 9 indices in all is refused (names
    q_kl give each index one digit)."""
    config = dict(d=16, L=2, param="untied", layers=2, heads=1, output="softmax")
    config |= dict(values=values, seeds=2, t_max=0.3, records=4, batch=8, test_size=64)
    traj = aim.simulate(validate(aim.Config, config))
    assert {f"t_{k}" for k in range(1, 7)} <= set(traj) and "t_7" not in traj
    assert np.all(np.isfinite(traj["loss"].values))
    with pytest.raises(InputError, match="layers"):
        validate(aim.Config, dict(config, heads=2))


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"theory_seeds": 17}, "theory_seeds"),
        ({"d": [96, 48]}, "d"),
        ({"base.layers": 2}, "base"),
        ({"base.param": "untied"}, "base"),
    ],
)
def test_aim_layers_config_refuses_what_it_cannot_pair(overrides, field):
    """aim-layers pairs each flow with its SGD seed (theory_seeds ≤ seeds), fits slopes over
    increasing d, and reads indices 1, 2 as layer 1 and the readout of a tied model."""
    from attndyn.claims.runner import experiment_config

    with pytest.raises(InputError, match=field):
        experiment_config("aim-layers", "small", overrides)


def test_aim_layers_drift_and_slope():
    """Δ over the horizon per seed (a flow has no seed axis), and the log–log slope."""
    import xarray as xr

    from attndyn.experiments.aim.layers import drift, slope

    sgd = xr.Dataset({"q_11": (("seed", "time"), [[1.0, 2.0, 4.0], [0.0, 1.0, -1.0]])})
    flow = xr.Dataset({"q_11": (("time",), [0.5, 0.0, 0.25])})
    assert drift(sgd, "q_11").tolist() == [3.0, -1.0]
    assert drift(flow, "q_11").tolist() == [-0.25]
    assert slope([32, 64, 128], [-4.0, -2.0, -1.0]) == pytest.approx(-1.0)
