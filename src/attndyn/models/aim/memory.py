"""The AIM simulation's peak memory as a formula of its config (the ``memory_terms`` hook of
:mod:`attndyn.models.base`): what :func:`attndyn.models.aim.simulation.build` allocates per seed,
times the seeds run at once under ``vmap``."""

from __future__ import annotations

from attndyn.models.aim.config import AIMConfig

COPIES = 5
"""Live copies of the student in a step: parameters in and out of the loop, gradients, updates,
the kept (finite) parameters."""


def _width(ratio: float, d: int) -> int:
    return max(1, int(round(ratio * d)))


def memory_terms(config: AIMConfig, seeds: int) -> dict[str, float]:
    """{term: bytes} for ``seeds`` seeds (module doc)."""
    w = 8 if config.dtype == "float64" else 4
    d, L, B = config.d, config.L, config.batch
    r, r_star = _width(config.rho, d), _width(config.teacher_rho, d)
    k, k_star = config.n_student, config.n_teacher
    size = {"tied": d * r, "direct": d * d, "untied": 2 * d * r}
    student = sum(size[p] for p in config.student_kinds)
    teacher = {"wishart": d * r_star, "identity": d * d, "product": 2 * d * r_star}
    # observation: one d×d matrix per letter (untied: S, Sᵀ, A, B) and cached word prefixes
    letters = sum(4 if p == "untied" else 1 for p in config.student_kinds) + sum(
        4 if p == "product" else 1 for p in config.teacher_kinds
    )
    n_obs = letters * (letters + 1) * d * d
    n_tokens = 3 * (B + config.test_size) * L * (d + k * r + k_star * r_star)
    terms = {
        "seeds·d·rho·d student (param, heads, layers) with gradients": COPIES * student,
        "seeds·d·teacher_rho·d teacher": sum(teacher[p] for p in config.teacher_kinds),
        "seeds·d² observation matrices (param, heads, moment_degree)": n_obs,
        "seeds·(batch + test_size)·L·d tokens and forms": n_tokens,
    }
    if config.values == "gaussian" and config.layers > 0:
        terms["seeds·heads·layers·d² value matrices"] = (
            (config.heads + config.n_teacher_heads) * config.layers * d * d
        )
    return {name: seeds * n * w for name, n in terms.items()}
