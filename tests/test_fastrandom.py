"""attndyn.core.fastrandom: the unrolled Threefry hash and draws equal to jax.random.normal."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn import runs
from attndyn.core import fastrandom
from attndyn.core.trainer import train
from attndyn.models.aim import build

U32 = np.uint32


@pytest.mark.parametrize(
    ("key", "counter", "expected"),
    [  # Random123 known-answer tests for Threefry-2x32, 20 rounds (Salmon et al., SC 2011)
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ],
)
def test_threefry_matches_the_published_test_vectors(key, counter, expected):
    k1, k2 = (jnp.asarray(U32(v)) for v in key)
    x1, x2 = (jnp.asarray([U32(v)]) for v in counter)
    out = fastrandom.threefry2x32(k1, k2, x1, x2)
    assert [int(o[0]) for o in out] == list(expected)


@pytest.mark.parametrize("shape", [(1,), (5, 7, 3), (64, 2, 8)])
def test_normal_equals_jax_random_normal_bitwise(shape):
    keys = [jax.random.PRNGKey(0), jax.random.fold_in(jax.random.PRNGKey(2**31 + 5), 123)]
    for key in keys:
        assert fastrandom.supported(key, shape, jnp.float32)
        ours = jax.jit(lambda k: fastrandom.normal(k, shape))(key)
        np.testing.assert_array_equal(ours, jax.random.normal(key, shape))
    batch = jax.vmap(jax.random.PRNGKey)(jnp.arange(4))
    ours = jax.jit(jax.vmap(lambda k: fastrandom.normal(k, shape)))(batch)
    np.testing.assert_array_equal(ours, jax.vmap(lambda k: jax.random.normal(k, shape))(batch))


def test_unsupported_keys_fall_back_to_jax():
    key = jax.random.key(3)  # a typed key: JAX's own path
    assert not fastrandom.supported(key, (4,), jnp.float32)
    np.testing.assert_array_equal(fastrandom.normal(key, (4,)), jax.random.normal(key, (4,)))


def test_aim_trajectory_is_unchanged_by_the_unrolled_draw(monkeypatch):
    """A tiny aim run is bitwise equal with the draw through jax.random.normal, so stored
    trajectories and run ids stay valid."""
    config = runs.family_config(
        "aim", dict(d=8, t_max=0.1, records=3, batch=4, seeds=2, test_size=8, output="softmax")
    )
    steps, seeds = np.array([0, 20, 60]), np.arange(2)
    ours = train(build(config), steps, seeds)
    monkeypatch.setattr(
        fastrandom, "normal", lambda k, s, dtype=jnp.float32: jax.random.normal(k, s, dtype)
    )
    theirs = train(build(config), steps, seeds)
    for name, values in theirs.observables.items():
        np.testing.assert_array_equal(ours.observables[name], values, err_msg=name)
    np.testing.assert_array_equal(ours.final_params["W"], theirs.final_params["W"])


def test_counter_normal_is_the_normal_of_one_hash_per_element():
    """Element n at step k is JAX's bits-to-normal map of threefry2x32(key, (k + 1, offset + n)):
    checked against the float32 map applied to the hash (and against jax.random.normal's own map
    on the hash of counters (0, n), which is what counter k = −1 would give)."""
    key = jax.random.PRNGKey(7)
    ours = fastrandom.counter_normal(key, 4, (3, 5), offset=11)
    n = np.arange(15, dtype=np.uint32) + U32(11)
    b1, b2 = fastrandom.threefry2x32(key[0], key[1], jnp.full(15, U32(5)), jnp.asarray(n))
    bits = (np.asarray(b1) ^ np.asarray(b2)) >> U32(9) | U32(0x3F800000)
    floats = bits.view(np.float32) - np.float32(1)
    lo = np.nextafter(np.float32(-1), np.float32(0))
    u = np.maximum(lo, floats * (np.float32(1) - lo) + lo)
    expected = np.float32(np.sqrt(2)) * jax.scipy.special.erfinv(jnp.asarray(u))
    np.testing.assert_array_equal(ours, np.asarray(expected).reshape(3, 5))
    # the step counter k + 1 = 0 would be jax.random.normal's stream: the map is JAX's
    wrapped = fastrandom.counter_normal(key, U32(0xFFFFFFFF), (6,))
    np.testing.assert_array_equal(wrapped, jax.random.normal(key, (6,)))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_counter_normal_is_standard_normal_and_independent_across_steps(dtype):
    """Moments, KS against N(0, 1), and no correlation between steps, elements or offsets
    (4·10⁵ draws: standard errors ≈ 0.0016 for the mean and the correlations)."""
    from scipy import stats

    with jax.enable_x64(dtype == jnp.float64):
        key = jax.random.PRNGKey(123)
        draws = jax.jit(jax.vmap(lambda k: fastrandom.counter_normal(key, k, (4000,), 0, dtype)))(
            jnp.arange(100)
        )
        z = np.asarray(draws, dtype=np.float64)
    assert draws.dtype == dtype
    assert abs(z.mean()) < 0.008 and abs(z.var() - 1) < 0.012
    assert stats.kstest(z.ravel(), "norm").pvalue > 1e-3
    assert abs(np.mean(z[1:] * z[:-1])) < 0.008  # step k against step k + 1, same element
    assert abs(np.mean(z[:, 1:] * z[:, :-1])) < 0.008  # element n against n + 1
    assert len({row.tobytes() for row in z}) == len(z)  # no step repeats another's draws


def test_counter_normal_refuses_typed_keys_and_overflowing_offsets():
    with pytest.raises(ValueError, match="raw uint32"):
        fastrandom.counter_normal(jax.random.key(0), 0, (2,))
    with pytest.raises(ValueError, match="2\\*\\*32"):
        fastrandom.counter_normal(jax.random.PRNGKey(0), 0, (4,), offset=2**32 - 2)
