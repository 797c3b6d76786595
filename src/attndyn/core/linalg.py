"""Matrix factorisations that never hand jaxlib's CPU LAPACK kernels a batch.

jaxlib 0.10's CPU LAPACK custom calls (``svd``, ``qr``, ``eigh``, ``lu``, triangular solves)
split a batch over XLA's intra-op thread pool with ``jax::ParallelBatchMap``: the calling pool
thread schedules the chunks on the same pool and blocks until they are done, without running
any itself. When as many such calls run at once as the pool has threads — independent
observables of one program (XLA runs independent thunks concurrently), or one program per device
— every pool thread waits and the run hangs for ever (gdb: ``absl::BlockingCounter::Wait`` in
``ParallelBatchMap`` on every ``tf_XLAEigen`` thread; the markov family's text runs at
vocab 512, m = 256, 4 seeds hung after a few steps). A call on a single matrix runs inline.

The functions here are ``custom_vmap``: under ``vmap`` (the seed axis) they loop over the batch
with ``lax.map``, one matrix per LAPACK call, so no call ever waits on the pool. The loop costs
the batch's parallelism inside one factorisation; the observables that use them run only at
record points. Results equal the batched call's (same kernel, same matrices).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap


def unbatched(fn: Callable) -> Callable:
    """``fn`` (positional array arguments) with a vmap rule that maps it over the batch axis
    one element at a time; nested vmaps nest the loops."""

    @custom_vmap
    def wrapped(*args):
        return fn(*args)

    @wrapped.def_vmap
    def _rule(axis_size, in_batched, *args):
        args = tuple(
            a if batched else jnp.broadcast_to(a, (axis_size, *jnp.shape(a)))
            for a, batched in zip(args, in_batched, strict=True)
        )
        out = jax.lax.map(lambda xs: wrapped(*xs), args)
        return out, jax.tree.map(lambda _: True, out)

    return wrapped


@unbatched
def singular_values(a: jax.Array) -> jax.Array:
    """σ(A), descending (``jnp.linalg.svd(a, compute_uv=False)``)."""
    return jnp.linalg.svd(a, compute_uv=False)


@unbatched
def thin_svd(a: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(U, σ, Vᵀ) with A = U diag(σ) Vᵀ, U: n×k, Vᵀ: k×m, k = min(n, m)."""
    return jnp.linalg.svd(a, full_matrices=False, compute_uv=True)


@unbatched
def qr_r(a: jax.Array) -> jax.Array:
    """The triangular factor R of the reduced QR decomposition A = QR."""
    return jnp.linalg.qr(a, mode="r")


def effective_rank(s: jax.Array) -> jax.Array:
    """exp(H(p)), p = σ/Σσ, of singular values σ (Roy & Vetterli 2007): 1 for rank one, k for k
    equal values."""
    p = s / jnp.maximum(jnp.sum(s), jnp.finfo(s.dtype).tiny)
    h = -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0))
    return jnp.exp(h)
