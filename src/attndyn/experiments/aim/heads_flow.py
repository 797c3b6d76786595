"""The population flow of P1 (arXiv 2609.03858, Thm 1; ``population-flow`` of the aim theory,
:mod:`attndyn.models.aim.theory.population`) for many seeds at once, each from its own SGD seed's
initial matrices, so that SGD and theory are paired seed by seed (``aim-heads``).

The flow of seed s is dθ_s/dt = −(α_d/τ_d) ∇_θ Φ_d(θ_s; teacher_s) (P1 Eqs. 7, 25; Thm 1's
Gaussian potential Φ, plus the Edgeworth term with ``cumulants=3``). The seeds' flows are
independent; stacking them into one ODE integrates them with one compiled gradient (``vmap``
over seeds) instead of one compilation per seed. The rule is the family's: mirrored nodes
(``core.gaussian.antithetic``), as :func:`attndyn.models.aim.theory._population_flow` uses.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from attndyn.core.gaussian import antithetic
from attndyn.core.ode import integrate
from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.observables import observe
from attndyn.models.aim.theory.initial import initial_matrices
from attndyn.models.aim.theory.population import flow_for
from attndyn.models.aim.theory.potential import cached_potential


def paired_flows(
    config: AIMConfig,
    seeds: list[int],
    times: np.ndarray,
    names: list[str],
    cumulants: int = 2,
    quad_log2: int = 12,
    rtol: float = 1e-6,
) -> dict[str, np.ndarray]:
    """The observables ``names`` along the population flow of every seed: {name: (seed, time)},
    each seed's flow started from the simulator's initial state of that seed. ``config`` is the
    model whose flow is integrated (a control may give a model other than SGD's)."""
    potential = cached_potential(config, quad_log2)
    potential = dataclasses.replace(potential, rule=antithetic(potential.rule), _jit={})
    pairs = [initial_matrices(config, s) for s in seeds]
    students = jax.tree.map(lambda *a: np.stack(a), *[p[0] for p in pairs])
    teachers = jax.tree.map(lambda *a: np.stack(a), *[p[1] for p in pairs])
    flow = flow_for(config, potential, pairs[0][1], cumulants)
    with jax.enable_x64(True):
        students = jax.tree.map(jnp.asarray, students)
        teachers = jax.tree.map(jnp.asarray, teachers)
        flat0, unravel = ravel_pytree(students)

        def phi(student, teacher):
            return dataclasses.replace(flow, teacher=teacher).phi(student)

        grads = jax.vmap(jax.grad(phi))

        @jax.jit  # the teachers are an argument: as constants XLA would fold their products
        def velocity(y, teachers):
            g = grads(unravel(y), teachers)
            return -flow.rate * (ravel_pytree(g)[0] + flow.decay * y)

        values = integrate(
            lambda t, y: np.asarray(velocity(jnp.asarray(y), teachers)),
            np.asarray(flat0),
            np.asarray(times, dtype=np.float64),
            rtol=rtol,
            method="RK45",
        )

        @jax.jit
        def observed(y, teachers):
            sides = unravel(y)
            obs = jax.vmap(lambda s, t: observe(s, t, config.param, 2))(sides, teachers)
            return {n: obs[n] for n in names}

        out = {n: np.full((len(seeds), len(times)), np.nan) for n in names}
        for i in range(len(times)):
            if np.all(np.isfinite(values[:, i])):
                rec = observed(jnp.asarray(values[:, i]), teachers)
                for n in names:
                    out[n][:, i] = np.asarray(rec[n])
    return out
