"""``query-recovery`` (arXiv 2606.22406, Truong; a reconstruction, theory in
docs/query-theory.md): a single softmax-attention query learned by projected stochastic gradient
ascent on ‖a(q; X)‖² recovers the latent signal direction up to its sign; the SGA iterates follow
the ODE ṁ = (1 − m²)Φ'(m) (§2, ODE-S) and with a constant step plateau at the Robbins–Monro
residual 1 − |m| ≈ η E‖P_⊥ĝ‖²/(4Φ'(1)) (:mod:`attndyn.models.query.theory.plateau`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig, changed, variant
from attndyn.claims.spec import Evidence, above, at_least, at_most, between, claim, measured
from attndyn.claims.stats import (
    MIN_BOOTSTRAP_SEEDS,
    Interval,
    bootstrap_ci,
    jackknife_ci,
    mean_ci,
)
from attndyn.claims.verdict import Check
from attndyn.core.serial import json_safe
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.query.config import QueryConfig

RECOVERY = ("nuisance", "weak")
# the conventions of docs/query-theory.md §5 (notes below)
CONVENTIONS = dict(
    d=32, beta=6.0, noise_scaling="inv_d", sign_mode="sequence", dtype="float32", eval_samples=0
)
ROBBINS_MONRO = dict(
    schedule="robbins-monro", gamma=1.0, eta0=2.0, sampler="reduced", records=40, grid="log"
)


class Config(ExperimentConfig):
    nuisance: QueryConfig = Base(
        QueryConfig,
        "the nuisance case: n_N = 10 000, n_I = 200 (2 % informative), θ = 1, Robbins–Monro "
        "η_k = η₀ k₀/(k + k₀) for 500 steps, random initial queries, seeds seed … seed+seeds−1",
        **CONVENTIONS,
        **ROBBINS_MONRO,
        n_informative=200,
        n_nuisance=10_000,
        theta=1.0,
        t_max=500,
        k0=20.0,
        batch=1,
    )
    weak: QueryConfig = Base(
        QueryConfig,
        "the weak case: θ = 0.25, n_I = 20, n_N = 200, 2000 steps × batch 4, the next `seeds` "
        "seeds (seed+seeds …)",
        **CONVENTIONS,
        **ROBBINS_MONRO,
        n_informative=20,
        n_nuisance=200,
        theta=0.25,
        t_max=2000,
        k0=50.0,
        batch=4,
    )
    track: QueryConfig = Base(
        QueryConfig,
        "the tracking law (n_I = 20, n_N = 200, θ = 1, full sampler) at constant steps from "
        "m₀ = init_overlap for every seed; η, the number of steps and the seeds (`track_seeds`) "
        "are set per run, and the plateau runs change m₀ and the records",
        **CONVENTIONS,
        n_informative=20,
        n_nuisance=200,
        theta=1.0,
        schedule="constant",
        batch=1,
        init_overlap=0.2,
        sampler="full",
        records=25,
        grid="linear",
    )
    seeds: int = Field(30, ge=2, description="seeds of the recovery cases")
    track_seeds: int = Field(
        32,
        ge=MIN_BOOTSTRAP_SEEDS,
        description="seeds per constant step (the gap exponent's percentile bootstrap needs "
        f"≥ {MIN_BOOTSTRAP_SEEDS})",
    )
    track_time: float = Field(6.0, gt=0, description="ODE-time horizon of the tracking runs")
    track_etas: list[float] = Field(
        [0.1, 0.05, 0.025, 0.0125], min_length=2, description="decreasing"
    )
    plateau_etas: list[float] = Field([0.2, 0.05], min_length=2, description="decreasing")
    plateau_time: float = Field(30.0, gt=0, description="ODE time of the plateau runs")
    plateau_init: float = Field(0.9, gt=0, le=1, description="m₀ of the plateau runs")
    mc_samples: int = Field(4096, ge=64, description="Monte Carlo draws of Φ")
    grad_samples: int = Field(2048, ge=64, description="draws of E‖P_⊥ĝ‖² at q = u")
    cases: list[Literal["nuisance", "weak", "tracking", "plateau"]] = Field(
        ["nuisance", "weak", "tracking", "plateau"],
        min_length=1,
        description="cases run (each declares its claims)",
    )
    target: float = Field(0.99, gt=0, le=1, description="mean final |m| (95% CI low end)")
    split_p: float = Field(0.01, gt=0, lt=1, description="min two-sided binomial p")
    plateau_band: float = Field(2.0, gt=1, description="plateau / prediction within this factor")
    theory_all: bool = Field(False, description="also integrate the ODE for the recovery cases")
    theory_time_factor: float = Field(
        1.0, gt=0, description="negative control: the ODE read at this multiple of SGA's time"
    )
    plateau_batch_scaling: bool = Field(
        False,
        description="negative control: the plateau runs' batch grows ∝ η (track.batch at the "
        "smallest η), so η/batch, the step's noise, is the same at every η",
    )
    plateau_theory_factor: float = Field(
        1.0, gt=0, description="negative control: the plateau prediction times this"
    )

    @model_validator(mode="after")
    def _ordered(self) -> Config:
        for name in ("track_etas", "plateau_etas"):
            e = getattr(self, name)
            if any(y >= x for x, y in zip(e, e[1:], strict=False)):
                raise ValueError(f"'{name}' must decrease strictly (got {e})")
        if len(set(self.cases)) != len(self.cases):
            raise ValueError(f"'cases' repeats a case (got {self.cases})")
        if not 0 < (self.track.init_overlap or 0) < 1:
            raise ValueError("track.init_overlap: the tracking runs need m₀ in (0, 1)")
        return self


def _tracking(config: Config, eta: float) -> dict[str, Any]:
    """Changes of ``config.track`` for a tracking run at constant step η up to ``track_time``."""
    return dict(seeds=config.track_seeds, t_max=int(round(config.track_time / eta)), eta0=eta)


def _plateau(config: Config, eta: float) -> dict[str, Any]:
    """The same for a plateau run: from m₀ = ``plateau_init`` up to ``plateau_time``."""
    steps = dict(seeds=config.track_seeds, t_max=int(round(config.plateau_time / eta)), eta0=eta)
    if config.plateau_batch_scaling:  # the negative control: η/batch fixed
        steps["batch"] = max(1, round(config.track.batch * eta / min(config.plateau_etas)))
    return steps | dict(init_overlap=config.plateau_init, records=41)


def _recovery_cases(config: Config) -> list[str]:
    return [case for case in RECOVERY if case in config.cases]


class QueryRecovery(Experiment):
    name = "query-recovery"
    description = (
        "arXiv 2606.22406 (reconstruction): softmax query SGA recovers ±u with 10⁴ nuisance "
        "tokens and at θ = 0.25; SGA tracks ṁ = (1 − m²)Φ'(m); constant steps plateau"
    )
    Config = Config
    presets = {
        "tiny": {
            "cases": ["nuisance", "tracking", "plateau"],
            "seeds": 8,
            "nuisance.n_nuisance": 5000,
            "nuisance.n_informative": 100,
            "nuisance.sampler": "full",
            "track_etas": [0.1, 0.0125],
            "track_seeds": 64,
            "mc_samples": 1024,
        },
        "small": {},
        "paper": {
            **{f"{case}.d": 128 for case in ("nuisance", "weak", "track")},
            "nuisance.sampler": "full",
            "weak.sampler": "full",
            "nuisance.t_max": 1000,
            "weak.t_max": 8000,
            "weak.eta0": 4.0,
            "weak.k0": 100.0,
            "track_etas": [0.1, 0.05, 0.025, 0.0125, 0.00625],
            "plateau_etas": [0.2, 0.1, 0.05],
            "mc_samples": 16384,
            "theory_all": True,
        },
    }
    preset_notes = {
        "tiny": "claims `nuisance-recovery` (at 5000, not 10⁴, nuisance tokens), `sign-split` (8 "
        "seeds: a weak test), `ode-tracking` and the plateau law (as small, 64 seeds); it cannot "
        "test the weak case (its escape from the equator is ~50× slower). 64 tracking seeds per "
        "η: with 32 the exponent's interval reached 0.220 < 0.25 at seed offset 1000 ([0.220, "
        "1.06]).",
        "small": "every case at the defaults.",
        "paper": "d = 128 and the full sampler everywhere; the weak case runs longer with η₀ = 4, "
        "k₀ = 100 (at d = 128 its landscape is flatter); the ODE is overlaid on the recovery "
        "cases.",
    }
    controls = {
        "ode-time-x2": Control(
            {"theory_time_factor": 2.0},
            "the ODE read at twice the SGA's time t = Σ η_k (a wrong time unit): the gap tends "
            "to sup |m(t) − m(2t)| > 0 instead of shrinking with η",
        ),
        "no-signal": Control(
            {"nuisance.theta": 1e-6, "weak.theta": 1e-6},
            "the informative tokens carry no signal (θ = 10⁻⁶ in both recovery cases: every "
            "token is a nuisance): |m| stays at its random level, so recovery must fail; the "
            "claim cannot be met by the projection or the step schedule alone",
        ),
        "plateau-batch-scaling": Control(
            {"plateau_batch_scaling": True},
            "the plateau runs' batch grows ∝ η (a wrong scaling of the step noise): the residual "
            "∝ η/batch is then the same at every η, so the plateau does not shrink with η",
        ),
        "plateau-theory-x4": Control(
            {"plateau_theory_factor": 4.0},
            "the plateau prediction without its factor 1/4 (a wrong theory): η E‖P_⊥ĝ‖²/Φ'(1)",
        ),
        "init-leak": Control(
            {"nuisance.init_overlap": 0.2, "weak.init_overlap": 0.2, "cases": ["nuisance"]},
            "every recovery seed starts at m₀ = +0.2 (a typical random |m₀| ~ 1/√d, but the "
            "latent sign leaked into the initial query): m = 0 is a fixed point of the even "
            "flow, so the final sign is the initial one and the split is not 50/50",
        ),
    }
    claims = (
        claim(
            "{}-recovery",
            "{} case: SGA recovers the latent direction up to its sign",
            statistic="seed mean of the final |m| (Student-t 95 % CI)",
            target=at_least("target"),
            reason="the paper's 0.9965 read to its two leading nines: the residual 1 − |m| at "
            "the end of a Robbins–Monro run is ≈ η_K E‖P_⊥ĝ‖²/(4Φ'(1)) (the plateau law at the "
            "final step), which depends on the budget and steps the abstract does not give, so "
            "the third digit is not claimed",
            controls={"no-signal": ("nuisance", "weak")},
            over=_recovery_cases,
        ),
        claim(
            "sign-split",
            "the final signs (+u vs −u) of the recovery seeds are consistent with 50/50",
            statistic="two-sided exact binomial p of the final signs, recovery seeds pooled "
            "(2·seeds independent initial queries when both cases run)",
            target=above("split_p"),
            reason='recovery is "up to sign": the objective is even in m, so with uniform '
            "initial queries each sign is equally likely; p > 0.01 is a 1 %-level test of 50/50",
            controls=("init-leak",),
            when=lambda config: bool(_recovery_cases(config)),
            weak=(
                "with the preset's seeds only an all-one-sign split fails it (8–0 at tiny) (issue "
                "49's referee)"
            ),
        ),
        claim(
            "ode-tracking",
            "SGA at a constant step tracks the ODE ṁ = (1 − m²)Φ'(m) as η → 0",
            statistic="exponent p of sup_t |m̄_k − m(t_k)| ∝ η^p, m̄ the seed-mean trajectory "
            "(t ≤ `track_time`), least squares in log–log over `track_etas`, percentile "
            "bootstrap resampling whole seed trajectories within each η",
            target=at_least(0.25),
            reason="with a correct ODE the mean trajectory's gap is its bias O(η) plus "
            "fluctuations O(η^{1/2}/√seeds), so p ≥ 1/2; a wrong ODE leaves a gap that does not "
            "shrink (p → 0); the target is midway between the two hypotheses",
            controls=("ode-time-x2",),
            when=lambda config: "tracking" in config.cases,
        ),
        claim(
            "constant-plateau",
            "with a constant step, 1 − |m| plateaus at a level that shrinks with η",
            statistic="ratio of the seed-mean plateau 1 − |m| (second half of the run) at the "
            "smallest over the largest of `plateau_etas` (the same seeds at both η: paired "
            "jackknife-t 95 % CI), and every plateau's "
            "Student-t interval above 0",
            target=at_most(measured("√(η_min/η_max)")),
            reason="at leading order the plateau ∝ η (ratio η_min/η_max); a plateau independent "
            "of η gives 1; the target is the geometric midpoint. A positive plateau is what a "
            "constant step must leave (Robbins–Monro steps are needed for convergence)",
            controls=("plateau-batch-scaling",),
            when=lambda config: "plateau" in config.cases,
        ),
        claim(
            "plateau-theory",
            "the plateau at the smallest η matches η E‖P_⊥ĝ‖²/(4Φ'(1)) in scale",
            statistic="seed-mean plateau over the prediction (E‖P_⊥ĝ‖² measured at q = u from "
            "the simulator's gradient, Φ'(1) from the fitted Φ), Student-t interval mapped by "
            "the fixed prediction",
            target=between(measured("1/`plateau_band`"), "plateau_band"),
            reason="a chosen tolerance: the prediction is first order in η and its next order is "
            "not computed, so the claim is the scale, to within a factor 2 either way (a formula "
            "off by its factor 4 or by Φ'(1) ≈ 0.35 misses it)",
            controls=("plateau-theory-x4",),
            when=lambda config: "plateau" in config.cases,
        ),
    )
    notes = """\
