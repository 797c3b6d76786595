"""``aim-recovery-scaling`` (P1 = arXiv 2609.03858 §3.3, Eqs. 17–21, Cor. 3; proof App. D.4):
weak recovery of tied AIM (S = WWᵀ) from an uninformative start takes
T₋d/(4α_d) < N_wr ≤ T₊d/(4α_d) samples (Eq. 20), i.e. N_wr = Θ(d² log d) at the largest rate
Theorem 2 covers, α_d = c/(d log d) (Eq. 21), and the structural overlap p_12 = q_12 − t_1 t_2
leaves 0 with the slope of Eq. 17, dp̄_12/dt|₀ = −2 Γ_12(q̄(0)) t̄_1(0) p̄_22 (t = 4nα_d/d).

Setting: L = 1, inputs N(0, I_d), MSE ½(F(G_1) − F(G_2))² with the same activation for student
and teacher, student W ∈ R^{d×d/2} with N(0, 1/d) entries (t̄_1(0) = 0.5), Wishart teacher of
width d/2 (t̄_2 = p̄_22 = 0.5), γ = 0, batch-mean mini-batches with η = B·α_d.

What the data can distinguish. At α_d = c/(d log d), Eq. 20 reads N_wr = t*·d² log d/(4c) with
t* the crossing time on the ODE axis, so every statement about N_wr against d at this rate is a
statement that t* does not depend on d; the log d is the choice of rate (the largest Theorem 2
covers), not something the dynamics adds. The claims therefore test Eq. 20's d/α_d scaling:

- ``nwr-exponent``: the exponent κ of N_wr/log d ∝ d^κ (least squares of log N̄_wr(d)/log d on
  log d, N̄ the seed mean), 95 % bootstrap CI over seeds inside (1.5, 2.5): Eq. 21 says 2, and
  the bounds are half-way to the exponents 1 and 3 that a d-independent rate (N ∝ d) or α ∝ 1/d²
  (N ∝ d³) would give;
- ``nwr-log-power`` (with ≥ 3 dimensions): the power k in N_wr ∝ d² (log d)^k (least squares of
  log N̄_wr − 2 log d on log log d), CI inside (0.5, 1.5). The residual sum of squares of the fit
  log N̄_wr − log f(d) = const is a parabola in k with its minimum at k̂, so k̂ ∈ (0.5, 1.5) is
  exactly "d² log d fits better than d² and d² log² d"; both RSS are reported;
- ``initial-slope-eq17``: the largest over d of |seed mean of (measured slope / Eq. 17) − 1|
  (measured: the linear coefficient of a degree-``slope_degree`` polynomial over
  t ≤ ``slope_window``; Eq. 17 at each run's own initial order parameters, Γ_12 by quadrature),
  bootstrap CI ≤ ``slope_tolerance``.

Preconditions: every seed crossed the threshold within the horizon, no seed diverged.

The optional learning-rate sweep (``lr_sweep``, in the paper preset; no claim) runs every d at
α_d = c'/(d log d) for each c' with online SGD (``sweep_batch`` = 1, Eq. 7) and reports, per d,
N_wr, t* and diverged seeds at each rate, the stability bracket of α_d·d, and the smallest N_wr
over the stable rates. If the largest stable rate scales like 1/d rather than 1/(d log d), that
smallest N_wr grows like d², and the log d of Eq. 21 is the theorem's sufficient rate, not a
property of SGD (measured: docs/claims/aim-recovery-scaling.md).

Choices (float32; the measurements behind them, and timings, in docs/experiments.md and
docs/claims/aim-recovery-scaling.md): activation h1 (Γ_12 = −1 for every q, Eq. 17 slope 0.5 at
d → ∞); threshold c = 0.1 (a fifth of p̄_22 = 0.5); lr = 0.05, batch 32, 24 seeds, records every
Δt = 0.005 up to t = 0.6. ``paper``: d = 64, 128, 256, 512, 16 seeds, batch 256, t ≤ 0.5 (cost
∝ d⁴ log d), plus the rate sweep c' = 0.5 … 16 on a √2 grid (≈ 1.5 h more on two cores).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from attndyn.claims.base import Check, Claim, Control, Experiment, ExperimentConfig, RunContext
from attndyn.claims.stats import Interval, bootstrap_ci
from attndyn.figures.draw import colour_cycle, new_figure, save_figure

INITIAL_NAMES = ("t_1", "t_2", "q_11", "q_12", "q_22")
EXPONENT_BAND = (1.5, 2.5)  # Eq. 21: 2; half-way to the exponents 1 (α fixed) and 3 (α ∝ 1/d²)
LOG_POWER_BAND = (0.5, 1.5)  # d² log d: k = 1; half-way to d² (k = 0) and d² log² d (k = 2)
HYPOTHESES = {"d2": 0, "d2logd": 1, "d2log2d": 2}  # N_wr ∝ d² (log d)^k


class Config(ExperimentConfig):
    d: list[int] = Field([32, 64, 128], min_length=2, description="dimensions (increasing)")
    activation: Literal["h1", "h2", "h3"] = Field("h1", description="student = teacher activation")
    seeds: int = Field(24, ge=2)
    lr: float = Field(0.05, gt=0, description="step constant: α_d = lr/(d log d)")
    lr_scaling: Literal["dlogd", "raw"] = Field(
        "dlogd", description="α_d = lr/(d log d) (Cor. 3), or raw: α_d = lr at every d (control)"
    )
    batch: int = Field(32, ge=1, description="mini-batch B (batch-mean gradient, η = B·α_d)")
    threshold: float = Field(0.1, gt=0, description="recovery threshold c on |p_12| (Eq. 18)")
    t_max: float = Field(0.6, gt=0, description="horizon on the tied time axis t = 4nα_d/d")
    record_dt: float = Field(0.005, gt=0, description="spacing of the (linear) record grid in t")
    slope_window: float = Field(0.1, gt=0, description="fit window t ≤ window for the slope")
    slope_degree: int = Field(2, ge=1, le=4, description="degree of the slope's polynomial fit")
    slope_tolerance: float = Field(0.10, gt=0, description="relative tolerance vs Eq. 17")
    time_factor: float = Field(
        4.0, gt=0, description="tied time t = factor·nα_d/d (P1 §3.2: 4; a control sets 1)"
    )
    lr_sweep: list[float] = Field(
        [], description="extra step constants c' (α_d = c'/(d log d)) run at every d, no claim"
    )
    sweep_batch: int = Field(1, ge=1, description="batch of the sweep runs (1: online SGD, Eq. 7)")


def _sim_config(config: Config, d: int, lr: float | None = None) -> dict[str, Any]:
    """The run at dimension d; with ``lr`` a sweep run (α_d = lr/(d log d), ``sweep_batch``)."""
    return dict(
        d=d,
        L=1,
        param="tied",
        activation=config.activation,
        lr=config.lr if lr is None else lr,
        lr_scaling=config.lr_scaling if lr is None else "dlogd",
        batch=config.batch if lr is None else config.sweep_batch,
        seeds=config.seeds,
        seed=config.seed,
        t_max=config.t_max,
        records=int(round(config.t_max / config.record_dt)) + 1,
        grid="linear",
        moment_degree=3,
        test_size=0,
    )


def _potential(config: Config):
    from attndyn.core.config import validate
    from attndyn.models.aim.config import AIMConfig
    from attndyn.models.aim.theory.potential import potential_for

    return potential_for(validate(AIMConfig, _sim_config(config, config.d[0])))


def power_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of y on x and the residual sum of squares."""
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(np.sum((y - slope * x - intercept) ** 2))


