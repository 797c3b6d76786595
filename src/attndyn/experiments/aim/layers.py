"""``aim-layers`` (P1 = arXiv 2609.03858, Eqs. 1–2, App. B.1; Thm 1, Lemma 10): online SGD of
the two-layer attention-indexed model — one residual attention layer X₁ = c·X₀ +
softmax(β A₁)X₀ before the softmax readout, tied S = WWᵀ — against the population flow of
Theorem 1's potential Φ and of Φ₃ = Φ plus the first Edgeworth term (docs/aim.md, "Finite d";
docs/claims/aim-layers.md).

Indices: student 1 (layer 1), 2 (readout); teacher 3, 4. The flow of seed s starts from SGD seed
s's own matrices (``population-flow``, models/aim/theory/population.py), so each gap
Δ_SGD − Δ_flow of an order parameter over the horizon is paired by seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig
from attndyn.claims.spec import Evidence, Retired, at_most, below, claim, within
from attndyn.claims.stats import Interval, jackknife_ci, mean_ci, worst
from attndyn.claims.verdict import Check
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.aim.config import AIMConfig

LAYER1 = ("t_1", "q_11", "q_13")
READOUT = ("t_2", "q_22", "p_24")
SLOPED = ("q_22", "p_24")  # the readout's second moments: t₂'s gap is unresolved at d = 48 (notes)
FLOWS = {"phi": 2, "phi3": 3}  # flow name → cumulants of its potential


class LayersConfig(ExperimentConfig):
    base: AIMConfig = Base(
        AIMConfig,
        "tied, one residual layer before the softmax readout (layers = 1, c = 1), L = 2 tokens, "
        "Wishart teachers, batch 32, α_d = lr/(d log d), t ≤ 0.5 on a linear grid of 11 records",
        param="tied",
        output="softmax",
        layers=1,
        L=2,
        batch=32,
        lr=0.05,
        t_max=0.5,
        grid="linear",
        records=11,
    )
    d: list[int] = Field([48, 96, 192], min_length=1, description="dimensions (increasing)")
    seeds: int = Field(16, ge=2, description="SGD seeds")
    theory_seeds: int = Field(
        8, ge=2, description="seeds whose flows (from their own matrices) are integrated"
    )
    quad_log2: int = Field(16, ge=12, le=20, description="the flows' quadrature: 2^m nodes")
    rtol: float = Field(1e-6, gt=0, lt=1e-3, description="the flows' ODE tolerance")
    readout_tol: float = Field(
        0.15, gt=0, description="largest |gap|/|Δ_flow| of a readout order parameter"
    )
    share_tol: float = Field(0.5, gt=0, description="Edgeworth share within 1 ± tol")
    slope_bound: float = Field(
        -0.25, description="largest slope of log|gap| on log d (Lemma 10: −½, tolerance ¼)"
    )
    layer1_slope: bool = Field(True, description="claim the layer-1 gap's slope")
    theory_c: float | None = Field(
        None, description="control: the flows' residual weight c (None: the model's own)"
    )

    @model_validator(mode="after")
    def _consistent(self) -> LayersConfig:
        if self.theory_seeds > self.seeds:
            raise ValueError(
                f"theory_seeds: must be at most seeds = {self.seeds} (got {self.theory_seeds})"
            )
        if self.d != sorted(set(self.d)):
            raise ValueError(f"d: must be increasing without repeats (got {self.d})")
        if self.base.layers != 1 or self.base.param != "tied":
            raise ValueError("base: aim-layers needs layers = 1 and param = 'tied'")
        return self


def _slopes(config: LayersConfig) -> bool:
    return len(config.d) >= 3


def slope(d, values) -> float:
    """Least-squares slope of log|values| on log d."""
    return float(np.polyfit(np.log(np.asarray(d, float)), np.log(np.abs(values)), 1)[0])


def drift(traj, name: str) -> np.ndarray:
    """Δ = value at the horizon − value at t = 0 (per seed for SGD; a 1-vector for a flow)."""
    v = np.atleast_2d(traj[name].values)
    return v[:, -1] - v[:, 0]


class AIMLayers(Experiment[LayersConfig]):
    name = "aim-layers"
    description = (
        "P1 Eqs. 1–2 / Thm 1: two-layer SGD against Theorem 1's flow; its layer-1 gap is the "
        "O(d^−½) Edgeworth term"
    )
    Config = LayersConfig
    presets = {
        "tiny": {"d": [64], "theory_seeds": 4, "quad_log2": 14},
        "small": {},
        "paper": {"d": [96, 192, 384, 768]},
    }
    preset_notes = {
        "tiny": "d = 64, 16 SGD seeds, the flows of seeds 0–3 on 2^14 mirrored nodes (at 2^12 "
        "the Edgeworth term of seed 0 moved Δq₁₁ by 0.002 instead of 0.012; 2^14 and 2^16 "
        "differ by 0.0011, 8 % of the gap). No slope claims (one d).",
        "small": "d = 48, 96, 192, 16 SGD seeds, flows of 8 seeds on 2^16 nodes; both slopes "
        "claimed (with the flows of 4 seeds readout-gap-slope failed at offset 0: notes).",
        "paper": "d = 96, 192, 384, 768 (P1's figures use d = 400–800), flows of 8 seeds (not "
        "run on two cores: SGD at d = 384 took 28 min for 8 seeds).",
    }
    controls = {
        "no-residual-theory": Control(
            {"theory_c": 0.0},
            "the flows of a network without the residual path (c = 0: X₁ = softmax(βA₁)X₀) "
            "against SGD of the residual one: a wrong model, whose gap is O(1) (readout q₂₂ "
            "drifts by −0.06 instead of −0.20 at d = 64)",
        ),
    }
    claims = (
        claim(
            "readout-follows-theory",
            "two layers: SGD's readout order parameters follow Theorem 1's flow",
            statistic="at the largest d, |gap̄|/|Δ̄_Φ| for t₂, q₂₂, p₂₄ (gap = Δ_SGD − Δ_Φ over "
            "t ≤ t_max, paired by seed; bars: means over the theory seeds), jackknife-t 95 % CI "
            "over seed pairs; the order parameter with the worst CI high end",
            target=at_most("readout_tol"),
            reason="Thm 1: the finite-d population loss is Φ of the order parameters up to "
            "Lemma 10's C/√d (constant not stated), so the mean flow is Φ's up to O(d^−½); "
            "0.15 ≥ 1/√64, the d^−½ scale at the largest d of tiny, lets a unit constant pass "
            "and fails a wrong model's O(1) gap",
            controls=("no-residual-theory",),
        ),
        claim(
            "layer1-edgeworth-share",
            "two layers: the layer-1 gap between SGD and Theorem 1's flow is the O(d^−½) "
            "Edgeworth term",
            statistic="at the largest d, r = gap̄(Φ)/(Δ̄_Φ₃ − Δ̄_Φ) for q₁₁ (paired by seed), "
            "jackknife-t 95 % CI over seed pairs",
            target=within(1.0, "share_tol"),
            reason="Edgeworth: E_x L = Φ + (1/6) Σ κ_abc E ∂³L + O(1/d) with κ = O(d^−½) (P1 "
            "Eqs. 75–76; the two-layer loss is not even), so Φ₃'s flow removes the O(d^−½) part "
            "of the gap: r = 1 + O(d^−½); the band ± ½ is a factor-2 error either way",
            controls=("no-residual-theory",),
        ),
        claim(
            "readout-gap-slope",
            "two layers: the readout gap to Theorem 1's flow vanishes at least like d^−½",
            statistic="slope of log|gap̄(d)| on log d for q₂₂ and p₂₄, jackknife-t 95 % CI "
            "(seed pairs left out within each d); the one with the worst CI high end",
            target=below("slope_bound"),
            reason="P1 Lemma 10: |E_x L − Φ| ≤ C/√d, slope ≤ −½; tolerance ¼ for the curvature "
            "of log|gap| over the d in reach",
            controls=("no-residual-theory",),
            when=_slopes,
        ),
        claim(
            "layer1-gap-slope",
            "two layers: the layer-1 gap to Theorem 1's flow vanishes like d^−½",
            statistic="slope of log|gap̄(d)| on log d for q₁₁, jackknife-t 95 % CI (seed pairs "
            "left out within each d)",
            target=below("slope_bound"),
            reason="P1 Lemma 10 (as readout-gap-slope); the gap's leading term is the Edgeworth "
            "term, exactly of order d^−½",
            controls=("no-residual-theory",),
            when=lambda c: _slopes(c) and c.layer1_slope,
        ),
    )
    notes = (
        "**What the layer-1 gap is.** Theorem 1's Gaussian potential misses SGD's layer-1 "
        "drift at d ≤ 384 by as much as the drift itself (Δq₁₁: SGD −0.0022 ± 0.0004 against "
        "the flow's −0.0121 at d = 96). The gap is Theorem 1's O(d^−½) correction: adding the "
        "forms' exact third cumulants to the potential (Φ₃) removes 88–95 % of it along SGD's "
        "path at d = 96–384, and the gap falls like d^−0.50 [−0.68, −0.31] over that range "
        '(docs/aim.md, "Finite d"). What remains after Φ₃ (+0.0005 to +0.0008 in Δq₁₁) does not '
        "fall with d and has the sign of SGD's own Itô drift, O(c/(B log d)), which no "
        "population flow contains.\n\n"
        "The retired claims above: `readout-gap-slope` as first declared (the worst of t₂, q₂₂ "
        "and p₂₄) failed at small; it was first run with the flows of 4 seeds, now 8. The run "
        "that first failed gave the layer-1 gap along the path a slope of −0.49 [−0.59, −0.39] "
        "over 48–192 (the t = 0 drift is not the path's), so `layer1-gap-slope` is claimed at "
        "small too.\n\n"
        "**Identities are unit tests** (tests/test_aim_population.py): the Φ flow equals the "
        "tied matrix flow; the Edgeworth term vanishes for even losses and is exact for a cubic "
        "loss; the two-layer drift at d = 48 differs from the limit's by > 20 standard errors."
    )

    retired = (
        Retired(
            "readout-gap-slope",
            "the readout's gap to Φ shrinks with d (the worst of t₂, q₂₂ and p₂₄)",
            "< −0.25 (95% CI)",
            "small, seed offset 0 with the flows of 4 seeds: −0.673 [−1.14, −0.209] (t₂; fixed "
            "by 8 flows, target unchanged); with 8 flows, offset 3000: −0.42 [−0.83, −0.0096], "
            "again t₂ (offsets 0–2000 passed: −0.59, −0.62, −0.60)",
            "2026-12-07",
            "t₂'s gap at d = 48 (0.0008–0.0014 ± 0.0004–0.0006) is within two or three "
            "standard errors of zero, so no fit resolves its slope: the claim takes the "
            "readout's second moments q₂₂ and p₂₄ and reports t₂'s; judged at seed offsets "
            "4000, 5000, 6000 after the change",
            "readout-gap-slope",
        ),
    )

    def preconditions(self, config: LayersConfig, m: dict[str, Any]) -> list[Check]:
        return [
            Check.compare("diverged SGD seeds, all d", m["diverged_seeds"], "==", 0),
            Check("every drift finite", m["finite"]),
        ]

    def run(self, config: LayersConfig, ctx: RunContext) -> dict[str, Any]:
        theory = {} if config.theory_c is None else {"layer_c": config.theory_c}
        sims, flows = {}, {}
        for d in config.d:
            sims[d] = ctx.simulate("aim", config.base, d=d)
            for flow, cumulants in FLOWS.items():
                flows[(d, flow)] = [
                    ctx.predict(
                        "aim",
                        config.base,
                        d=d,
                        seeds=1,
                        seed=config.seed + s,
                        method="population-flow",
                        cumulants=cumulants,
                        quad_log2=config.quad_log2,
                        rtol=config.rtol,
                        **theory,
                    )
                    for s in range(config.theory_seeds)
                ]
        return {"sims": sims, "flows": flows}

    def measure(self, config: LayersConfig, results: dict[str, Any]) -> dict[str, Any]:
        n = config.theory_seeds
        per_d: dict[int, dict[str, Any]] = {}
        gaps: dict[str, list[np.ndarray]] = {}  # name → per d, the paired gaps to Φ's flow
        finite = True
        for d in config.d:
            sgd = results["sims"][d]
            row: dict[str, Any] = {}
            for name in LAYER1 + READOUT:
                s = drift(sgd, name)
                phi, phi3 = (
                    np.concatenate([drift(f, name) for f in results["flows"][(d, k)]])
                    for k in FLOWS
                )
                gap, gap3 = s[:n] - phi, s[:n] - phi3
                finite &= bool(np.all(np.isfinite(np.concatenate([s, phi, phi3]))))
                gaps.setdefault(name, []).append(gap)
                row[name] = {
                    "sgd": mean_ci(s),
                    "phi": float(phi.mean()),
                    "phi3": float(phi3.mean()),
                    "gap": mean_ci(gap),
                    "gap_phi3": mean_ci(gap3),
                    "relative": jackknife_ci(
                        [gap, phi], lambda g, p: float(abs(np.mean(g) / np.mean(p))), paired=True
                    ),
                    "share": jackknife_ci(
                        [gap, phi3 - phi], lambda g, e: float(np.mean(g) / np.mean(e)), paired=True
                    ),
                }
            per_d[d] = row
        slopes = {
            name: jackknife_ci(groups, lambda *g: slope(config.d, [np.mean(x) for x in g]))
            for name, groups in gaps.items()
            if _slopes(config)
        }
        diverged = sum(int(t["diverged"].sum()) for t in results["sims"].values())
        return dict(per_d=per_d, slopes=slopes, diverged_seeds=diverged, finite=finite)

    def evaluate(self, config: LayersConfig, m: dict[str, Any]) -> dict[str, Any]:
        top = m["per_d"][config.d[-1]]

        def worst_of(cells: dict[str, Interval], what: str) -> Evidence:
            key = worst(cells, "high")
            return Evidence(cells[key], detail=f"worst: {key} ({what})")

        q11 = top["q_11"]
        out = {
            "readout-follows-theory": worst_of(
                {k: top[k]["relative"] for k in READOUT},
                ", ".join(
                    f"{k} gap̄ {top[k]['gap'].value:+.4f} of Δ̄_Φ {top[k]['phi']:+.4f}"
                    for k in READOUT
                ),
            ),
            "layer1-edgeworth-share": Evidence(
                q11["share"],
                detail=f"Δq₁₁: SGD {q11['sgd'].value:+.5f}, Φ {q11['phi']:+.5f}, Φ₃ "
                f"{q11['phi3']:+.5f}; gap to Φ₃ {q11['gap_phi3'].value:+.5f}",
            ),
        }
        if _slopes(config):
            means = {k: [m["per_d"][d][k]["gap"].value for d in config.d] for k in READOUT}
            t2 = m["slopes"]["t_2"]
            out["readout-gap-slope"] = worst_of(
                {k: m["slopes"][k] for k in SLOPED},
                "; ".join(f"{k} gap̄ " + ", ".join(f"{v:.2g}" for v in means[k]) for k in READOUT)
                + f"; t_2's slope (reported) {t2.value:.3g} [{t2.low:.3g}, {t2.high:.3g}]",
            )
        if _slopes(config) and config.layer1_slope:
            gq = [m["per_d"][d]["q_11"]["gap"].value for d in config.d]
            out["layer1-gap-slope"] = Evidence(
                m["slopes"]["q_11"], detail="q₁₁ gap̄ " + ", ".join(f"{v:.2g}" for v in gq)
            )
        return out

    def figure(
        self, config: LayersConfig, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        d = config.d[-1]
        sgd = results["sims"][d]
        panels = ("q_11", "q_22")
        fig, axes = new_figure(1, 3, figsize=(13, 3.8))
        for ax, name in zip(axes, panels, strict=False):
            t = sgd["time"].values
            v = sgd[name].values - sgd[name].values[:, :1]
            mean, se = v.mean(0), v.std(0, ddof=1) / np.sqrt(v.shape[0])
            ax.fill_between(t, mean - 2 * se, mean + 2 * se, color="k", alpha=0.2, lw=0)
            ax.plot(t, mean, color="k", lw=2, label=f"SGD, {v.shape[0]} seeds (±2 SE)")
            for (flow, style), label in zip(
                (("phi", "--"), ("phi3", ":")),
                ("Φ flow (Thm 1)", "Φ₃ flow (+ Edgeworth)"),
                strict=True,
            ):
                f = np.stack(
                    [x[name].values - x[name].values[0] for x in results["flows"][(d, flow)]]
                )
                ax.plot(
                    t,
                    f.mean(0),
                    ls=style,
                    color="C0" if flow == "phi" else "C3",
                    lw=1.6,
                    label=f"{label}, {f.shape[0]} seeds",
                )
            ax.set(xlabel="t = 4nα_d/d", ylabel=f"{name}(t) − {name}(0)", title=f"{name}, d = {d}")
            ax.legend(frameon=False, fontsize=7)
        ax = axes[2]
        ds = np.asarray(config.d, float)
        for n, name in enumerate(("q_11",) + READOUT):
            g = [abs(m["per_d"][x][name]["gap"].value) for x in config.d]
            ax.plot(ds, g, "o-", color=f"C{n}", label=f"|gap̄| {name} (Φ)")
        g3 = [abs(m["per_d"][x]["q_11"]["gap_phi3"].value) for x in config.d]
        ax.plot(ds, g3, "s--", color="C0", label="|gap̄| q_11 (Φ₃)")
        ax.plot(ds, g[0] * (ds / ds[0]) ** -0.5, color="0.6", lw=0.8, label="∝ d^−½")
        ax.set(xscale="log", yscale="log", xlabel="d", ylabel="|SGD − flow| over t ≤ t_max")
        ax.legend(frameon=False, fontsize=7)
        return save_figure(fig, path)
