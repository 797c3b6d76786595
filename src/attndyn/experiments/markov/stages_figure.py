"""The panels of arXiv 2605.01199's Fig. 2 for ``markov-stages`` (seed 0 of the run).

(a) L − L* with the plateau of Prop. 3.3 and the detected stages; (b) effective ranks of W₀ and
W_QK; (c) attention 𝔸_{i,top} of every query on the frequent token (Fig. 2C); (d) per-token
norms ‖W₀[i]‖ (Fig. 2 D2); (e) attention entropies H(𝔸_i) (Fig. 2 D1); (f) PCA trajectory of
the rows of W₀ (Fig. 2B); (g)–(j) condensation heatmaps, the pairwise cosines of W₀'s rows at
the end of condensation, focus, the first dilution and the run (Fig. 2A, Appendix E.2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attndyn.figures.draw import new_figure

_COLOURS = {"condensation": "C0", "focus": "C2", "dilution": "C3", "restart": "C4"}


def _shade(ax, stages: list[dict]) -> None:
    for st in stages:
        ax.axvspan(max(st["start"], 1e-3), st["end"], color=_COLOURS[st["name"]], alpha=0.12)


def _cos_matrix(traj, k: int, d: int) -> np.ndarray:
    c = np.eye(d)
    for i in range(d):
        for j in range(i + 1, d):
            c[i, j] = c[j, i] = float(traj[f"cos_{i}_{j}"].values[0, k])
    return c


def draw(config, traj, m: dict[str, Any]):
    """The figure (a matplotlib Figure)."""

    t = traj["time"].values
    pos = t > 0
    d = len(m["pi"])
    top = int(np.argmax(m["pi"]))
    stages = m["stages"][0]
    fig, _ = new_figure(0, figsize=(16, 10))
    grid = fig.add_gridspec(3, 4)
    one = lambda name: traj[name].values[0]  # noqa: E731

    ax = fig.add_subplot(grid[0, 0])
    ax.loglog(t[pos], np.maximum(one("loss_gap")[pos], 1e-12), "k")
    ax.axhline(m["plateau_gap_theory"], color="C1", ls="--", label="Σπ_i KL(P_i‖π) (Prop. 3.3)")
    _shade(ax, stages)
    for name, colour in _COLOURS.items():
        ax.plot([], [], color=colour, alpha=0.4, lw=6, label=name)
    ax.set(xlabel="t", ylabel="L − L*", title="(a) loss gap and detected stages")
    ax.legend(fontsize=7, frameon=False)

    ax = fig.add_subplot(grid[0, 1])
    ax.semilogx(t[pos], one("erank_W0")[pos], label="erank W₀")
    ax.semilogx(t[pos], one("erank_WQK")[pos], label="erank W_QK")
    _shade(ax, stages)
    ax.set(xlabel="t", ylabel="effective rank", title="(b) effective ranks")
    ax.legend(fontsize=7, frameon=False)

    ax = fig.add_subplot(grid[0, 2])
    for i in range(d):
        ax.semilogx(t[pos], one(f"attn_{i}_{top}")[pos], label=f"query {i}")
    _shade(ax, stages)
    ax.set(xlabel="t", ylabel=f"𝔸_(i,{top})", title="(c) attention on the frequent token")
    ax.legend(fontsize=7, frameon=False)

    ax = fig.add_subplot(grid[0, 3])
    for i in range(d):
        ax.loglog(t[pos], one(f"norm_{i}")[pos], label=f"token {i}")
    ax.set(xlabel="t", ylabel="‖W₀[i]‖", title="(d) embedding norms")
    ax.legend(fontsize=7, frameon=False)

    ax = fig.add_subplot(grid[1, 0])
    for i in range(d):
        ax.semilogx(t[pos], one(f"entropy_{i}")[pos], label=f"query {i}")
    ax.semilogx(t[pos], one("entropy_mean")[pos], "k--", label="Σπ_i H(𝔸_i)")
    _shade(ax, stages)
    ax.set(xlabel="t", ylabel="nats", title="(e) attention entropy")
    ax.legend(fontsize=7, frameon=False)

    ax = fig.add_subplot(grid[1, 1])
    for i in range(d):
        x, y = one(f"pc1_{i}"), one(f"pc2_{i}")
        ax.plot(x, y, "-", color=f"C{i}", lw=1, label=f"token {i}")
        ax.scatter(x, y, c=np.log10(np.maximum(t, t[pos][0])), cmap="viridis", s=8)
    ax.set(xlabel="PC1", ylabel="PC2", title="(f) PCA of W₀ rows (colour: log t)")
    ax.legend(fontsize=7, frameon=False)

    ax = fig.add_subplot(grid[1, 2:])
    ax.semilogx(t[pos], one("align_phi")[pos], label="cos(Φ, ππᵀ)")
    ax.semilogx(t[pos], one("align_pi")[pos], label="|cos(u₁(W₀), π)|")
    ax.semilogx(t[pos], np.minimum(one("wqk_drift")[pos], 2.0), label="W_QK drift (≤ 2)")
    _shade(ax, stages)
    ax.set(
        xlabel="t", ylabel="alignment / drift", title="alignments and the attention block's drift"
    )
    ax.legend(fontsize=7, frameon=False)

    picks = []
    for name in ("condensation", "focus", "dilution"):
        found = [s for s in stages if s["name"] == name]
        if found:
            picks.append((name, found[0]["end"]))
    picks.append(("end", float(t[-1])))
    for c, (name, when) in enumerate(picks[:4]):
        ax = fig.add_subplot(grid[2, c])
        k = int(np.argmin(np.abs(t - when)))
        im = ax.imshow(_cos_matrix(traj, k, d), vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set(title=f"cos(W₀[i], W₀[j]) at {name}, t = {t[k]:.3g}", xticks=range(d))
        ax.set(xlabel="token j", ylabel="token i")
        ax.set_yticks(range(d))
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(
        f"markov-stages: π = {tuple(round(p, 3) for p in m['pi'])}, λ = {m['lam']}, m = "
        f"{config.base.m}, ε = {config.base.epsilon:g}, {config.base.optimizer}"
    )
    return fig  # save_figure lays it out
