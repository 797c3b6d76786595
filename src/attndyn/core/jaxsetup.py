"""JAX process settings that attndyn applies on import.

Persistent compilation cache: every ``simulate`` call builds fresh closures, so jit's in-memory
cache never hits across runs; XLA compiles then dominate short runs, sweeps and tests (timings
in BENCHMARKS.md, "Sweep wall time per executor"). JAX's on-disk cache keys on the compiled program, so identical shapes reuse the binary
across runs and processes. It goes to ``$ATTNDYN_JAX_CACHE`` (default
``~/.cache/attndyn/jax``); set ``ATTNDYN_JAX_CACHE=off`` to disable. A cache directory the user
configured for JAX (``JAX_COMPILATION_CACHE_DIR``) is left alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax


def enable_compilation_cache() -> str | None:
    """Point JAX's persistent compilation cache at attndyn's folder; returns the folder used."""
    configured = os.environ.get("JAX_COMPILATION_CACHE_DIR") or jax.config.jax_compilation_cache_dir
    if configured:
        return configured
    path = os.environ.get("ATTNDYN_JAX_CACHE", str(Path.home() / ".cache" / "attndyn" / "jax"))
    if path.lower() in ("", "0", "off", "none"):
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    return path
