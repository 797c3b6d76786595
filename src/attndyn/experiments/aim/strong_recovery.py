"""``aim-strong-recovery`` (P1 = arXiv 2609.03858, App. D.5, Assumption 8, Corollary 6): the rate of
strong recovery under the Polyak–Łojasiewicz condition, measured on P1's own example (Eq. 392):
the tied L = 1 model with the loss (G1 − G2)², a teacher S2 = c·I and γ = 0 (aim-solvable's
model, App. D.3).

There the population loss is exactly Φ at every d, Ψ_d − Ψ* = (2/d) Tr[(S1 − S2)²] (Eq. 392),
and along the flow dS1/dt = 2(S1S2 + S2S1) − 4S1² each eigenvalue λ of S1 obeys λ̇ = −4λ(λ − c),
so −dΦ/dt = (16/d) Σ λᵢ(λᵢ − c)² ≥ 8 λ_min(S1)·Φ: the PL bound of Eqs. 393–394 with
c₀ = λ_min(S1). Near S* = cI the rate is exactly 8c: Assumption 8's 2c is 8c as t → ∞, and by
Eqs. 382–384 reaching ε takes n_ε = n₀ + (d/4α_d)·ln(Δ₀/ε)/(8c) samples, O((d/α_d) log 1/ε)
(Eq. 378). A student of width r = 2d starts with λ_min(S1) → 2(1 − 1/√2)² ≈ 0.17 > 0, so S1
⪰ c₀I holds along the flow (App. D.5's sufficient condition) (docs/aim-solvable.md, "Strong
recovery").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig, variant
from attndyn.claims.spec import Evidence, Retired, below, claim, within
from attndyn.claims.stats import jackknife_ci, mean_ci
from attndyn.claims.verdict import Check
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.aim.config import AIMConfig

LOSS_FACTOR = {"full": 1.0, "half": 0.5}  # Φ of ℓ(G1 − G2)²/… relative to the full loss


class StrongRecoveryConfig(ExperimentConfig):
    base: AIMConfig = Base(
        AIMConfig,
        "P1 App. D.5's example (Eq. 392): tied L = 1, h1, loss (G1 − G2)², S2 = 0.5·I, γ = 0, a "
        "student of width r = 2d (S1(0) ⪰ c₀I), α_d = lr/d² (dα_d = 1/d at lr = 1), batch 64, "
        "t ≤ 3 on a linear grid of 31 records, float64",
        param="tied",
        L=1,
        output="index",
        activation="h1",
        loss_scale="full",
        teacher="identity",
        teacher_scale=0.5,
        weight_decay=0.0,
        rho=2.0,
        lr=1.0,
        lr_scaling="d2",
        batch=64,
        t_max=3.0,
        records=31,
        grid="linear",
        dtype="float64",
        test_size=0,
    )
    d: list[int] = Field([32, 64, 128], min_length=1, description="dimensions (increasing)")
    seeds: int = Field(8, ge=2)
    fit_window: tuple[float, float] = Field(
        (1.5, 3.0), description="times [t_a, t_b] of the exponential fit of the excess loss"
    )
    rate_tol: float = Field(
        0.1, gt=0, description="the measured rate within (1 ± tol)·8c of Assumption 8's limit"
    )
    gap_exponent: float = Field(
        -0.5, description="largest exponent a of (1 − rate_SGD/rate_flow) ∝ d^a"
    )

    @model_validator(mode="after")
    def _consistent(self) -> StrongRecoveryConfig:
        from attndyn.models.aim.solvable import check_solvable

        if self.d != sorted(set(self.d)):
            raise ValueError(f"d: must be increasing without repeats (got {self.d})")
        try:
            check_solvable(self.base)
        except Exception as err:
            raise ValueError(f"base: {err}") from None
        if self.base.teacher_kind != "identity" or self.base.weight_decay != 0.0:
            raise ValueError("base: the PL rate 8c needs teacher='identity' and weight_decay=0")
        a, b = self.fit_window
        if not 0 <= a < b <= self.base.t_max:
            raise ValueError(
                f"fit_window: must satisfy 0 <= t_a < t_b <= base.t_max = {self.base.t_max}"
            )
        return self


def excess_loss(traj, loss_scale: str) -> np.ndarray:
    """Ψ_d − Ψ* = ℓ·2(q11 − 2q12 + q22) = (2ℓ/d) Tr[(S1 − S2)²] (P1 Eq. 392; Ψ* = 0 at
    S1 = S2, γ = 0), ℓ = 1 for the loss (G1 − G2)² and ½ for half of it; (..., time)."""
    q = {n: np.asarray(traj[n].values, dtype=np.float64) for n in ("q_11", "q_12", "q_22")}
    return LOSS_FACTOR[loss_scale] * 2.0 * (q["q_11"] - 2.0 * q["q_12"] + q["q_22"])


def fitted_rate(times: np.ndarray, excess: np.ndarray, window: tuple[float, float]) -> np.ndarray:
    """−slope of ln(excess) on t over the window (least squares), per leading index:
    the exponential rate r of excess ∝ e^{−r t}."""
    inside = (times >= window[0] - 1e-12) & (times <= window[1] + 1e-12)
    t = times[inside]
    y = np.log(np.atleast_2d(excess)[:, inside])
    tc = t - t.mean()
    return -(y - y.mean(axis=1, keepdims=True)) @ tc / float(tc @ tc)


def pl_rate(config: AIMConfig) -> float:
    """The limit rate of the excess loss near S* = cI: λ̇ = −4λ(λ − c) linearises to δ̇ = −4cδ,
    so Φ ∝ Σδ² decays at 8c (at half speed for the half loss): Assumption 8's 2c as t → ∞."""
    return 8.0 * config.teacher_scale * LOSS_FACTOR[config.loss_scale]


