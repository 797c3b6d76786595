"""JAX process settings that attndyn applies on import.

Persistent compilation cache: every ``simulate`` call builds fresh closures, so jit's in-memory
cache never hits across runs; XLA compiles then dominate short runs, sweeps and tests (timings
in BENCHMARKS.md, "Sweep wall time per executor"). JAX's on-disk cache keys on the compiled program, so identical shapes reuse the binary
across runs and processes. It goes to ``$ATTNDYN_JAX_CACHE`` (default
``~/.cache/attndyn/jax``); set ``ATTNDYN_JAX_CACHE=off`` to disable. A cache directory the user
configured for JAX (``JAX_COMPILATION_CACHE_DIR``) is left alone.

XLA:CPU's YNNPACK reduce/elementwise fusions (jaxlib 0.10) fail at run time on some batched
softmax gradients ("ternary_elementwise: dimension … does not match", e.g. the langevin family's
attention with one head, d_k = 2 and 64 chains); :func:`avoid_ynn_fusion_bug` keeps only YNNPACK's
dot fusions unless ``XLA_FLAGS`` already sets ``xla_cpu_experimental_ynn_fusion_type``. It must
run before JAX's first computation, so it runs when this module is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type=LIBRARY_FUSION_TYPE_DOT"


def avoid_ynn_fusion_bug() -> None:
    """Append :data:`YNN_FLAG` to ``XLA_FLAGS`` (jaxlib ≥ 0.10, flag not set by the user)."""
    import jaxlib

    version = tuple(int(p) for p in jaxlib.__version__.split(".")[:2] if p.isdigit())
    flags = os.environ.get("XLA_FLAGS", "")
    if version >= (0, 10) and "xla_cpu_experimental_ynn_fusion_type" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {YNN_FLAG}".strip()


avoid_ynn_fusion_bug()


def enable_compilation_cache() -> str | None:
    """Point JAX's persistent compilation cache at attndyn's folder; returns the folder used."""
    configured = os.environ.get("JAX_COMPILATION_CACHE_DIR") or jax.config.jax_compilation_cache_dir
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
