"""The Laplace gap's next order at langevin-plateau's minimiser (docs/langevin.md, "Laplace gap").

    python scripts/langevin_next_order.py [MODEL [PRESET]]   # default: attention paper

With μ_s ∝ exp(−βF), β = 2/s, and Z(β) = ∫ exp(−βF), E_μF − F* = −∂_β log Z. Cut the one O(2)
orbit of (W_Q, W_K) by the linear slice through θ* orthogonal to it: the orbit's length there is
J(y) ∝ 1 + ⟨a, y⟩ with a = θ*_QK/‖θ*_QK‖² (the generator is orthogonal on the (Q, K) block), and
on the slice F = F* + ½yᵀHy + T y³/6 + Q y⁴/24. Wick's theorem at covariance H⁻¹/β gives
log Z = −(p_eff/2) log β + b/β + O(β⁻²),

    b = −⅛ Σ Q_iijj/(h_i h_j) + ⅛ Σ_k u_k²/h_k + (1/12) Σ T_ijk²/(h_i h_j h_k) − ½ Σ_k a_k u_k/h_k,

u_k = Σ_i T_iik/h_i (eigenbasis of H on the slice), hence

    (E_μF − F*)/(s·p_eff/4) = 1 + c·s + O(s²),     c = b/p_eff.

Prints the four terms of b, c and 1 + c·s on the paper grid. Data as the experiment draws it
(float32), cast to float64; the minimiser is damped Newton's, polished in float64. An LoRA
minimiser's O(r) orbit is not handled (attention only).
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from jax.flatten_util import ravel_pytree  # noqa: E402

from attndyn.claims.runner import experiment_config  # noqa: E402
from attndyn.experiments.langevin.plateau_common import GD_SEED, potential_fields  # noqa: E402
from attndyn.models.langevin import LangevinConfig, frozen_part  # noqa: E402
from attndyn.models.langevin.model import potential  # noqa: E402
from attndyn.models.langevin.stationary import minimise_newton  # noqa: E402


def main(model: str = "attention", preset: str = "paper") -> None:
    if model != "attention":
        raise SystemExit("model: only 'attention' (the O(d_k) orbit's Jacobian is coded)")
    cfg = experiment_config("langevin-plateau", preset, {})[1]
    lc = LangevinConfig(**potential_fields(cfg.attention), s=0.0)
    params = minimise_newton(lc, range(GD_SEED + cfg.seed, GD_SEED + cfg.seed + 1), cfg.gd_steps)[3]
    pot = potential(lc)
    f64 = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), tree)  # noqa: E731
    frozen = f64(frozen_part(lc))
    x, unravel = ravel_pytree(f64(params))

    def F(z):
        return pot.F(unravel(z), frozen)

    for _ in range(20):  # Newton in float64 on the non-flat directions
        w, U = np.linalg.eigh(np.asarray(jax.hessian(F)(x)))
        keep = w > 1e-8
        x = x - U[:, keep] @ ((U[:, keep].T @ np.asarray(jax.grad(F)(x))) / w[keep])
    w, U = np.linalg.eigh(np.asarray(jax.hessian(F)(x)))
    flat = int(np.sum(np.abs(w) < 1e-8 * w[-1]))
    P, h = U[:, flat:], w[flat:]
    T = np.einsum("abc,ai,bj,ck->ijk", np.asarray(jax.jacfwd(jax.hessian(F))(x)), P, P, P)
    Q4 = np.asarray(jax.jacfwd(jax.jacfwd(jax.hessian(F)))(x))
    Q4 = np.einsum("abcd,ai,bj,ck,dl->ijkl", Q4, P, P, P, P)
    tree = unravel(x)
    qk = np.asarray(ravel_pytree({**tree, "V": 0 * tree["V"]})[0])
    a = P.T @ (qk / (qk @ qk))
    u = np.einsum("iik,i->k", T, 1 / h)
    terms = {
        "quartic  -1/8 Q_iijj/(h_i h_j)": -np.einsum("iijj,i,j->", Q4, 1 / h, 1 / h) / 8,
        "cubic    1/8 u_k^2/h_k": np.sum(u**2 / h) / 8,
        "cubic    1/12 T_ijk^2/(h_i h_j h_k)": np.einsum("ijk,i,j,k->", T**2, 1 / h, 1 / h, 1 / h)
        / 12,
        "orbit    -1/2 a_k u_k/h_k": -0.5 * np.sum(a * u / h),
    }
    p_eff = len(h)
    b = sum(terms.values())
    print(
        f"{model} ({preset}): F* = {float(F(x)):.6f}, "
        f"|grad F| = {np.linalg.norm(jax.grad(F)(x)):.1e}"
    )
    print(f"p = {len(w)}, flat = {flat}, p_eff = {p_eff}, h_min = {h[0]:.4f}, h_max = {h[-1]:.3f}")
    for name, v in terms.items():
        print(f"  {name}: {v:+.3f}")
    print(f"b = {b:.3f}, c = b/p_eff = {b / p_eff:.3f}")
    for s in sorted(set(cfg.s_grid) | {0.025, 0.0125}, reverse=True):
        print(f"  s = {s}: 1 + c·s = {1 + b / p_eff * s:.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
