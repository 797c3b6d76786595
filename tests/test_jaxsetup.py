"""The XLA:CPU YNNPACK fusion workaround (attndyn.core.jaxsetup)."""

import os

import numpy as np
import pytest

from attndyn.core import jaxsetup


def test_ynn_flag_is_set_before_jax_runs():
    assert "xla_cpu_experimental_ynn_fusion_type" in os.environ.get("XLA_FLAGS", "")


@pytest.mark.slow  # 6 CPU s
def test_one_head_attention_with_64_chains_runs():
    """jaxlib 0.10's YNNPACK reduce fusion failed here at run time ("ternary_elementwise …")."""
    from attndyn.models import langevin

    config = langevin.LangevinConfig(
        model="attention", heads=1, d_k=2, tokens=4, d=4, n=16, seeds=64, t_max=0.05, records=2
    )
    traj = langevin.simulate(config)
    assert traj.F.shape == (64, 2)
    assert np.all(np.isfinite(traj.F.values))
    assert jaxsetup.YNN_FLAG.split("=")[0].lstrip("-") in os.environ["XLA_FLAGS"]


JIT_PROBE = """
import jax, jax.numpy as jnp
from attndyn.core.jaxsetup import enable_compilation_cache
enable_compilation_cache()
print(float(jax.jit(lambda x: jnp.tanh(x @ x.T).sum())(jnp.ones((8, 8)))))
"""


@pytest.mark.slow  # 5 CPU s
def test_a_truncated_compilation_cache_entry_is_skipped_and_rewritten(tmp_path):
    """JAX 0.10 warns about a truncated entry on every run and never rewrites it; attndyn's
    cache read removes it quietly, so the run recompiles and stores a whole entry again."""
    import os
    import subprocess
    import sys

    cache = tmp_path / "jax"
    env = {**os.environ, "ATTNDYN_JAX_CACHE": str(cache)}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)

    def run():
        proc = subprocess.run(
            [sys.executable, "-c", JIT_PROBE], capture_output=True, text=True, env=env, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip(), proc.stderr

    first, _ = run()
    entries = {p: p.stat().st_size for p in cache.glob("*-cache")}
    assert entries
    for path, size in entries.items():
        with open(path, "r+b") as fh:
            fh.truncate(size // 2)
    again, err = run()
    assert again == first
    assert "Error reading" not in err and "Warning" not in err, err
    assert {p: p.stat().st_size for p in cache.glob("*-cache")} == entries  # rewritten whole


PRECISION_PROBE = """
import jax
import attndyn.core.trainer  # imports jaxsetup, as every simulation does
print(jax.config.jax_default_matmul_precision)
"""


@pytest.mark.slow  # 5 CPU s
def test_float32_matmuls_are_full_precision_unless_the_user_chose():
    """JAX's default lets GPUs use TF32 for float32 dots; attndyn asks for full float32, and a
    precision set through JAX_DEFAULT_MATMUL_PRECISION is left alone."""
    import subprocess
    import sys

    def probe(**env):
        base = {k: v for k, v in os.environ.items() if k != "JAX_DEFAULT_MATMUL_PRECISION"}
        out = subprocess.run(
            [sys.executable, "-c", PRECISION_PROBE],
            env=base | env,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip().splitlines()[-1]

    assert probe() == "highest"
    assert probe(JAX_DEFAULT_MATMUL_PRECISION="tensorfloat32") == "tensorfloat32"