The paper's body was not available: its abstract reports a "mean final alignment of 0.9965
across 30 runs, even when facing 10000 nuisance tokens or weak signal strengths like θ = 0.25"
(d, n_I, budget and step sizes unknown). The claims are the qualitative form of that statement;
the value 0.9965 is not asserted.

Conventions (docs/query-theory.md §5 says why): noise N(0, I_d/d), β = 6, ξ a sign per sequence,
query on the unit sphere, random initial queries (uniform on the sphere, |m₀| ~ 1/√d).

The tracking and plateau runs use `track_seeds` seeds from `seed`. The nuisance and weak runs
use their config's `sampler` (default `reduced`: the exact O(n)-scalar sampler,
docs/query-reduced-sampler.md); tracking and plateau always use the full sampler, so every claim
about the ODE is tested on the full simulator.

The mean trajectory is used for `ode-tracking` because it separates the hypotheses more sharply
than the per-seed gap (whose O(η^{1/2}) fluctuations do not average out): at small, the per-seed
exponent was 0.56 [0.37, 0.76] against the control's 0.22 [0.14, 0.30] with 8 seeds.

Precondition: no seed of any run diverged; otherwise the outcome is invalid.

Controls: `init-leak` recomputes only the nuisance run (8 of 8 seeds at +u gives p = 2⁻⁷ =
0.0078, the smallest p 8 seeds can give). The data's sign symmetry (ξ = 1, `sign_mode` none) was
tried first and rejected as that control: its odd Φ pulls most seeds to +u, but not all (7 : 1 at
8 seeds, p = 0.070), too weak a test for the tiny preset.

