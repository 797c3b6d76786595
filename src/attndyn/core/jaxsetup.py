"""JAX process settings that attndyn applies on import.

Persistent compilation cache: every ``simulate`` call builds fresh closures, so jit's in-memory
cache never hits across runs; XLA compiles then dominate short runs, sweeps and tests (timings
in BENCHMARKS.md, "Sweep wall time per executor"). JAX's on-disk cache keys on the compiled program,
so identical shapes reuse the binary across runs and processes. It goes to ``$ATTNDYN_JAX_CACHE``
(default ``~/.cache/attndyn/jax``); set ``ATTNDYN_JAX_CACHE=off`` to disable. A cache directory the
user configured for JAX (``JAX_COMPILATION_CACHE_DIR``) is left alone.

XLA:CPU's YNNPACK reduce/elementwise fusions (jaxlib 0.10) fail at run time on some batched
softmax gradients ("ternary_elementwise: dimension … does not match", e.g. the langevin family's
attention with one head, d_k = 2 and 64 chains); :func:`avoid_ynn_fusion_bug` keeps only YNNPACK's
dot fusions unless ``XLA_FLAGS`` already sets ``xla_cpu_experimental_ynn_fusion_type``. It must
run before JAX's first computation, so it runs when this module is imported. (Hangs of the
markov family's text runs, once blamed on these fusions, came from jaxlib's batched LAPACK kernels
waiting on XLA's thread pool: :mod:`attndyn.core.linalg`. Turning every YNNPACK fusion off
(``XLA_FLAGS='--xla_cpu_experimental_ynn_fusion_type=""'``) made the test suite take over 1,100 s
instead of 693 s and the aim batch-1 step slower: BENCHMARKS.md, "XLA:CPU's YNNPACK fusions".)

Float32 matmuls at float32 precision: JAX's default lets a GPU compute float32 dots on TF32 tensor
cores (10-bit mantissa; bf16 passes on TPU), which would make a GPU run differ from the CPU run of
the same config by ~10⁻³ relative per product. :func:`full_float32_matmuls` sets
``jax_default_matmul_precision`` to ``highest`` on import unless the user chose a precision
(``JAX_DEFAULT_MATMUL_PRECISION``, e.g. ``tensorfloat32`` for speed over exactness). On CPU it
changes nothing: the AIM benchmark step gave bitwise-equal parameters after 550 steps at the
same speed (BENCHMARKS.md, "Issue 16: the AIM step").

A damaged cache entry (truncated by a killed process or a file-size limit: JAX writes entries in
place) makes JAX 0.10 warn on every later run ("Error reading persistent compilation cache
entry …", two lines per entry) and never rewrite it, since it does not overwrite an existing
entry. :func:`heal_damaged_cache_entries` (applied on import) turns such a read into a quiet
cache miss that removes the entry, so JAX compiles and writes it anew.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import jax

# JAX adds its option properties (jax.config.jax_...) at run time; its stubs list none
_OPTIONS: Any = jax.config

YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type=LIBRARY_FUSION_TYPE_DOT"


def avoid_ynn_fusion_bug() -> None:
    """Append :data:`YNN_FLAG` to ``XLA_FLAGS`` (jaxlib ≥ 0.10, flag not set by the user)."""
    import jaxlib

    version = tuple(int(p) for p in jaxlib.__version__.split(".")[:2] if p.isdigit())
    flags = os.environ.get("XLA_FLAGS", "")
    if version >= (0, 10) and "xla_cpu_experimental_ynn_fusion_type" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {YNN_FLAG}".strip()


avoid_ynn_fusion_bug()


def full_float32_matmuls() -> None:
    """``jax_default_matmul_precision = "highest"`` unless ``JAX_DEFAULT_MATMUL_PRECISION`` is set
    or a precision was already configured."""
    if "JAX_DEFAULT_MATMUL_PRECISION" in os.environ or _OPTIONS.jax_default_matmul_precision:
        return
    jax.config.update("jax_default_matmul_precision", "highest")


full_float32_matmuls()


def heal_damaged_cache_entries() -> bool:
    """Wrap JAX's persistent-cache read so that an entry that cannot be read is removed and
    reported as a miss (no warning; JAX compiles and writes it again). Returns whether the
    wrapper is in place (it uses JAX's private ``compilation_cache`` module; without it, JAX's
    own behaviour stays)."""
    try:
        from jax._src import compilation_cache as cc
    except ImportError:  # pragma: no cover - another JAX layout
        return False
    read = getattr(cc, "get_executable_and_time", None)
    if read is None or getattr(read, "heals", False):
        return read is not None
    verification = getattr(cc, "CacheVerificationError", ())

    def get_executable_and_time(cache_key, *args, **kwargs):
        try:
            return read(cache_key, *args, **kwargs)
        except verification:
            raise
        except Exception:
            _remove_entry(getattr(cc, "_cache", None), cache_key)
            return None, None

    get_executable_and_time.__dict__["heals"] = True  # a function attribute, untyped
    cc.get_executable_and_time = get_executable_and_time
    return True


def _remove_entry(cache, key: str) -> None:
    """Delete the files of entry ``key`` of a local JAX cache (``<key>-cache``, ``-atime``)."""
    folder = getattr(cache, "path", None) or getattr(cache, "_path", None)
    if folder is None or not key:
        return
    for suffix in ("-cache", "-atime"):
        with contextlib.suppress(OSError):
            (Path(str(folder)) / f"{key}{suffix}").unlink()


heal_damaged_cache_entries()


def enable_compilation_cache() -> str | None:
    """Point JAX's persistent compilation cache at attndyn's folder; returns the folder used."""
    configured = os.environ.get("JAX_COMPILATION_CACHE_DIR") or _OPTIONS.jax_compilation_cache_dir
    if configured:
        return configured
    path = os.environ.get("ATTNDYN_JAX_CACHE", str(Path.home() / ".cache" / "attndyn" / "jax"))
    if path.lower() in ("", "0", "off", "none"):
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    # cache every program, not only those that took over a second to compile: a run compiles
    # hundreds of small ones (eager random draws at init, observables), each costing ~10 ms per
    # process otherwise (langevin-vs-sgd tiny, warm: 12.6 s instead of 20.6 s)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return path
