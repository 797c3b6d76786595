"""The XLA:CPU YNNPACK fusion workaround (attndyn.core.jaxsetup)."""

import os

import numpy as np

from attndyn.core import jaxsetup


def test_ynn_flag_is_set_before_jax_runs():
    assert "xla_cpu_experimental_ynn_fusion_type" in os.environ.get("XLA_FLAGS", "")


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