`no-signal` fails `weak-recovery` at small by value: 0.132 [0.097, 0.168] (< 0.99; run with
`cases=["weak"]`, 2026-12-03, seed offset 0).

**The plateau claims' controls** (also run at small with `cases=["plateau"]`, 2026-12-03, seed
offset 0): `plateau-batch-scaling` gives `constant-plateau` 0.967 [0.893, 1.04] (> √(0.05/0.2) =
0.5; the correct model 0.344 [0.322, 0.366]), and `plateau-theory-x4` gives `plateau-theory`
0.193 [0.183, 0.203] (< 1/2; the correct formula 0.771 [0.732, 0.810]). The tiny preset runs the
plateau case at the small preset's settings, so both controls run in CI.

**Seed offsets (tiny, `--seed 0 / 1000 / 2000`, 2026-12-03).** `nuisance-recovery` 0.9955
[0.9941, 0.9970] / 0.9951 [0.9932, 0.9969] / 0.9948 [0.9932, 0.9965]; `sign-split` p = 1 / 0.727 /
0.727; `ode-tracking` 0.967 [0.582, 1.211] / 0.969 [0.559, 1.345] / 0.876 [0.468, 1.266];
`constant-plateau` 0.363 [0.347, 0.380] / 0.369 [0.353, 0.384] / 0.378 [0.362, 0.395];
`plateau-theory` 0.814 [0.788, 0.840] / 0.831 [0.805, 0.858] / 0.826 [0.799, 0.853].
"""

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        from attndyn.core.config import validate
        from attndyn.models.query.theory import QueryTheoryConfig, phi_fit
        from attndyn.models.query.theory.ode import solve_sphere
        from attndyn.models.query.theory.plateau import pole_noise

        out: dict[str, Any] = {"sims": {}, "theory": {}, "ode": {}}
        sims = out["sims"]
        for case in _recovery_cases(config):
            base = getattr(config, case)
            seed = config.seed if case == "nuisance" else config.seed + config.seeds
            sims[case] = ctx.simulate("query", base, seed=seed)
            if config.theory_all:
                mc = min(config.mc_samples, 2048)
                out["theory"][case] = ctx.predict("query", base, seed=seed, mc_samples=mc)
        for eta in config.track_etas if "tracking" in config.cases else ():
            sims[("track", eta)] = ctx.simulate("query", config.track, **_tracking(config, eta))
        for eta in config.plateau_etas if "plateau" in config.cases else ():
            sims[("plateau", eta)] = ctx.simulate("query", config.track, **_plateau(config, eta))
        if not {"tracking", "plateau"} & set(config.cases):
            return out
        # the ODE of the tracking law (every tracking seed starts at m₀ = track.init_overlap), on
        # each run's own ODE-time grid t = Σ η_k (× theory_time_factor: the negative control)
        changes = {**_tracking(config, config.track_etas[0]), "mc_samples": config.mc_samples}
        fit = phi_fit(validate(QueryTheoryConfig, changed(config.track, **changes)))
        for eta in config.track_etas if "tracking" in config.cases else ():
            t = config.theory_time_factor * sims[("track", eta)]["ode_time"].values
            out["ode"][eta] = solve_sphere(fit, [config.track.init_overlap], t)[0]
        out["phi_slope_pole"] = float(fit.dphi(1.0))
        out["phi_curvature_equator"] = float(fit.d2phi(0.0))
        out["fit"] = {"mc_se": fit.mc_se, "mc_se_rhs": fit.mc_se_rhs, "fit_error": fit.fit_error}
        if "plateau" in config.cases:
            law = variant(config.track, **_plateau(config, 0.1), dtype="float64")
            out["pole_noise"] = pole_noise(law, config.grad_samples)
        return out

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        from scipy.stats import binomtest

        from attndyn.models.query.theory.plateau import plateau_gap

        sims = results["sims"]
        keys = ("phi_slope_pole", "phi_curvature_equator", "pole_noise", "fit")
        m: dict[str, Any] = {key: results[key] for key in keys if key in results}
        m["diverged"] = int(sum(int(tr["diverged"].sum()) for tr in sims.values()))
        signs = []
        for case in _recovery_cases(config):
            final = sims[case]["alignment"].isel(time=-1).values
            mean = "mean_final_alignment" + ("_weak" if case == "weak" else "")
            m[f"{case}_ci"], m[mean] = mean_ci(final), float(np.mean(final))
            m[f"min_final_alignment_{case}"] = float(np.min(final))
            signs.append(sims[case]["overlap"].isel(time=-1).values > 0)
        if signs:
            s = np.concatenate(signs)
            m["n_plus"], m["n_minus"] = int(s.sum()), int((~s).sum())
            m["split_p"] = float(binomtest(m["n_plus"], len(s), 0.5).pvalue)
        if results["ode"]:
            # at each η the sup-gap of the seed-mean trajectory to the ODE, sup_t |m̄_k − m(t_k)|
            # (and the seed mean of the per-seed sup-gaps, for the record); the exponent of the
            # first in η, bootstrapped over whole seed trajectories within each η
            etas = config.track_etas
            paths, odes, m["ode_gaps"] = [], [], {}
            for eta in etas:
                sim = sims[("track", eta)]
                keep = sim["ode_time"].values <= config.track_time + 1e-9
                paths.append(sim["overlap"].values[:, keep])
                odes.append(results["ode"][eta][keep])
                gaps = np.max(np.abs(paths[-1] - odes[-1][None]), axis=1)
                m["ode_gaps"][eta] = float(np.mean(gaps))

            def mean_gaps(*idx) -> list[float]:
                return [
                    float(np.max(np.abs(p[i.astype(int)].mean(axis=0) - o)))
                    for p, o, i in zip(paths, odes, idx, strict=True)
                ]

            def exponent(*idx) -> float:
                return float(np.polyfit(np.log(np.asarray(etas)), np.log(mean_gaps(*idx)), 1)[0])

            seeds = [np.arange(p.shape[0], dtype=float) for p in paths]
            m["ode_gaps_mean_trajectory"] = dict(zip(etas, mean_gaps(*seeds), strict=True))
            m["gap_exponent"] = bootstrap_ci(seeds, exponent)
        if "plateau" in config.cases:
            pe, plateaus = config.plateau_etas, []  # per seed: 1 − |m| over the second half
            for eta in pe:
                a = sims[("plateau", eta)]["alignment"].values
                plateaus.append(1.0 - a[:, a.shape[1] // 2 :].mean(axis=1))
            m["plateau_ci"] = {eta: mean_ci(g) for eta, g in zip(pe, plateaus, strict=True)}
            m["plateau"] = {eta: x.value for eta, x in m["plateau_ci"].items()}
            noise, slope = results["pole_noise"], results["phi_slope_pole"]
            factor = config.plateau_theory_factor  # 1 unless the negative control
            predicted = m["plateau_predicted"] = {
                eta: factor * plateau_gap(eta, noise, slope) for eta in pe
            }
            # a smooth statistic of the same seeds at both η: the paired jackknife-t interval
            m["plateau_ratio"] = jackknife_ci(
                [plateaus[-1], plateaus[0]],
                lambda lo, hi: float(np.mean(lo) / np.mean(hi)),
                paired=True,
            )
            m["plateau_theory_ratio"] = mean_ci(plateaus[-1]).map(lambda x: x / predicted[pe[-1]])
        return m

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check.compare("seeds diverged (every run)", m["diverged"], "==", 0)]

    def evaluate(self, config: Config, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for case in _recovery_cases(config):
            c = getattr(config, case)
            out[f"{case}-recovery"] = Evidence(
                m[f"{case}_ci"],
                detail=f"n_N = {c.n_nuisance}, n_I = {c.n_informative}, θ = {c.theta}, "
                f"{c.t_max:g} steps × batch {c.batch}, d = {c.d}, {config.seeds} seeds (min "
                f"{m[f'min_final_alignment_{case}']:.4f})",
            )
        if "n_plus" in m:
            detail = f"{m['n_plus']} runs → +u, {m['n_minus']} → −u"
            out["sign-split"] = Evidence(m["split_p"], detail=detail)
        if "tracking" in config.cases:
            etas = config.track_etas
            out["ode-tracking"] = Evidence(
                m["gap_exponent"],
                detail=f"m₀ = {config.track.init_overlap}, t ≤ {config.track_time}, "
                f"{config.track_seeds} seeds per η; seed-mean sup-gaps at η = "
                + ", ".join(f"{e}: {m['ode_gaps_mean_trajectory'][e]:.4f}" for e in etas)
                + "; per-seed sup-gaps "
                + ", ".join(f"{m['ode_gaps'][e]:.3f}" for e in etas),
            )
        if "plateau" in config.cases:
            pe, ci = config.plateau_etas, m["plateau_ci"]
            out["constant-plateau"] = Evidence(
                m["plateau_ratio"],
                checks=(Check("every plateau > 0 (95% CI)", all(x.low > 0 for x in ci.values())),),
                bounds=(math.sqrt(pe[-1] / pe[0]),),
                detail="1 − |m| over the second half = "
                + ", ".join(
                    f"{ci[e].value:.4f} [{ci[e].low:.4f}, {ci[e].high:.4f}] (η={e})" for e in pe
                ),
            )
            out["plateau-theory"] = Evidence(
                m["plateau_theory_ratio"],
                bounds=(1 / config.plateau_band,),
                detail=f"η = {pe[-1]}: prediction {m['plateau_predicted'][pe[-1]]:.4f} "
                f"(E‖P_⊥ĝ‖² = {m['pole_noise']:.3f}, Φ'(1) = {m['phi_slope_pole']:.3f})",
            )
        return out

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        skip = ("plateau_ci", "diverged")  # and the claims' intervals
        out = {k: v for k, v in m.items() if not isinstance(v, Interval) and k not in skip}
        if "gap_exponent" in m:
            x = m["gap_exponent"]
            out["ode_gap_exponent"] = {"value": x.value, "low": x.low, "high": x.high}
        return json_safe(out)

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        sims, theory, ode = results["sims"], results["theory"], results["ode"]
        fig, (ax_a, ax_b, ax_c) = new_figure(1, 3, figsize=(14, 4.0))
        for i, case in enumerate(RECOVERY):
            if case not in sims:
                continue
            t, over = sims[case]["ode_time"].values[1:], sims[case]["overlap"].values[:, 1:]
            ax_a.plot(t, over.T, color=f"C{i}", lw=0.5, alpha=0.5)
            if case in theory:
                ax_a.plot(t, theory[case]["alignment"].values[1:], "k--", lw=1,
                          label=f"{case}: theory |m|")  # fmt: skip
            ax_a.plot(
                [], [], color=f"C{i}", label=f"{case} (mean |m| = {m[f'{case}_ci'].value:.4f})"
            )
        ax_a.set_xscale("log")
        ax_a.set(xlabel="ODE time t = Σ η_k", ylabel="overlap m = ⟨q, u⟩ (one line per seed)")
        if "n_plus" in m:
            ax_a.set_title(f"(a) recovery up to sign: {m['n_plus']} → +u, {m['n_minus']} → −u")
            ax_a.legend(frameon=False, fontsize=8)
        for i, eta in enumerate(config.track_etas if ode else ()):
            t, mean = sims[("track", eta)]["ode_time"].values, sims[("track", eta)]["overlap"]
            ax_b.plot(t, mean.mean("seed"), color=f"C{i}", label=f"SGA η = {eta}")
        if ode:  # the ODE on the smallest η's time grid (t, eta: the loop's last)
            label = "ODE ṁ = (1 − m²)Φ'(m)"
            if config.theory_time_factor != 1:
                label += f" at {config.theory_time_factor:g}·t (control)"
            ax_b.plot(t, ode[eta], "k--", lw=1, label=label)
            ax_b.set(xlabel="ODE time t", ylabel="mean m", title="(b) SGA tracks the ODE as η → 0")
            ax_b.legend(frameon=False, fontsize=8)
        if "ode_gaps" in m:
            etas, gaps = config.track_etas, m["ode_gaps"]
            ax_c.loglog(etas, [gaps[e] for e in etas], "o-", label="sup |m − m_ODE| (tracking)")
        if "plateau" in m:
            pe = config.plateau_etas
            ax_c.loglog(
                pe, [m["plateau"][e] for e in pe], "s-", label="plateau 1 − |m| (constant η)"
            )
            ax_c.loglog(
                pe, [m["plateau_predicted"][e] for e in pe], "k:", label="η E‖P⊥ĝ‖²/(4Φ'(1))"
            )
        ax_c.set(xlabel="step η", ylabel="gap", title="(c) gaps shrink with the step")
        if ax_c.get_legend_handles_labels()[0]:  # empty when only recovery cases run
            ax_c.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)