class AIMStrongRecovery(Experiment):
    name = "aim-strong-recovery"
    description = (
        "P1 App. D.5, Cor. 6: SGD's excess loss falls at the PL rate 8c of P1's example (Eq. 392)"
    )
    Config = StrongRecoveryConfig
    presets = {
        "tiny": {"d": [32, 64]},
        "small": {},
        "paper": {
            "d": [100, 200, 400],
            "base.lr": 0.01 / 512 * 400**2,  # α_d = lr/d²: Fig. 4's 0.01/512 at d = 400
            "base.batch": 512,
            "base.dtype": "float32",
        },
    }
    preset_notes = {
        "tiny": "d = 32 and 64 (dα_d = 1/32, 1/64), 8 seeds: the gap exponent over a factor 2.",
        "small": "d = 32, 64, 128, 8 seeds (d = 128: 24,576 steps of a 128 × 256 W per seed).",
        "paper": "Fig. 4's step 0.01/512 at d = 400 and batch 512 (App. D.3's figure; D.5 has no "
        "figure); about 3·10⁴ steps of a 400 × 800 W per seed at d = 400: hours on two cores.",
    }
    controls = {
        "square-start": Control(
            {"base.rho": 1.0},
            "a square student (r = d): λ_min(S1(0)) → 0, the PL bound's c₀ = 0 (Eq. 394); by the "
            "Marchenko–Pastur density ∝ λ^−½ at 0 the excess falls at 8c/4 (docs/aim-solvable.md)",
        ),
        "low-rank-start": Control(
            {"base.rho": 0.5},
            "a student of rank d/2 (aim-solvable's Fig. 4 start): Ψ* is not reachable, the excess "
            "stays at c²",
        ),
        "lr-fixed": Control(
            {"base.lr_scaling": "raw", "base.lr": 1.0 / 32**2},
            "a fixed step α_d (that of d2 at d = 32): dα_d grows with d, and with it the Itô drift",
        ),
    }
    claims = (
        claim(
            "pl-rate",
            "at the largest d, SGD's excess population loss falls exponentially at the PL rate "
            "8c of the limit, so each factor e of accuracy costs d/(32cα_d) samples",
            statistic="per seed: r = −slope of ln(Ψ_d − Ψ*) on t over `fit_window` (Ψ_d − Ψ* = "
            "2(q11 − 2q12 + q22), exact at every d), divided by 8c; seed mean (Student-t 95 % "
            "CI) at the largest d (the smaller d's in the detail)",
            target=within(1.0, "rate_tol"),
            reason="P1 Cor. 6 (Eqs. 378, 382–384) under Assumption 8, whose 2c is 8c at S* = cI "
            "in the example of Eqs. 392–394; tolerance: the window's nonlinear part (the flow's "
            "own rate there is ≈ 1.02·8c) and the Itô drift O(dα_d) (next claim); a d → ∞ "
            "statement, so claimed at the largest d (the retired claims)",
            controls=("square-start", "low-rank-start", "lr-fixed"),
        ),
        claim(
            "rate-gap-shrinks",
            "SGD's rate approaches the flow's as d grows: the gap is finite-d",
            statistic="per d: 1 − (seed-mean SGD rate)/(seed-mean rate of the exact flow from each "
            "seed's own S1(0)) over `fit_window`; fitted exponent a of that ∝ d^a, jackknife-t "
            "95 % CI (seeds left out within each d)",
            target=below("gap_exponent"),
            reason="P1 Eq. 386 (Theorem 2): SGD's excess tends to the flow's; at α_d = lr/d² the "
            "Itô drift that slows SGD is O(dα_d) = O(1/d) (docs/aim-solvable.md)",
            controls=("lr-fixed",),
        ),
    )
    notes = (
        "Identities moved to unit tests (tests/test_aim_strong_recovery.py): along the exact "
        "flow −dΦ/dt ≥ 8λ_min(S1)Φ (Eq. 394's PL bound with c₀ = λ_min(S1)), and the flow's rate "
        "tends to 8c.\n\n"
        "The claim as first declared, at every d, failed at d = 32 (the retired claims above).\n\n"
        "Not covered: Cor. 9 (the untied model's strong recovery); P1 gives no untied example."
    )

    retired = (
        Retired(
            "pl-rate-d{}",
            "at every d, SGD's excess population loss falls at the PL rate 8c (one claim per d)",
            "1 ± 0.1 (95% CI) at every d",
            "tiny, seed offsets 1000 and 2000, d = 32: 0.908 [0.891, 0.925] and 0.91 [0.894, "
            "0.926] (d = 64: 0.967, 0.968; offset 0 passed: d = 32 0.93 [0.914, 0.945])",
            "2026-12-07",
            "Cor. 6 is a d → ∞ statement; at d = 32, dα_d = 1/32 and the Itô drift slows SGD by "
            "7–9 % (what `rate-gap-shrinks` measures). Claimed at the largest d since, the "
            "smaller d's reported; judged at seed offsets 3000, 4000, 5000 after the change",
            "pl-rate",
        ),
    )

    def run(self, config: StrongRecoveryConfig, ctx: RunContext) -> dict[str, Any]:
        from attndyn.models.aim import solvable as model

        runs = {}
        for d in config.d:
            sim = ctx.simulate("aim", config.base, d=d)
            cfg = variant(config.base, d=d)
            times = sim.time.values
            flows = [model.predict(cfg, times, int(seed)) for seed in sim.seed.values]
            runs[d] = {"sim": sim, "flows": flows}
        return {"runs": runs}

    def measure(self, config: StrongRecoveryConfig, results: dict[str, Any]) -> dict[str, Any]:
        ls, window, rate = config.base.loss_scale, config.fit_window, pl_rate(config.base)
        per_d = {}
        for d, run in results["runs"].items():
            times = run["sim"].time.values
            sgd = excess_loss(run["sim"], ls)
            flow = np.stack([excess_loss(f, ls) for f in run["flows"]])
            r_sgd, r_flow = fitted_rate(times, sgd, window), fitted_rate(times, flow, window)
            per_d[d] = {
                "rate_sgd": r_sgd.tolist(),
                "rate_flow": r_flow.tolist(),
                "ratio": mean_ci(r_sgd / rate),
                "flow_ratio": float(np.mean(r_flow) / rate),
                "excess_start": float(np.mean(sgd[:, 0])),
                "excess_end": float(np.mean(sgd[:, -1])),
            }
        logd = np.log(np.asarray(config.d, float))

        def exponent(*groups: np.ndarray) -> float:
            gaps = [1.0 - np.mean(g) for g in groups]
            if min(gaps) <= 0 or len(gaps) < 2:
                return float("nan")
            return float(np.polyfit(logd, np.log(gaps), 1)[0])

        rel = [np.asarray(per_d[d]["rate_sgd"]) / np.mean(per_d[d]["rate_flow"]) for d in config.d]
        return {
            "pl_rate": rate,
            "per_d": per_d,
            "gap_exponent": jackknife_ci(rel, exponent),
            "finite": all(
                np.all(np.isfinite(excess_loss(r["sim"], ls))) for r in results["runs"].values()
            ),
        }

    def preconditions(self, config: StrongRecoveryConfig, m: dict[str, Any]) -> list[Check]:
        return [Check("every seed finite", m["finite"])]

    def evaluate(self, config: StrongRecoveryConfig, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        top = m["per_d"][config.d[-1]]
        out["pl-rate"] = Evidence(
            top["ratio"],
            detail=f"8c = {m['pl_rate']:.3g}; the exact flows' rate/8c {top['flow_ratio']:.4g}; "
            f"excess {top['excess_start']:.3g} at t = 0, {top['excess_end']:.3g} at the end; "
            + ", ".join(f"d = {d}: {p['ratio'].value:.3g}" for d, p in m["per_d"].items()),
        )
        gaps = {
            d: 1.0 - np.mean(p["rate_sgd"]) / np.mean(p["rate_flow"]) for d, p in m["per_d"].items()
        }
        out["rate-gap-shrinks"] = Evidence(
            m["gap_exponent"],
            detail="1 − rate_SGD/rate_flow: "
            + ", ".join(f"{g:.3g} (d = {d})" for d, g in gaps.items()),
        )
        return out

    def figure(
        self, config: StrongRecoveryConfig, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        ls = config.base.loss_scale
        fig, axes = new_figure(1, 2, figsize=(11, 3.8))
        for i, (d, run) in enumerate(results["runs"].items()):
            t = run["sim"].time.values
            sgd = excess_loss(run["sim"], ls)
            flow = np.mean([excess_loss(f, ls) for f in run["flows"]], axis=0)
            axes[0].plot(t, sgd.mean(axis=0), color=f"C{i}", lw=2, label=f"SGD, d = {d}")
            axes[0].plot(t, flow, color=f"C{i}", lw=1, ls="--", label=f"flow, d = {d}")
        t = results["runs"][config.d[-1]]["sim"].time.values
        e0 = m["per_d"][config.d[-1]]["excess_end"]
        axes[0].plot(t, e0 * np.exp(-m["pl_rate"] * (t - t[-1])), color="k", lw=0.8, ls=":",
                     label="∝ e^{−8ct}")  # fmt: skip
        axes[0].axvspan(*config.fit_window, color="0.9", zorder=0)
        axes[0].set(yscale="log", xlabel="t = 4nα_d/d", ylabel="Ψ_d − Ψ* (seed mean)")
        axes[0].set_title("excess population loss (grey: fit window)")
        axes[0].legend(frameon=False, fontsize=8)
        ds = list(m["per_d"])
        r = [m["per_d"][d]["ratio"] for d in ds]
        axes[1].errorbar(ds, [x.value for x in r],
                         yerr=[[x.value - x.low for x in r], [x.high - x.value for x in r]],
                         fmt="o-", color="k", label="SGD rate / 8c")  # fmt: skip
        axes[1].plot(ds, [m["per_d"][d]["flow_ratio"] for d in ds], "s--", color="C3",
                     label="exact flow rate / 8c")  # fmt: skip
        axes[1].axhspan(1 - config.rate_tol, 1 + config.rate_tol, color="0.9", zorder=0)
        axes[1].set(xscale="log", xlabel="d", ylabel="rate / 8c")
        axes[1].set_title("rate of strong recovery (grey: the claim's band)")
        axes[1].legend(frameon=False, fontsize=8)
        return save_figure(fig, path)
