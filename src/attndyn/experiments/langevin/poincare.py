"""``langevin-poincare`` (arXiv 2605.07959, "for any mild regularization … a Poincaré
inequality"; reconstruction: docs/langevin.md). The generator 𝓛 = (s/2)Δ − ∇F·∇ of
dΘ = −∇F dt + √s dW has spectral gap κ = s/(2C_P). The balance b of a pair on which L̂ is
GL-invariant obeys 𝓛b = s(#W₁ − #W₂) − 2λb exactly, so κ ≤ 2λ for any data and size
(docs/langevin.md, "A bound on the Poincaré constant"). This experiment measures the slowest
relaxation rate at stationarity over λ and s (:func:`attndyn.models.langevin.stationary.
slowest_rate`) and its exponent as λ → 0⁺, and the same rate across sizes and data sets
(``variants``: the abstract's "no assumption on the data or the size").
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import ExperimentConfig, variant
from attndyn.claims.spec import Evidence, at_least, claim, within
from attndyn.claims.stats import MIN_BOOTSTRAP_SEEDS, bootstrap_ci, jackknife_ci
from attndyn.claims.verdict import Check
from attndyn.core.serial import json_safe
from attndyn.experiments.langevin import plateau_common as pc
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.langevin.config import LangevinConfig
from attndyn.models.langevin.model import n_params

NAME = "langevin-poincare"
Model = Literal["lora", "attention"]
SKIP = ("step", "samples")  # bookkeeping, not observables
SIZE_FIELDS = {"width", "rank", "d", "heads", "d_k"}  # a variant of these only is a size variant
VARIANTS = {
    "lora": {
        "width-4": {"width": 4},
        "width-16": {"width": 16},
        "width-32": {"width": 32},
        "rank-1": {"rank": 1},
        "rank-4": {"rank": 4},
        "random-labels": {"labels": "random"},
        "heavy-tailed": {"inputs": "heavy-tailed"},
        "near-duplicate": {"inputs": "near-duplicate"},
    },
    "attention": {
        "heads-2": {"heads": 2},
        "random-labels": {"labels": "random"},
        "heavy-tailed": {"inputs": "heavy-tailed"},
        "near-duplicate": {"inputs": "near-duplicate"},
    },
}


class Config(ExperimentConfig):
    lora: LangevinConfig = pc.potential_base(
        "langevin-plateau's LoRA net (tanh, d = 4, width 8, rank 2, n = 32; p = 24), starts of "
        "scale 1; λ, s, t_max and the record grid are set per run",
        **pc.LORA_NET,
    )
    attention: LangevinConfig = pc.potential_base(
        "langevin-plateau's attention regressor (d = 4, T = 4, one head, d_k = 2, last-token "
        "output; p = 20), starts of scale 0.3 (every Newton start reaches the global minimum "
        "from there: langevin-plateau's notes)",
        **pc.ATTENTION_NET,
    )
    models: list[Model] = Field(["lora", "attention"], min_length=1)
    lams: list[float] = Field(
        [1.0, 0.3, 0.1, 0.03, 0.01], min_length=1, description="λ grid (decreasing, ≥ 0)"
    )
    s_values: list[float] = Field([0.05, 0.1], min_length=1, description="temperatures s")
    seeds: int = Field(64, ge=MIN_BOOTSTRAP_SEEDS, description="chains per run (bootstrap: ≥ 20)")
    lam_unit: float = Field(
        0.01,
        gt=0,
        description="time unit 1/(2·max(λ, lam_unit)): the gauge mode's relaxation time, floored "
        "(λ = 0 runs as long as λ = lam_unit)",
    )
    burn: float = Field(5.0, gt=0, description="burn-in, in time units")
    sample: float = Field(10.0, gt=0, description="stationary window, in time units")
    spacing: float = Field(0.25, gt=0, description="record spacing, in time units")
    lag: int = Field(2, ge=1, description="lag τ of the rate estimate, in records")
    basin_gap: float = Field(
        2.0,
        gt=0,
        description="a chain whose window mean of F exceeds the runs' median by more than "
        "basin_gap·s·p/4 (the Laplace scale of F's thermal excess) sits in another basin",
    )
    basin_share: float = Field(
        0.9, gt=0, le=1, description="precondition: share of chains in the main basin, every run"
    )
    lam_fit: float = Field(0.1, gt=0, description="the exponent is fitted over λ ≤ lam_fit")
    exponent: float = Field(
        1.0,
        description="predicted exponent of the rate in λ: 1 (the gauge mode's 2λ); the control "
        "data-curvature sets 0",
    )
    exponent_tol: float = Field(0.2, gt=0, description="tolerance on the exponent")
    variants: dict[Model, dict[str, dict[str, Any]]] = Field(
        VARIANTS,
        description="per model, named changes to its potential (sizes, labels, inputs), each run "
        "at λ = variant_lam and s = variant_s",
    )
    variant_lam: float = Field(0.1, ge=0, description="λ of the variants' runs")
    variant_s: float = Field(0.1, gt=0, description="s of the variants' runs")

    @model_validator(mode="after")
    def _grid(self) -> Config:
        g = self.lams
        if any(y >= x for x, y in zip(g, g[1:], strict=False)) or g[-1] < 0:
            raise ValueError(f"lams: must be ≥ 0 and decrease strictly (got {g})")
        if any(s <= 0 for s in self.s_values):
            raise ValueError(f"s_values: must be > 0 (got {self.s_values})")
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"models: repeated model (got {self.models})")
        if self.lag >= self.sample / self.spacing:
            raise ValueError("lag: must be shorter than the stationary window (sample/spacing)")
        for m, named in self.variants.items():
            for name, changes in named.items():
                try:
                    variant(getattr(self, m), **changes)
                except (ValueError, TypeError) as err:
                    raise ValueError(f"variants.{m}.{name}: {err}") from None
        return self

    def unit(self, lam: float) -> float:
        return 1.0 / (2.0 * max(lam, self.lam_unit))

    def fitted(self) -> list[float]:
        return [lam for lam in self.lams if 0 < lam <= self.lam_fit]


NOTES = """\
**Estimator.** Each (model, s, λ) run starts `seeds` chains from the model's init, burns in for
`burn` time units of 1/(2λ) (the gauge mode's relaxation time) and records every scalar
observable (F, L̂, the regulariser, ‖θ‖², ‖∇F‖², the group norms, the balance) for `sample`
units. The slowest rate is the variational estimate over the span of these observables at lag
τ = `lag`·`spacing` units (`stationary.slowest_rate`): for a reversible process it is an upper
bound on the spectral gap κ = s/(2C_P), equal to κ when the span holds the slowest eigenfunction.
The balance b is in the span, and −𝓛b = 2λ(b − b*) exactly, so the estimate can be at most
≈ 2λ (within noise); what it measures is whether any slower mode shows in the span.

**What it can and cannot show.** A positive rate at every λ > 0 says the observables relax at
stationarity; it is not a proof of a Poincaré inequality (an upper bound on κ, never a lower
one), and slower modes outside the span (the diffusion along the compact O(k) orbit, rate of
order s/ρ² for an orbit of radius ρ; crossings between the components of O(k) or between
basins, exponentially slow in 1/s) are invisible to GL-invariant observables. The exponent claim
tests the prediction that the gauge mode (2λ) becomes the bottleneck as λ → 0⁺, so C_P grows like
1/λ: the bound C_P ≥ s/(4λ) is exact, and the data modes keep rates of order 1.

**Basins.** The estimate is made within the basin most chains occupy: a chain whose window
mean of F lies more than `basin_gap`·s·p/4 above the median chain's sits elsewhere (listed in a
precondition, which needs `basin_share` of the chains in the main basin in every run). At seed
offset 2000, 1–2 of 64 attention chains at s = 0.1 and λ ≤ 0.1 sat in a second basin (F ≈ 2.9–3.8
against ≈ 1.1) that no chain left within the window; kept in, that near-constant indicator made
κ̂ 0.25–0.48 × 2λ and the exponent 1.13 [0.86, 1.52]. The escape from such a basin is a real
slower mode (the global gap is at most it, exponentially small in 1/s), which no window here
resolves: the claims are about the relaxation inside a basin (docs/langevin.md).

