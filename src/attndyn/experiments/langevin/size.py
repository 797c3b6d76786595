"""``langevin-size`` (arXiv 2605.07959; our reconstruction, docs/langevin.md): at one λ and one
s, the SDE dΘ = −∇F dt + √s dW converges on LoRA nets of every width p and rank r (the paper's
"no assumption on the size"), and the gap grows with the parameter count as the Laplace value
s·p_eff/4 predicts (the digest's T4, T7).

Sizes are (width, rank) pairs of a LoRA net on d-dimensional inputs (``sizes``); each runs
``seeds`` chains at s and at ``s_regime`` > s (the Laplace-regime check: tolerance
τ = s/s_regime + δ_h as in :mod:`attndyn.experiments.langevin.plateau`), and min F by gradient
descent with the Hessian spectrum at the best start.

p_eff is read at the minimiser found: at a minimiser ‖A‖² + ‖B‖² = 2‖BA‖_* (the factors
balance), so the Frobenius regulariser of the factors is a nuclear-norm penalty λ‖BA‖_* on BA,
and minimisers are often rank-deficient. With k the rank of the factors there, the O(r) orbit
has dimension o(r) − o(r − k), o(m) = m(m − 1)/2 (r − 1 at k = 1, r(r − 1)/2 only at full rank,
0 at the adapter-free point A = B = 0, a strict minimum when σ₁(∇_W L̂(W₀)) < λ, the
subdifferential of λ‖·‖_* at 0): p_eff = p − that dimension, and the precondition checks the
Hessian's flat count against it (:func:`attndyn.experiments.langevin.plateau.minimum`).
Ranks stay ≤ 2 at the default sizes: r = 4 and 16 gave rank-1 minimisers (docs/langevin.md).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims.base import Check, Claim, Control, Experiment, RunContext
from attndyn.claims.stats import bootstrap_ci, worst
from attndyn.core.serial import json_safe
from attndyn.experiments.langevin.plateau import (
    FLAT_EIG,
    Common,
    chains,
    common_values,
    largest_deviation,
    minimum,
    run_values,
    spectrum,
    tolerance,
)
from attndyn.figures.draw import new_figure, save_figure

NAME = "langevin-size"


class Config(Common):
    seeds: int = Field(16, ge=2, description="chains per run (the same seeds at every size)")
    h: float = Field(0.02, gt=0, description="Euler–Maruyama step")
    gd_starts: int = Field(
        3, ge=1, description="Newton starts for min F (langevin-plateau checks basins)"
    )
    sizes: list[tuple[int, int]] = Field(
        [(16, 1), (16, 2), (64, 2), (256, 2)],
        min_length=2,
        description="LoRA (width, rank) pairs",
    )
    d: int = Field(4, ge=1, description="input dimension")
    s: float = Field(0.05, gt=0, description="temperature s of the claims")
    s_regime: float = Field(0.4, gt=0, description="larger s: the Laplace regime reaches it")
    theory: Literal["fixed", "mean-field"] = Field(
        "fixed",
        description="the prediction's temperature: the same s at every size (the SDE's), or "
        "s·p_eff,min/p_eff (control: a mean-field noise per parameter)",
    )

    @model_validator(mode="after")
    def _sizes(self) -> Config:
        if self.s_regime <= self.s:
            raise ValueError("'s_regime' must exceed 's'")
        for w, r in self.sizes:
            if r > min(w, self.d):
                raise ValueError(f"'sizes': rank {r} exceeds min(width {w}, d {self.d})")
        return self


def size_values(config: Config, width: int, rank: int) -> dict[str, Any]:
    return dict(
        common_values(config),
        model="lora",
        d=config.d,
        width=width,
        rank=rank,
        init_scale=config.lora_init_scale,
    )


def theory_factor(config: Config, p: dict[tuple[int, int], int]) -> dict[tuple[int, int], float]:
    """The predicted temperature over s at each size, given p_eff there: 1 (the SDE's s
    everywhere), or p_eff,min/p_eff (the mean-field control: a gap independent of the size,
    exponent 0)."""
    p_min = min(p.values())
    return {wr: (p_min / p[wr] if config.theory == "mean-field" else 1.0) for wr in p}


class LangevinSize(Experiment):
    name = NAME
    description = (
        "arXiv 2605.07959 (reconstruction): one λ and s across LoRA widths and ranks: the SDE "
        "converges at every size and the gap grows like s·p_eff/4"
    )
    Config = Config
    presets = {
        "tiny": {"sizes": [(16, 2), (64, 2)], "t_max": 24.0, "records": 41},
        "small": {},
        "paper": {
            "sizes": [(16, 1), (16, 2), (64, 2), (256, 2), (1024, 2)],
            "seeds": 32,
            "t_max": 40.0,
            "records": 81,
            "gd_steps": 400,
        },
    }
    controls = {
        "short-horizon": Control(
            {"horizon": 0.125},
            ("plateau-reached",),
            "every run stopped at t_max/8, before the relaxation ends: E F still moves over "
            "the window (its last half), so the window mean is not the plateau",
        ),
        "beta-1/s": Control(
            {"beta_s": 1.0},
            ("gap-matches-size",),
            "the prediction reads the Gibbs measure as exp(−F/s) instead of exp(−2F/s): the "
            "predicted gap doubles at every size, the ratios fall to ≈ 1/2, outside 1 ± τ; the "
            "simulations are reused",
        ),
        "mean-field": Control(
            {"theory": "mean-field"},
            ("gap-matches-size", "gap-slope"),
            "the prediction takes a mean-field noise, temperature s·p_eff,min/p_eff per size (as "
            "if the noise were shared out over the parameters): a gap independent of the size "
            "(exponent 0) and ratios p_eff/p_eff,min; the SDE's isotropic √s noise puts s/4 "
            "into every non-flat direction, so the measured exponent ≈ 1 and the ratios at the "
            "larger sizes fail; the simulations are reused",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        return ["plateau-reached", "gap-matches-size", "gap-slope"]

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        out: dict[str, Any] = {"sims": {}, "minimum": {}}
        for wr in config.sizes:
            values = size_values(config, *wr)
            for which, s in (("s", config.s), ("regime", config.s_regime)):
                out["sims"][(wr, which)] = ctx.simulate("langevin", **run_values(config, values, s))
            out["minimum"][wr] = minimum(ctx, config, values)
        return out

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        sizes: dict[tuple[int, int], Any] = {}
        for wr in config.sizes:
            values = size_values(config, *wr)
            mn = {k: results["minimum"][wr][k].values.astype(float) for k in ("F", "eig", "orbit")}
            mn = {k: v[np.isfinite(v)] for k, v in mn.items()}
            spec = spectrum(values, mn["eig"], config.h, int(mn["orbit"][0]))
            sizes[wr] = {**spec, "F_min": float(np.min(mn["F"]))}
        factor = theory_factor(config, {wr: rec["p_eff"] for wr, rec in sizes.items()})
        for wr in config.sizes:
            rec = sizes[wr]
            F_min = rec["F_min"]
            for which, s in (("s", config.s), ("regime", config.s_regime)):
                pred = factor[wr] * s * rec["p_eff"] / (2.0 * config.beta_s)
                rec[which] = chains(results["sims"][(wr, which)], F_min, pred, config.burn)
                rec[which]["pred"] = pred
            rec["tau"] = tolerance(config.s, config.s_regime, rec["em_factor"])
        m: dict[str, Any] = {"sizes": sizes}
        m["tau"] = max(r["tau"] for r in sizes.values())
        p = np.array([sizes[wr]["p_eff"] for wr in config.sizes], dtype=float)
        avgs = [sizes[wr]["s"]["avg"] for wr in config.sizes]
        F_mins = np.array([sizes[wr]["F_min"] for wr in config.sizes])

        def slope(*groups) -> float:
            gaps = np.array([np.mean(g) for g in groups]) - F_mins
            if np.any(gaps <= 0):
                return float("nan")
            return float(np.polyfit(np.log(p), np.log(gaps), 1)[0])

        m["slope"] = bootstrap_ci(avgs, slope)
        # the predicted exponent of gap ∝ p_eff^k: 1 at one s, 0 under the mean-field theory
        m["slope_predicted"] = 1.0 if config.theory == "fixed" else 0.0
        m["slope_tol"] = math.log((1 + m["tau"]) / (1 - m["tau"])) / math.log(p.max() / p.min())
        m["diverged"] = sum(r[w]["diverged"] for r in sizes.values() for w in ("s", "regime"))
        return m

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        checks = [Check.compare("chains diverged (every run)", m["diverged"], "==", 0)]
        rates = {wr: rec["s"]["rate"] for wr, rec in m["sizes"].items()}
        w, r = worst(rates, "low")
        checks.append(
            Check.compare(
                f"E F relaxes toward its window mean at s = {config.s}, every size (rate λ_s of "
                f"log|E F − plateau|, low end of its bootstrap 95 % CI; the lowest: {w}×{r}; "
                + ", ".join(f"{a}×{b}: {x.value:.3f}" for (a, b), x in rates.items())
                + ")",
                rates[(w, r)].low,
                ">",
                0.0,
            )
        )
        for (w, r), rec in m["sizes"].items():
            lowest = min(rec["s"]["F_lowest"], rec["regime"]["F_lowest"])
            checks += [
                Check.compare(
                    f"width {w}, rank {r}: lowest recorded F − min F",
                    lowest - rec["F_min"],
                    ">=",
                    -1e-4 * (1 + abs(rec["F_min"])),
                ),
                Check.compare(
                    f"width {w}, rank {r}: Hessian eigenvalues < {FLAT_EIG}·λ at min F (the "
                    f"orbit through the minimiser: {rec['flat']}; at a generic point "
                    f"{rec['flat_generic']})",
                    rec["flat_observed"],
                    "==",
                    rec["flat"],
                ),
            ]
        return checks

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        sizes = m["sizes"]
        label = {wr: f"{wr[0]}×{wr[1]}" for wr in sizes}
        changes = {wr: rec["s"]["change"] for wr, rec in sizes.items()}
        wr_change = largest_deviation(changes)
        ratios = {wr: rec["s"]["ratio"] for wr, rec in sizes.items()}
        wr_ratio = largest_deviation({wr: x.map(lambda v: v - 1.0) for wr, x in ratios.items()})
        tau_r = sizes[wr_ratio]["tau"]
        regime = {wr: rec["regime"]["ratio"] for wr, rec in sizes.items()}
        return [
            Claim.between(
                "plateau-reached",
                f"change of E F over t ≥ {config.burn}·t_max over s·p_eff/4 at s = {config.s}: "
                + ", ".join(f"{label[wr]}: {x.value:+.3f}" for wr, x in changes.items())
                + f"; value: the farthest from 0, {label[wr_change]} (|Δ| ≤ 2τ: the window "
                "mean's bias Δ/2 within the Laplace tolerance)",
                changes[wr_change],
                -2 * sizes[wr_change]["tau"],
                2 * sizes[wr_change]["tau"],
            ),
            Claim.within(
                "gap-matches-size",
                f"(plateau − min F)/(s·p_eff/4) at s = {config.s}, λ = {config.lam}: "
                + ", ".join(
                    f"{label[wr]} (p_eff {sizes[wr]['p_eff']}): {x.value:.3f}"
                    for wr, x in ratios.items()
                )
                + f"; value: the farthest from 1, {label[wr_ratio]}; τ = s/s_regime + δ_h",
                ratios[wr_ratio],
                1.0,
                tau_r,
                False,
                Check(
                    f"every ratio at s_regime = {config.s_regime} in (0, 2) (95% CI)",
                    all(x.low > 0 and x.high < 2 for x in regime.values()),
                ),
            ),
            Claim.within(
                "gap-slope",
                f"predicted exponent {m['slope_predicted']:g}; "
                "least-squares slope of log(plateau − min F) against log p_eff over the sizes "
                f"(p_eff {', '.join(str(sizes[wr]['p_eff']) for wr in sizes)}), bootstrap "
                "within each size; tolerance ln((1+τ)/(1−τ))/ln(p_max/p_min): the slope's "
                "range when every ratio lies in 1 ± τ",
                m["slope"],
                m["slope_predicted"],
                m["slope_tol"],
            ),
        ]

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"slope": [m["slope"].value, m["slope"].low, m["slope"].high]}
        out["slope_tol"] = m["slope_tol"]
        for (w, r), rec in m["sizes"].items():
            keep = {
                k: rec[k]
                for k in (
                    "p",
                    "p_eff",
                    "flat",
                    "flat_generic",
                    "flat_observed",
                    "eig_min_nonflat",
                    "eig_max",
                    "em_factor",
                    "F_min",
                    "tau",
                )
            }
            for which in ("s", "regime"):
                for key in ("ratio", "rate", "change", "plateau"):
                    x = rec[which][key]
                    keep[f"{key}_{which}"] = [x.value, x.low, x.high]
            out[f"{w}x{r}"] = keep
        return json_safe(out)

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:

        sizes = m["sizes"]
        fig, axes = new_figure(1, 2, figsize=(11, 4.0))
        ax = axes[0]
        for i, (wr, rec) in enumerate(sizes.items()):
            r = rec["s"]
            ax.semilogy(
                r["time"],
                np.abs(r["mean_curve"] - rec["F_min"]) / r["pred"],
                color=f"C{i}",
                label=f"width {wr[0]}, rank {wr[1]} (p_eff {rec['p_eff']})",
            )
        ax.axhline(1.0, color="k", ls="--", lw=0.8)
        ax.axvline(config.burn * config.t_max, color="k", lw=0.5)
        ax.set_xlabel("SDE time t")
        ax.set_ylabel("(E F − min F)/(s·p_eff/4)")
        ax.set_title(f"convergence at every size (s = {config.s}, λ = {config.lam})")
        ax.legend(frameon=False, fontsize=8)
        ax = axes[1]
        p = np.array([rec["p_eff"] for rec in sizes.values()], dtype=float)
        for which, marker in (("s", "o"), ("regime", "s")):
            gaps = [rec[which]["plateau"].value - rec["F_min"] for rec in sizes.values()]
            s = config.s if which == "s" else config.s_regime
            ax.loglog(p, gaps, marker, label=f"plateau − min F, s = {s}")
            ax.loglog(p, s * p / 4, "k--" if which == "s" else "k:", lw=0.8)
        x = m["slope"]
        ax.set_xlabel("p_eff")
        ax.set_ylabel("plateau − min F (dashed: s·p_eff/4)")
        ax.set_title(f"gap vs p_eff: slope {x.value:.3f} [{x.low:.3f}, {x.high:.3f}]")
        ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)
