"""``aim-truncation`` (P1 = arXiv 2609.03858, Fig. 1; Eqs. 11, 13, Cor. 2): online SGD on the tied
AIM with L = 2 and a row-wise softmax output (loss ½‖softmax(G1) − softmax(G2)‖², our reading,
docs/aim.md) against the degree-M truncations of the moment hierarchy (Eq. 13) and the
matrix-level flow, at γ = 0 and at a weight decay above γ* (Eq. 321).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig
from attndyn.claims.spec import Retired, below, claim
from attndyn.claims.stats import mean_ci
from attndyn.claims.verdict import Check
from attndyn.core.serial import json_safe
from attndyn.figures.draw import get_cmap, new_figure, save_figure
from attndyn.models.aim.config import AIMConfig

NAMES = ("t_1", "q_11", "q_12")


class Config(ExperimentConfig):
    base: AIMConfig = Base(
        AIMConfig,
        "Fig. 1: tied, L = 2, row-wise softmax (β = 1), Wishart teacher, α_d = lr/(d log d), "
        "batch 32, log record grid; `t_max` is the γ = 0 horizon; each regime sets "
        "`weight_decay` (and its horizon)",
        param="tied",
        L=2,
        output="softmax",
        d=96,
        lr=0.05,
        lr_scaling="dlogd",
        batch=32,
        t_max=2.0,
        records=40,
        grid="log",
        test_size=0,
    )
    seeds: int = Field(4, ge=2)
    truncations: list[int] = Field([2, 3, 4, 5, 6], min_length=3, description="degrees M")
    theory_records: int = Field(160, ge=8, description="points of the theory's fine log grid")
    quad_log2: int = Field(14, ge=8, le=20, description="theory quadrature budget (log2 nodes)")
    t_inside: float = Field(0.3, gt=0, description="a time inside the radius at γ = 0")
    gamma_large: float = Field(8.0, gt=0, description="weight decay of the convergent regime")
    t_max_large: float = Field(2.5, gt=0, description="horizon at γ = gamma_large")
    track_tol: float = Field(0.05, gt=0, description="sup |SGD − theory| / motion allowed")
    sgd_gamma_factor: float = Field(1.0, gt=0, description="SGD at γ_large·factor")
    sgd_beta_factor: float = Field(1.0, gt=0, description="SGD at factor·β, the theory at β")
    theory_time_factor: float = Field(1.0, gt=0, description="theory read at factor·t")
    theory_gamma_factor: float = Field(1.0, ge=0, description="theory at factor·γ, SGD at γ")
    err_floor: float = Field(
        1e-6, gt=0, description="below: ODE round-off (rtol 1e-8), not compared"
    )


def _error(traj, ref) -> np.ndarray:
    """max over NAMES of |traj − ref| on the common grid; NaN (stopped truncation) → inf."""
    err = np.max([np.abs(traj[n].values - ref[n].values) for n in NAMES], axis=0)
    return np.where(np.isfinite(err), err, np.inf)


def _motion(theory) -> float:
    """The largest range over NAMES of a theory run over its whole horizon (NaN ignored)."""
    return float(max(np.nanmax(theory[n].values) - np.nanmin(theory[n].values) for n in NAMES))


def _relative_gap(sim, s: int, theory, window: float, scale: float) -> float:
    """sup_{t ≤ window} max over NAMES of |SGD seed s − theory| (the theory interpolated linearly
    to the SGD's record times, NaN where it stopped), over ``scale`` (the motion of the figure's
    curves over the horizon: one scale for every name and window)."""
    times = sim.time.values
    keep = times <= window * (1 + 1e-9)
    th = {n: np.interp(times, theory.time.values, theory[n].values) for n in NAMES}
    return float(max(np.max(np.abs(sim[n].values[s] - th[n])[keep]) for n in NAMES) / scale)


def _geometric(errors: dict[int, float]) -> tuple[float, bool, bool]:
    """Geometric ratio r of errors ≈ A rᴹ (least-squares fit of log error on M over the degrees
    whose error is finite and positive: a truncation that stopped is left out of the fit, so a
    wrong theory fails by the ratio of the degrees that ran; inf if fewer than two ran), whether
    the errors decrease in M, and whether every degree ran (finite, positive error)."""
    m = np.asarray(list(errors), dtype=float)
    e = np.asarray(list(errors.values()), dtype=float)
    decreasing = bool(np.all(e[:-1] > e[1:]))
    ran = np.isfinite(e) & (e > 0)
    if ran.sum() < 2:
        return float("inf"), decreasing, bool(ran.all())
    return float(np.exp(np.polyfit(m[ran], np.log(e[ran]), 1)[0])), decreasing, bool(ran.all())


def _clock(theory, factor: float):
    """A theory run on its own clock s, relabelled to the SGD's time t = s/factor (and its radius
    estimate with it)."""
    out = theory.assign_coords(time=theory.time.values / factor)
    if theory.attrs.get("truncation_radius") is not None:
        out.attrs["truncation_radius"] = theory.attrs["truncation_radius"] / factor
    return out


NOTES = """\
**Reported, not claimed** (since 2026-12-07; the retired claims above): the truncations'
geometric convergence in M (`summary.ratio_inside` at γ = 0 inside the radius,
`summary.ratio_large_gamma` uniformly in time at γ_large, with the errors per M) and the γ = 0
radius (`summary.horizon_gamma0`, beside the hierarchy's own estimate). They are deterministic,
computed on the state of seed `seed`, and compare two integrations of one ODE (Eq. 11 truncated,
and the matrix flow that solves it exactly for a finite-d state), so no wrong model of SGD can
fail them: Cor. 2's convergence is a property of the code's hierarchy, tested as such
(tests/test_aim_theory.py::test_hierarchy_converges_geometrically_inside_the_radius), and the
figure still shows it. The SGD claims
compare each seed with the theory started from its own initial moments or matrices, so the
O(1/√d) spread of initial states does not enter. Precondition: every SGD seed finite.

At γ_large the decay dominates, so SGD at 2β
stays within 5 % there (gap 0.018) and `sgd-beta-2x` does not list the large-γ SGD claim.
`flow-tracks-sgd` replaces a former seed-0 gap judged under a tolerance 3× its measured value.
"""


class AIMTruncation(Experiment):
    name = "aim-truncation"
    description = (
        "P1 Fig. 1 / Cor. 2: SGD vs degree-M truncations of the tied hierarchy (softmax, L = 2)"
    )
    Config = Config
    presets = {
        "tiny": {
            "base.d": 48,
            "truncations": [2, 3, 4],
            "base.records": 24,
            "theory_records": 80,
            "quad_log2": 10,
        },
        "small": {},
        "paper": {
            "base.d": 400,
            "base.lr": 0.01 / 512,
            "base.lr_scaling": "raw",
            "base.batch": 512,
            "truncations": [2, 3, 4, 5, 6, 7, 8],
            "base.t_max": 3.0,
            "base.records": 60,
        },
    }
    preset_notes = {
        "tiny": "The geometric ratios are over three degrees only; the Price form of Γ near the "
        "cone boundary uses at most 2¹⁰ nodes too. d = 32 was too noisy: flow-tracks-sgd 0.046 "
        "[0.027, 0.066] with 3 seeds.",
        "small": "Every claim, ratios over M = 2..6.",
        "paper": "lr 0.01 and batch 512 read as a batch mean (α_d = 0.01/512 per sample, "
        "docs/aim-paper-notes.md §9).",
    }
    controls = {
        "sgd-half-gamma": Control(
            {"sgd_gamma_factor": 0.5},
            "SGD of the large-γ regime runs at γ/2 while the theory keeps γ",
        ),
        "sgd-beta-2x": Control(
            {"sgd_beta_factor": 2.0},
            "SGD trains a softmax at 2β while the theory keeps β",
        ),
        "theory-time-x4": Control(
            {"theory_time_factor": 4.0},
            "the theory read at 4t (the tied factor 4 of t = 4nα_d/d counted twice): t_inside "
            "lands beyond the γ = 0 radius, where the error grows with M, and the radius before "
            "t_inside",
        ),
        "theory-no-decay": Control(
            {"theory_gamma_factor": 0.0},
            "the theory drops the decay term −(γ/2)|α| μ_α of Eq. 11 (SGD keeps γ): without "
            "γ > γ* the truncation has a finite radius, inside the large-γ horizon",
        ),
    }
    claims = (
        claim(
            "sgd-matches-largest-M-inside",
            "at γ = 0 SGD follows the largest truncation inside the radius",
            statistic="per seed: sup over t ≤ `t_inside` of max over t₁, q₁₁, q₁₂ of |SGD − "
            "largest truncation from that seed's own initial moments|, over the curves' largest "
            "motion over the horizon (that of the seed-`seed` matrix flow); seed mean (Student-t "
            "95 % CI)",
            target=below("track_tol"),
            reason="Fig. 1's precision: 5 % of the plotted motion, the scale of aim-solvable",
            controls=("sgd-beta-2x", "theory-time-x4"),
        ),
        claim(
            "sgd-matches-largest-M-large-gamma",
            "at γ = `gamma_large` SGD follows the largest truncation over the whole horizon",
            statistic="the same over t ≤ `t_max_large` (scale: the truncation's own motion over "
            "that horizon)",
            target=below("track_tol"),
            reason="as above",
            controls=("sgd-half-gamma", "theory-time-x4", "theory-no-decay"),
        ),
        claim(
            "flow-tracks-sgd",
            "at γ = 0 the matrix flow from each seed's own matrices tracks its SGD over the "
            "whole horizon",
            statistic="per seed: sup over t ≤ `base.t_max` of |SGD − matrix flow from that "
            "seed's matrices| (max over t₁, q₁₁, q₁₂) over the flow's largest motion; seed mean "
            "(Student-t 95 % CI)",
            target=below("track_tol"),
            reason="as above: the long-time reference that the truncations cannot give",
            controls=("sgd-beta-2x", "theory-time-x4"),
        ),
    )
    notes = NOTES

    retired = tuple(
        Retired(
            name,
            statement,
            target,
            f"did not fail (paper preset 2026-12-02: {paper}); no wrong model of SGD can fail "
            "it: it compares the truncated hierarchy with its own matrix flow (issue 49's "
            "referee)",
            "2026-12-07",
            "a property of the code's hierarchy is a unit test, not a claim "
            "(tests/test_aim_theory.py::test_hierarchy_converges_geometrically_inside_the_radius)",
            f"reported ({field})",
        )
        for name, statement, target, paper, field in (
            ("geometric-in-M-inside", "at γ = 0 inside the radius, the truncation error falls "
             "geometrically in M", "< 1, errors decreasing in M", "0.248",
             "summary.ratio_inside"),
            ("geometric-in-M-large-gamma", "at γ > γ* the truncation error falls geometrically "
             "in M, uniformly in time", "< 1, the largest M best at every t", "0.217",
             "summary.ratio_large_gamma"),
            ("horizon-gamma0", "at γ = 0 the truncation stops converging in M at a finite "
             "radius after t_inside", "in (t_inside, t_max]", "1.127 in (0.3, 3]",
             "summary.horizon_gamma0"),
        )
    )  # fmt: skip

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        b, clock = config.base, config.theory_time_factor
        regimes = {"gamma0": (0.0, b.t_max), "large": (config.gamma_large, config.t_max_large)}
        out: dict[str, Any] = {}
        m_max = max(config.truncations)
        theory = dict(
            seeds=1, moment_degree=3, records=config.theory_records, quad_log2=config.quad_log2
        )

        def predict(gamma: float, t_max: float, m: int | None = None, radius=False, **kw):
            """The theory at decay γ to the SGD's time t_max, read on the SGD's clock: the
            degree-m truncation (with the radius estimate in its attrs if ``radius``), or the
            matrix flow (m None)."""
            if m is not None:
                kw.update(method="hierarchy", truncation=m, estimate_radius=radius)
            run = ctx.predict("aim", b, weight_decay=gamma, t_max=clock * t_max, **theory, **kw)
            return _clock(run, clock)

        for key, (gamma, t_max) in regimes.items():
            sgd_gamma = gamma * (config.sgd_gamma_factor if key == "large" else 1.0)
            beta = b.beta * config.sgd_beta_factor
            sim = ctx.simulate("aim", b, weight_decay=sgd_gamma, beta=beta, t_max=t_max)
            th_gamma = gamma * config.theory_gamma_factor
            flow = predict(th_gamma, t_max, method="matrix-flow")
            # the radius estimate (attrs) for the largest M at γ = 0 only
            trunc = {
                m: predict(th_gamma, t_max, m, key == "gamma0" and m == m_max)
                for m in config.truncations
            }
            # the largest truncation from each seed's own initial moments, for that seed's SGD
            per_seed = [trunc[m_max]] + [
                predict(th_gamma, t_max, m_max, seed=config.seed + s)
                for s in range(1, config.seeds)
            ]
            out[key] = {"sim": sim, "flow": flow, "trunc": trunc, "per_seed": per_seed}
        # the matrix flow from every other seed's initial matrices (γ = 0, whole horizon)
        out["flows"] = [out["gamma0"]["flow"]] + [
            predict(0.0, b.t_max, seed=config.seed + s, method="matrix-flow")
            for s in range(1, config.seeds)
        ]
        return out

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        ms, m_max = config.truncations, max(config.truncations)
        out: dict[str, Any] = {}
        windows = {"gamma0": config.t_inside, "large": config.t_max_large}
        for key in ("gamma0", "large"):
            r = results[key]
            errors = {m: _error(r["trunc"][m], r["flow"]) for m in ms}
            # a lower M beats the largest one, at an error above the round-off floor
            lowest = np.min([errors[m] for m in ms], axis=0)
            beaten = (errors[m_max] > config.err_floor) & (lowest < errors[m_max])
            # scale: the motion over the horizon of the reference that spans it (the matrix flow
            # at γ = 0, where the truncation stops; the truncation itself at γ_large)
            scale = _motion(r["flow"] if key == "gamma0" else r["per_seed"][0])
            gaps = [
                _relative_gap(r["sim"], s, th, windows[key], scale)
                for s, th in enumerate(r["per_seed"])
            ]
            out[key] = {
                "times": r["flow"].time.values,
                "errors": errors,
                "beaten": beaten,
                "sgd_gap": mean_ci(gaps),
                "finite": bool(np.all(np.isfinite(r["sim"]["t_1"].values))),
            }
        g0, large = out["gamma0"], out["large"]
        times = g0["times"]
        i_in = int(np.argmin(np.abs(times - config.t_inside)))
        g0["at_inside"] = {m: float(g0["errors"][m][i_in]) for m in ms}
        large["sup"] = {m: float(np.max(large["errors"][m])) for m in ms}
        g0["ratio_inside"], g0["decreasing"], g0["all_ran"] = _geometric(g0["at_inside"])
        large["ratio_sup"], large["decreasing"], large["all_ran"] = _geometric(large["sup"])
        lost = np.nonzero(g0["beaten"])[0]
        g0["horizon"] = float(times[lost[0]]) if len(lost) else float("inf")
        radius = results["gamma0"]["trunc"][m_max].attrs.get("truncation_radius")
        g0["radius_estimate"] = float("inf") if radius is None else float(radius)
        large["always_best"] = not bool(np.any(large["beaten"]))
        out["t_inside"] = float(times[i_in])
        sim, t_max = results["gamma0"]["sim"], config.base.t_max
        gaps = [_relative_gap(sim, s, f, t_max, _motion(f)) for s, f in enumerate(results["flows"])]
        out["flow_gap"] = mean_ci(gaps)
        return out

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check("every SGD seed finite", m["gamma0"]["finite"] and m["large"]["finite"])]

    def evaluate(self, config: Config, m: dict[str, Any]) -> dict[str, Any]:
        g0, large = m["gamma0"], m["large"]
        return {
            "sgd-matches-largest-M-inside": g0["sgd_gap"],
            "sgd-matches-largest-M-large-gamma": large["sgd_gap"],
            "flow-tracks-sgd": m["flow_gap"],
        }

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        g0, large = m["gamma0"], m["large"]
        return json_safe(
            {
                "t_inside": m["t_inside"],
                "errors_inside": g0["at_inside"],
                "ratio_inside": g0["ratio_inside"],
                "horizon_gamma0": g0["horizon"],
                "radius_estimate_gamma0": g0["radius_estimate"],
                "sgd_gap_inside": g0["sgd_gap"],
                "sup_errors_large_gamma": large["sup"],
                "ratio_large_gamma": large["ratio_sup"],
                "sgd_gap_large_gamma": large["sgd_gap"],
                "flow_gap": m["flow_gap"],
            }
        )

    def figure(
        self, config: Config, results: dict[str, Any], meas: dict[str, Any], path: Path
    ) -> Path:
        ms = config.truncations
        cmap = get_cmap("viridis")
        colours = {m: cmap(i / max(1, len(ms) - 1)) for i, m in enumerate(ms)}
        fig, axes = new_figure(1, 3, figsize=(14, 4))
        r, ax = results["gamma0"], axes[0]
        q = r["sim"]["q_12"]
        for s in range(1, q.sizes["seed"]):
            ax.plot(q.time, q.isel(seed=s), color="0.75", lw=0.6)
        ax.plot(q.time, q.isel(seed=0), color="k", lw=2, label="SGD seed 0 (others grey)")
        flow = r["flow"]["q_12"]
        ax.plot(flow.time, flow, color="C3", lw=1.5, ls="--", label="matrix flow, seed 0")
        for m in ms:
            tr = r["trunc"][m]["q_12"]
            ax.plot(tr.time, tr, color=colours[m], lw=1, label=f"truncation M = {m}")
        lo, hi = float(q.min()), float(q.max())
        ax.set_ylim(lo - 0.5 * (hi - lo), hi + 0.5 * (hi - lo))
        ax.set(
            xscale="log",
            xlabel="t = 4nα_d/d",
            ylabel="q_12",
            title=f"q_12, γ = 0, d = {config.base.d}",
        )
        ax.legend(frameon=False, fontsize=7)
        for ax, key, title in (
            (axes[1], "gamma0", "γ = 0"),
            (axes[2], "large", f"γ = {config.gamma_large:g}"),
        ):
            m_ = meas[key]
            keep = m_["times"] > 0
            for m in ms:
                e = np.where(np.isfinite(m_["errors"][m]), m_["errors"][m], np.nan)
                ax.plot(m_["times"][keep], e[keep], color=colours[m], label=f"M = {m} vs flow")
            if key == "gamma0" and np.isfinite(m_["horizon"]):
                ax.axvline(m_["horizon"], color="0.5", lw=0.8)
            ax.set(xscale="log", yscale="log", xlabel="t", ylabel="max |truncation − flow|")
            ax.set_title(f"max error over t_1, q_11, q_12; {title}")
        axes[1].legend(frameon=False, fontsize=7)
        return save_figure(fig, path)
