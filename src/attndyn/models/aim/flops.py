"""Lower bounds on the AIM simulation's floating-point work (the ``flops_floor`` hook of
:mod:`attndyn.models.base`): products that a step and an observation cannot skip, counted at
2mnk FLOPs for an (m×k)·(k×n) product, per seed, times the seeds run at once under ``vmap``.

Per step (P1 §3.1: G_ijk = x_iᵀ S_k x_j/√d on the B·L tokens of a batch): each student index
projects the tokens, X·W (tied), X·U and X·V (untied) or X·S (direct), and its gradient needs the
transposed product once more; a teacher index projects them once (the identity teacher S = cI
needs only the Gram matrices x_iᵀx_j). Per record point (observables.py): every index's d×d
matrix is formed (F Fᵀ, U Vᵀ with U Uᵀ and V Vᵀ; the identity teacher's √c·I·(√c·I)ᵀ too), each
distinct prefix of the moment words of degree 3 to ``moment_degree`` is one d×d product
(:func:`attndyn.models.aim.words.word_traces` caches them), and the test loss needs one
projection of the test tokens. Softmax, activations, the optimiser and elementwise work are not
counted.
"""

from __future__ import annotations

from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.memory import _width  # the simulator's widths, without importing JAX
from attndyn.models.aim.words import canonical_words

MAX_WORDS = 200_000
"""Enumerate the moment words only up to this many letter sequences; beyond, count one product
per degree (still a lower bound)."""


def prefix_products(config: AIMConfig) -> int:
    """The d×d products the observation's moment words need: distinct prefixes of length ≥ 2 of
    the canonical words of degree 3..moment_degree (observables.py's alphabet)."""
    names: list[str] = []
    transpose: dict[str, str] = {}
    kinds = config.student_kinds + config.teacher_kinds
    for k, kind in enumerate(kinds, start=1):
        if kind in ("tied", "wishart", "identity"):
            names.append(f"{k}")
            transpose[f"{k}"] = f"{k}"
            continue
        names += [f"{k}", f"{k}T"]
        transpose |= {f"{k}": f"{k}T", f"{k}T": f"{k}"}
        if kind in ("untied", "product"):
            names += [f"A{k}", f"B{k}"]
            transpose |= {f"A{k}": f"A{k}", f"B{k}": f"B{k}"}
    degrees = range(3, config.moment_degree + 1)
    if sum(len(names) ** n for n in degrees) > MAX_WORDS:
        return len(degrees)
    prefixes = {
        word[:j] for n in degrees for word in canonical_words(names, transpose, n)
        for j in range(2, n)
    }  # fmt: skip
    return len(prefixes)


def flops_floor(config: AIMConfig, seeds: int) -> tuple[float, float]:
    """(FLOPs per optimiser step, FLOPs per record point), lower bounds for ``seeds`` seeds."""
    d, L, B, n_test = config.d, config.L, config.batch, config.test_size
    r, r_star = _width(config.rho, d), _width(config.teacher_rho, d)
    cols = {"tied": r, "direct": d, "untied": 2 * r}  # columns projected per index
    teacher_cols = {"wishart": r_star, "product": 2 * r_star, "identity": 0}
    student_cols = sum(cols[p] for p in config.student_kinds)
    projected = student_cols * 2 + sum(teacher_cols[p] for p in config.teacher_kinds)
    gram = L * d * sum(p == "identity" for p in config.teacher_kinds)  # x_iᵀx_j per token pair
    step = 2.0 * B * L * d * projected + 2.0 * B * L * gram
    form = {"tied": 2.0 * d * d * r, "direct": 0.0, "untied": 6.0 * d * d * r}
    teacher_form = {
        "wishart": 2.0 * d * d * r_star,
        "product": 6.0 * d * d * r_star,
        "identity": 2.0 * d**3,
    }
    moments = 2.0 * d**3 * prefix_products(config)
    test = (
        2.0 * n_test * L * d * (student_cols + sum(teacher_cols[p] for p in config.teacher_kinds))
    )
    record = (
        sum(form[p] for p in config.student_kinds)
        + sum(teacher_form[p] for p in config.teacher_kinds)
        + moments
        + test
    )
    return seeds * step, seeds * record
