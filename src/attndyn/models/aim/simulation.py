"""The AIM simulation: the teacher–student :class:`~attndyn.core.trainer.Problem` that the
trainer runs (``build``), the family's time axes and ``simulate`` (P1 = arXiv 2609.03858).

``simulate(config)`` returns a Trajectory on the family's macroscopic time axis (tied
t = 4nα_d/d; direct S and untied τ = nα_d/d, untied also ``time_fast`` = nα_d).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.simulate import simulate_problem
from attndyn.core.trainer import Problem
from attndyn.core.updates import optimizer
from attndyn.models.aim import model
from attndyn.models.aim.config import NAME, AIMConfig
from attndyn.models.aim.observables import OVERFLOW, observe

TIME_LABEL = "time t (tied: 4nα_d/d; direct S, untied: nα_d/d)"
"""Axis label of ``time`` (P1 §3.2, App. E; :func:`time_axes`)."""


def _width(ratio: float, d: int) -> int:
    return max(1, int(round(ratio * d)))


def init_student(key: jax.Array, config: AIMConfig, dtype) -> dict | list[dict]:
    """P1 initialisations: W, S (not symmetric, so t₁(0) ≈ 0) or U, V with i.i.d. N(0, s²/d)
    entries; V has scale init_scale·v_scale so that t^A ≠ t^B (Assumption 4.4). With
    ``head_params``, a list of one such block per head (its layers), head h drawn from
    ``fold_in(key, h)``."""
    if config.head_params is None:
        return _student_block(key, config, config.param, config.n_student, dtype)
    return [
        _student_block(jax.random.fold_in(key, h), config, kind, config.layers + 1, dtype)
        for h, kind in enumerate(config.head_params)
    ]


def _student_block(key: jax.Array, config: AIMConfig, kind: str, k: int, dtype) -> dict:
    """``k`` stacked student indices of parameterisation ``kind`` (:func:`init_student`)."""
    d = config.d
    s = config.init_scale / np.sqrt(d)
    ku, kv = jax.random.split(key)
    if kind == "tied":
        return {"W": s * jax.random.normal(ku, (k, d, _width(config.rho, d)), dtype)}
    if kind == "direct":
        return {"S": s * jax.random.normal(ku, (k, d, d), dtype)}
    r = _width(config.rho, d)
    u = s * jax.random.normal(ku, (k, d, r), dtype)
    v = s * config.v_scale * jax.random.normal(kv, (k, d, r), dtype)
    return {"U": u, "V": v if config.init_mean is None else _set_mean(u, v, config.init_mean)}


def _set_mean(u: jax.Array, v: jax.Array, mean: float) -> jax.Array:
    """V + c U with c per index such that m = Tr(U (V + cU)ᵀ)/√d equals ``mean`` exactly."""
    root_d = jnp.sqrt(jnp.asarray(u.shape[1], u.dtype))
    c = (mean * root_d - jnp.sum(u * v, axis=(1, 2))) / jnp.sum(u * u, axis=(1, 2))
    return v + c[:, None, None] * u


def init_teacher(key: jax.Array, config: AIMConfig, dtype) -> dict | list[dict]:
    """Teacher indices: wishart F F*ᵀ (F entries N(0, scale/d), width teacher_rho·d), identity
    scale·I (F = √scale·I), or product U*V*ᵀ (entries N(0, scale/d)). With
    ``teacher_head_kinds``, a list of one block per head, head h drawn from ``fold_in(key, h)``."""
    if config.teacher_head_kinds is None:
        return _teacher_block(key, config, config.teacher_kind, config.n_teacher, dtype)
    return [
        _teacher_block(jax.random.fold_in(key, h), config, kind, config.layers + 1, dtype)
        for h, kind in enumerate(config.teacher_head_kinds)
    ]


def _teacher_block(key: jax.Array, config: AIMConfig, kind: str, k: int, dtype) -> dict:
    """``k`` stacked teacher indices of ``kind`` (:func:`init_teacher`)."""
    d = config.d
    s = np.sqrt(config.teacher_scale / d)
    r = _width(config.teacher_rho, d)
    ku, kv = jax.random.split(key)
    if kind == "wishart":
        return {"F": s * jax.random.normal(ku, (k, d, r), dtype)}
    if kind == "identity":
        eye = jnp.sqrt(jnp.asarray(config.teacher_scale, dtype)) * jnp.eye(d, dtype=dtype)
        return {"F": jnp.broadcast_to(eye, (k, d, d))}
    u = s * jax.random.normal(ku, (k, d, r), dtype)
    v = s * jax.random.normal(kv, (k, d, r), dtype)
    return {"U": u, "V": v if config.teacher_mean is None else _set_mean(u, v, config.teacher_mean)}


def init_values(key: jax.Array, config: AIMConfig, heads: int, dtype) -> jax.Array | None:
    """Fixed value matrices V^(h)_m (heads·layers, d, d) for ``values='gaussian'``: entries
    N(0, value_scale²/d) (P1 App. B.1 leaves them general); None for V = I."""
    if config.values == "identity" or config.layers == 0:
        return None
    shape = (heads * config.layers, config.d, config.d)
    return config.value_scale / np.sqrt(config.d) * jax.random.normal(key, shape, dtype)


def student_side(params: dict | list[dict], param: str) -> dict | list[dict]:
    """Student parameters in the ``forms`` layout (per head for a list: {"W"} is tied)."""
    if isinstance(params, list):
        return [_block_side(p) for p in params]
    return _block_side(params) if param == "tied" else dict(params)


def _block_side(block: dict) -> dict:
    """One block of student parameters in the ``forms`` layout ({"W"} → {"F"})."""
    if "W" in block:
        return {"F": block["W"]}
    return dict(block)


def params_of(side: dict | list[dict], param: str) -> dict | list[dict]:
    """The inverse of :func:`student_side`: simulator parameters from the ``forms`` layout."""
    if isinstance(side, list):
        return [{"W": s["F"]} if "F" in s else dict(s) for s in side]
    return {"W": side["F"]} if param == "tied" else dict(side)


def build(config: AIMConfig) -> Problem:
    """The AIM teacher–student problem as pure functions for the trainer."""
    dtype = jnp.dtype(config.dtype)
    d, L, B = config.d, config.L, config.batch
    root = model.covariance_root(config.C, L)
    cov = jnp.asarray(np.eye(L) if config.C is None else np.asarray(config.C), dtype)
    centred_student = config.param != "untied"
    centred_teacher = config.teacher_kind != "product"
    heads = {"student": config.heads, "teacher": config.n_teacher_heads}
    # on the tokens themselves only for value matrices V ≠ I; else on the base forms of X₀
    direct = config.values != "identity" and config.layers > 0
    maps = {
        who: model.make_output(
            config.output,
            config.activation,
            config.beta,
            h,
            config.layer_c,
            0 if direct else config.layers,
        )
        for who, h in heads.items()
    }

    def side_output(who, side, x, centred, values):
        if direct:
            return model.network_output(
                side, x, values, maps[who], heads[who], config.layers, config.beta, config.layer_c
            )
        return maps[who](model.side_forms(side, x, cov, centred))

    def outputs(params, state, x):
        values = state.get("values", {})
        student = student_side(params, config.param)
        y = side_output("student", student, x, centred_student, values.get("student"))
        y_star = side_output("teacher", state["teacher"], x, centred_teacher, values.get("teacher"))
        return y, y_star

    def init(key):
        k_student, k_teacher, k_test = jax.random.split(key, 3)
        params = init_student(k_student, config, dtype)
        state = {
            "teacher": init_teacher(k_teacher, config, dtype),
            "x_test": model.sample_tokens(k_test, config.test_size, L, d, root, dtype),
        }
        if direct:  # drawn from keys of their own: every other draw stays as it was
            k_vs, k_vt = jax.random.split(jax.random.fold_in(key, VALUES_STREAM))
            state["values"] = {
                "student": init_values(k_vs, config, config.heads, dtype),
                "teacher": init_values(k_vt, config, config.n_teacher_heads, dtype),
            }
        return params, state

    def sample(key):
        kx, kn = jax.random.split(key)
        x = model.sample_tokens(kx, B, L, d, root, dtype)
        return {"x": x, "noise_key": kn}

    def loss(params, state, batch):
        y, y_star = outputs(params, state, batch["x"])
        if config.label_noise > 0:
            y_star = y_star + config.label_noise * jax.random.normal(
                batch["noise_key"], y_star.shape, dtype
            )
        return jnp.mean(model.squared_error(y, y_star, config.loss_scale))

    def observe_fn(params, state):
        student = jax.tree.map(lambda a: a, student_side(params, config.param))
        obs = observe(student, state["teacher"], config.observed_param, config.moment_degree)
        if config.test_size > 0:
            y, y_star = outputs(params, state, state["x_test"])
            obs["loss"] = jnp.mean(model.squared_error(y, y_star, config.loss_scale))
        return obs

    eta = config.alpha_d * B
    return Problem(
        init=init,
        sample=sample,
        loss=loss,
        observe=observe_fn,
        update=optimizer("sgd", eta, weight_decay=config.weight_decay / d),
        batch=B,
    )


VALUES_STREAM = 0x56414C53
"""``fold_in`` constant of the value matrices' keys ("VALS")."""


