"""``aim-untied`` (P1 = arXiv 2609.03858 §4, Theorem 3, Eqs. 28–32, 42, 48–49, Cor. 4; Fig. 3):
untied attention S = UVᵀ learns in two stages. The pre-activation mean m = Tr(UVᵀ)/√d relaxes
to its fast equilibrium m* on the fast scale t = nα_d (Eq. 28) while the matrix overlaps are
frozen; the student–teacher overlap then moves on the slow scale τ = nα_d/d, and it moves at
all on that scale only if E σ'(Z₁)·E σ*'(Z₂) ≠ 0 at the state the fast phase selected (Eq. 49).

Setting: L = 1, inputs N(0, I_d), MSE ½(σ(G₁) − σ(G₂))² with the same activation for student
and teacher, product teacher U*V*ᵀ, student U, V ∈ R^{d×ρd} with N(0, 1/d) and N(0, 0.64/d)
entries (t^A ≠ t^B, Assumption 4.4), γ = 0, batch-mean mini-batches with η = B·α_d,
α_d = lr/(d log d). The overlap shown is Fig. 3's symmetric overlap of M₁ + M₁ᵀ with
M₂ + M₂ᵀ, qsym₁₂ = 2(q⁽¹⁾₁₂ + q⁽²⁾₁₂), less its mean part 4 t₁t₂ = 4 m₁m₂/d (an O(1/d) term
that the d → ∞ theory does not have): psym₁₂ = qsym₁₂ − 4 t₁t₂.

Cases (the means are set exactly with the config fields ``init_mean`` / ``teacher_mean``):
- ``h1``: σ = h1, m₁(0) = 0, teacher mean m₂ = ``teacher_mean`` (1): the fast phase moves m₁
  from 0 to m* = m₂; E σ' E σ*' = 1 ≠ 0;
- ``h2-centred``: σ = h2, m₁(0) = m₂ = 0: m* = 0, E h2'(Z) = √2 m, the signal is 0 at the fast
  state (both factors vanish; Cor. 4 (ii));
- ``h2-repaired``: σ = h2, m₁(0) = ``repair_init_mean`` (0.05), m₂ = ``teacher_mean``: the signal
  is ≈ 2·0.05·1 at the start but m = 0 is unstable for this teacher (∂Φ/∂m₁ =
  m₁(m₁² + 3v₁ − m₂² − v₂) at q₁₂ = 0), the fast phase moves m₁ to m* ≈ 0.73 and the signal
  becomes ≈ 1.5: "the fast learning phase can repair a student-side symmetry" (P1 §4.2).

Claims (every seed; a claim over seeds passes only if its whole 95 % interval clears the target;
targets and their reasons: docs/claims/aim-untied.md):
- ``fast-equilibrium`` (a): at n_f = ``fast_time``/α_d (h1, largest d) the per-seed
  |m₁ − m*|/|m₁(0) − m*| ≤ ``fast_tolerance`` (0.1: nine tenths of the relaxation done), m* the
  end point of Eq. 28 at the initial state;
- ``fast-separation-scales`` (a): the fraction of its change by τ = ``tau_max`` that the
  seed-mean psym₁₂ has made by n_f (``frozen_ratio``, reported per d), at the largest d over
  the smallest, is below the midpoint (1 + d_min/d_max)/2 between a 1/d timescale ratio
  (d_min/d_max) and none (1);
- ``slow-move`` (b): for h1 the seed-mean change of psym₁₂ by τ_max is ≥ ``moved`` at every d
  (an O(1) change on the d/α_d scale);
- ``slow-collapse`` (b): the time at which the seed-mean psym₁₂ first gains ``collapse_level``,
  on the slow axis τ = nα_d/d, has max/min across d below √(d_max/d_min), the geometric midpoint
  between collapse in τ (ratio 1) and collapse on the fast axis nα_d (ratio d_max/d_min);
- ``dichotomy-trapped`` (c): h2-centred: seed-RMS |Δpsym₁₂| ≤ ``trapped`` over τ ≤ τ_max at
  every d (bootstrap over seeds);
- ``dichotomy-repaired`` (c): h2-repaired (largest d): seed-RMS |Δpsym₁₂(τ_max)| ≥ ``moved``;
- ``dichotomy-signal`` (c): the recovery verdicts follow the signal E σ'(Z₁)·E σ*'(Z₂) at the
  fast state (Z₁ ~ N(m*₁, q⁽¹⁾₁₁ + q⁽²⁾₁₁), Z₂ ~ N(m₂, q⁽¹⁾₂₂ + q⁽²⁾₂₂), Gauss–Hermite): the
  value is the number of cases where (|signal| > 0.05) ≠ (recovered); target 0;
- ``theory-slow``: the untied theory (``predict``, matrix-level slow flow) from each seed's
  initial matrices reproduces that seed's h1 psym₁₂(τ_max) at the largest d: the per-seed gap
  relative to the change is ≤ dα_d + 1/d, the orders of SGD's Itô drift and of the fast–slow
  separation, with unit constants.

Negative controls: ``theory-time-half`` (the theory read at τ/2), ``fast-axis`` (the collapse time
measured on the fast axis nα_d instead of τ = nα_d/d), ``small-init`` (student entries N(0, 1/d²):
D = t^A + t^B = O(1/d), so neither the fast relaxation nor the slow drift ∝ D happens in time),
``centred-h1`` (the centred case with h1, E h1' = 1: not trapped), ``fast-slow-clock`` (the fast
instant at a fixed slow time fast_time/d_max at every d: no separation). The fraction itself at
one d (``frozen_ratio``, 0.25 at tiny) is reported, not claimed: no wrong model within P1's scaling
fails a bound on it (the overlap's drift per sample is O(α_d/d) at every init, and entries N(0, 1),
the scaling that removes it, diverge at step 1 for h2; docs/claims/aim-untied.md).

Presets:
- ``tiny``: d ∈ {32, 64}, the centred case at d = 64 only (at d = 32 a seed escapes the
  saddle within τ_max), otherwise as small;
- ``small``: d ∈ {64, 128}, ρ = ρ* = ½, lr = 0.05, batch 128, τ_max = 0.4, 4 seeds; measured
  values and timings in docs/experiments.md.
- ``paper``: Fig. 3's caption: d = 800 (with d = 400 for the collapse), lr 0.01 and batch 4096
  read as a batch-mean step η = 0.01, i.e. α_d = 0.01/4096 = lr_c/(d log d) with
  lr_c = 0.01·800·ln 800/4096 = 0.01306; "standard Gaussian initialization" read as square
  factors (ρ = ρ* = 1, N(0, 1/d) entries, V scaled by 0.8 for Assumption 4.4); h3 added to the
  centred cases (with ρ* = 1, Var Z₂ = 1 and E h3'(Z₂) = 3(m₂² + Var Z₂ − 1)/√6 = 0: trapped).
  h3 at this step constant (α_d·d log d = 0.013, above the ≈ 0.002 that kept h3 stable at batch
  32 in aim-parameterization) may lose seeds; the trainer marks them. Its cost (an estimate, not
  run here): docs/experiments.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from attndyn.claims.base import (
    Check,
    Claim,
    Control,
    Experiment,
    ExperimentConfig,
    RunContext,
)
from attndyn.claims.stats import bootstrap_ci, mean_ci
from attndyn.figures.draw import new_figure, save_figure


class Config(ExperimentConfig):
    d: list[int] = Field([64, 128], min_length=2, description="dimensions (increasing)")
    seeds: int = Field(4, ge=2)
    lr: float = Field(0.05, gt=0, description="step constant: α_d = lr/(d log d)")
    batch: int = Field(128, ge=1, description="mini-batch B (batch-mean gradient, η = B·α_d)")
    rho: float = Field(0.5, gt=0, description="student width ratio r/d")
    teacher_rho: float = Field(0.5, gt=0, description="teacher width ratio r*/d")
    tau_max: float = Field(0.4, gt=0, description="slow horizon T (n = T d/α_d)")
    records: int = Field(48, ge=8, description="log-spaced record points")
    teacher_mean: float = Field(1.0, description="m₂ of the h1 and h2-repaired teachers")
    repair_init_mean: float = Field(0.05, description="m₁(0) of the h2-repaired student")
    centred: list[str] = Field(["h2"], description="activations run from the centred start")
    fast_time: float = Field(5.0, gt=0, description="fast time t = nα_d of claim (a)")
    fast_tolerance: float = Field(0.1, gt=0, description="|m − m*| / |m(0) − m*| at n_f")
    moved: float = Field(0.3, gt=0, description="O(1) change of psym₁₂ by τ_max")
    collapse_level: float = Field(0.2, gt=0, description="psym₁₂ level defining τ_c")
    trapped: float = Field(0.05, gt=0, description="max seed-RMS |Δpsym₁₂| when trapped")
    theory_time_factor: float = Field(
        1.0,
        gt=0,
        le=1,
        description="theory read at factor·τ_max (1: P1's slow time; a control sets ½)",
    )
    trapped_from: int = Field(
        0, ge=0, description="centred cases run at d ≥ this only (tiny: d = 32 escapes the saddle)"
    )
    collapse_axis: Literal["slow", "fast"] = Field(
        "slow", description="axis of the collapse time: τ = nα_d/d (P1) or nα_d (a control)"
    )
    fast_clock: Literal["fast", "slow"] = Field(
        "fast",
        description="clock of the fast instant n_f: t = nα_d (P1 Eq. 28) or, a control, the "
        "slow time fast_time/d_max at every d (n_f ∝ d/α_d)",
    )
    init_power: float = Field(
        0.0,
        ge=-1,
        le=1,
        description="student entries N(0, d^(2·power)/d): 0 is P1's Θ(√d) Frobenius norm "
        "(§4.1); a control sets −½",
    )


def _case_values(config: Config, case: str) -> dict[str, Any]:
    if case == "h1":
        return dict(activation="h1", init_mean=0.0, teacher_mean=config.teacher_mean)
    if case == "h2-repaired":
        return dict(
            activation="h2", init_mean=config.repair_init_mean, teacher_mean=config.teacher_mean
        )
    act = case.removesuffix("-centred")
    return dict(activation=act, init_mean=0.0, teacher_mean=0.0)


def _sim_values(config: Config, case: str, d: int) -> dict[str, Any]:
    return dict(
        d=d,
        L=1,
        param="untied",
        rho=config.rho,
        init_scale=float(d) ** config.init_power,
        teacher_rho=config.teacher_rho,
        lr=config.lr,
        lr_scaling="dlogd",
        batch=config.batch,
        seeds=config.seeds,
        seed=config.seed,
        t_max=config.tau_max,
        records=config.records,
        grid="log",
        moment_degree=2,
        test_size=0,
        **_case_values(config, case),
    )


def _psym(traj) -> np.ndarray:
    """Symmetric overlap of Fig. 3 less its O(1/d) mean part: qsym₁₂ − 4 t₁t₂."""
    return np.asarray(traj["qsym_12"].values - 4.0 * traj["t_1"].values * traj["t_2"].values)


def _rms_change(traj) -> np.ndarray:
    """Seed-RMS of psym₁₂(τ) − psym₁₂(0), per record time."""
    p = _psym(traj)
    delta = p - p[..., :1]
    return np.sqrt(np.mean(delta**2, axis=0)) if delta.ndim == 2 else np.abs(delta)


def _first_crossing(tau: np.ndarray, values: np.ndarray, level: float) -> float:
    """First τ with values ≥ level (linear interpolation); NaN if never."""
    above = np.nonzero(values >= level)[0]
    if len(above) == 0:
        return float("nan")
    i = above[0]
    if i == 0:
        return float(tau[0])
    t0, t1, v0, v1 = tau[i - 1], tau[i], values[i - 1], values[i]
    return float(t0 + (level - v0) * (t1 - t0) / (v1 - v0))


def _fast_instant(config: Config, d: int) -> float:
    """Fast time t = nα_d of claim (a)'s instant at dimension d: ``fast_time`` (P1: the fast
    phase lasts O(1/α_d) samples), or under ``fast_clock="slow"`` the fixed slow time
    ``fast_time``/d_max, i.e. t = fast_time·d/d_max (a fast phase of O(d/α_d) samples)."""
    scale = d / config.d[-1] if config.fast_clock == "slow" else 1.0
    return config.fast_time * scale


def _interp(traj, values: np.ndarray, t_fast: float) -> float:
    """``values`` (along the record grid) at fast time ``t_fast``, linear in t."""
    return float(np.interp(t_fast, traj["time_fast"].values, values))


class AIMUntied(Experiment):
    name = "aim-untied"
    description = (
        "P1 Fig. 3: untied S = UVᵀ — fast mean relaxation, slow overlap on the d/α_d scale, "
        "recovery iff E σ'·E σ*' ≠ 0 at the fast state"
    )
    Config = Config
    presets = {
        "tiny": {"d": [32, 64], "records": 32, "trapped_from": 64},
        "small": {},
        "paper": {
            "d": [400, 800],
            "seeds": 4,
            "lr": 0.01 * 800 * float(np.log(800)) / 4096,
            "batch": 4096,
            "rho": 1.0,
            "teacher_rho": 1.0,
            "tau_max": 1.0,
            "records": 60,
            "centred": ["h2", "h3"],
        },
    }
    controls = {
        "theory-time-half": Control(
            {"theory_time_factor": 0.5},
            ("theory-slow",),
            "the untied theory is read at τ/2: a slow clock running at half P1's speed",
        ),
        "fast-axis": Control(
            {"collapse_axis": "fast"},
            ("slow-collapse",),
            "the collapse time is measured on the fast axis nα_d instead of τ = nα_d/d",
        ),
        "small-init": Control(
            {"init_power": -0.5},
            ("fast-equilibrium", "slow-move", "dichotomy-repaired", "dichotomy-signal"),
            "student entries N(0, 1/d²): Frobenius norm O(1), not P1's Θ(√d), so the fast rate "
            "D = t^A + t^B (Eq. 28) and the slow drift (Eq. 42, ∝ D) are O(1/d): no fast "
            "relaxation, no O(1) overlap change by τ_max although the signal is ≠ 0",
        ),
        "centred-h1": Control(
            {"centred": ["h1"]},
            ("dichotomy-trapped",),
            "the centred case with h1, whose mean slope E h1' = 1 ≠ 0 (Eq. 49): the centred start "
            "does not trap by itself, only the vanishing E h2'(Z) = √2·m at m = 0 does",
        ),
        "fast-slow-clock": Control(
            {"fast_clock": "slow"},
            ("fast-separation-scales",),
            "the fast phase lasts a fixed slow time τ = fast_time/d_max at every d (O(d/α_d) "
            "samples, no fast–slow separation) instead of the fast time nα_d = fast_time",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        return [
            "fast-equilibrium",
            "fast-separation-scales",
            "slow-move",
            "slow-collapse",
            "dichotomy-trapped",
            "dichotomy-repaired",
            "dichotomy-signal",
            "theory-slow",
        ]

    def cases(self, config: Config) -> list[str]:
        return ["h1", *(f"{a}-centred" for a in config.centred), "h2-repaired"]

    @staticmethod
    def _ds(config: Config, case: str) -> list[int]:
        """The dimensions a case runs at: h2-repaired the largest d, the centred cases d ≥
        ``trapped_from``, h1 every d."""
        if case == "h2-repaired":
            return [config.d[-1]]
        if case.endswith("-centred"):
            return [d for d in config.d if d >= config.trapped_from]
        return list(config.d)

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        sims: dict[tuple[str, int], Any] = {}
        d_max = config.d[-1]
        for case in self.cases(config):
            for d in self._ds(config, case):
                sims[(case, d)] = ctx.simulate("aim", **_sim_values(config, case, d))
        # the theory from each seed's initial matrices (read at theory_time_factor·τ_max)
        h1 = _sim_values(config, "h1", d_max)
        theory = [
            ctx.predict("aim", **{**h1, "seeds": 1, "seed": config.seed + s})
            for s in range(config.seeds)
        ]
        from attndyn.core.config import validate
        from attndyn.models.aim.config import AIMConfig
        from attndyn.models.aim.theory.untied.fast import fast_state

        fast = {
            case: fast_state(validate(AIMConfig, _sim_values(config, case, d_max)))
            for case in self.cases(config)
        }
        return {"sims": sims, "theory": theory, "fast": fast}

    # ----------------------------------------------------------------------------------------
    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        sims, fast = results["sims"], results["fast"]
        d_max, d_min = config.d[-1], config.d[0]
        n = config.seeds
        out: dict[str, Any] = {}
        h1 = sims[("h1", d_max)]
        tf = config.fast_time
        m_star, m0 = fast["h1"]["m_star"], fast["h1"]["m0"]
        out["n_fast"] = int(round(tf / (config.lr / (d_max * np.log(d_max)))))
        m1 = h1["m_1"].values
        out["fast_residual"] = mean_ci(
            [abs(_interp(h1, m1[s], tf) - m_star) / abs(m0 - m_star) for s in range(n)]
        )
        psym = {d: _psym(sims[("h1", d)]) for d in config.d}
        seeds = np.arange(n, dtype=float)

        def frozen(d):
            traj = sims[("h1", d)]

            def stat(idx):
                p = psym[d][idx.astype(int)].mean(axis=0)
                return abs(_interp(traj, p, _fast_instant(config, d)) - p[0]) / abs(p[-1] - p[0])

            return stat

        out["frozen_ratio"] = {d: bootstrap_ci(seeds, frozen(d)) for d in config.d}
        f_lo, f_hi = frozen(d_min), frozen(d_max)
        out["separation"] = bootstrap_ci([seeds, seeds], lambda a, b: f_hi(b) / f_lo(a))
        out["separation_target"] = 0.5 * (1 + d_min / d_max)
        out["moved"] = {d: mean_ci(psym[d][:, -1] - psym[d][:, 0]) for d in config.d}

        def axis(d):
            t = sims[("h1", d)]["time"].values
            return t * d if config.collapse_axis == "fast" else t

        def tau_c(d, idx):
            pm = psym[d][idx.astype(int)].mean(axis=0)
            return _first_crossing(axis(d), pm - pm[0], config.collapse_level)

        out["tau_c"] = {d: tau_c(d, seeds) for d in config.d}

        def spread(*groups):
            tc = [tau_c(d, g) for d, g in zip(config.d, groups, strict=True)]
            return float(max(tc) / min(tc)) if np.all(np.isfinite(tc)) else float("nan")

        out["collapse_ratio"] = bootstrap_ci([seeds] * len(config.d), spread)
        out["collapse_band"] = float(np.sqrt(d_max / d_min))
        tc = [out["tau_c"][d] for d in config.d]
        out["sample_ratio"] = float(
            (d_max**2 * np.log(d_max)) / (d_min**2 * np.log(d_min)) * tc[-1] / tc[0]
        )
        centred = [
            (c, d)
            for c in self.cases(config)
            if c.endswith("-centred")
            for d in self._ds(config, c)
        ]

        ps = {key: _psym(traj) for key, traj in sims.items()}

        def rms(case, d, idx):
            p = ps[(case, d)][idx.astype(int)]
            return np.sqrt(np.mean((p - p[:, :1]) ** 2, axis=0))

        def worst(*groups):
            return max(
                float(np.max(rms(c, d, i))) for (c, d), i in zip(centred, groups, strict=True)
            )

        out["trapped_rms"] = bootstrap_ci([seeds] * len(centred), worst)
        out["repaired_rms"] = bootstrap_ci(seeds, lambda i: float(rms("h2-repaired", d_max, i)[-1]))
        rep = sims[("h2-repaired", d_max)]
        out["repaired_m_final"] = rep["m_1"].isel(time=-1).values.tolist()
        recovered = {"h1": bool(min(v.value for v in out["moved"].values()) >= config.moved)}
        for case in self.cases(config):
            if case.endswith("-centred"):
                final = [_rms_change(sims[(case, d)])[-1] for d in self._ds(config, case)]
                recovered[case] = bool(min(final) >= config.moved)
        recovered["h2-repaired"] = bool(out["repaired_rms"].value >= config.moved)
        out["recovered"] = recovered
        out["signal_mismatch"] = int(
            sum((abs(fast[c]["signal_fast"]) > 0.05) != recovered[c] for c in recovered)
        )
        gaps = []
        for s, th in enumerate(results["theory"]):
            p_sgd = psym[d_max][s]
            tau = config.theory_time_factor * config.tau_max
            p_th = float(np.interp(tau, th["time"].values, _psym(th)))
            gaps.append(abs(p_th - p_sgd[-1]) / abs(p_sgd[-1] - p_sgd[0]))
        out["theory_gap"] = mean_ci(gaps)
        alpha = config.lr / (d_max * np.log(d_max))
        out["theory_tolerance"] = float(d_max * alpha + 1.0 / d_max)
        out["finite"] = all(
            bool(np.all(np.isfinite(_psym(t)))) and not bool(t["diverged"].values.any())
            for t in sims.values()
        )
        out["fast"] = fast
        return out

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check("every seed finite and not diverged", m["finite"])]

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        fast = m["fast"]
        d_max = config.d[-1]
        rep = fast["h2-repaired"]
        slowest = min(m["moved"].items(), key=lambda kv: kv[1].low)
        return [
            Claim.at_most(
                "fast-equilibrium",
                f"h1, d = {d_max}: per-seed |m₁ − m*|/|m₁(0) − m*| at n = {m['n_fast']} "
                f"(t = nα_d = {config.fast_time}), m* = {fast['h1']['m_star']:.3f} (Eq. 28)",
                m["fast_residual"],
                config.fast_tolerance,
            ),
            Claim.at_most(
                "fast-separation-scales",
                f"h1: that fraction at d = {d_max} over the one at d = {config.d[0]} "
                f"(a 1/d timescale ratio predicts {config.d[0] / d_max:.2f}, none 1)",
                m["separation"],
                m["separation_target"],
            ),
            Claim.at_least(
                "slow-move",
                f"h1: seed-mean change of psym₁₂ by τ = nα_d/d = {config.tau_max}, least at "
                f"d = {slowest[0]} of d = {config.d}",
                slowest[1],
                config.moved,
            ),
            Claim.at_most(
                "slow-collapse",
                f"h1: max/min over d of the time ({config.collapse_axis} axis) where the "
                f"seed-mean psym₁₂ gains {config.collapse_level} (sample-axis ratio "
                f"{m['sample_ratio']:.2f})",
                m["collapse_ratio"],
                m["collapse_band"],
            ),
            Claim.at_most(
                "dichotomy-trapped",
                "centred start (signal 0): max over cases, d and τ ≤ τ_max of the seed-RMS "
                "|Δpsym₁₂|",
                m["trapped_rms"],
                config.trapped,
            ),
            Claim.at_least(
                "dichotomy-repaired",
                f"h2, m₂ = {config.teacher_mean}, m₁(0) = {config.repair_init_mean}: seed-RMS "
                f"|Δpsym₁₂(τ_max)| (signal {rep['signal_init']:.2f} at the start, "
                f"{rep['signal_fast']:.2f} at m* = {rep['m_star']:.2f})",
                m["repaired_rms"],
                config.moved,
            ),
            Claim.equals(
                "dichotomy-signal",
                "cases where recovery by τ_max disagrees with E σ'(Z₁)E σ*'(Z₂) ≠ 0 at the fast "
                "state (Eq. 49): "
                + ", ".join(f"{c} {fast[c]['signal_fast']:.2f}" for c in m["recovered"]),
                m["signal_mismatch"],
                0,
            ),
            Claim.at_most(
                "theory-slow",
                f"h1, d = {d_max}: per-seed |psym₁₂ theory(from the seed's matrices, at "
                f"{config.theory_time_factor:g}τ_max) − SGD(τ_max)| relative to its change; "
                "target dα_d + 1/d",
                m["theory_gap"],
                m["theory_tolerance"],
            ),
        ]

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:

        sims, theory, fast = results["sims"], results["theory"], results["fast"]
        d_max = config.d[-1]
        fig, axes = new_figure(1, 3, figsize=(14, 4.0))
        ax = axes[0]
        for i, d in enumerate(config.d):
            traj = sims[("h1", d)]
            ax.plot(traj["time_fast"], traj["m_1"].mean("seed"), color=f"C{i}", label=f"SGD d={d}")
        ax.plot(theory[0]["time_fast"], theory[0]["m_1"], "k--", lw=1, label=f"theory d={d_max}")
        ax.axhline(fast["h1"]["m_star"], color="0.6", lw=0.6)
        ax.set_xscale("log")
        ax.set_xlim(left=1e-2)
        ax.set_xlabel("fast time t = nα_d")
        ax.set_ylabel("mean m₁ (h1)")
        ax.set_title("(a) fast phase: m → m*")
        ax.legend(frameon=False, fontsize=8)
        ax = axes[1]
        for i, d in enumerate(config.d):
            traj = sims[("h1", d)]
            p = _psym(traj)
            ax.plot(traj["time"], p.mean(axis=0) - p.mean(axis=0)[0], color=f"C{i}", label=f"d={d}")
        th = _psym(theory[0])
        ax.plot(theory[0]["time"], th - th[0], "k--", lw=1, label=f"theory d={d_max} (seed 0)")
        ax.axhline(config.collapse_level, color="0.6", lw=0.6)
        ax.set_xlabel("slow time τ = nα_d/d")
        ax.set_ylabel("Δ psym₁₂ (h1)")
        ax.set_title("(b) slow phase collapses in τ")
        ax.legend(frameon=False, fontsize=8)
        ax = axes[2]
        for i, case in enumerate(self.cases(config)):
            traj = sims[(case, d_max)]
            sig = fast[case]["signal_fast"]
            ax.plot(
                traj["time"],
                _rms_change(traj),
                color=f"C{i}",
                label=f"{case} (Eσ'Eσ*' = {sig:.2f})",
            )
        ax.set_xlabel("slow time τ")
        ax.set_ylabel("seed-RMS |Δ psym₁₂|")
        ax.set_title(f"(c) recovery iff signal ≠ 0 (d = {d_max})")
        ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)
