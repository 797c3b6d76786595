"""The AIM's population loss at finite d and its gradient flow (P1 = arXiv 2609.03858, Thm 1,
Lemma 10, Eqs. 7, 25, 395).

Online SGD with a fresh sample per step moves the parameters θ (the student's W, S or U, V) on
average along the population gradient. On the family's time axis t = n τ_d (tied τ_d = 4α_d/d,
direct S and untied α_d/d),

    dθ/dt = −(α_d/τ_d) [∇_θ E_x L(G(x; θ)) + (γ/d) θ],

up to SGD's own O(dα_d) and fluctuation terms. Theorem 1 replaces E_x L by the Gaussian potential
Φ(m, Ω, Ψ) of the forms' order parameters; at finite d the forms are not Gaussian, and the first
correction (Edgeworth) comes from their third joint cumulants κ = O(d^−½):

    E_x L(G) = Φ(m, Ω, Ψ) + (1/6) Σ_abc κ_abc E_N ∂_a∂_b∂_c L(G) + O(1/d),

which is P1 Lemma 10's C/√d made explicit. For Gaussian tokens, E x_ia x_jb = C_ij δ_ab, the
forms G_ijk = (x_iᵀ S_k x_j − c C_ij Tr S_k)/√d have exactly

    E G_ijk = C_ij m_k (m_k = Tr S_k/√d uncentred, 0 centred),
    Cov(G_ijk, G_i'j'l) = C_ii' C_jj' Ω_kl + C_ij' C_ji' Ψ_kl      (Thm 1 holds at every d),
    κ(G_a, G_b, G_c) = d^−3/2 Σ_(8 cycles) C C C Tr(S_ka^± S_kb^± S_kc^±)   (Wick),

the sum over the eight ways to join the six token legs of three bilinear forms into one cycle
(:func:`cycle_terms`). ``cumulants=2`` flows Φ itself at the config's d: for tied S it is the
matrix flow dS_k/dt = −Σ_l Γ_kl (S_l S_k + S_k S_l) (Eq. 263, :class:`~.hierarchy.MatrixFlow`);
``cumulants=3`` adds the Edgeworth term (docs/aim.md, "Finite d").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from attndyn.core.ode import integrate
from attndyn.models.aim.observables import observe
from attndyn.models.aim.simulation import build, params_of
from attndyn.models.aim.theory.initial import initial_matrices
from attndyn.models.aim.theory.potential import Potential

LEFT, RIGHT = 0, 1
"""The two token legs of a form x_iᵀ S x_j: the left one (x_i, S's row index), the right one."""


def cycle_terms(L: int, C: np.ndarray, entries: list[tuple[int, int, int]]):
    """The eight Wick cycles through three bilinear forms, for every triple of form entries.

    Entries are (k, i, j): the form x_iᵀ S_k x_j. A cycle leaves form a by one leg, enters b by
    one leg, leaves b by its other leg, enters c, leaves c, and closes on a's other leg; leaving a
    by its right leg keeps S_a, by its left leg gives S_aᵀ, and entering b by its left leg keeps
    S_b, by its right leg S_bᵀ. Returns [(orientations (oa, ob, oc) with 0 = S, 1 = Sᵀ, the
    (n, n, n) array of the cycle's C C C factors)] for the 8 cycles."""
    n = len(entries)
    legs = np.array([[i, j] for _, i, j in entries])  # legs[e, LEFT] = i, legs[e, RIGHT] = j
    out = []
    for exit_a, enter_b, enter_c in itertools.product((RIGHT, LEFT), (LEFT, RIGHT), (LEFT, RIGHT)):
        orient = (
            0 if exit_a == RIGHT else 1,
            0 if enter_b == LEFT else 1,
            0 if enter_c == LEFT else 1,
        )
        a_out, a_in = legs[:, exit_a], legs[:, 1 - exit_a]
        b_in, b_out = legs[:, enter_b], legs[:, 1 - enter_b]
        c_in, c_out = legs[:, enter_c], legs[:, 1 - enter_c]
        factor = (
            C[a_out[:, None, None], b_in[None, :, None]]
            * C[b_out[None, :, None], c_in[None, None, :]]
            * C[c_out[None, None, :], a_in[:, None, None]]
        )
        out.append((orient, factor.reshape(n, n, n)))
    return out


def order_parameters(mats: jax.Array, centred: np.ndarray):
    """(m, Ω, Ψ) of stacked d×d matrices (K, d, d): m_k = Tr S_k/√d for uncentred indices (0 for
    centred ones), Ω_kl = Tr(S_k S_lᵀ)/d, Ψ_kl = Tr(S_k S_l)/d (P1 Thm 1, Eq. 4)."""
    d = mats.shape[-1]
    trace = jnp.trace(mats, axis1=1, axis2=2)
    m = jnp.where(jnp.asarray(centred), 0.0, trace / jnp.sqrt(d))
    omega = jnp.einsum("kab,lab->kl", mats, mats) / d
    psi = jnp.einsum("kab,lba->kl", mats, mats) / d
    return m, omega, psi


@dataclass
class ThirdCumulants:
    """κ over the potential's kept form entries, from the stacked matrices (module docstring)."""

    potential: Potential
    symmetric: bool  # every matrix symmetric: one orientation suffices
    _cycles: list = field(init=False, repr=False)
    _k: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        L = self.potential.L
        entries = [(int(e) // (L * L), (int(e) // L) % L, int(e) % L) for e in self.potential.keep]
        self._k = np.array([k for k, _, _ in entries])
        cycles = cycle_terms(L, self.potential.C, entries)
        if self.symmetric:  # Tr of a product of symmetric matrices ignores the orientations
            self._cycles = [((0, 0, 0), sum(f for _, f in cycles))]
        else:
            self._cycles = cycles

    def __call__(self, mats: jax.Array) -> jax.Array:
        d = mats.shape[-1]
        both = jnp.stack([mats, jnp.swapaxes(mats, 1, 2)])  # [orientation, k]
        k = jnp.asarray(self._k)
        terms = []
        for (oa, ob, oc), factor in self._cycles:
            prod = jnp.einsum("lab,mbc->lmac", both[ob], both[oc])
            mu = jnp.einsum("kca,lmac->klm", both[oa], prod) / d  # Tr(S_k S_l S_m)/d, oriented
            terms.append(
                jnp.asarray(factor) * mu[k[:, None, None], k[None, :, None], k[None, None, :]]
            )
        return jnp.sum(jnp.stack(terms), axis=0) / jnp.sqrt(d)


def side_matrices(side: dict | list[dict]) -> jax.Array:
    """Stacked d×d matrices of one side in the ``forms`` layout: F Fᵀ, S or U Vᵀ (a list of
    per-head blocks: theirs in index order)."""
    if isinstance(side, list):
        return jnp.concatenate([side_matrices(b) for b in side])
    if "F" in side:
        return side["F"] @ jnp.swapaxes(side["F"], 1, 2)
    if "S" in side:
        return side["S"]
    return side["U"] @ jnp.swapaxes(side["V"], 1, 2)


@dataclass
class PopulationFlow:
    """dθ/dt = −rate·[∇_θ Φ_d(θ) + decay·θ] for the student side θ with the teacher fixed, Φ_d the
    Gaussian potential of the forms (``cumulants=2``) or with its Edgeworth term (3)."""

    potential: Potential
    teacher: dict
    centred: np.ndarray  # per index, students then teachers
    cumulants: int
    rate: float  # α_d/τ_d: d/4 tied, d direct and untied
    decay: float = 0.0  # γ/d
    symmetric: bool = True
    _jit: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._kappa = (
            ThirdCumulants(self.potential, self.symmetric) if self.cumulants == 3 else None
        )

    def phi(self, student: dict) -> jax.Array:
        """The population loss Φ_d of the student side (without the label-noise constant)."""
        mats = jnp.concatenate([side_matrices(student), side_matrices(self.teacher)])
        m, omega, psi = order_parameters(mats, self.centred)
        kappa = None if self._kappa is None else self._kappa(mats)
        return self.potential._phi(m, omega, psi, kappa)

    def solve(self, student0: dict, times: np.ndarray, rtol: float) -> list[dict]:
        """The student side at ``times`` (a list of dicts of float64 arrays), NaN after a stop."""
        with jax.enable_x64(True):
            flat0, unravel = ravel_pytree(jax.tree.map(jnp.asarray, student0))
            grad = jax.jit(lambda y: ravel_pytree(jax.grad(self.phi)(unravel(y)))[0])

            def rhs(t, y):
                y = jnp.asarray(y)
                return np.asarray(-self.rate * (grad(y) + self.decay * y))

            values = integrate(rhs, np.asarray(flat0), times, rtol=rtol, method="RK45")
            return [jax.tree.map(np.asarray, unravel(jnp.asarray(v))) for v in values.T]

    def value(self, student: dict) -> float:
        with jax.enable_x64(True):
            if "phi" not in self._jit:
                self._jit["phi"] = jax.jit(self.phi)
            return (
                float(self._jit["phi"](jax.tree.map(jnp.asarray, student)))
                + self.potential.constant
            )


def _rate(config) -> float:
    """α_d/τ_d: the parameters' speed on the family's time axis per unit population gradient."""
    return config.alpha_d / config.time_per_sample


def _obs_jacobian(config, side: dict, teacher: dict, names):
    """(observable vector of ``names``, its Jacobian in the student side) at ``side``."""

    def vec(s):
        o = observe(s, teacher, config.observed_param, 2)
        return jnp.stack([o[n] for n in names])

    return jax.jacrev(vec)(side)


def _contract(jac, grad) -> jax.Array:
    """Σ over the side's leaves of ⟨∂O/∂θ, g⟩ (a dict, or a list of per-head dicts)."""
    pairs = zip(jax.tree.leaves(jac), jax.tree.leaves(grad), strict=True)
    return jnp.sum(jnp.stack([jnp.einsum("o...,...->o", j, g) for j, g in pairs]), axis=0)


def sampled_drift(config, seed: int, names, samples: int, chunk: int = 2000):
    """(drift, standard error) of the observables ``names`` at the seed's initial state under the
    finite-d population gradient, dO/dt = −(α_d/τ_d)⟨∇_θ O, E_x ∇_θ L⟩, E_x over ``samples``
    fresh token draws in chunks (the error from the spread of the chunk means)."""
    student, teacher = initial_matrices(config, seed)
    with jax.enable_x64(True):
        side = jax.tree.map(jnp.asarray, student)
        teacher = jax.tree.map(jnp.asarray, teacher)
        cfg = config.model_copy(update={"test_size": 0, "batch": chunk, "dtype": "float64"})
        problem = build(cfg)
        jac = _obs_jacobian(config, side, teacher, names)

        @jax.jit
        def chunk_drift(key):
            batch = problem.sample(key)
            loss = lambda s: problem.loss(  # noqa: E731
                params_of(s, config.param), {"teacher": teacher}, batch
            )
            return _contract(jac, jax.grad(loss)(side))

        key = jax.random.PRNGKey(10_000 + seed)
        n = max(2, samples // chunk)
        means = np.array([np.asarray(chunk_drift(jax.random.fold_in(key, c))) for c in range(n)])
    rate = _rate(config)
    return -rate * means.mean(axis=0), rate * means.std(axis=0, ddof=1) / np.sqrt(n)


def flow_for(config, potential: Potential, teacher: dict, cumulants: int) -> PopulationFlow:
    """The population flow of ``config``'s student against ``teacher`` (forms layout): centred
    indices as the simulator's (tied and direct students, symmetric teachers; per index with
    ``head_params`` / ``teacher_head_kinds``), its rate α_d/τ_d and weight decay γ/d."""
    kinds = config.student_kinds + config.teacher_kinds
    centred = np.array([k not in ("untied", "product") for k in kinds])
    return PopulationFlow(
        potential,
        teacher,
        centred,
        cumulants,
        rate=_rate(config),
        decay=config.weight_decay / config.d,
        symmetric=all(k in ("tied", "wishart", "identity") for k in kinds),
    )


def theory_drift(config, seed: int, names, potential: Potential, cumulants: int) -> np.ndarray:
    """The drift of :func:`sampled_drift` with E_x L replaced by Φ (``cumulants=2``) or Φ plus its
    Edgeworth term (3), at the same initial state: −(α_d/τ_d)⟨∇_θ O, ∇_θ Φ_d⟩."""
    student, teacher = initial_matrices(config, seed)
    with jax.enable_x64(True):
        side = jax.tree.map(jnp.asarray, student)
        teacher = jax.tree.map(jnp.asarray, teacher)
        flow = flow_for(config, potential, teacher, cumulants)
        jac = _obs_jacobian(config, side, teacher, names)
        return -_rate(config) * np.asarray(_contract(jac, jax.grad(flow.phi)(side)))