def exponent(ds, *groups) -> float:
    """κ in N̄_wr/log d ∝ d^κ (N̄ the seed mean per d)."""
    ds = np.asarray(ds, float)
    n = np.array([np.mean(g) for g in groups])
    return power_fit(np.log(ds), np.log(n / np.log(ds)))[0]


def log_power(ds, *groups) -> float:
    """k in N̄_wr ∝ d² (log d)^k."""
    ds = np.asarray(ds, float)
    n = np.array([np.mean(g) for g in groups])
    return power_fit(np.log(np.log(ds)), np.log(n) - 2 * np.log(ds))[0]


def hypothesis_rss(ds, n_mean) -> dict[str, float]:
    """RSS of log N̄_wr − log f(d) = const for f = d² (log d)^k, k = 0, 1, 2."""
    ds = np.asarray(ds, float)
    y = np.log(np.asarray(n_mean, float)) - 2 * np.log(ds)
    out = {}
    for name, k in HYPOTHESES.items():
        r = y - k * np.log(np.log(ds))
        out[name] = float(np.sum((r - r.mean()) ** 2))
    return out


def _interval(d: dict[str, Any]) -> Interval:
    return Interval(**d)


class AIMRecoveryScaling(Experiment):
    name = "aim-recovery-scaling"
    description = "P1 Cor. 3: tied weak recovery N_wr ∝ d/α_d = d² log d; initial slope = Eq. 17"
    Config = Config
    presets = {
        "tiny": {"d": [32, 64], "seeds": 12, "t_max": 0.45},
        "small": {},
        "paper": {
            "d": [64, 128, 256, 512],
            "seeds": 16,
            "batch": 256,
            "t_max": 0.5,
            "lr_sweep": [0.5, 0.71, 1.0, 1.41, 2.0, 2.83, 4.0, 5.66, 8.0, 11.3, 16.0],
        },
    }
    controls = {
        "rate-fixed": Control(
            {"lr_scaling": "raw", "lr": 0.05 / (32 * np.log(32))},
            ("nwr-exponent",),
            "a d-independent step α = 0.05/(32 ln 32) in place of c/(d log d): Eq. 20 then gives "
            "N_wr ∝ d, so the exponent of N_wr/log d is ≈ 0.8, not 2",
        ),
        "time-axis-direct": Control(
            {"time_factor": 1.0},
            ("initial-slope-eq17",),
            "Eq. 17 read on the direct-S time axis t = nα_d/d (App. E) instead of the tied "
            "t = 4nα_d/d: the measured slope is 4× the prediction",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        names = ["nwr-exponent"]
        if len(config.d) >= 3:
            names.append("nwr-log-power")
        return names + ["initial-slope-eq17"]

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [
            Check.compare(
                "seeds that crossed |p_12| = threshold, fewest over d",
                min(m["crossed"]),
                ">=",
                config.seeds,
            ),
            Check.compare("diverged seeds, all d", sum(m["diverged"]), "==", 0),
        ]

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        sims = {d: ctx.simulate("aim", **_sim_config(config, d)) for d in config.d}
        sweep = {
            (c, d): ctx.simulate("aim", **_sim_config(config, d, lr=c))
            for c in config.lr_sweep
            for d in config.d
        }
        return {"sims": sims, "sweep": sweep}

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        from attndyn.models.aim.theory import recovery as R

        potential = _potential(config)
        per_d = []
        slope_ratios = []
        for d, traj in results["sims"].items():
            n = R.n_wr(traj, config.threshold, kind="tied")
            time_per_sample = float(traj["time"].values[-1] / traj["samples"].values[-1])
            preds = np.array(
                [
                    R.tied_slope_prediction(
                        potential, {k: float(traj[k].isel(seed=s, time=0)) for k in INITIAL_NAMES}
                    )["slope_eq17"]
                    for s in range(traj.sizes["seed"])
                ]
            )
            axis = traj.assign_coords(time=traj["time"] * (config.time_factor / 4.0))
            slope = R.measured_initial_slope(
                axis, "p_12", window=config.slope_window, degree=config.slope_degree
            )
            ratio = np.asarray(slope["per_seed"]) / preds
            slope_ratios.append(ratio)
            per_d.append(
                {
                    "n_wr_per_seed": [float(v) for v in n],
                    "n_wr": float(np.mean(n)),
                    "crossed": int(np.isfinite(n).sum()),
                    "t_cross": float(np.mean(n) * time_per_sample),
                    "n_wr_over_d2logd": float(np.mean(n) / (d**2 * np.log(d))),
                    "slope_measured": slope["mean"],
                    "slope_sem": slope["sem"],
                    "slope_eq17": float(np.mean(preds)),
                    "slope_ratio": float(np.mean(ratio)),
                    "diverged": int(traj["diverged"].sum()),
                }
            )
        m: dict[str, Any] = {"d": list(config.d), "threshold": config.threshold}
        for key in per_d[0]:
            m[key] = [row[key] for row in per_d]
        groups = [np.asarray(n, float) for n in m["n_wr_per_seed"]]
        ds = list(config.d)
        m["exponent"] = asdict(bootstrap_ci(groups, lambda *g: exponent(ds, *g), seed=config.seed))
        m["log_power"] = asdict(
            bootstrap_ci(groups, lambda *g: log_power(ds, *g), seed=config.seed)
        )
        m["hypothesis_rss"] = hypothesis_rss(ds, m["n_wr"])
        m["slope_deviation"] = asdict(
            bootstrap_ci(
                slope_ratios,
                lambda *g: max(abs(float(np.mean(r)) - 1.0) for r in g),
                seed=config.seed,
            )
        )
        if config.lr_sweep:
            m["sweep"] = _sweep(config, results["sweep"])
        return m

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        out = [
            Claim.between(
                "nwr-exponent",
                f"exponent κ of N_wr/log d ∝ d^κ over d = {config.d} (seed-mean N_wr, bootstrap "
                "over seeds); Eq. 21: 2",
                _interval(m["exponent"]),
                *EXPONENT_BAND,
                True,
            )
        ]
        if len(config.d) >= 3:
            rss = m["hypothesis_rss"]
            out.append(
                Claim.between(
                    "nwr-log-power",
                    "power k in N_wr ∝ d² (log d)^k (k ∈ (0.5, 1.5): d² log d has a smaller fit "
                    f"residual than d² and d² log² d; RSS d² {rss['d2']:.3g}, d² log d "
                    f"{rss['d2logd']:.3g}, d² log² d {rss['d2log2d']:.3g})",
                    _interval(m["log_power"]),
                    *LOG_POWER_BAND,
                    True,
                )
            )
        out.append(
            Claim.at_most(
                "initial-slope-eq17",
                f"measured initial dp_12/dt (degree-{config.slope_degree} fit over "
                f"t ≤ {config.slope_window}) / Eq. 17 at each run's initial state: largest over "
                "d of |seed mean − 1|",
                _interval(m["slope_deviation"]),
                config.slope_tolerance,
            )
        )
        return out

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:

        sims = results["sims"]
        fig, (ax, bx) = new_figure(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
        colours = colour_cycle()
        for i, d in enumerate(config.d):
            traj, colour = sims[d], colours[i % len(colours)]
            x = traj["time"].values
            p = traj["p_12"].values
            mean, sd = p.mean(axis=0), p.std(axis=0)
            ax.fill_between(x, mean - sd, mean + sd, color=colour, alpha=0.15, lw=0)
            ax.plot(x, mean, color=colour, lw=1.8, label=f"d = {d}")
            ax.axvline(m["t_cross"][i], color=colour, lw=0.8, ls=":")
        xs = np.linspace(0.0, config.t_max, 50)
        ax.plot(xs, m["slope_eq17"][-1] * xs, color="k", ls="--", lw=1, label="Eq. 17 line")
        ax.axhline(config.threshold, color="0.4", lw=1, label=f"threshold c = {config.threshold}")
        ax.set_ylim(-0.05, 0.6)
        ax.set_xlabel("t = 4nα_d/d")
        ax.set_ylabel("p_12 = q_12 − t_1 t_2 (seed mean ± sd)")
        ax.set_title(f"tied AIM, L = 1, {config.activation}, α_d = {config.lr}/(d log d)")
        ax.legend(frameon=False, fontsize=8)
        ds = np.array(config.d, float)
        n = np.array(m["n_wr"])
        sd = [np.std(v) for v in m["n_wr_per_seed"]]
        bx.errorbar(ds, n, yerr=sd, marker="o", color="C0", capsize=3, label="N_wr (mean ± sd)")
        for (name, k), style in zip(HYPOTHESES.items(), (":", "-", "--"), strict=True):
            f = ds**2 * np.log(ds) ** k
            scale = np.exp(np.mean(np.log(n) - np.log(f)))
            bx.plot(ds, scale * f, color="k", ls=style, lw=1, label=f"∝ {name}")
        if "sweep" in m:
            best = m["sweep"]["best_n_wr"]
            bx.plot(ds, best, marker="s", color="C3", lw=1, label="best over lr sweep")
        bx.set_xscale("log", base=2)
        bx.set_yscale("log")
        bx.set_xlabel("d")
        bx.set_ylabel(f"N_wr(c = {config.threshold})")
        bx.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)


def _sweep(config: Config, sims: dict[tuple[float, int], Any]) -> dict[str, Any]:
    """Per rate constant c' (α_d = c'/(d log d), sorted) and d: seed-mean N_wr and t*, diverged
    seeds; per d the stability bracket α_d·d at the largest c' with no diverged seed below the
    first c' with one, and the smallest N_wr over the rates up to that bracket (every seed
    finite and crossed), with its log power k (N ∝ d² (log d)^k)."""
    from attndyn.models.aim.theory import recovery as R

    rates = sorted(config.lr_sweep)
    table: dict[str, list[list[float]]] = {"n_wr": [], "t_cross": [], "diverged": []}
    stable_ad, diverged_ad, best = [], [], []
    for d in config.d:
        rows = {k: [] for k in table}
        for c in rates:
            traj = sims[(c, d)]
            n = R.n_wr(traj, config.threshold, kind="tied")
            per_time = float(traj["time"].values[-1] / traj["samples"].values[-1])
            rows["n_wr"].append(float(np.mean(n)))
            rows["t_cross"].append(float(np.mean(n) * per_time))
            rows["diverged"].append(int(traj["diverged"].sum()))
        for k in table:
            table[k].append(rows[k])
        first_bad = next((i for i, v in enumerate(rows["diverged"]) if v), len(rates))
        ad = [c / np.log(d) for c in rates]  # α_d·d
        stable_ad.append(ad[first_bad - 1] if first_bad > 0 else float("nan"))
        diverged_ad.append(ad[first_bad] if first_bad < len(rates) else float("nan"))
        good = [n for n in rows["n_wr"][:first_bad] if np.isfinite(n)]
        best.append(min(good) if good else float("nan"))
    ds = np.asarray(config.d, float)
    k = (
        power_fit(np.log(np.log(ds)), np.log(best) - 2 * np.log(ds))[0]
        if np.all(np.isfinite(best))
        else float("nan")
    )
    return {
        "rates": rates,
        **table,
        "largest_stable_alpha_d": stable_ad,
        "smallest_diverging_alpha_d": diverged_ad,
        "best_n_wr": best,
        "best_log_power": k,
    }
