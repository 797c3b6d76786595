"""``jax.random.normal``, bit for bit, with the Threefry-2x32 hash unrolled on every backend.

JAX lowers its Threefry-2x32 hash on CPU as a loop of five 4-round blocks (to keep compile times
short), so XLA:CPU writes the two 32-bit state arrays to memory between blocks; unrolled, the 20
rounds, the uniform map and erf⁻¹ fuse into one pass. This module reproduces JAX's construction
(jax/_src/random, partitionable Threefry: the bits of element n of the flattened shape are
b₁ ⊕ b₂ with (b₁, b₂) = threefry2x32(key, (0, n)); uniform u = max(lo, (1.m − 1)(1 − lo) + lo)
with lo = nextafter(−1, 0); z = √2 erf⁻¹(u)), the hash written out as in Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3" (SC 2011; Threefry-2x32, 20 rounds). Draws are identical to
``jax.random.normal`` (tests/test_fastrandom.py), so no stored trajectory changes. Any case outside
that construction (another PRNG implementation, non-partitionable Threefry, typed keys, other
dtypes) falls back to ``jax.random.normal``.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl(x: jax.Array, r: int) -> jax.Array:
    return lax.shift_left(x, np.uint32(r)) | lax.shift_right_logical(x, np.uint32(32 - r))


def threefry2x32(k1: jax.Array, k2: jax.Array, x1: jax.Array, x2: jax.Array):
    """The Threefry-2x32 hash (20 rounds) of counters (x1, x2) under key (k1, k2), unrolled."""
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    x1, x2 = x1 + ks[0], x2 + ks[1]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x1 = x1 + x2
            x2 = _rotl(x2, r) ^ x1
        x1 = x1 + ks[(block + 1) % 3]
        x2 = x2 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x1, x2


def supported(key: jax.Array, shape: tuple[int, ...], dtype) -> bool:
    """Whether :func:`normal` reproduces ``jax.random.normal`` here (else it falls back)."""
    options: Any = jax.config  # JAX adds its option properties at run time; its stubs list none
    return (
        options.jax_default_prng_impl == "threefry2x32"
        and options.jax_threefry_partitionable
        and not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
        and key.shape == (2,)
        and jnp.dtype(dtype) == jnp.float32
        and math.prod(shape) < 2**32
    )


def _normal_from_bits(b1: jax.Array, b2: jax.Array, dtype) -> jax.Array:
    """JAX's map from one hash output to a standard normal (jax/_src/random): float32 takes the
    top 23 bits of b₁ ⊕ b₂, float64 the top 52 of b₁·2³² + b₂, as the mantissa of 1.m; then
    u = max(lo, (1.m − 1)(1 − lo) + lo), lo = nextafter(−1, 0), and z = √2 erf⁻¹(u)."""
    dtype = jnp.dtype(dtype)
    if dtype == jnp.float32:
        bits = lax.shift_right_logical(b1 ^ b2, np.uint32(32 - 23)) | np.uint32(0x3F800000)
    else:
        wide = lax.shift_left(b1.astype(jnp.uint64), np.uint64(32)) | b2.astype(jnp.uint64)
        bits = lax.shift_right_logical(wide, np.uint64(64 - 52)) | np.uint64(0x3FF0000000000000)
    floats = lax.bitcast_convert_type(bits, dtype) - dtype.type(1.0)
    lo = np.nextafter(dtype.type(-1.0), dtype.type(0.0))
    u = lax.max(lo, floats * (dtype.type(1.0) - lo) + lo)
    return dtype.type(np.sqrt(2)) * lax.erf_inv(u)


def normal(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Standard normals of ``shape``: equal to ``jax.random.normal(key, shape, dtype)``."""
    shape = tuple(int(s) for s in shape)
    if not supported(key, shape, dtype):
        return jax.random.normal(key, shape, dtype)
    counts = lax.iota(np.uint32, math.prod(shape))
    b1, b2 = threefry2x32(key[0], key[1], jnp.zeros_like(counts), counts)
    return _normal_from_bits(b1, b2, dtype).reshape(shape)


def counter_normal(
    key: jax.Array, step: jax.Array, shape: tuple[int, ...], offset: int = 0, dtype=jnp.float32
) -> jax.Array:
    """Standard normals of ``shape`` for step k = ``step``, counter-based: element n (row-major)
    is the normal of the hash threefry2x32(key, (k + 1, offset + n)) under the map of
    ``jax.random.normal``. One hash per element, no key derivation: a stream indexed by (key,
    step, element), so a chain's draws depend on neither the other chains nor the order in which
    steps are taken. The high counter word k + 1 is never 0, so the stream is disjoint from every
    ``fold_in(key, i)`` and ``split(key)`` of the same raw key (their counters are (0, i)).
    Needs a raw ``uint32[2]`` key, k < 2³² − 1 and offset + size ≤ 2³²."""
    shape = tuple(int(s) for s in shape)
    size = math.prod(shape)
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) or key.shape != (2,):
        raise ValueError("counter_normal needs a raw uint32[2] threefry key")
    if offset + size > 2**32:
        raise ValueError(f"counter_normal: offset + size = {offset + size} exceeds 2**32")
    counts = lax.iota(np.uint32, size) + np.uint32(offset)
    high = jnp.broadcast_to(jnp.asarray(step).astype(jnp.uint32) + np.uint32(1), counts.shape)
    b1, b2 = threefry2x32(key[0], key[1], high, counts)
    return _normal_from_bits(b1, b2, dtype).reshape(shape)
