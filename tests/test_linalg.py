"""attndyn.core.linalg: the same factorisations as jnp.linalg, one matrix per LAPACK call."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.core import linalg


@pytest.fixture
def stack():
    return jax.random.normal(jax.random.key(0), (3, 4, 7, 5))


def lapack_operand_ranks(fn, x) -> list[int]:
    """Ranks of the first operand shape of every LAPACK custom call in fn's compiled HLO."""
    text = jax.jit(fn).lower(x).compile().as_text()
    calls = [line for line in text.splitlines() if 'custom_call_target="lapack' in line]
    return [len(re.search(r"\{(f32\[[^\]]*\])", c).group(1).split(",")) for c in calls]


def test_vmapped_values_equal_the_batched_call(stack):
    s = jax.jit(jax.vmap(jax.vmap(linalg.singular_values)))(stack)
    np.testing.assert_array_equal(s, jnp.linalg.svd(stack, compute_uv=False))
    u, sv, vt = jax.vmap(linalg.thin_svd)(stack[0])
    np.testing.assert_allclose((u * sv[:, None, :]) @ vt, stack[0], atol=1e-5)
    assert u.shape == (4, 7, 5) and vt.shape == (4, 5, 5)
    r = jax.vmap(linalg.qr_r)(stack[0])
    np.testing.assert_allclose(
        jnp.swapaxes(r, 1, 2) @ r, jnp.swapaxes(stack[0], 1, 2) @ stack[0], rtol=1e-5, atol=1e-5
    )  # RᵀR = AᵀA
    assert np.allclose(r, jnp.triu(r))


def test_unbatched_argument_is_broadcast():
    a = jnp.arange(12.0).reshape(4, 3)
    out = jax.vmap(linalg.unbatched(lambda x, y: x * y), in_axes=(None, 0))(a, jnp.arange(2.0))
    np.testing.assert_array_equal(out, jnp.stack([a * 0.0, a * 1.0]))


@pytest.mark.parametrize("fn", [linalg.singular_values, linalg.thin_svd, linalg.qr_r])
def test_no_lapack_call_gets_a_batch(stack, fn):
    """The reason for the module: a batched call hangs jaxlib's CPU pool when several run at
    once."""
    assert lapack_operand_ranks(jax.vmap(jnp.linalg.svd), stack[0]) == [3]  # what it avoids
    ranks = lapack_operand_ranks(jax.vmap(jax.vmap(fn)), stack)
    assert ranks and set(ranks) == {2}
