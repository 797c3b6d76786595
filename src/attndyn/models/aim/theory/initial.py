"""Where the AIM theory starts: the simulator's own initial matrices and their order parameters
(finite d, per seed), their d → ∞ limit, and the simulator's time grid."""

from __future__ import annotations

import jax
import numpy as np

from attndyn.core.grids import record_grid
from attndyn.core.trainer import seed_keys
from attndyn.models.aim import build, student_side, time_axes
from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.observables import observe


def time_grid(config: AIMConfig) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(time axes, samples) of the simulator's record grid for ``config``: the axes are
    :func:`~attndyn.models.aim.time_axes` (``time``; untied also ``time_fast``)."""
    steps = record_grid(config)
    return time_axes(config, steps), steps * config.batch


def n_student(config: AIMConfig) -> int:
    """Number of student indices K_s (heads × layers); indices 1..K_s are trainable."""
    return config.n_student


def initial_matrices(config: AIMConfig, seed: int) -> tuple[dict, dict]:
    """(student side, teacher side) of the simulator's initial state for one seed in the
    ``forms`` layout ({"F"}, {"S"} or {"U", "V"}, stacked over indices), as float64 NumPy
    arrays. The draws are made in the config's dtype, as the simulator makes them (float32 and
    float64 normal draws from the same key differ)."""
    values = {k: getattr(config, k) for k in AIMConfig.model_fields}
    with jax.enable_x64(config.dtype == "float64"):
        problem = build(AIMConfig(**{**values, "test_size": 0}))
        init_keys, _ = seed_keys(np.array([seed]))
        params, state = problem.init(init_keys[0])
        student = student_side(params, config.param)
        teacher = state["teacher"]
    as64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
    return jax.tree.map(as64, student), jax.tree.map(as64, teacher)


def initial_observables(config: AIMConfig, degree: int) -> dict[str, float]:
    """Order parameters and moments up to ``degree`` at t = 0, averaged over the config's seeds."""
    acc: dict[str, float] = {}
    seeds = config.seed_list
    for seed in seeds:
        student, teacher = initial_matrices(config, seed)
        with jax.enable_x64(True):
            obs = observe(student, teacher, config.observed_param, max(degree, 2))
        for k, v in obs.items():
            acc[k] = acc.get(k, 0.0) + float(v) / len(seeds)
    return acc


def limit_state(config: AIMConfig) -> dict[str, float]:
    """d → ∞ initial order parameters of tied AIM (arXiv 2609.03858 §3.1 initialisation):
    t_k, q_kl under the simulator's names, for every index k (students, then teachers).

    A Wishart index S = FFᵀ with F ∈ R^{d×ρd} of N(0, σ²/d) entries has t = Tr S/d → ρσ² and
    q = Tr S²/d → σ⁴ρ(1 + ρ) (Marchenko–Pastur moments); the identity teacher σ·I has t = σ,
    q = σ². Independent indices are asymptotically free, so q_kl → t_k t_l for k ≠ l. Students:
    ρ = ``rho``, σ² = ``init_scale``²; teachers: ρ = ``teacher_rho``, σ² = ``teacher_scale``."""
    if config.param != "tied" or config.mixed:
        raise ValueError(f"limit_state: tied AIM only (param={config.param!r}, uniform heads)")
    s2 = config.init_scale**2
    t = [config.rho * s2] * n_student(config)
    q = [s2 * s2 * config.rho * (1 + config.rho)] * n_student(config)
    n_teacher = config.n_teacher
    rho, s = config.teacher_rho, config.teacher_scale
    if config.teacher_kind == "identity":
        t_star, q_star = s, s * s
    else:
        t_star, q_star = rho * s, s * s * rho * (1 + rho)
    t += [t_star] * n_teacher
    q += [q_star] * n_teacher
    out = {}
    for k in range(1, len(t) + 1):
        out[f"t_{k}"] = t[k - 1]
        for l in range(k, len(t) + 1):
            out[f"q_{k}{l}"] = q[k - 1] if k == l else t[k - 1] * t[l - 1]
    return out
