"""``langevin-plateau`` (arXiv 2605.07959; our reconstruction, docs/langevin.md, checks T3–T4):
under dΘ = −∇F dt + √s dW the ensemble mean E F(Θ_t) of an attention regressor and of a LoRA
net approaches a plateau, which falls with s and at small s lies s·p_eff/4·(1 + c·s) above
min F (the Laplace approximation of μ_s ∝ exp(−2F/s) with its next order, c from F's third and
fourth derivatives at the minimiser, :func:`attndyn.models.langevin.stationary.laplace_next_order`;
p_eff = p − dim(symmetry orbit through the minimiser),
:func:`attndyn.models.langevin.model.orbit_dimension`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import xarray as xr
from pydantic import BaseModel, ConfigDict, Field, model_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.spec import Evidence, Retired, above, between, claim, measured, within
from attndyn.claims.stats import mean_ci, worst
from attndyn.claims.verdict import Check
from attndyn.core.serial import json_safe
from attndyn.experiments.langevin import plateau_common as pc
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.langevin.config import LangevinConfig

NEXT_ORDER_RUN = "langevin-plateau:next-order"
NEXT_ORDER_KEYS = ("c", "b", "quartic", "cubic_trace", "cubic_full", "orbit", "p_eff")


class NextOrderConfig(BaseModel):
    """What the Laplace gap's next order depends on: the potential and the Newton start whose
    end point is min F (the run id of :func:`next_order`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    potential: dict[str, Any]
    start: int
    steps: int


def next_order(ctx: RunContext, values: dict[str, Any], start: int, steps: int) -> dict[str, float]:
    """c of gap/(s·p_eff/4) = 1 + c·s + O(s²) at the minimiser that damped Newton reaches from
    the seed ``start`` (:func:`pc.minimum`'s best start, recomputed: Newton is deterministic),
    with its four terms (stationary.laplace_next_order; stored)."""

    def compute() -> xr.Dataset:
        from attndyn.models.langevin import frozen_part
        from attndyn.models.langevin.model import orbit_dimension
        from attndyn.models.langevin.stationary import laplace_next_order_at, minimise_newton

        lc = LangevinConfig(**values, s=0.0)
        _, g_sq, _, params = minimise_newton(lc, [start], steps)
        tol = pc.orbit_tolerance(float(g_sq[0]), lc.lam)
        orbit = orbit_dimension(lc, params, frozen_part(lc).get("fixed", {}), tol)
        r = laplace_next_order_at(lc, params, orbit)
        return xr.Dataset(
            {k: ("time", [float(r[k])]) for k in NEXT_ORDER_KEYS},
            coords={"time": [0.0]},
            attrs={"family": "langevin"},
        )

    tr = ctx.compute(NEXT_ORDER_RUN, NextOrderConfig(potential=values, start=start, steps=steps),
                     compute)  # fmt: skip
    return {k: float(tr[k].values[0]) for k in NEXT_ORDER_KEYS}


class Config(pc.PlateauConfig):
    attention: LangevinConfig = pc.potential_base(
        "the attention regressor: p = 20, one flat direction (O(2) of (W_Q, W_K)); starts of "
        "scale 0.3 (every start reaches the global basin); runs to t = 240: from small starts "
        "the softest Hessian mode settles late (docs/langevin.md, langevin-plateau)",
        **pc.ATTENTION_NET,
        t_max=240.0,
        records=121,
    )
    lora: LangevinConfig = pc.potential_base(
        "the LoRA net (tanh, W₀ and outer weights frozen): p = 24, one flat direction (O(2)); "
        "starts of scale 1 (F starts well above the plateau)",
        **pc.LORA_NET,
        t_max=60.0,
        records=121,
    )
    seeds: int = Field(32, ge=2, description="chains per run (the same seeds at every s)")
    gd_starts: int = Field(8, ge=1, description="damped-Newton starts for min F")
    models: list[Literal["attention", "lora"]] = Field(
        ["attention", "lora"], min_length=1, description="potentials"
    )
    s_grid: list[float] = Field(
        [0.4, 0.2, 0.1, 0.05], min_length=2, description="temperatures s, decreasing"
    )
    fixed_s: bool = Field(
        False,
        description="control fixed-s: every run at s_grid[0], each compared with the "
        "predictions at its own s (noise that does not follow s)",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Config:
        g = self.s_grid
        if any(y >= x for x, y in zip(g, g[1:], strict=False)) or g[-1] <= 0:
            raise ValueError(f"'s_grid' must be positive and decrease strictly (got {g})")
        return self


NOTES = """\
Per model, one run of `seeds` chains at each s of `s_grid` (the same chain seeds at every s:
common random numbers, so plateau differences are paired); min F by damped Newton
(Levenberg–Marquardt, the s = 0 descent converged quadratically) from `gd_starts` starts drawn
like the chains' (seeds 10⁶ + seed + i), and the Hessian spectrum at the best one.

**Preconditions** (else the outcome is invalid): no chain diverged; no chain recorded F below
the Newton min F (it is the minimum, not a local one); the Hessian at min F has exactly
p − p_eff eigenvalues below 0.01·λ (the minimiser is nondegenerate up to its orbit); E F relaxes
toward its window mean at the smallest s (rate of log|E F − plateau| ≈ c − λ_s t, low end of its
interval > 0: percentile bootstrap at ≥ 20 chains, else jackknife-t). The last was the claim
`converges-m` until no wrong model could make it fail (the `short-horizon` control fits a
positive rate too): it checks the plateau measurement; the falsifiable part of "converges" is
`plateau-reached`.

**Basins.** Attention starts of scale 1 put 2 of 8 Newton starts in a local minimum
(F = 4.62 against 3.29) where chains at s ≤ 0.1 stayed; from scale 0.3 every start reaches the
global minimum. Random labels, mean pooling or weak teachers give W_Q = W_K = 0 (no orbit,
p_eff = p). LoRA minimisers are often of lower rank than r (the factors' Frobenius penalty is a
nuclear-norm penalty on BA); the precondition catches a smaller orbit.

**The next order.** `laplace` compares the gap with s·p_eff/4·(1 + c·s), c computed at the
minimiser from F's third and fourth derivatives and the orbit's volume (stored as the run
`langevin-plateau:next-order`; c = 0.766 attention, −0.182 LoRA at these potentials); the
first-order ratio (plateau − min F)/(s·p_eff/4) stays in the summary (`ratio`) and the claim's
detail. From 2026-12-03 to 2026-12-05 attention's first-order ratio was reported, not claimed:
the paper preset failed it (1.104 [1.088, 1.121] against 1 ± 0.079) and at small its verdict
depended on the seeds drawn (offsets 0 / 1000 / 2000: 1.08 / 1.12 / 1.10 against 1 ± (1/8 +
δ_h)); docs/langevin.md, "langevin-plateau", has the corrected values.

**Paper preset: `laplace-attention` at the edge of its regime.** Under storage schema 2 (2026-12-06)
it passes, 1.0541 [1.0404, 1.0678]; under schema 1 it failed by 0.0002 (2026-12-05: 1.0636 [1.0476,
1.0795] against 1 ± 0.0793; first order 1.104): the two draws differ by less than the intervals'
half-width, so the verdict at this grid depends on the draw. The schema-1 corrected ratio over s =
0.8 … 0.05 is 0.739, 0.879, 0.959, 1.036, 1.064: the remainder after c·s changes sign, ≈ −0.26 at s
= 0.8 and ≈ +0.06 at s = 0.05 (≈ 25·s²), so the check at s_max (a ratio in (0, 2)) does not bound it
at s_min by (s_min/s_max)² as the tolerance assumes. At s = 0.025 and 0.0125 the corrected ratio is
1.026 and 1.017, at 1 + δ_h: the expansion holds there. What is marginal is the reconstruction's
assumption that s = 0.05 is in attention's Laplace regime, not the computed next order.
"""


class LangevinPlateau(Experiment):
    name = "langevin-plateau"
    description = (
        "arXiv 2605.07959 (reconstruction): attention and LoRA under dΘ = −∇F dt + √s dW: E F "
        "approaches a plateau exponentially, the plateau falls with s, gap → s·p_eff/4"
    )
    Config = Config
    presets = {
        "tiny": {
            "models": ["lora"],
            "s_grid": [0.2, 0.05],
            "lora.t_max": 24.0,
            "lora.records": 81,
            "attention.records": 41,
        },
        "small": {"seeds": 64},
        "paper": {
            "seeds": 64,
            "s_grid": [0.8, 0.4, 0.2, 0.1, 0.05],
            "lora.t_max": 120.0,
            "lora.records": 241,
            "attention.t_max": 480.0,
            "attention.records": 241,
            "gd_starts": 16,
            "gd_steps": 400,
        },
    }
    preset_notes = {
        "tiny": "LoRA only, s ∈ {0.2, 0.05} (τ = 0.25 + δ_h): it tells the temperature convention "
        "(a factor 2) apart, not O(10 %) effects. 81 records over t ≤ 24: with 41 (until "
        "2026-12-06) the fixed-s control's run at s = 0.2 relaxes within two record spacings, "
        "its rate fit had two or three points above the noise floor, and the control was "
        "invalid at 5 of 5 seed offsets under the new noise stream (valid at 5 of 5 with 81).",
        "small": "both models, four s (τ = 1/8 + δ_h), 64 chains. With 32 chains (until "
        "2026-12-06) plateau-reached's worst-of-four window change carried about ±0.12 of "
        "interval against its ±2τ = ±0.25 bound (a failure in roughly one draw of eight) and "
        "failed at seed offset 1000 once the noise stream changed (LoRA 0.14 [0.015, 0.265]).",
        "paper": "the digest's T3/T4 grid s = 0.8 … 0.05 (τ = 1/16 + δ_h), 64 chains, 16 Newton "
        "starts (attention's Laplace ratio reported, not claimed: Notes).",
    }
    controls = {
        "short-horizon": Control(
            {"horizon": 0.125},
            "every run stopped at t_max/8, before the relaxation ends: E F still moves over "
            "the window (its last half), so the window mean is not the plateau",
        ),
        "fixed-s": Control(
            {"fixed_s": True},
            "every run at the largest s (a noise that does not follow s): the plateau cannot "
            "fall with s and the smallest s's gap is s_grid[0]/s_min times its prediction",
        ),
        "beta-1/s": Control(
            {"beta_s": 1.0},
            "the prediction reads the Gibbs measure as exp(−F/s) (β = 1/s, the SGLD convention "
            "dθ = −∇F dt + √(2s) dW) instead of the SDE's exp(−2F/s): the predicted gap "
            "doubles to s·p_eff/2, so the measured ratio is ≈ 1/2 and leaves 1 ± τ (τ ≤ 1/4 + "
            "δ_h in every preset); the simulations are reused",
        ),
    }
    claims = (
        claim(
            "plateau-reached-{}",
            "{}: E F is stationary over the plateau window t ≥ `burn`·t_max",
            statistic="change of E F over the window (least-squares slope × length, "
            "`stationary.window_change`) over the predicted gap, at every s; Student-t over the "
            "per-chain changes; the value farthest from 0",
            target=between(measured("−2τ"), measured("2τ")),
            reason="a linear drift Δ over the window biases the window mean by Δ/2; |Δ| ≤ 2τ "
            "keeps that bias inside the Laplace tolerance τ of `laplace`",
            controls=("short-horizon",),
            over="models",
            weak=(
                "listed weak by issue 49's referee (a wrong model passes it); not yet re-examined"
            ),
        ),
        claim(
            "plateau-falls-{}",
            "{}: the plateau falls with s",
            statistic="plateau(s) − plateau(s') for adjacent s > s' of the grid, per-chain "
            "differences (paired), Student-t; the smallest",
            target=above(0.0),
            reason="the plateau E_μF = min F + ε(s) with ε(s) → 0 as s ↓ 0 (T3)",
            controls=("fixed-s",),
            over="models",
            weak=(
                "listed weak by issue 49's referee (a wrong model passes it); not yet re-examined"
            ),
        ),
        claim(
            "laplace-{}",
            "{}: at the smallest s the gap plateau − min F is the Laplace value with its next "
            "order, s·p_eff/4·(1 + c·s)",
            statistic="(plateau − min F)/(s·p_eff/4·(1 + c·s)) at s_min, Student-t over chains "
            "(min F and c fixed: c from F's third and fourth derivatives and the orbit's volume "
            "at min F, `stationary.laplace_next_order`); and the same ratio at s_max in (0, 2)",
            target=within(1.0, measured("τ = s_min/s_max + δ_h")),
            reason="after the next order the remainder is O(s²), a relative r(s) = c₂s²; "
            "|r(s_max)| < 1 (checked: the ratio at s_max in (0, 2)) bounds it at s_min by "
            "(s_min/s_max)² ≤ s_min/s_max, the first-order claim's tolerance, kept so that a "
            "preset's chains resolve it. EM's O(h) bias of the Gaussian part, δ_h = "
            "(1/p_eff)Σ_i 1/(1 − hH_i/2) − 1 over the Hessian's non-flat eigenvalues "
            "(`stationary.em_gap_factor`), is added. No term is taken from the measured gap",
            controls=("fixed-s", "beta-1/s"),
            over="models",
        ),
    )
    notes = NOTES

    retired = (
        Retired(
            "laplace-attention (first order)",
            "attention: at the smallest s the gap plateau − min F is the Laplace value s·p_eff/4",
            "1 ± (s_min/s_max + δ_h) (95% CI)",
            "paper (2026-12-03): 1.104 [1.088, 1.121] against 1 ± 0.079; small at seed offsets "
            "0, 1000, 2000: 1.08, 1.12, 1.10 against 1 ± (1/8 + δ_h), the verdict depending on "
            "the seeds",
            "2026-12-05",
            "the first-order ratio carries the next order c·s of the Laplace expansion (c = "
            "0.766 for attention, from F's third and fourth derivatives and the orbit's volume "
            "at min F, not from the measured gap); the claim divides by s·p_eff/4·(1 + c·s). The "
            "tolerance stayed first-order (τ = s_min/s_max + δ_h; the O(s²) remainder would "
            "allow (s_min/s_max)²): under storage schema 1 the paper preset failed the new "
            "claim by 0.0002 (1.0636 [1.0476, 1.0795] against 1 ± 0.0793) and under schema 2 "
            "passes it (1.0541 [1.0404, 1.0678]): a thin margin at the edge of the Laplace "
            "regime, see the notes",
            "laplace-attention",
        ),
    )

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        out: dict[str, Any] = {"sims": {}, "minimum": {}, "next_order": {}}
        for m in config.models:
            base = getattr(config, m)
            for s in config.s_grid:
                run_s = config.s_grid[0] if config.fixed_s else s
                out["sims"][(m, s)] = pc.simulate(ctx, config, base, run_s)
            values = pc.potential_fields(base)
            out["minimum"][m] = mn = pc.minimum(ctx, config, values)
            if mn["F"].size:  # none in a dry run: the start is not known
                start = pc.GD_SEED + config.seed + int(np.argmin(mn["F"]))
                out["next_order"][m] = next_order(ctx, values, start, config.gd_steps)
        return out

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        s_min, s_max = config.s_grid[-1], config.s_grid[0]
        for m in config.models:
            base, mn = getattr(config, m), results["minimum"][m]
            F_gd = np.sort(mn["F"])
            F_min = float(F_gd[0])
            spec = pc.spectrum(pc.potential_fields(base), mn["eig"], base.h, int(mn["orbit"][0]))
            runs = {
                s: pc.chains(
                    results["sims"][(m, s)],
                    F_min,
                    2.0 * s * spec["p_eff"] / (4.0 * config.beta_s),
                    config.burn,
                )
                for s in config.s_grid
            }
            c = results["next_order"][m]["c"]
            for s, r in runs.items():
                r["ratio_next"] = mean_ci((r["avg"] - F_min) / (r["pred"] * (1 + c * s)))
            grid = config.s_grid
            out[m] = {
                **spec,
                "F_min": F_min,
                "F_gd": F_gd.tolist(),
                "gd_global": int(np.sum(F_gd - F_min <= 1e-5 * (1 + abs(F_min)))),
                "gd_grad_sq": float(mn["grad_sq"][int(np.argmin(mn["F"]))]),
                "tau": pc.tolerance(s_min, s_max, spec["em_factor"]),
                "next_order": results["next_order"][m],
                "runs": runs,
                "falls": {
                    (a, b): mean_ci(runs[a]["avg"] - runs[b]["avg"])
                    for a, b in zip(grid, grid[1:], strict=False)
                },
                "F_lowest": min(r["F_lowest"] for r in runs.values()),
                "diverged": sum(r["diverged"] for r in runs.values()),
            }
        return out

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        checks, s_min = [], config.s_grid[-1]
        for name, rec in m.items():
            slack = 1e-4 * (1 + abs(rec["F_min"]))
            checks += [
                Check.compare(f"{name}: chains diverged", rec["diverged"], "==", 0),
                Check.compare(
                    f"{name}: lowest recorded F − min F (min F is the minimum)",
                    rec["F_lowest"] - rec["F_min"],
                    ">=",
                    -slack,
                ),
                Check.compare(
                    f"{name}: Hessian eigenvalues < {pc.FLAT_EIG}·λ at min F (the symmetry orbit: "
                    f"{rec['flat']})",
                    rec["flat_observed"],
                    "==",
                    rec["flat"],
                ),
                Check.compare(
                    f"{name}: E F relaxes toward its window mean at s = {s_min} (rate λ_s of "
                    "log|E F − plateau| ≈ c − λ_s t, low end of its 95 % CI)",
                    rec["runs"][s_min]["rate"].low,
                    ">",
                    0.0,
                ),
            ]
        return checks

    def evaluate(self, config: Config, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        s_min, s_max = config.s_grid[-1], config.s_grid[0]
        for name, rec in m.items():
            runs, tau = rec["runs"], rec["tau"]
            changes = {s: r["change"] for s, r in runs.items()}
            wc = pc.largest_deviation(changes)
            out[f"plateau-reached-{name}"] = Evidence(
                changes[wc],
                bounds=(-2 * tau, 2 * tau),
                detail=", ".join(f"s = {s}: {r.value:+.3f}" for s, r in changes.items())
                + f"; value: the farthest from 0, s = {wc}",
            )
            wf = worst(rec["falls"], "low")
            out[f"plateau-falls-{name}"] = Evidence(
                rec["falls"][wf],
                detail=", ".join(f"{a}→{b}: {x.value:.4f}" for (a, b), x in rec["falls"].items())
                + f"; value: the smallest, {wf[0]}→{wf[1]}",
            )
            hi, first, c = runs[s_max]["ratio_next"], runs[s_min]["ratio"], rec["next_order"]["c"]
            out[f"laplace-{name}"] = Evidence(
                runs[s_min]["ratio_next"],
                checks=(
                    Check(
                        "ratio at s_max in (0, 2) (95% CI; the Laplace regime reaches "
                        f"s = {s_max})",
                        bool(hi.low > 0 and hi.high < 2),
                    ),
                ),
                bounds=(tau,),
                detail=f"s = {s_min}, gap over s·p_eff/{4 * config.beta_s / 2:g}·(1 + c·s): "
                f"p = {rec['p']}, p_eff = {rec['p_eff']}, min F = {rec['F_min']:.5f}, c = {c:.3f}; "
                f"τ = {s_min / s_max:.3f} + {abs(rec['em_factor'] - 1):.4f}; at s_max = {s_max}: "
                f"{hi.value:.3f} [{hi.low:.3f}, {hi.high:.3f}]; reported: the first-order ratio "
                f"at s_min {first.value:.3f} [{first.low:.3f}, {first.high:.3f}]",
            )
        return out

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        keys = ("p", "p_eff", "flat", "flat_observed", "eig_min_nonflat", "eig_max", "em_factor")
        keys += ("F_min", "F_gd", "gd_global", "gd_grad_sq", "tau")
        for name, rec in m.items():
            keep = {k: rec[k] for k in keys}
            keep["next_order"] = rec["next_order"]
            for key in ("plateau", "ratio", "ratio_next", "rate", "change"):
                keep[key] = {str(s): pc.triple(r[key]) for s, r in rec["runs"].items()}
            keep["predicted_gap"] = {str(s): r["pred"] for s, r in rec["runs"].items()}
            keep["falls"] = {f"{a}->{b}": pc.triple(x) for (a, b), x in rec["falls"].items()}
            out[name] = keep
        return json_safe(out)

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        fig, axes = new_figure(1, len(m) + 1, figsize=(5 * (len(m) + 1), 4.0))
        for ax, name in zip(axes, m, strict=False):
            rec = m[name]
            for i, (s, r) in enumerate(rec["runs"].items()):
                ax.semilogy(
                    r["time"], r["mean_curve"] - rec["F_min"], color=f"C{i}", label=f"s = {s}"
                )
                ax.axhline(r["pred"], color=f"C{i}", ls="--", lw=0.8)
            ax.axvline(config.burn * getattr(config, name).t_max, color="k", lw=0.5)
            ax.set_xlabel("SDE time t")
            ax.set_ylabel("E F(Θ_t) − min F")
            ax.set_title(f"{name}: p_eff = {rec['p_eff']} (dashed: s·p_eff/4)")
            ax.legend(frameon=False, fontsize=8)
        ax = axes[-1]
        for i, (name, rec) in enumerate(m.items()):
            r = [run["ratio"] for run in rec["runs"].values()]
            ax.errorbar(
                list(rec["runs"]),
                [x.value for x in r],
                yerr=[[x.value - x.low for x in r], [x.high - x.value for x in r]],
                fmt="o-",
                color=f"C{i}",
                label=name,
            )
            c, grid = rec["next_order"]["c"], np.geomspace(min(rec["runs"]), max(rec["runs"]), 50)
            ax.plot(grid, 1 + c * grid, color=f"C{i}", ls="--", lw=0.8)
        ax.axhline(1.0, color="k", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("temperature s")
        ax.set_ylabel("(plateau − min F)/(s·p_eff/4)")
        ax.set_title("Laplace ratio → 1 as s → 0 (dashed: 1 + c·s)")
        ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)