**Scope.** Measured once beyond the presets (docs/langevin.md): LoRA at other widths and ranks
and with random labels keeps κ̂ ≈ 2λ, but attention with two heads has a slower mode
(κ̂/(2λ) = 0.24, 0.52 at λ = 0.1, 0.03) that barely moves with λ; the exponent claim is the
one-head regressor's.

**Control `no-regularisation`**: λ = 0, where b walks along the GL orbit (Itô: E b_t grows
linearly for LoRA, Var b_t grows for both) and no Gibbs probability measure exists: the estimate
must fall below one relaxation per window. **Control `data-curvature`**: the prediction that
the data Hessian's curvature, which does not vanish with λ, bounds the gap (Bakry–Émery read on
L̂ alone): exponent 0.
"""


class LangevinPoincare(Experiment):
    name = NAME
    description = (
        "arXiv 2605.07959 (reconstruction): the slowest relaxation rate of the Gibbs dynamics "
        "of a one-head attention regressor and a LoRA net is positive at every λ > 0 and scales "
        "like λ as λ → 0⁺ (the gauge mode's exact 2λ: C_P ≥ s/(4λ))"
    )
    Config = Config
    presets = {
        "tiny": {
            "models": ["lora"],
            "lams": [0.1, 0.01],
            "s_values": [0.1],
            "seeds": 48,
            "lora.h": 0.02,
            "variants": {
                "lora": {k: VARIANTS["lora"][k] for k in ("width-16", "heavy-tailed")},
                "attention": {},
            },
        },
        "small": {"seeds": 128},
        "paper": {"seeds": 128, "sample": 20.0},
    }
    preset_notes = {
        "tiny": "LoRA only, λ ∈ {0.1, 0.01}, s = 0.1, 48 chains, EM step h = 0.02 (the exponent "
        "from two λ a decade apart); two variants, width 16 and heavy-tailed inputs.",
        "small": "both models, λ ∈ {1, 0.3, 0.1, 0.03, 0.01}, s ∈ {0.05, 0.1}, 128 chains, "
        "burn 5 and window 10 units of 1/(2λ); every variant of VARIANTS at λ = 0.1, s = 0.1. "
        "With 64 chains (until 2026-12-06) attention's exponent interval reached ±0.15–0.3 "
        "against the ±0.2 tolerance and failed at seed offset 1000 once the noise stream "
        "changed (1.00 [0.93, 1.30]); 128 chains gave 1.00 [0.93, 1.09] there.",
        "paper": "the small grid with 128 chains and a window of 20 units (the paper publishes "
        "no settings).",
    }
    controls = {
        "no-regularisation": Control(
            {"lams": [0.0], "variant_lam": 0.0},
            "λ = 0: the balance walks along the flat GL orbit, no Gibbs measure exists, and the "
            "slowest rate must fall below one relaxation per window",
        ),
        "data-curvature": Control(
            {"exponent": 0.0},
            "the prediction that the data curvature bounds the gap (exponent 0, a rate that "
            "stays of order 1 as λ → 0⁺); the simulations are reused",
        ),
    }
    claims = (
        claim(
            "{}-variants-positive",
            "{}: at every size and data set of `variants` the slowest relaxation rate at "
            "stationarity is positive, resolved within the window",
            statistic="κ̂·T as in rate-positive, per variant at λ = `variant_lam`, s = "
            "`variant_s`; the variant with the lowest low end",
            target=at_least(1.0),
            reason="the abstract's Poincaré inequality assumes nothing on the data or the size: "
            "every variant must relax (κ ≤ 2λ holds for each, exactly)",
            controls={"no-regularisation": ()},
            over=lambda c: [m for m in c.models if c.variants.get(m)],
            weak=(
                "κ̂ is the relaxation rate of an observable, an upper bound on the spectral gap, "
                "and at small λ the ridge's gauge mode 2λ: no lower bound on the Poincaré constant"
                " is measured (issue 49's referee)"
            ),
        ),
        claim(
            "{}-rate-positive",
            "{}: at every λ > 0 and s of the grid the slowest relaxation rate at stationarity is "
            "positive, resolved within the window",
            statistic="κ̂·T, κ̂ the variational rate over the recorded observables (lag τ) and T "
            "the window's length (relaxation times per window), percentile bootstrap over "
            "chains; the (λ, s) cell with the lowest low end",
            target=at_least(1.0),
            reason="a rate below 1/T cannot be told from no relaxation within the window; at "
            "λ > 0 the gauge mode alone gives κ·T = 2λ·T = `sample`",
            controls={"no-regularisation": ()},
            over="models",
            weak=(
                "κ̂ is the relaxation rate of an observable, an upper bound on the spectral gap, "
                "and at small λ the ridge's gauge mode 2λ: no lower bound on the Poincaré constant"
                " is measured (issue 49's referee)"
            ),
        ),
        claim(
            "{}-rate-exponent",
            "{}: the slowest rate scales like λ^a as λ → 0⁺ with a = `exponent`",
            statistic="least-squares slope of log κ̂ against log λ over λ ≤ `lam_fit`, per s "
            "(the same chains at every λ: bootstrap resampling chains); the s farthest from the "
            "prediction",
            target=within("exponent", "exponent_tol"),
            reason="−𝓛b = 2λ(b − b*) exactly, so κ ≤ 2λ; the data modes keep rates of order 1, so "
            "the gauge mode is the bottleneck once 2λ is below them: exponent 1. The tolerance "
            "allows κ̂/(2λ) to drift by 10^0.2 = 1.6× over a decade (the estimator's lag bias and "
            "data modes near 2λ at the largest fitted λ)",
            controls={"data-curvature": ()},
            over="models",
            when=lambda c: len(c.fitted()) >= 2,
            weak=(
                "κ̂ is the relaxation rate of an observable, an upper bound on the spectral gap, "
                "and at small λ the ridge's gauge mode 2λ: no lower bound on the Poincaré constant"
                " is measured (issue 49's referee)"
            ),
        ),
    )
    notes = NOTES

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        out: dict[str, Any] = {}
        records = 1 + int(round((config.burn + config.sample) / config.spacing))

        def sim(base, lam, s, **changes):
            t_max = (config.burn + config.sample) * config.unit(lam)
            return ctx.simulate(
                "langevin", base, **changes, lam=lam, s=s, t_max=t_max, records=records
            )

        for m in config.models:
            base = getattr(config, m)
            for s in config.s_values:
                for lam in config.lams:
                    out[(m, s, lam)] = sim(base, lam, s)
            for name, changes in config.variants.get(m, {}).items():
                out[(m, name)] = sim(base, config.variant_lam, config.variant_s, **changes)
        return out

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        from attndyn.models.langevin.stationary import slowest_rate

        cells: dict[tuple[str, float, float], dict[str, Any]] = {}
        data: dict[tuple[str, float, float], np.ndarray] = {}
        diverged = 0
        for key, tr in results.items():
            m = key[0]
            if len(key) == 3:
                s, lam, p = key[1], key[2], n_params(getattr(config, m))
            else:  # a variant
                s, lam = config.variant_s, config.variant_lam
                p = n_params(variant(getattr(config, m), **config.variants[m][key[1]]))
            diverged += int(tr["diverged"].values.sum())
            t = tr["time"].values.astype(float)
            keep = t >= config.burn * config.unit(lam) - 1e-9
            names = sorted(
                k for k in tr.data_vars if tr[k].dims == ("seed", "time") and k not in SKIP
            )
            x = np.stack([tr[k].values[:, keep] for k in names], axis=-1).astype(float)
            dt, window = float(t[1] - t[0]), float(t[keep][-1] - t[keep][0])
            inside, far = main_basin(tr["F"].values[:, keep], config.basin_gap * s * p / 4)
            data[key] = x  # every chain; the estimates use the main basin's
            x = x[inside]

            def rate(idx, x=x, dt=dt):
                return slowest_rate(x[idx.astype(int)], config.lag, dt)

            chains = np.arange(x.shape[0], dtype=float)
            kappa = bootstrap_ci(chains, rate)
            cells[key] = {
                "rate": kappa,
                "per_window": kappa.map(lambda v, w=window: v * w),
                "over_2lam": kappa.value / (2 * lam) if lam > 0 else float("inf"),
                "dt": dt,
                "inside": inside,
                "outside": far,
                "p": p,
            }
        slopes: dict[tuple[str, float], Any] = {}
        fit = config.fitted()
        if len(fit) >= 2:
            for m in config.models:
                for s in config.s_values:
                    # the chains in the main basin at every fitted λ (the same seeds)
                    both = np.logical_and.reduce([cells[(m, s, lam)]["inside"] for lam in fit])
                    xs = [data[(m, s, lam)][both] for lam in fit]
                    dts = [cells[(m, s, lam)]["dt"] for lam in fit]

                    def slope(idx, xs=xs, dts=dts):
                        i = idx.astype(int)
                        k = [
                            slowest_rate(x[i], config.lag, dt)
                            for x, dt in zip(xs, dts, strict=True)
                        ]
                        if not np.all(np.isfinite(k)) or min(k) <= 0:
                            return float("nan")
                        return float(np.polyfit(np.log(fit), np.log(k), 1)[0])

                    chains = np.arange(int(both.sum()), dtype=float)
                    slopes[(m, s)] = (
                        bootstrap_ci(chains, slope)
                        if chains.size >= MIN_BOOTSTRAP_SEEDS
                        else jackknife_ci(chains, slope)
                    )
        return {
            "cells": cells,
            "slopes": slopes,
            "size_exponent": self._size_exponent(config, cells, data),
            "diverged": diverged,
        }

    def _size_exponent(self, config: Config, cells: dict, data: dict) -> dict[str, Any]:
        """Per model, the slope of log κ̂ against log p over the size variants (changes in
        SIZE_FIELDS only) and the base run at (variant_lam, variant_s) where the grid has it:
        bootstrap over chains (the same seeds in every run). Reported, not claimed."""
        from attndyn.models.langevin.stationary import slowest_rate

        out: dict[str, Any] = {}
        for m in config.models:
            keys = [
                (m, name)
                for name, ch in config.variants.get(m, {}).items()
                if set(ch) <= SIZE_FIELDS
            ]
            keys += [(m, config.variant_s, config.variant_lam)]
            keys = [k for k in keys if k in cells]
            if len({cells[k]["p"] for k in keys}) < 2:
                continue
            both = np.logical_and.reduce([cells[k]["inside"] for k in keys])
            xs = [data[k][both] for k in keys]
            log_p = np.log([cells[k]["p"] for k in keys])

            def slope(idx, xs=xs, keys=keys, log_p=log_p):
                i = idx.astype(int)
                k = [
                    slowest_rate(x[i], config.lag, cells[key]["dt"])
                    for x, key in zip(xs, keys, strict=True)
                ]
                if not np.all(np.isfinite(k)) or min(k) <= 0:
                    return float("nan")
                return float(np.polyfit(log_p, np.log(k), 1)[0])

            out[m] = bootstrap_ci(np.arange(int(both.sum()), dtype=float), slope)
        return out

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        cells = m["cells"]
        worst = min(cells, key=lambda k: cells[k]["inside"].sum())
        total = config.seeds
        out = [
            Check.compare("diverged chains (every run)", m["diverged"], "==", 0),
            Check.compare(
                f"share of chains in the main basin, the lowest run ({_label(worst)}); chains "
                "elsewhere: "
                + (
                    "; ".join(
                        f"{_label(k)}: " + ", ".join(f"F = {f:.3g}" for f in c["outside"])
                        for k, c in cells.items()
                        if c["outside"]
                    )
                    or "none"
                )
                + ")",
                cells[worst]["inside"].sum() / total,
                ">=",
                config.basin_share,
            ),
        ]
        return out

    def evaluate(self, config: Config, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for model in config.models:
            named = {k: c for k, c in m["cells"].items() if k[0] == model and len(k) == 2}
            if named:
                low = min(named, key=lambda k: _low(named[k]["per_window"]))
                size = m["size_exponent"].get(model)
                out[f"{model}-variants-positive"] = Evidence(
                    named[low]["per_window"],
                    detail=f"λ = {config.variant_lam:g}, s = {config.variant_s:g}; κ̂/2λ (p): "
                    + "; ".join(f"{k[1]} {c['over_2lam']:.2f} ({c['p']})" for k, c in named.items())
                    + f"; value: the lowest, {low[1]}"
                    + (
                        f"; reported: exponent of κ̂ in p over the size variants {size.value:.3f} "
                        f"[{size.low:.3f}, {size.high:.3f}]"
                        if size is not None
                        else ""
                    ),
                )
            cells = {k: c for k, c in m["cells"].items() if k[0] == model and len(k) == 3}
            worst = min(cells, key=lambda k: _low(cells[k]["per_window"]))
            out[f"{model}-rate-positive"] = Evidence(
                cells[worst]["per_window"],
                detail="κ̂ (κ̂/2λ): "
                + "; ".join(
                    f"s = {s:g}, λ = {lam:g}: {c['rate'].value:.4g} ({c['over_2lam']:.2f})"
                    for (_, s, lam), c in cells.items()
                )
                + f"; value: the lowest cell, s = {worst[1]:g}, λ = {worst[2]:g}",
            )
            slopes = {k: x for k, x in m["slopes"].items() if k[0] == model}
            if slopes:
                far = max(
                    slopes,
                    key=lambda k: (
                        max(
                            abs(slopes[k].low - config.exponent),
                            abs(slopes[k].high - config.exponent),
                        )
                        if math.isfinite(slopes[k].low)
                        else math.inf
                    ),
                )
                out[f"{model}-rate-exponent"] = Evidence(
                    slopes[far],
                    detail=", ".join(f"s = {k[1]:g}: {x.value:.3f}" for k, x in slopes.items())
                    + f" over λ = {config.fitted()}; value: s = {far[1]:g}",
                )
        return out

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        cells = {
            (f"{k[0]} s={k[1]:g} lam={k[2]:g}" if len(k) == 3 else f"{k[0]} {k[1]}"): {
                "rate": pc.triple(c["rate"]),
                "per_window": pc.triple(c["per_window"]),
                "over_2lam": c["over_2lam"],
                "chains": int(c["inside"].sum()),
                "outside": c["outside"],
                "p": c["p"],
            }
            for k, c in m["cells"].items()
        }
        slopes = {f"{k[0]} s={k[1]:g}": pc.triple(x) for k, x in m["slopes"].items()}
        size = {k: pc.triple(x) for k, x in m["size_exponent"].items()}
        return json_safe(
            {"cells": cells, "slopes": slopes, "size_exponent": size, "diverged": m["diverged"]}
        )

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        fig, axes = new_figure(1, len(config.models), figsize=(5.5 * len(config.models), 4.2))
        axes = np.atleast_1d(axes)
        for ax, model in zip(axes, config.models, strict=True):
            for i, s in enumerate(config.s_values):
                lams = [lam for lam in config.lams if lam > 0]
                k = [m["cells"][(model, s, lam)]["rate"] for lam in lams]
                err = np.array([[x.value - x.low for x in k], [x.high - x.value for x in k]])
                ax.errorbar(lams, [x.value for x in k], yerr=err, fmt="o-", color=f"C{i}",
                            label=f"s = {s:g}")  # fmt: skip
            grid = np.array([lam for lam in config.lams if lam > 0])
            if grid.size:
                ax.plot(grid, 2 * grid, "k--", lw=0.8, label="2λ (gauge eigenvalue)")
                ax.set(xscale="log", yscale="log")
            ax.set(xlabel="λ", ylabel="slowest rate κ̂ at stationarity")
            ax.set_title(f"{model}: relaxation rate against λ")
            ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)


def _label(key: tuple) -> str:
    """A run's name: (model, s, λ) of the grid or (model, variant)."""
    return f"{key[0]} s = {key[1]:g} λ = {key[2]:g}" if len(key) == 3 else f"{key[0]} {key[1]}"


def _low(x: Any) -> float:
    return x.low if math.isfinite(x.low) else -math.inf


def main_basin(F: np.ndarray, gap: float) -> tuple[np.ndarray, list[float]]:
    """Chains (rows of F over the window) whose window mean of F lies within ``gap`` above the
    median chain's: the basin most chains occupy. Returns the mask and the others' means (a
    metastable basin no chain left within the window: its escape is slower than anything the
    window resolves, and it would dominate the estimate as a near-constant observable)."""
    means = np.asarray(F, dtype=float).mean(axis=1)
    inside = means <= np.median(means) + gap
    return inside, [float(v) for v in np.sort(means[~inside])]