def time_axes(config: AIMConfig, steps: np.ndarray) -> dict[str, np.ndarray]:
    """The paper's time axes at record ``steps``: ``time`` = samples · τ_d (tied τ_d = 4α_d/d,
    direct and untied α_d/d; P1 §3.2, App. E; a mixed student: that of ``param``) and, with an
    untied head, the fast time ``time_fast`` = nα_d."""
    samples = np.asarray(steps, dtype=np.int64) * config.batch
    axes = {"time": samples * config.time_per_sample}
    if "untied" in config.student_kinds:
        axes["time_fast"] = samples * config.alpha_d
    return axes


def simulate(config: AIMConfig, seeds=None):
    """Simulate online SGD of the AIM for every seed.

    Args:
        config: the validated AIMConfig.
        seeds: explicit seeds; default ``config.seed … config.seed + config.seeds − 1``.

    Returns:
        Trajectory (xarray.Dataset), dims ``(seed, time)`` = (S, R): observables ``t_k``,
        ``q_kl``, ``p_kl``, moments ``mu_<word>``, ``loss`` and the parameterisation's own
        (direct S: ``Psi_kl``, ``Omega_kl``, ``pplus_kl``, ``pminus_kl``; untied: ``m_k``,
        ``q1_kl``, ``q2_kl``, ``qsym_kl``, ``tA_k``, ``tB_k``), each (S, R) float64; ``time``
        the macroscopic time (tied 4nα_d/d, direct S and untied nα_d/d), ``samples`` n,
        ``step``, untied also ``time_fast`` = nα_d; ``diverged``/``diverged_step`` per seed.
    """
    return simulate_problem(
        lambda: build(config),
        config,
        seeds,
        family=NAME,
        overflow=OVERFLOW,
        times=lambda s: time_axes(config, s),
    )
