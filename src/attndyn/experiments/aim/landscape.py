"""``aim-landscape`` (P1 = arXiv 2609.03858, Thm 1 / Cor. 5, Lemma 10; App. C.1–C.2, Eqs. 70–79):
Theorem 1 as a limit. For fixed matrices (each seed's initial state of the simulator), the
finite-d population loss E_x L(G(x)), by Monte Carlo over fresh tokens, against Theorem 1's
Gaussian potential Φ(m, Ω, Ψ) of their order parameters and Φ₃ = Φ plus the Edgeworth term of
the forms' exact third cumulants (docs/claims/aim-landscape.md).

What the theory says, and what is claimed:

- Lemma 10: |E_x L − Φ| ≤ C/√d. The Edgeworth expansion makes it explicit: E_x L = Φ + (1/6)
  Σ κ_abc E_N ∂_a∂_b∂_c L + O(1/d), κ = O(d^−½) (Eqs. 75–76), and under G → −G every term of
  order d^−k/2 changes sign as (−1)^k. So the odd part of the gap, Δ_odd = ½E_x[L(G) − L(−G)]
  (Φ has none: N(0, Σ) is symmetric), is the Edgeworth term plus O(d^−3/2), and the even part is
  O(1/d).
- With two tokens a row-wise softmax satisfies y(−G) = H − y(G) (H heads), so the loss of the
  one- and two-head softmax models is even: their Edgeworth term vanishes identically and the
  gap is O(1/d). The two-layer model's loss is not even.
- Corollary 1 (Eq. 6): the infimum over the trainable matrices of the finite-d population loss
  tends to the infimum of Φ over the order parameters the matrices can realise. A one-head
  student of width ρd < ρ*d cannot reach its Wishart teacher: its realisable set is q₁₂ ≤
  √(q₁₁·top), top the Marchenko–Pastur second moment of the teacher's ρd largest eigenvalues.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig
from attndyn.claims.spec import Evidence, below, claim, measured, within
from attndyn.claims.stats import jackknife_ci, mean_ci
from attndyn.claims.verdict import Check
from attndyn.experiments.aim.landscape_measure import (
    ARCHS,
    arch_config,
    cached_potential,
    cor1_point,
    even_loss,
    inf_width_constrained,
    mp_top_moment,
    seed_point,
)
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.aim.config import AIMConfig

NAME = "aim-landscape"


class LandscapeConfig(ExperimentConfig):
    base: AIMConfig = Base(
        AIMConfig,
        "tied students, L = 2 tokens, C = I, Wishart teachers (the simulator's initial state of "
        "each seed), float64; the architectures set output and heads",
        param="tied",
        L=2,
        output="softmax",
        dtype="float64",
        test_size=0,
    )
    archs: list[str] = Field(
        ["h1", "h2", "two-layer"], min_length=1, description="architectures (see ARCHS)"
    )
    d: list[int] = Field([32, 64, 128], min_length=3, description="dimensions (increasing)")
    seeds: int = Field(8, ge=2)
    samples: int = Field(1 << 14, ge=1024, description="token draws per seed (at the largest d)")
    scale_samples: bool = Field(
        False,
        description="draws at d: samples·d/max(d) (the gap falls like 1/d or slower, so its "
        "relative MC error is largest at max d)",
    )
    chunk: int = Field(4096, ge=256, description="token draws per compiled batch")
    log2_qmc: int = Field(
        16, ge=8, le=20, description="Φ's node budget 2^m (mirrored: twice as many nodes)"
    )
    slope_bound: float = Field(
        -0.25, description="largest slope of log|Δ| on log d (Lemma 10: −½, tolerance ¼)"
    )
    even_slope: float = Field(-1.0, description="slope of log|Δ| for an even loss: O(1/d)")
    slope_tol: float = Field(0.25, gt=0, description="tolerance on the even-loss slope")
    residual_bound: float = Field(
        -0.75, description="largest slope of log|E_x L − Φ₃| (O(1/d), tolerance ¼)"
    )
    ratio_tol: float = Field(
        0.5, gt=0, description="Δ_odd / Edgeworth term within 1 ± tol (a factor-2 band)"
    )
    precision: float = Field(
        0.2, gt=0, description="MC standard error and quadrature error allowed, × |Δ| at max d"
    )
    cor1_d: int = Field(128, ge=8, description="Cor. 1: dimension of the minimisation over S")
    cor1_seeds: int = Field(8, ge=2, description="Cor. 1: teachers (seeds) minimised against")
    cor1_rho: float = Field(0.25, gt=0, description="Cor. 1: student width ρ (one softmax head)")
    cor1_teacher_rho: float = Field(0.5, gt=0, le=1, description="Cor. 1: teacher width ρ*")
    cor1_flow_time: float = Field(400.0, gt=0, description="Cor. 1: length of the flow over W")
    cor1_flow_log2_qmc: int = Field(12, ge=8, le=20, description="Cor. 1: the flow's Φ_d nodes")
    cor1_samples: int = Field(1 << 14, ge=1024, description="Cor. 1: token draws per minimiser")
    cor1_width: bool = Field(
        True, description="Cor. 1: the theory's realisable set has the student's width (control)"
    )
    psi_factor: float = Field(1.0, description="theory's Ψ scaled (control no-psi: 0)")
    edgeworth_factor: float = Field(1.0, description="Edgeworth term scaled (controls)")

    @field_validator("archs")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(ARCHS))
        if unknown:
            raise ValueError(f"unknown architectures {unknown}; allowed: {sorted(ARCHS)}")
        return value


def _even(config: LandscapeConfig) -> list[str]:
    return [a for a in config.archs if even_loss(a, config.base.L)]


def _odd(config: LandscapeConfig) -> list[str]:
    return [a for a in config.archs if not even_loss(a, config.base.L)]


def draws(config: LandscapeConfig, d: int) -> int:
    """Token draws per seed at ``d``: ``samples``, or with ``scale_samples`` samples·d/max(d)
    (at least two chunks)."""
    if not config.scale_samples:
        return config.samples
    return max(2 * config.chunk, config.samples * d // config.d[-1])


def slope(d, values) -> float:
    """Least-squares slope of log|values| on log d."""
    return float(np.polyfit(np.log(np.asarray(d, float)), np.log(np.abs(values)), 1)[0])


def _slope_ci(d: list[int], groups: list[np.ndarray]):
    """Slope of log|seed-mean| on log d, jackknife-t (seeds left out within each d)."""
    return jackknife_ci(groups, lambda *g: slope(d, [np.mean(x) for x in g]))


class AIMLandscape(Experiment[LandscapeConfig]):
    name = NAME
    description = (
        "P1 Thm 1 / Lemma 10: finite-d population loss → Gaussian potential Φ, O(d^−½) Edgeworth"
    )
    Config = LandscapeConfig
    presets = {
        "tiny": {
            "archs": ["h1", "two-layer"],
            "samples": 1 << 15,
            "scale_samples": True,
            "cor1_d": 64,
            "cor1_seeds": 4,
        },
        "small": {"d": [32, 64, 128, 256], "samples": 1 << 16},
        "paper": {
            "d": [32, 64, 128, 256, 512],
            "seeds": 16,
            "samples": 1 << 18,
            "log2_qmc": 18,
            "cor1_d": 256,
            "cor1_seeds": 16,
        },
    }
    preset_notes = {
        "tiny": (
            "h1 and two-layer (h2, a second even loss, at small), d = 32, 64, 128, 8 seeds, 2^15 "
            "token draws at d = 128 (2^14 at 64, 2^13 at 32), Φ on 2^16 mirrored nodes. With 2^14"
            " draws at every d edgeworth-two-layer failed at seed offset 2000, 0.757 [0.476, "
            "1.04] (its interval is mostly the Monte Carlo error of the odd part): the draws were"
            " doubled. d = 16 is left out: with d = 16, 32, 64 (6 seeds, 2^15 draws) even-gap-"
            "order-h2 was −0.87 [−1.03, −0.70], the next orders still bending the slope there. "
            "`residual-slope` is claimed over a factor ≥ 8 in d (four d): over 32–128 it was "
            "−0.76 [−0.96, −0.57] (the seeds' spread of the O(1/d) coefficient). With Φ on 2^14 "
            "nodes the Edgeworth term's quadrature error was 3·10⁻³ at d = 128 (ratio 1.28; the "
            "claim's check now bounds it). 47, 66 and 62 s wall at seed offsets 0, 1000, 2000 "
            "beside other jobs (load 5–7; about 38 s CPU), each control 15–17 s (the Monte Carlo "
            "runs are reused, the theory is recomputed). Cor. 1 at d = 64 with 4 teachers: its "
            "flows and Monte Carlo cost 8.6 s CPU (13.2 s with, 4.6 s without them, stored "
            "runs reused; load 6), a fifth of it the von Neumann check."
        ),
        "small": "all three architectures, d = 32, 64, 128, 256, 8 seeds, 2^16 token draws each "
        "(MC standard error of the seed mean 2–6 % of |Δ̄| at d = 256), Φ on 2^16 mirrored "
        "nodes (quadrature error ≤ 2.3·10⁻⁴, 5 % of the two-layer gap at d = 256). 263, 304 "
        "and 395 s wall at seed offsets 0, 1000, 2000 beside other jobs. Cor. 1 at d = 128 with "
        "8 teachers.",
        "paper": "d up to 512, 16 seeds, 2^18 token draws each, Φ on 2^18 mirrored nodes (not "
        "run on two cores).",
    }
    controls = {
        "no-psi": Control(
            {"psi_factor": 0.0},
            "Φ with the covariance term C_ij'C_ji'Ψ of Thm 1 (Eq. 79) dropped: the wrong limit, "
            "so the gap does not vanish",
        ),
        "edgeworth-half": Control(
            {"edgeworth_factor": 0.5},
            "the Edgeworth term with half its coefficient (1/12 for 1/6)",
        ),
        "no-width": Control(
            {"cor1_width": False},
            "Cor. 1's infimum of Φ over order parameters without the constraint the student's "
            "width imposes (q₁₂ ≤ √(q₁₁q₂₂) only, as if the student could reach its teacher): 0",
        ),
    }
    claims = (
        claim(
            "gap-slope-{}",
            "{}: the gap between the finite-d population loss and Φ vanishes at least like d^−½",
            statistic="slope of log|Δ̄(d)| on log d, Δ = E_x L − Φ per seed (E_x L by Monte Carlo "
            "with control variates), Δ̄ the seed mean; jackknife-t 95 % CI (seeds left out "
            "within each d)",
            target=below("slope_bound"),
            reason="P1 Lemma 10: |E_x L − Φ| ≤ C/√d, so the slope is at most −½; the tolerance "
            "¼ allows for the curvature of log|Δ| over the d in reach. A wrong limit (no-psi) "
            "leaves a gap that does not vanish: slope ≈ 0",
            controls=("no-psi",),
            over="archs",
        ),
        claim(
            "even-gap-order-{}",
            "{}: for an even loss the d^−½ term vanishes and the gap is O(1/d)",
            statistic="the slope of gap-slope-{} (jackknife-t 95 % CI)",
            target=within("even_slope", "slope_tol"),
            reason="L(−G) = L(G) (two tokens: a row-wise softmax has y(−G) = H − y(G)), so "
            "E_N ∂³L = 0 and the Edgeworth term of order d^−½ (Eqs. 75–76) vanishes; the next "
            "terms (fourth cumulants, κ²) are O(1/d): slope −1, tolerance ¼",
            controls=("no-psi",),
            over=_even,
        ),
        claim(
            "edgeworth-{}",
            "{}: the odd part of the gap is the Edgeworth term",
            statistic="at the largest d: (seed mean of Δ_odd = ½E_x[L(G) − L(−G)]) / (seed mean "
            "of Φ₃ − Φ), jackknife-t 95 % CI over the seeds (paired)",
            target=within(1.0, "ratio_tol"),
            reason="odd orders of the Edgeworth series change sign under G → −G: Δ_odd = (1/6) "
            "Σ κ E_N ∂³L + O(d^−3/2), so the ratio is 1 + O(1/d); the band ± ½ separates it "
            "from an Edgeworth coefficient wrong by a factor 2 either way (edgeworth-half: 2)",
            controls=("edgeworth-half",),
            over=_odd,
        ),
        claim(
            "cor1-width",
            "Cor. 1 (Eq. 6): minimising the finite-d population loss over S and minimising Φ "
            "over the order parameters S can realise reach the same value",
            statistic="one softmax head, L = 2, tied student of width `cor1_rho`·d against a "
            "Wishart teacher of width `cor1_teacher_rho`·d, d = `cor1_d`: per teacher (seed), "
            "E_x L (Monte Carlo) at the end of the gradient flow of Φ_d over the student's W, "
            "less inf Φ over the realisable set q₁₂ ≤ √(q₁₁·top) (top: the Marchenko–Pastur "
            "second moment of the teacher's `cor1_rho`·d largest eigenvalues); seed mean "
            "(Student-t 95 % CI)",
            target=within(0.0, measured("½(inf over 𝒬 − inf without the width constraint)")),
            reason="the midpoint between Cor. 1 (a gap of 0) and the infimum over a set without "
            "the width constraint (0: the student would reach its teacher), so a theory that "
            "forgets the realisability constraint fails (no-width)",
            controls=("no-width",),
        ),
        claim(
            "residual-slope-{}",
            "{}: with the Edgeworth term, what is left of the gap is O(1/d)",
            statistic="slope of log|E_x L − Φ₃| (seed means) on log d, jackknife-t 95 % CI",
            target=below("residual_bound"),
            reason="Edgeworth: E_x L − Φ₃ = O(1/d) (slope −1); the bound −¾ lies halfway to the "
            "−½ of an uncorrected odd term",
            controls=("no-psi",),
            over=_odd,
            when=lambda c: len(c.d) >= 4,
        ),
    )
    notes = (
        "**What was measured against what was asked.** Lemma 10's C/√d is a bound. Over the d "
        "in reach (16 to 256) no architecture's gap falls like d^−½ (slopes −0.91, −0.97 and "
        "−0.76 at small, offset 0; a claim of −½ ± ¼ would fail for all three): the one- and "
        "two-head "
        "softmax losses are even at L = 2, so their d^−½ term is zero and the gap falls like "
        "1/d; the two-layer model's d^−½ (Edgeworth) term is smaller than its O(1/d) term "
        "below d ≈ 500, so its gap falls at a slope between −½ and −1. The claims are built on "
        "that: the gap falls at least like d^−½, like 1/d for an even loss, and the odd part of "
        "the gap, isolated by evaluating the loss at G and −G on the same tokens, is the "
        "Edgeworth term.\n\n"
        "**Corollary 1** (`cor1-width`; P1 Eq. 6 and its feasible set 𝒬, 'realizable by matrix "
        "sequences ... subject to the constraints imposed by the fixed weights'). The student is "
        "one tied softmax head of width ρd = d/4, the teacher a Wishart head of width ρ*d = d/2, "
        "so the student cannot reach it. With L = 2, C = I and centred forms Φ depends on q₁₁, "
        "q₁₂, q₂₂ (Ω = Ψ = q), and a PSD S₁ of rank ρd has q₁₂ ≤ √(q₁₁·top), top = (1/d) Σ of "
        "the teacher's ρd largest squared eigenvalues (von Neumann's trace inequality; reached by "
        "S₁ ∝ the teacher's top-ρd part). inf over 𝒬 is the minimum of Φ on that boundary with "
        "top → ρ*·∫ λ² over the top half of the Marchenko–Pastur law of ratio ρ* (0.6948; "
        "q₂₂ = ρ*(1 + ρ*) = 0.75): 0.011668. At finite d each seed's W is minimised by the "
        "gradient flow of Φ_d (the population flow of `attndyn.models.aim.theory.population`) "
        "and E_x L measured there by the Monte Carlo above; a check requires the flow to reach "
        "its teacher's von Neumann bound (excess 4·10⁻⁷ at tiny). E_x L at that point is an "
        "upper bound on inf_S E_x L, above it by a term of second order in E_x L − Φ_d = "
        "O(1/d) (3·10⁻⁴ at d = 64 for this even loss). Measured before the claim (Φ_d's "
        "infimum over S, 8 seeds, the limit 0.011668): 0.01101 ± 0.00055 (d = 32), 0.01107 ± "
        "0.00039 (64), 0.01181 ± 0.00018 (128), 0.01169 ± 0.00009 (256). **A control that was "
        "not used**: Φ over order parameters without the Gram (PSD covariance) constraint is "
        "not defined (no Gaussian law), and for one head against two heads (L = 2, whose "
        "constrained optimum lies on the Gram boundary) the minimum of Φ over per-pair "
        "Cauchy–Schwarz bounds only was the same point (0.533452 both): the Gram "
        "constraint did not separate there. The width constraint does (`no-width`: 0).\n\n"
        "**Identities moved to unit tests** (`tests/test_aim_landscape.py`): the Edgeworth term "
        "Φ₃ − Φ is linear in κ and so exactly O(d^−½) for matrices of fixed spectrum; it is zero "
        "for the even losses; the control-variate estimator is exact for a cubic loss (whose "
        "E_x equals Φ₃ exactly)."
    )

    def run(self, config: LandscapeConfig, ctx: RunContext) -> dict[str, Any]:
        from attndyn.core.trajectory import make_trajectory

        out: dict[tuple[str, int], Any] = {}
        seeds = list(range(config.seed, config.seed + config.seeds))
        th_key = (
            f"{NAME}:theory:v1:q{config.log2_qmc}:psi{config.psi_factor:g}"
            f":e{config.edgeworth_factor:g}"
        )
        for arch in config.archs:
            for d in config.d:
                cfg = arch_config(config.base, arch, d).model_copy(
                    update={"seed": config.seed, "seeds": config.seeds}
                )

                n = draws(config, d)

                def mc(cfg=cfg, arch=arch, d=d, n=n):
                    rows = [
                        seed_point(config.base, arch, d, s, n, None, config.chunk) for s in seeds
                    ]
                    return make_trajectory(
                        {k: [r[k] for r in rows] for k in rows[0]}, time=np.arange(len(seeds))
                    )

                def theory(cfg=cfg, arch=arch, d=d):
                    rows = [
                        seed_point(
                            config.base,
                            arch,
                            d,
                            s,
                            None,
                            config.log2_qmc,
                            psi_factor=config.psi_factor,
                            edgeworth=config.edgeworth_factor,
                            coarse=d == config.d[-1],
                        )
                        for s in seeds
                    ]
                    return make_trajectory(
                        {k: [r[k] for r in rows] for k in rows[0]}, time=np.arange(len(seeds))
                    )

                a = ctx.compute(f"{NAME}:mc:v1:n{n}:c{config.chunk}", cfg, mc)
                # the coarse values (the quadrature check) exist at the largest d only: a run
                # stored without them is another run (a preset whose largest d is this one
                # must not read it back)
                b = ctx.compute(th_key + ("" if d == config.d[-1] else ":fine"), cfg, theory)
                out[(arch, d)] = {
                    **{k: a[k].values for k in a.data_vars},
                    **{k: b[k].values for k in b.data_vars},
                }
        return {"points": out, **self._cor1(config, ctx)}

    @staticmethod
    def _cor1(config: LandscapeConfig, ctx: RunContext) -> dict[str, Any]:
        """Cor. 1: per seed the finite-d minimiser's E_x L (stored), and inf Φ over the
        realisable order parameters with and without the width constraint (the limit d → ∞:
        the teacher's spectrum is Marchenko–Pastur's)."""
        from attndyn.core.trajectory import make_trajectory

        values = {k: getattr(config.base, k) for k in AIMConfig.model_fields}
        cfg = AIMConfig(
            **{
                **values,
                **ARCHS["h1"],
                "d": config.cor1_d,
                "rho": config.cor1_rho,
                "teacher_rho": config.cor1_teacher_rho,
                "seed": config.seed,
                "seeds": config.cor1_seeds,
            }
        )
        seeds = range(config.seed, config.seed + config.cor1_seeds)

        def points():
            rows = [
                cor1_point(
                    cfg,
                    s,
                    config.cor1_flow_time,
                    config.cor1_flow_log2_qmc,
                    config.cor1_samples,
                    config.chunk,
                )
                for s in seeds
            ]
            return make_trajectory(
                {k: [r[k] for r in rows] for k in rows[0]}, time=np.arange(len(rows))
            )

        key = (
            f"{NAME}:cor1:v1:t{config.cor1_flow_time:g}:q{config.cor1_flow_log2_qmc}"
            f":n{config.cor1_samples}:c{config.chunk}"
        )
        traj = ctx.compute(key, cfg, points)
        pot = cached_potential(cfg, config.log2_qmc - 2)
        y, f = config.cor1_teacher_rho, config.cor1_rho / config.cor1_teacher_rho
        q22 = y * mp_top_moment(y, 1.0)
        width = inf_width_constrained(pot, y * mp_top_moment(y, f), q22)
        free = inf_width_constrained(pot, q22, q22)
        return {
            "cor1": {k: traj[k].values for k in traj.data_vars},
            "cor1_limit": {"width": width["phi"], "free": free["phi"], "q11": width["q11"]},
        }

    def measure(self, config: LandscapeConfig, results: dict[str, Any]) -> dict[str, Any]:
        pts = results["points"]
        ds, top = config.d, config.d[-1]
        m: dict[str, Any] = {"archs": {}}
        finite = True
        for arch in config.archs:
            p = {d: pts[(arch, d)] for d in ds}
            if any("mc" not in p[d] or "phi" not in p[d] for d in ds):  # a dry run's placeholder
                return {"finite": False, "archs": {}}
            gap = {d: p[d]["mc"] - p[d]["phi"] for d in ds}
            resid = {d: p[d]["mc"] - p[d]["phi3"] for d in ds}
            term = {d: p[d]["phi3"] - p[d]["phi"] for d in ds}
            odd = {d: p[d]["odd"] for d in ds}
            finite &= all(np.all(np.isfinite(v)) for d in ds for v in p[d].values())
            top_gap = abs(float(np.mean(gap[top])))
            se_top = float(np.sqrt(np.mean(p[top]["mc_se"] ** 2) / config.seeds))
            q_top = float(np.max(np.abs(p[top]["phi"] - p[top]["phi_coarse"])))
            q3_top = float(np.max(np.abs(p[top]["phi3"] - p[top]["phi3_coarse"])))
            m["archs"][arch] = {
                "gap": {d: gap[d].tolist() for d in ds},
                "gap_mean": [float(np.mean(gap[d])) for d in ds],
                "residual_mean": [float(np.mean(resid[d])) for d in ds],
                "edgeworth_mean": [float(np.mean(term[d])) for d in ds],
                "odd_mean": [float(np.mean(odd[d])) for d in ds],
                "odd_se_mean": [
                    float(np.sqrt(np.mean(p[d]["odd_se"] ** 2) / config.seeds)) for d in ds
                ],
                "mc_se_mean": [
                    float(np.sqrt(np.mean(p[d]["mc_se"] ** 2) / config.seeds)) for d in ds
                ],
                "mc_raw_se": float(np.mean(p[top]["mc_raw_se"])),
                "mc_se": float(np.mean(p[top]["mc_se"])),
                "quadrature_error": q_top,
                "quadrature_error_edgeworth": q3_top,
                "precise": bool(max(se_top, q_top) <= config.precision * top_gap),
                "precise_edgeworth": bool(
                    even_loss(arch, config.base.L)
                    or q3_top <= config.precision * abs(float(np.mean(term[top])))
                ),
                "gap_slope": _slope_ci(ds, [gap[d] for d in ds]),
                "residual_slope": _slope_ci(ds, [resid[d] for d in ds]),
                "odd_ratio": None
                if even_loss(arch, config.base.L)
                else jackknife_ci(
                    [odd[top], term[top]],
                    lambda o, e: float(np.mean(o) / np.mean(e)),
                    paired=True,
                ),
                "odd_is_zero": bool(all(np.all(odd[d] == 0.0) for d in ds)),
            }
        c, lim = results.get("cor1", {}), results.get("cor1_limit", {})
        if "mc" not in c or "width" not in lim:  # a dry run's placeholder
            return {"finite": False, "archs": m["archs"]}
        theory = lim["width"] if config.cor1_width else lim["free"]
        finite &= all(np.all(np.isfinite(v)) for v in c.values())
        m["cor1"] = {
            "gap": mean_ci(np.asarray(c["mc"]) - theory),
            "band": 0.5 * abs(lim["width"] - lim["free"]),
            "theory": float(theory),
            "limit": {k: float(v) for k, v in lim.items()},
            "mc_mean": float(np.mean(c["mc"])),
            "phi_min_mean": float(np.mean(c["phi_min"])),
            "flow_excess": float(np.max(np.asarray(c["phi_min"]) - np.asarray(c["phi_bound"]))),
            "mc_se": float(np.max(c["mc_se"])),
        }
        m["finite"] = bool(finite)
        return m

    def preconditions(self, config: LandscapeConfig, m: dict[str, Any]) -> list[Check]:
        checks = [Check("every value finite", m["finite"])]
        for arch, a in m["archs"].items():
            checks.append(
                Check(
                    f"{arch}: MC standard error of the seed mean and quadrature error ≤ "
                    f"{config.precision:g}·|Δ̄| at d = {config.d[-1]}",
                    a["precise"],
                )
            )
        return checks

    def evaluate(self, config: LandscapeConfig, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "cor1" in m:
            c = m["cor1"]
            flow = Check(
                "the flow over W reached its teacher's realisable infimum of Φ_d (von Neumann): "
                f"max over seeds of the excess {c['flow_excess']:.2g} ≤ a tenth of the band",
                c["flow_excess"] <= 0.1 * c["band"],
            )
            out["cor1-width"] = Evidence(
                c["gap"],
                bounds=(c["band"],),
                checks=(flow,),
                detail=f"d = {config.cor1_d}: seed means E_x L {c['mc_mean']:.5f}, Φ_d "
                f"{c['phi_min_mean']:.5f}; inf over 𝒬 {c['limit']['width']:.5f}, without the "
                f"width constraint {c['limit']['free']:.2g}",
            )
        for arch, a in m["archs"].items():
            detail = f"seed means of Δ over d = {config.d}: " + ", ".join(
                f"{v:.3g}" for v in a["gap_mean"]
            )
            out[f"gap-slope-{arch}"] = Evidence(a["gap_slope"], detail=detail)
            if arch in _even(config):
                out[f"even-gap-order-{arch}"] = Evidence(a["gap_slope"], detail=detail)
            else:
                e, o = a["edgeworth_mean"], a["odd_mean"]
                q = Check(
                    f"quadrature error of Φ₃ ≤ {config.precision:g}·|Φ₃ − Φ| at d = {config.d[-1]}",
                    a["precise_edgeworth"],
                )
                out[f"edgeworth-{arch}"] = Evidence(
                    a["odd_ratio"],
                    checks=(q,),
                    detail=f"seed means of Δ_odd: {', '.join(f'{v:.3g}' for v in o)}; of Φ₃ − Φ: "
                    f"{', '.join(f'{v:.3g}' for v in e)}",
                )
                if len(config.d) < 4:  # not claimed over a factor 4 in d (the claim's note)
                    continue
                out[f"residual-slope-{arch}"] = Evidence(
                    a["residual_slope"],
                    detail="seed means of E_x L − Φ₃: "
                    + ", ".join(f"{v:.3g}" for v in a["residual_mean"]),
                )
        return out

    def figure(
        self, config: LandscapeConfig, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        ds = np.asarray(config.d, float)
        archs = list(m["archs"])
        fig, axes = new_figure(1, len(archs) + 1, figsize=(4.2 * (len(archs) + 1), 3.8))
        for ax, arch in zip(axes, archs, strict=False):
            a = m["archs"][arch]
            ax.errorbar(
                ds,
                np.abs(a["gap_mean"]),
                yerr=a["mc_se_mean"],
                fmt="o-",
                color="k",
                label="|E_x L − Φ|",
            )
            ax.plot(ds, np.abs(a["residual_mean"]), "s--", color="C3", label="|E_x L − Φ₃|")
            if not even_loss(arch, config.base.L):
                ax.plot(ds, np.abs(a["edgeworth_mean"]), "^:", color="C0", label="|Φ₃ − Φ|")
            ref = abs(a["gap_mean"][0])
            ax.plot(ds, ref * (ds / ds[0]) ** -0.5, color="0.6", lw=0.8, label="∝ d^−½")
            ax.plot(ds, ref * (ds / ds[0]) ** -1.0, color="0.6", lw=0.8, ls="--", label="∝ 1/d")
            ax.set(xscale="log", yscale="log", xlabel="d", ylabel="seed mean", title=arch)
            ax.legend(frameon=False, fontsize=7)
        ax = axes[-1]
        for n, arch in enumerate(archs):
            a = m["archs"][arch]
            if even_loss(arch, config.base.L):
                continue
            ax.errorbar(
                ds,
                np.abs(a["odd_mean"]),
                yerr=a["odd_se_mean"],
                fmt="o-",
                color=f"C{n}",
                label=f"{arch}: |Δ_odd| (MC)",
            )
            ax.plot(ds, np.abs(a["edgeworth_mean"]), "--", color=f"C{n}", label=f"{arch}: |Φ₃ − Φ|")
        ax.set(xscale="log", yscale="log", xlabel="d", ylabel="odd part of the gap")
        ax.set_title("½E[L(G) − L(−G)] vs the Edgeworth term")
        ax.legend(frameon=False, fontsize=7)
        return save_figure(fig, path)
