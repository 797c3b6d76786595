"""``aim-solvable`` (P1 = arXiv 2609.03858, App. D.3, Fig. 4): SGD on the tied L = 1 AIM with the
loss (G1 − G2)² against the exact Riccati flow (Eqs. 342–343) and its degree-N truncations
(Eqs. 340–341), each seed from its own initial matrices or moments (docs/aim-solvable.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig, variant
from attndyn.claims.spec import Evidence, above, below, claim
from attndyn.claims.stats import jackknife_ci, mean_ci
from attndyn.claims.verdict import Check
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.aim.config import AIMConfig

ORDERS = (1, 2, 3)
GAP_NAMES = ("t_1", "q_11")


class Config(ExperimentConfig):
    base: AIMConfig = Base(
        AIMConfig,
        "the tied L = 1 model of App. D.3: h1, centred forms, loss (G1 − G2)², no weight decay, "
        "S2 = teacher_scale·I (Eq. 347), α_d = lr/d² (d2), log record grid",
        param="tied",
        L=1,
        output="index",
        activation="h1",
        loss_scale="full",
        teacher="identity",
        teacher_scale=0.5,
        weight_decay=0.0,
        lr=2.0,
        lr_scaling="d2",
        batch=64,
        t_max=1.0,
        records=40,
        grid="log",
        dtype="float64",
        test_size=0,
    )
    d: list[int] = Field([64, 128], min_length=2, description="dimensions (increasing)")
    seeds: int = Field(12, ge=2)
    t_short: float = Field(0.02, gt=0, description="short time of the N-comparison with SGD")
    track_tol: float = Field(0.05, gt=0, description="sup_t |SGD − exact| / motion allowed")
    gap_exponent: float = Field(-0.5, description="largest exponent a of gap ∝ d^a")
    theory_time_factor: float = Field(1.0, gt=0, description="theory evaluated at factor·t")


def _relative_gap(sim, exact: list, s: int) -> float:
    """max over t₁, q₁₁ of sup_t |SGD seed s − its flow| / (range of that flow over the horizon)."""
    th = {n: exact[s][n].values for n in GAP_NAMES}
    return float(max(np.max(np.abs(sim[n].values[s] - th[n])) / np.ptp(th[n]) for n in GAP_NAMES))


class AIMSolvable(Experiment):
    name = "aim-solvable"
    description = (
        "P1 App. D.3 / Fig. 4: SGD vs the exact Riccati flow and the truncations N = 1, 2, 3"
    )
    Config = Config
    presets = {
        "tiny": {"seeds": 12, "base.t_max": 0.5, "base.records": 24},
        "small": {},
        "paper": {
            "d": [100, 200, 400],
            "base.lr": 0.01 / 512 * 400**2,  # α_d = lr/d²: the figure's 0.01/512 at d = 400
            "base.batch": 512,
            "base.records": 60,
            "base.dtype": "float32",
        },
    }
    preset_notes = {
        "tiny": "d = 32 is not used: from 32 to 64 the gap falls only like d^−0.9 "
        "(docs/aim-solvable.md), so two small d cannot resolve the exponent from −½ honestly. "
        "12 seeds: with 4, the jackknife-t interval of the exponent was −1.37 [−2.67, −0.06] at "
        "seed offset 1000 (fails < −½); with 12 it is −1.31 [−1.80, −0.82] there.",
        "small": "Every claim at d = 64, 128, 12 seeds (with 4 the exponent was −1.41 [−2.67, "
        "−0.14] at seed offset 1000).",
        "paper": "Fig. 4's step 0.01/512 at d = 400; three d values fit the exponent over a "
        "factor 4.",
    }
    controls = {
        "time-2x": Control(
            {"theory_time_factor": 2.0},
            "the theory's clock runs twice as fast as P1's t = 4nα_d/d",
        ),
        "lr-fixed": Control(
            {"base.lr_scaling": "raw", "base.lr": 2.0 / 64**2},
            "a fixed step α_d (that of d2 at d = 64): the Itô drift dα_d grows with d",
        ),
    }
    claims = (
        claim(
            "truncations-improve-with-N",
            "the degree-N truncations of the moment hierarchy approach SGD as N grows",
            statistic="at t ≈ `t_short`, largest d: per-seed e_N = |truncation_N − SGD| of t₁, "
            "each seed from its own moments; value: the seed mean of e₂ − e₃ (Student-t 95 % "
            "CI), and the interval of e₁ − e₂ must clear 0 too",
            target=above(0.0),
            reason='Fig. 4: "as N grows larger, the theory is better aligned with the experiments"',
            controls=("time-2x",),
        ),
        claim(
            "sgd-tracks-exact-d{}",
            "d = {}: SGD stays on the exact Riccati flow started from its own S1(0)",
            statistic="per seed: max over t₁, q₁₁ of sup_t |SGD − flow from its S1(0)| / range "
            "of that flow over the horizon; seed mean (Student-t 95 % CI)",
            target=below("track_tol"),
            reason="the precision at which a curve of Fig. 4 lies on its theory (5 % of the "
            "motion); a chosen precision, not a multiple of a measured gap",
            controls=("time-2x",),
            over="d",
        ),
        claim(
            "gap-shrinks-with-d",
            "the relative SGD–flow gap shrinks with d",
            statistic="fitted exponent a of (seed-mean relative gap) ∝ d^a across d, jackknife-t "
            "95 % CI (seeds left out within each d)",
            target=below("gap_exponent"),
            reason="at α_d = lr/d² the SGD–flow error is the Itô drift O(dα_d) = O(1/d) plus "
            "fluctuations O(√(dα_d)) = O(d^−½) (docs/aim-solvable.md)",
            controls=("time-2x", "lr-fixed"),
        ),
    )
    notes = (
        "Identities moved to unit tests: the degree-N truncation is the Taylor polynomial of the "
        "exact flow and its error is O(t^N) (the former `truncation-order-N` claims): "
        "`tests/test_aim_solvable.py::test_truncation_is_taylor_polynomial_*`, "
        "`::test_truncation_error_order`."
    )

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        from attndyn.models.aim import solvable as model

        f = config.theory_time_factor
        runs = {}
        for d in config.d:
            sim = ctx.simulate("aim", config.base, d=d)
            cfg = variant(config.base, d=d)
            times = sim.time.values
            exact, trunc = [], []
            for seed in sim.seed.values:
                S1_0, S2 = model.initial_condition(cfg, int(seed))
                exact.append(model.predict_from(S1_0, S2, f * times).assign_coords(time=times))
                mu0 = {k: float(v) for k, v in model.moments_of(S1_0, S2).items()}
                trunc.append({n: model.truncation(n, mu0, f * times) for n in ORDERS})
            runs[d] = {"sim": sim, "exact": exact, "trunc": trunc}
        return {"runs": runs}

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        runs = results["runs"]
        gaps = {
            d: [_relative_gap(runs[d]["sim"], runs[d]["exact"], s) for s in range(config.seeds)]
            for d in config.d
        }
        run = runs[config.d[-1]]
        sim = run["sim"]
        i = int(np.argmin(np.abs(sim.time.values - config.t_short)))
        trunc = [[float(tr[n]["t_1"][i]) for n in ORDERS] for tr in run["trunc"]]
        logd = np.log(np.asarray(config.d, float))
        errs = np.abs(np.array(trunc) - sim["t_1"].values[:, i, None])  # e_N per seed
        return {
            "t_short": float(sim.time.values[i]),
            "short_time_errors": errs.mean(axis=0).tolist(),
            "improve_12": mean_ci(errs[:, 0] - errs[:, 1]),
            "improve_23": mean_ci(errs[:, 1] - errs[:, 2]),
            "relative_gaps": gaps,
            "tracking": {d: mean_ci(gaps[d]) for d in config.d},
            "gap_exponent": jackknife_ci(  # slope of log(seed-mean gap) on log d
                [gaps[d] for d in config.d],
                lambda *g: float(np.polyfit(logd, np.log([np.mean(x) for x in g]), 1)[0]),
            ),
            "finite": all(np.all(np.isfinite(r["sim"]["t_1"].values)) for r in runs.values()),
        }

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check("every seed finite", m["finite"])]

    def evaluate(self, config: Config, m: dict[str, Any]) -> dict[str, Any]:
        e, i12 = m["short_time_errors"], m["improve_12"]
        return {
            "truncations-improve-with-N": Evidence(
                m["improve_23"],
                checks=(
                    Check(
                        "e_1 − e_2 > 0 (95% CI)",
                        bool(i12.low > 0),
                        refuted=bool(i12.high <= 0),  # the whole interval on the wrong side
                    ),
                ),
                detail=f"t = {m['t_short']:.3g}, d = {config.d[-1]}; seed means of e_N for "
                f"N = 1, 2, 3: {e[0]:.2e}, {e[1]:.2e}, {e[2]:.2e}; e_1 − e_2 = {i12.value:.2e} "
                f"[{i12.low:.2e}, {i12.high:.2e}]",
            ),
            **{f"sgd-tracks-exact-d{d}": m["tracking"][d] for d in config.d},
            "gap-shrinks-with-d": m["gap_exponent"],
        }

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        runs, d = results["runs"], config.d[-1]
        run, sim = runs[d], runs[d]["sim"]
        t = sim.time.values
        fig, axes = new_figure(1, 3, figsize=(13, 3.8))
        for ax, name in zip(axes[:2], ("t_1", "q_11"), strict=True):
            for s in range(sim.sizes["seed"]):
                ax.plot(t[1:], sim[name].isel(seed=s)[1:], color="0.6", lw=0.6, alpha=0.6)
            ax.plot(t[1:], sim[name].mean("seed")[1:], color="k", lw=2, label="SGD (seed mean)")
            exact = np.mean([e[name].values for e in run["exact"]], axis=0)
            ax.plot(t[1:], exact[1:], color="C3", lw=1.5, ls="--", label="exact flow (Eq. 343)")
            for n in ORDERS:
                if name in run["trunc"][0][n]:
                    tr = np.mean([tt[n][name] for tt in run["trunc"]], axis=0)
                    ax.plot(t[1:], tr[1:], color=f"C{n - 1}", lw=1.2, label=f"truncation N = {n}")
            lo, hi = float(np.min(sim[name].values)), float(np.max(sim[name].values))
            ax.set(xscale="log", xlabel="t = 4nα_d/d", ylabel=f"{name} (grey: single seeds)")
            ax.set(title=f"{name}, d = {d}", ylim=(lo - 0.3 * (hi - lo), hi + 0.3 * (hi - lo)))
        axes[0].legend(frameon=False, fontsize=8)
        for dd in config.d:
            axes[2].plot(*error_curve(runs[dd]), label=f"d = {dd}")
        axes[2].set(
            xscale="log", yscale="log", xlabel="t = 4nα_d/d", ylabel="|q_11 SGD − q_11 exact|"
        )
        axes[2].set_title("|SGD − exact| for q_11 (seed means)")
        axes[2].legend(frameon=False)
        return save_figure(fig, path)


def error_curve(run: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(t, |seed-mean q_11 − exact q_11|)`` of one d's runs for t > 0: at t = 0 both start
    from the same S1(0), so the gap is 0 up to rounding (1e-16), which would stretch the log
    axis over decades that say nothing."""
    t = run["sim"].time.values
    exact = np.mean([e["q_11"].values for e in run["exact"]], axis=0)
    gap = np.abs(run["sim"]["q_11"].mean("seed").values - exact)
    later = t > 0
    return t[later], gap[later]
