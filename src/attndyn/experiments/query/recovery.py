"""``query-recovery`` (arXiv 2606.22406, Truong; a reconstruction, theory in
docs/query-theory.md): a single softmax-attention query learned by projected stochastic gradient
ascent on ‖a(q; X)‖² recovers the latent signal direction up to its sign, against many nuisance
tokens and at weak signal, and the SGA iterates follow the limiting ODE ṁ = (1 − m²)Φ'(m)
(docs/query-theory.md §2, ODE-S).

The paper's body was not available. Its abstract-level summary reports a "mean final alignment of
0.9965 across 30 runs, even when facing 10000 nuisance tokens or weak signal strengths like
θ = 0.25" (d, n_I, budget and step sizes unknown). The claims below are the qualitative form of
that statement; the value 0.9965 is not asserted.

Conventions (docs/query-theory.md §5): noise N(0, I_d/d) (``noise_scaling=inv_d``, tokens of norm
≈ √(θ² + 1)), β = 6, ξ a sign per sequence, query on the unit sphere, random initial queries
(uniform on the sphere, |m₀| ~ 1/√d). With σ² = 1 instead, the score noise of each token is β
while its signal is βθ, and θ = 0.25 could not stand out against 10⁴ nuisance tokens at all
(the largest nuisance score is ≈ 4.3β). β = 6 balances a fast escape from the equator (Φ''(0))
against the gradient noise at the pole (which sets the Robbins–Monro residual
1 − |m| ≈ η_k E‖P_⊥ĝ‖²/(4Φ'(1)), :mod:`attndyn.models.query.theory.plateau`).

Cases (30 seeds each, random initial queries, Robbins–Monro η_k = η₀ k₀/(k + k₀)):
- ``nuisance``: n_N = 10 000, n_I = 200 (2 % informative), θ = 1;
- ``weak``: θ = 0.25, n_I = 20, n_N = 200;
- ``tracking``: n_I = 20, n_N = 200, θ = 1, m₀ = 0.2 for every seed, constant steps
  η ∈ ``track_etas`` up to ODE time ``track_time``; the ODE solution m(t) from ``predict``;
- ``plateau``: the same law, constant steps ``plateau_etas`` from m₀ = 0.9 for ``plateau_time``.

Claims:
- ``nuisance-recovery``: mean final |m| over the seeds of ``nuisance`` ≥ ``target`` (0.99);
- ``weak-recovery``: the same for ``weak``;
- ``sign-split``: the final signs of both cases' seeds (pooled; the weak case runs seeds
  ``seeds … 2·seeds − 1`` so that the 2·seeds initial queries are independent) are consistent
  with 50/50: two-sided exact binomial p > ``split_p`` (0.01);
- ``ode-tracking``: at the smallest η, the seed mean of sup_t |m_k − m(t_k)| (t ≤ track_time)
  ≤ ``track_tolerance``;
- ``ode-gap-shrinks``: that gap at the smallest η over the gap at the largest ≤ ``shrink_ratio``
  and it decreases at every halving;
- ``constant-plateau``: with a constant step, 1 − |m| averaged over the second half of the run and
  the seeds is > 0 by ≥ 5 standard errors at every η, and the ratio smallest-η/largest-η gap ≤
  ``plateau_ratio`` (leading order: the ratio of the steps);
- ``plateau-theory``: the measured plateau gap over the prediction η E‖P_⊥ĝ‖²/(4Φ'(1)) (E‖P_⊥ĝ‖²
  measured at q = u from the simulator's gradient, Φ'(1) from the theory) within
  [1/``plateau_band``, ``plateau_band``] at the smallest η.

Samplers: the ``nuisance`` and ``weak`` runs use ``sampler`` (default ``reduced``: the exact
O(n)-scalar sampler of the (α, b) chain, docs/query-reduced-sampler.md); ``tracking`` and
``plateau`` always use the full d-dimensional sampler, so every claim about the ODE is tested on
the full simulator.

Presets: ``small`` as above; ``paper``: d = 128, the full sampler for every case, 1000 steps for
the nuisance case, the weak case 8000 steps × batch 4 with η₀ = 4, k₀ = 100 (at d = 128 the weak
landscape is flatter), 30 tracking seeds, η down to 0.00625, 16384 Monte Carlo draws, the ODE
overlaid on the recovery cases. Theory constants at each law, measured values and timings:
docs/experiments.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from attndyn.experiments.base import Check, Claim, Experiment, ExperimentConfig, RunContext
from attndyn.report.figures import save_figure

PLATEAU_Z = 5.0  # the plateau gap exceeds this many standard errors at every η


class Config(ExperimentConfig):
    seeds: int = Field(30, ge=2, description="seeds of the recovery cases")
    d: int = Field(32, ge=3, description="token dimension")
    beta: float = Field(6.0, gt=0, description="softmax inverse temperature (effective)")
    noise_scaling: Literal["unit", "inv_d"] = Field("inv_d", description="z ~ N(0, I/d)")
    sign_mode: Literal["sequence", "token"] = Field("sequence", description="ξ per sequence")
    sampler: Literal["full", "reduced"] = Field(
        "reduced", description="sampler of the nuisance and weak cases"
    )
    dtype: Literal["float32", "float64"] = Field("float32", description="simulation precision")
    # nuisance case
    n_nuisance: int = Field(10_000, ge=1, description="nuisance tokens (nuisance case)")
    n_informative: int = Field(200, ge=1, description="informative tokens (nuisance case)")
    theta: float = Field(1.0, gt=0, description="signal strength (nuisance case)")
    steps: int = Field(500, ge=10, description="SGA steps (nuisance case)")
    eta0: float = Field(2.0, gt=0, description="first step (nuisance case)")
    k0: float = Field(20.0, gt=0, description="Robbins–Monro offset (nuisance case)")
    batch: int = Field(1, ge=1, description="batch (nuisance case)")
    # weak case
    weak_theta: float = Field(0.25, gt=0, description="signal strength (weak case)")
    weak_n_informative: int = Field(20, ge=1)
    weak_n_nuisance: int = Field(200, ge=1)
    weak_steps: int = Field(2000, ge=10)
    weak_eta0: float = Field(2.0, gt=0)
    weak_k0: float = Field(50.0, gt=0)
    weak_batch: int = Field(4, ge=1)
    # tracking and plateau (full sampler)
    track_n_informative: int = Field(20, ge=1)
    track_n_nuisance: int = Field(200, ge=1)
    track_theta: float = Field(1.0, gt=0)
    track_seeds: int = Field(8, ge=2)
    track_init: float = Field(0.2, gt=0, lt=1, description="m₀ of every tracking seed")
    track_time: float = Field(6.0, gt=0, description="ODE-time horizon of the tracking runs")
    track_etas: list[float] = Field(
        [0.1, 0.05, 0.025, 0.0125], min_length=2, description="decreasing"
    )
    track_records: int = Field(25, ge=4)
    plateau_etas: list[float] = Field([0.2, 0.05], min_length=2, description="decreasing")
    plateau_time: float = Field(30.0, gt=0, description="ODE time of the plateau runs")
    plateau_init: float = Field(0.9, gt=0, le=1)
    mc_samples: int = Field(4096, ge=64, description="Monte Carlo draws of Φ")
    grad_samples: int = Field(2048, ge=64, description="draws of E‖P_⊥ĝ‖² at q = u")
    # claim thresholds
    target: float = Field(0.99, gt=0, le=1, description="mean final |m|")
    split_p: float = Field(0.01, gt=0, lt=1, description="min two-sided binomial p")
    track_tolerance: float = Field(0.1, gt=0, description="max seed-mean sup |m − m_ODE|")
    shrink_ratio: float = Field(0.75, gt=0, description="max gap(η_min)/gap(η_max)")
    plateau_ratio: float = Field(0.5, gt=0, description="max plateau(η_min)/plateau(η_max)")
    plateau_band: float = Field(2.0, gt=1, description="plateau / prediction within this factor")
    theory_all: bool = Field(False, description="also integrate the ODE for the recovery cases")


def _common(config: Config) -> dict[str, Any]:
    return dict(
        d=config.d,
        beta=config.beta,
        noise_scaling=config.noise_scaling,
        sign_mode=config.sign_mode,
        dtype=config.dtype,
        eval_samples=0,
    )


def recovery_values(config: Config, case: str) -> dict[str, Any]:
    """Simulator config of the ``nuisance`` or ``weak`` case."""
    if case == "nuisance":
        law = dict(
            n_informative=config.n_informative, n_nuisance=config.n_nuisance, theta=config.theta
        )
        run = dict(t_max=config.steps, eta0=config.eta0, k0=config.k0, batch=config.batch)
    else:
        law = dict(
            n_informative=config.weak_n_informative,
            n_nuisance=config.weak_n_nuisance,
            theta=config.weak_theta,
        )
        run = dict(
            t_max=config.weak_steps,
            eta0=config.weak_eta0,
            k0=config.weak_k0,
            batch=config.weak_batch,
        )
    return dict(
        _common(config),
        **law,
        **run,
        seeds=config.seeds,
        seed=0 if case == "nuisance" else config.seeds,
        schedule="robbins-monro",
        gamma=1.0,
        sampler=config.sampler,
        records=40,
        grid="log",
    )


def _track_law(config: Config) -> dict[str, Any]:
    return dict(
        n_informative=config.track_n_informative,
        n_nuisance=config.track_n_nuisance,
        theta=config.track_theta,
    )


def _constant_step_values(
    config: Config, eta: float, time: float, init: float, records: int
) -> dict[str, Any]:
    """Full-sampler runs of the tracking law at a constant step η up to ODE time ``time``."""
    return dict(
        _common(config),
        **_track_law(config),
        seeds=config.track_seeds,
        t_max=int(round(time / eta)),
        schedule="constant",
        eta0=eta,
        batch=1,
        init_overlap=init,
        sampler="full",
        records=records,
        grid="linear",
    )


def tracking_values(config: Config, eta: float) -> dict[str, Any]:
    return _constant_step_values(
        config, eta, config.track_time, config.track_init, config.track_records
    )


def plateau_values(config: Config, eta: float) -> dict[str, Any]:
    return _constant_step_values(config, eta, config.plateau_time, config.plateau_init, 41)


class QueryRecovery(Experiment):
    name = "query-recovery"
    description = (
        "arXiv 2606.22406 (reconstruction): softmax query SGA recovers ±u with 10⁴ nuisance "
        "tokens and at θ = 0.25; SGA tracks ṁ = (1 − m²)Φ'(m); constant steps plateau"
    )
    Config = Config
    presets = {
        "small": {},
        "paper": {
            "d": 128,
            "sampler": "full",
            "dtype": "float32",
            "steps": 1000,
            "weak_steps": 8000,
            "weak_eta0": 4.0,
            "weak_k0": 100.0,
            "track_seeds": 30,
            "track_etas": [0.1, 0.05, 0.025, 0.0125, 0.00625],
            "plateau_etas": [0.2, 0.1, 0.05],
            "mc_samples": 16384,
            "theory_all": True,
        },
    }

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        from attndyn.models.query import Config as QueryConfig
        from attndyn.models.query.theory import QueryTheoryConfig, phi_fit
        from attndyn.models.query.theory.plateau import pole_noise

        out: dict[str, Any] = {"sims": {}, "theory": {}}
        for case in ("nuisance", "weak"):
            values = recovery_values(config, case)
            out["sims"][case] = ctx.simulate("query", **values)
            if config.theory_all:
                out["theory"][case] = ctx.predict(
                    "query", **values, mc_samples=min(config.mc_samples, 2048)
                )
        for eta in config.track_etas:
            values = tracking_values(config, eta)
            out["sims"][("track", eta)] = ctx.simulate("query", **values)
            out["theory"][("track", eta)] = ctx.predict(
                "query", **values, mc_samples=config.mc_samples
            )
        for eta in config.plateau_etas:
            out["sims"][("plateau", eta)] = ctx.simulate("query", **plateau_values(config, eta))
        tc = QueryTheoryConfig(
            **{**tracking_values(config, config.track_etas[0]), "mc_samples": config.mc_samples}
        )
        fit = phi_fit(tc)
        out["phi_slope_pole"] = float(fit.dphi(1.0))
        out["phi_curv_equator"] = float(fit.d2phi(0.0))
        out["fit"] = {"mc_se": fit.mc_se, "mc_se_rhs": fit.mc_se_rhs, "fit_error": fit.fit_error}
        law = QueryConfig(**{**plateau_values(config, 0.1), "dtype": "float64"})
        out["pole_noise"] = pole_noise(law, config.grad_samples)
        return out

    # -----------------------------------------------------------------------------------------
    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        from scipy.stats import binomtest

        from attndyn.models.query.theory.plateau import plateau_gap

        sims, theory = results["sims"], results["theory"]
        m: dict[str, Any] = {}
        signs = []
        for case in ("nuisance", "weak"):
            tr = sims[case]
            final = tr["alignment"].isel(time=-1).values
            m[f"{case}_mean"] = float(np.mean(final))
            m[f"{case}_min"] = float(np.min(final))
            over = tr["overlap"].isel(time=-1).values
            m[f"{case}_plus"] = int(np.sum(over > 0))
            signs.append(over > 0)
        s = np.concatenate(signs)
        m["n_plus"], m["n_minus"] = int(s.sum()), int((~s).sum())
        m["split_p"] = float(binomtest(m["n_plus"], len(s), 0.5).pvalue)
        gaps, mean_gaps = {}, {}
        for eta in config.track_etas:
            sim = sims[("track", eta)]
            ode = theory[("track", eta)]["overlap"].values  # every seed starts at track_init
            keep = sim["ode_time"].values <= config.track_time + 1e-9
            dev = np.abs(sim["overlap"].values[:, keep] - ode[None, keep])
            gaps[eta] = float(np.mean(np.max(dev, axis=1)))
            mean_dev = np.abs(sim["overlap"].values[:, keep].mean(axis=0) - ode[keep])
            mean_gaps[eta] = float(np.max(mean_dev))
        m["gaps"], m["mean_gaps"] = gaps, mean_gaps
        etas = config.track_etas
        m["gap_ratio"] = gaps[etas[-1]] / gaps[etas[0]]
        m["gap_monotone"] = bool(
            all(gaps[b] < gaps[a] for a, b in zip(etas[:-1], etas[1:], strict=True))
        )
        plateau, plateau_se, predicted = {}, {}, {}
        for eta in config.plateau_etas:
            tr = sims[("plateau", eta)]
            a = tr["alignment"].values
            half = a[:, a.shape[1] // 2 :]
            per_seed = 1.0 - half.mean(axis=1)
            plateau[eta] = float(per_seed.mean())
            plateau_se[eta] = float(per_seed.std(ddof=1) / np.sqrt(len(per_seed)))
            predicted[eta] = plateau_gap(eta, results["pole_noise"], results["phi_slope_pole"])
        m["plateau"], m["plateau_se"], m["plateau_predicted"] = plateau, plateau_se, predicted
        pe = config.plateau_etas
        m["plateau_ratio"] = plateau[pe[-1]] / plateau[pe[0]]
        m["plateau_z"] = min(plateau[e] / max(plateau_se[e], 1e-300) for e in pe)
        m["plateau_theory_ratio"] = plateau[pe[-1]] / predicted[pe[-1]]
        for key in ("phi_slope_pole", "phi_curv_equator", "pole_noise", "fit"):
            m[key] = results[key]
        return m

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        etas, pe = config.track_etas, config.plateau_etas
        n = m["n_plus"] + m["n_minus"]
        return [
            Claim.at_least(
                "nuisance-recovery",
                f"mean final |m| over {config.seeds} seeds, n_N = {config.n_nuisance}, "
                f"n_I = {config.n_informative}, θ = {config.theta}, d = {config.d}, "
                f"{config.steps} steps (min {m['nuisance_min']:.4f})",
                m["nuisance_mean"],
                config.target,
            ),
            Claim.at_least(
                "weak-recovery",
                f"mean final |m| over {config.seeds} seeds, θ = {config.weak_theta}, "
                f"n_N = {config.weak_n_nuisance}, {config.weak_steps} steps × batch "
                f"{config.weak_batch} (min {m['weak_min']:.4f})",
                m["weak_mean"],
                config.target,
            ),
            Claim.above(
                "sign-split",
                f"two-sided binomial p of {m['n_plus']} runs → +u, {m['n_minus']} → −u "
                f"(of {n}, both cases)",
                m["split_p"],
                config.split_p,
            ),
            Claim.at_most(
                "ode-tracking",
                f"constant η = {etas[-1]}, m₀ = {config.track_init}: seed mean of "
                f"sup_(t ≤ {config.track_time}) |m_k − m(t_k)| against ṁ = (1 − m²)Φ'(m) "
                f"({config.track_seeds} seeds; sup-gap of their mean trajectory "
                f"{m['mean_gaps'][etas[-1]]:.4f})",
                m["gaps"][etas[-1]],
                config.track_tolerance,
            ),
            Claim.at_most(
                "ode-gap-shrinks",
                "SGA–ODE gap at η = "
                + ", ".join(f"{e}: {m['gaps'][e]:.4f}" for e in etas)
                + "; ratio smallest/largest η",
                m["gap_ratio"],
                config.shrink_ratio,
                Check("decreasing at every step", m["gap_monotone"]),
            ),
            Claim.at_most(
                "constant-plateau",
                "constant step: 1 − |m| over the second half = "
                + ", ".join(f"{m['plateau'][e]:.4f}±{m['plateau_se'][e]:.4f} (η={e})" for e in pe)
                + f"; min z = {m['plateau_z']:.1f}; ratio smallest/largest η",
                m["plateau_ratio"],
                config.plateau_ratio,
                Check.compare("min z", m["plateau_z"], ">=", PLATEAU_Z),
            ),
            Claim.between(
                "plateau-theory",
                f"η = {pe[-1]}: plateau 1 − |m| over η E‖P_⊥ĝ‖²/(4Φ'(1)) = "
                f"{m['plateau_predicted'][pe[-1]]:.4f} (E‖P_⊥ĝ‖² = {m['pole_noise']:.3f}, "
                f"Φ'(1) = {m['phi_slope_pole']:.3f})",
                m["plateau_theory_ratio"],
                1 / config.plateau_band,
                config.plateau_band,
            ),
        ]

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        etas = list(m["gaps"])
        return {
            "mean_final_alignment": m["nuisance_mean"],
            "mean_final_alignment_weak": m["weak_mean"],
            "min_final_alignment": min(m["nuisance_min"], m["weak_min"]),
            "n_plus": m["n_plus"],
            "n_minus": m["n_minus"],
            "split_p": m["split_p"],
            "ode_gap": m["gaps"][etas[-1]],
            "ode_gaps": {str(k): v for k, v in m["gaps"].items()},
            "ode_gaps_mean_trajectory": {str(k): v for k, v in m["mean_gaps"].items()},
            "plateau": {str(k): v for k, v in m["plateau"].items()},
            "plateau_predicted": {str(k): v for k, v in m["plateau_predicted"].items()},
            "phi_slope_pole": m["phi_slope_pole"],
            "phi_curvature_equator": m["phi_curv_equator"],
            "pole_noise": m["pole_noise"],
            "fit": m["fit"],
        }

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        import matplotlib.pyplot as plt

        sims, theory = results["sims"], results["theory"]
        fig, axes = plt.subplots(1, 3, figsize=(14, 4.0))
        ax = axes[0]
        for i, case in enumerate(("nuisance", "weak")):
            tr = sims[case]
            t = tr["ode_time"].values
            for s in range(tr.sizes["seed"]):
                ax.plot(t[1:], tr["overlap"].values[s, 1:], color=f"C{i}", lw=0.5, alpha=0.5)
            if case in theory:
                ax.plot(t[1:], theory[case]["alignment"].values[1:], "k--", lw=1)
            ax.plot([], [], color=f"C{i}", label=f"{case} (mean |m| = {m[f'{case}_mean']:.4f})")
        ax.set_xscale("log")
        ax.set_xlabel("ODE time t = Σ η_k")
        ax.set_ylabel("overlap m = ⟨q, u⟩")
        ax.set_title(f"(a) recovery up to sign: {m['n_plus']} → +u, {m['n_minus']} → −u")
        ax.legend(frameon=False, fontsize=8)
        ax = axes[1]
        for i, eta in enumerate(config.track_etas):
            tr = sims[("track", eta)]
            t = tr["ode_time"].values
            ax.plot(t, tr["overlap"].mean("seed"), color=f"C{i}", label=f"SGA η = {eta}")
        th = theory[("track", config.track_etas[-1])]
        ax.plot(th["ode_time"], th["overlap"], "k--", lw=1, label="ODE ṁ = (1 − m²)Φ'(m)")
        ax.set_xlabel("ODE time t")
        ax.set_ylabel("mean m")
        ax.set_title("(b) SGA tracks the ODE as η → 0")
        ax.legend(frameon=False, fontsize=8)
        ax = axes[2]
        etas = config.track_etas
        ax.loglog(etas, [m["gaps"][e] for e in etas], "o-", label="sup |m − m_ODE| (tracking)")
        pe = config.plateau_etas
        ax.loglog(pe, [m["plateau"][e] for e in pe], "s-", label="plateau 1 − |m| (constant η)")
        ax.loglog(pe, [m["plateau_predicted"][e] for e in pe], "k:", label="η E‖P⊥ĝ‖²/(4Φ'(1))")
        ax.set_xlabel("step η")
        ax.set_title("(c) gaps shrink with the step")
        ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)
