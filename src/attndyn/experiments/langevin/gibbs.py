"""``langevin-gibbs`` (arXiv 2605.07959, reconstruction in docs/langevin.md, checks T1–T2): the
Euler–Maruyama chains of dΘ = −∇F dt + √s dW sample the Gibbs measure μ_s ∝ exp(−2F/s) of the
test potentials, and the double well relaxes at the Eyring–Kramers rate.

The abstract's Gibbs/Poincaré picture rests on the learning-rate-dependent SDE of Shi, Su &
Jordan (arXiv 2004.06977): its stationary law is μ_s, reached exponentially at the spectral gap
λ_s, which for a barrier ΔF falls like exp(−2ΔF/s). The paper publishes no numbers; the checks are
on potentials whose μ_s and λ_s are known (:mod:`attndyn.models.langevin.theory`).

Runs (chains = seeds, ``dim`` independent coordinates each, all of the ``langevin`` family with
``dynamics='sde'`` and step ``h``):

- one double-well run F = Σᵢ(θᵢ² − 1)² (λ = 0, barrier ΔF = 1 per coordinate) per s in
  ``temps`` ∪ ``rate_temps``, from θ₀ = 1. F is even and the dynamics commute with θ ↦ −θ, so
  the law of |θᵢ| (and E F) from θ₀ = 1 equals that from the symmetric start ½(δ₁ + δ₋₁), whose
  slow odd mode is absent: even observables relax at the in-well rate λ₂ ≈ 3.3–4.1 (second
  eigenvalue of the generator at s = 0.2–1), in t ≈ ``burn``, without any barrier crossing. The
  mean E θᵢ (odd) decays as e^{−λ_s t} once the other odd modes (rate ≥ 5.5) are gone
  (t ≥ ``rate_fit_from``). A run lasts ``burn`` + ``window``, or the rate fit window
  [``rate_fit_from``, ``rate_fit_from`` + ``rate_horizon``/λ_s] when longer;
- ``ou``: F = (λ/2)‖θ‖² with ``ou_lam``, ``ou_s``, ``ou_h`` from θ₀ = ``ou_x0``.

Claims (docs/claims/langevin-gibbs.md gives every target's reason; F per coordinate):

- ``gibbs-mean-s<s>`` (each s of ``temps``): the chain mean of the per-chain time average of
  F/dim over t ∈ [``burn``, end] (Student-t interval) within ``mean_tol`` (relative) of E_μf by
  quadrature;
- ``gibbs-ks-s<s>``: KS p-value of |θ₁| sampled every ``ks_spacing`` time units from ``burn`` on
  (at most ``ks_per_chain`` per chain, pooled; lag correlation ≤ e^{−λ₂} ≈ 0.04) against the law
  of |θ| under μ_s, 2·exp(−2f/s)/Z on [0, ∞), ≥ ``ks_p``;
- ``relaxation-rate``: at every s of ``rate_temps`` the weighted fit of log E θ (mean over chains
  and coordinates) over the window, divided by the exact gap λ_s of the generator (percentile
  bootstrap over chains), within 1 ± ``rate_tol`` (the s whose interval reaches farthest);
- ``eyring-kramers-slope``: the slope of log(rate) against 1/s (bootstrap) within
  −2ΔF·(1 ± ``slope_tol``): the Eyring–Kramers law (Kramers, Physica 7, 284 (1940); Berglund,
  arXiv 1106.5799, Eq. 1.6; the e^{−2H/s} law of Shi, Su & Jordan);
- ``ou-decay-rate``: the fitted rate of E θ(t), t ≤ ``ou_fit_to`` (bootstrap), within
  λ(1 ± ``ou_tol``);
- ``ou-stationary-variance``: the chain mean of the time average of ‖θ‖²/dim for t ≥ ``ou_burn``
  within s/(2λ)·(1 ± ``ou_tol``).

Preconditions (else the outcome is invalid): the Euler–Maruyama bias of the stationary E f at
``h`` (the chain's own invariant law from its transition kernel,
:func:`attndyn.models.langevin.theory.fokker_planck.em_stationary_mean`) is at most
``mean_tol``/2 at every s; the Kolmogorov distance of |θ| between that law and μ_s is below half
the KS test's 5 % resolution 1.36/√n (the KS test cannot see the EM bias); no chain diverged.

Negative controls: ``wrong-temperature`` (chains run at 1.25·s, references at s) and
``wrong-exponent`` (the references computed for μ ∝ exp(−F/s), i.e. at temperature 2s);
``wrong-drift`` (the OU chains at restoring force 1.25·λ, references at λ).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator
from scipy import stats

from attndyn.claims.base import Check, Claim, Control, Experiment, ExperimentConfig
from attndyn.claims.stats import Interval, bootstrap_ci, mean_ci
from attndyn.core.serial import json_safe
from attndyn.figures.draw import new_figure, save_figure

BARRIER = 1.0  # ΔF of (x² − 1)² at λ = 0


def key(s: float) -> str:
    """The JSON key of a temperature: ``f"{s:g}"`` ("1", "0.5", "0.2")."""
    return f"{s:g}"


class Config(ExperimentConfig):
    seeds: int = Field(1000, ge=2, le=4096, description="chains per run")
    temps: list[float] = Field([1.0, 0.5, 0.2], min_length=1, description="s of the Gibbs checks")
    h: float = Field(0.005, gt=0, le=0.05, description="EM step of the double-well runs")
    dim: int = Field(
        8, ge=1, le=256, description="independent coordinates per chain (double well and OU)"
    )
    burn: float = Field(2.0, gt=0, description="time discarded before the window")
    window: float = Field(10.0, gt=0, description="averaging window (time)")
    record_every: float = Field(0.5, gt=0, description="time between record points")
    max_records: int = Field(401, ge=10, le=20_000, description="record points of a run at most")
    ks_spacing: float = Field(1.0, gt=0, description="time between KS samples of one chain")
    ks_per_chain: int = Field(6, ge=1, description="KS samples per chain at most")
    mean_tol: float = Field(0.05, gt=0, lt=1, description="relative tolerance of E_μF")
    ks_p: float = Field(0.01, gt=0, lt=1, description="least KS p-value")
    # relaxation
    rate_temps: list[float] = Field(
        [1.0, 0.5, 1 / 3], min_length=2, description="s of the rate runs (decreasing)"
    )
    rate_horizon: float = Field(2.0, gt=0, description="fit window lasts rate_horizon/λ_s")
    rate_fit_from: float = Field(1.0, ge=0, description="fit E θ(t) for t ≥ this")
    rate_tol: float = Field(0.15, gt=0, lt=1, description="rate / λ_s within 1 ± rate_tol")
    slope_tol: float = Field(0.15, gt=0, lt=1, description="slope within −2ΔF(1 ± slope_tol)")
    # Ornstein–Uhlenbeck
    ou_lam: float = Field(1.0, gt=0, description="OU: λ")
    ou_s: float = Field(0.5, gt=0, description="OU: s")
    ou_x0: float = Field(2.0, description="OU: θ₀")
    ou_h: float = Field(0.01, gt=0, le=0.05, description="OU: EM step")
    ou_t_max: float = Field(10.0, gt=0, description="OU: horizon")
    ou_fit_to: float = Field(2.5, gt=0, description="OU: fit E θ(t) for t ≤ this")
    ou_burn: float = Field(5.0, gt=0, description="OU: variance averaged for t ≥ this")
    ou_tol: float = Field(0.05, gt=0, lt=1, description="OU: relative tolerance")
    # negative controls
    temperature_factor: float = Field(
        1.0, gt=0, description="negative control: chains run at this multiple of s"
    )
    drift_factor: float = Field(
        1.0, gt=0, description="negative control: the OU chains' restoring force is this·λ"
    )
    gibbs_exponent: float = Field(
        2.0, gt=0, description="references for μ ∝ exp(−exponent·F/s); 2 is the SDE's"
    )

    @model_validator(mode="after")
    def _valid(self) -> Config:
        r = self.rate_temps
        if any(b >= a for a, b in zip(r, r[1:], strict=False)):
            raise ValueError(f"rate_temps: must decrease strictly (got {r})")
        if len({key(s) for s in self.temps}) != len(self.temps):
            raise ValueError(f"temps: repeats a temperature (got {self.temps})")
        if self.ou_fit_to >= self.ou_t_max or self.ou_burn >= self.ou_t_max:
            raise ValueError("ou_t_max: must exceed ou_fit_to and ou_burn")
        return self

    def reference_s(self, s: float) -> float:
        """The temperature whose μ the references use: μ ∝ exp(−e F/s) is the SDE's μ at
        s' = 2s/e."""
        return 2.0 * s / self.gibbs_exponent


def _records(t_max: float, every: float) -> int:
    return int(round(t_max / every)) + 1


def run_temps(config: Config) -> list[float]:
    """Every s that gets a double-well run: ``temps`` ∪ ``rate_temps``, decreasing."""
    return sorted({*config.temps, *config.rate_temps}, reverse=True)


def rate_window(config: Config, s: float) -> tuple[float, float]:
    """The fit window of E θ(t): [rate_fit_from, rate_fit_from + rate_horizon/λ_s]."""
    from attndyn.models.langevin.theory import spectral_gap

    return config.rate_fit_from, config.rate_fit_from + config.rate_horizon / spectral_gap(s)


def double_well_values(config: Config, s: float) -> dict[str, Any]:
    """One run per s from θ₀ = 1: its even observables (F, |θ|) relax in-well (module
    docstring), its mean θ at λ_s; it lasts the stationary window and the rate window."""
    t_max = config.burn + config.window
    if any(key(s) == key(r) for r in config.rate_temps):
        t_max = max(t_max, rate_window(config, s)[1])
    t_max = round(t_max, 6)
    return dict(
        model="double-well", lam=0.0, dynamics="sde", s=s * config.temperature_factor,
        h=config.h, t_max=t_max, x0=1.0, init_scale=0.0, dim=config.dim, seeds=config.seeds,
        seed=config.seed, records=min(config.max_records, _records(t_max, config.record_every)),
        grid="linear",
    )  # fmt: skip


def ou_values(config: Config) -> dict[str, Any]:
    t_max = config.ou_t_max
    return dict(
        model="quadratic", lam=config.ou_lam * config.drift_factor, dynamics="sde",
        s=config.ou_s * config.temperature_factor, h=config.ou_h, t_max=t_max, x0=config.ou_x0,
        init_scale=0.0, dim=config.dim, seeds=config.seeds, seed=config.seed,
        records=_records(t_max, config.record_every), grid="linear",
    )  # fmt: skip


def _theory_values(values: dict[str, Any]) -> dict[str, Any]:
    """The theory of the same run (no seeds): the SDE at the run's temperature."""
    return {k: v for k, v in values.items() if k not in ("seeds", "seed")}


def resampled_mean(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The mean curve of the chains ``idx`` (with repeats) of x (chain, time): counts @ x / n."""
    counts = np.bincount(idx.astype(int), minlength=x.shape[0]).astype(float)
    return counts @ x / idx.size


def fit_rate(times: np.ndarray, curve: np.ndarray) -> float:
    """λ of the weighted least-squares fit log m(t) ≈ c − λt, weights m(t) (the inverse
    standard error of log m when m's own error is constant over t); NaN if m ≤ 0 anywhere in
    the window."""
    if np.any(curve <= 0) or curve.size < 3:
        return float("nan")
    w = curve * curve  # squared polyfit weights
    t_bar = np.sum(w * times) / np.sum(w)
    y = np.log(curve)
    y_bar = np.sum(w * y) / np.sum(w)
    return float(-np.sum(w * (times - t_bar) * (y - y_bar)) / np.sum(w * (times - t_bar) ** 2))


class LangevinGibbs(Experiment):
    name = "langevin-gibbs"
    description = (
        "arXiv 2605.07959 (reconstruction): EM chains of dΘ = −∇F dt + √s dW sample "
        "exp(−2F/s)/Z (double well, OU) and relax at the Eyring–Kramers rate"
    )
    Config = Config
    presets = {
        "tiny": {
            "seeds": 500,
            "window": 4.0,
            "rate_temps": [1.0, 0.5],
            "rate_horizon": 1.5,
            "ou_t_max": 8.0,
        },
        "small": {},
        "paper": {
            "seeds": 4096,
            "h": 0.002,
            "window": 40.0,
            "rate_horizon": 2.5,
            "ou_t_max": 20.0,
        },
    }
    controls = {
        "wrong-temperature": Control(
            {"temperature_factor": 1.25},
            (
                "gibbs-mean-s1",
                "gibbs-mean-s0.5",
                "gibbs-mean-s0.2",
                "gibbs-ks-s1",
                "gibbs-ks-s0.5",
                "gibbs-ks-s0.2",
                "relaxation-rate",
                "ou-stationary-variance",
            ),
            "every chain runs at 1.25·s (noise √(1.25 s)) while the references stay at s: E F "
            "is ~25 % high, the histogram too wide, the barrier crossed e^{2ΔF(1/s − 1/1.25s)} "
            "times faster",
        ),
        "wrong-drift": Control(
            {"drift_factor": 1.25},
            ("ou-decay-rate", "ou-stationary-variance"),
            "the OU chains feel the restoring force 1.25·λθ while the references stay at λ: "
            "E θ decays at 1.25λ and the stationary variance is s/(2.5λ), 20 % low",
        ),
        "wrong-exponent": Control(
            {"gibbs_exponent": 1.0},
            (
                "gibbs-mean-s1",
                "gibbs-mean-s0.5",
                "gibbs-mean-s0.2",
                "gibbs-ks-s1",
                "gibbs-ks-s0.5",
                "gibbs-ks-s0.2",
                "relaxation-rate",
                "eyring-kramers-slope",
                "ou-stationary-variance",
            ),
            "the references use μ ∝ exp(−F/s) (the Langevin convention exp(−βF) read with "
            "β = 1/s instead of 2/s): E_μF, the histogram, λ_s and the Kramers slope −ΔF of "
            "temperature 2s",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        names = [f"gibbs-mean-s{key(s)}" for s in config.temps]
        names += [f"gibbs-ks-s{key(s)}" for s in config.temps]
        return names + [
            "relaxation-rate",
            "eyring-kramers-slope",
            "ou-decay-rate",
            "ou-stationary-variance",
        ]

    def run(self, config: Config, ctx) -> dict[str, Any]:
        out: dict[str, Any] = {"runs": {}, "theory": {}}
        for s in run_temps(config):
            out["runs"][s] = ctx.simulate("langevin", **double_well_values(config, s))
        out["ou"] = ctx.simulate("langevin", **ou_values(config))
        # the SDE's own ensemble means at each run's temperature (figure): FP and OU theory
        for s in run_temps(config):
            values = _theory_values(double_well_values(config, s))
            out["theory"][s] = ctx.predict("langevin", **{**values, "records": 201})
        out["ou_theory"] = ctx.predict("langevin", **_theory_values(ou_values(config)))
        return out

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        from attndyn.models.langevin.theory import fokker_planck as fp
        from attndyn.models.langevin.theory import kramers_rate, spectral_gap

        m: dict[str, Any] = {
            "stationary_mean_F_exact": {},
            "stationary_mean_F_measured": {},
            "em_bias": {},
            "ks_p": {},
            "ks_samples": {},
            "em_ks_distance": {},
        }
        runs = results["runs"]
        for s in config.temps:
            tr = runs[s]
            ref = config.reference_s(s)
            t = tr["time"].values
            inside = t >= config.burn - 1e-9
            F = tr["F"].values / config.dim  # per coordinate: the 1-D double well's f
            m["stationary_mean_F_exact"][key(s)] = fp.gibbs_mean_f(ref)
            m["stationary_mean_F_measured"][key(s)] = mean_ci(F[:, inside].mean(axis=1))
            run_s = s * config.temperature_factor  # the chains' own temperature
            m["em_bias"][key(s)] = (
                fp.em_stationary_mean(fp.f, run_s, config.h) / fp.gibbs_mean_f(run_s) - 1
            )
            every = max(1, int(math.ceil(config.ks_spacing / (t[1] - t[0]) - 1e-9)))
            at = np.flatnonzero(inside)[::every][: config.ks_per_chain]
            sample = np.abs(tr["x"].values[:, at]).ravel()
            m["em_ks_distance"][key(s)] = fp.em_ks_distance_abs(run_s, config.h)
            m["ks_samples"][key(s)] = int(sample.size)
            m["ks_p"][key(s)] = float(
                stats.kstest(sample, lambda v, r=ref: 2.0 * fp.gibbs_cdf(v, r) - 1.0).pvalue
            )
        # relaxation rates: fit of E θ(t) over the window, bootstrap over chains
        rates, ratios, groups, curves = {}, {}, [], []
        for s in config.rate_temps:
            tr = runs[s]
            t = tr["time"].values
            lo, hi = rate_window(config, s)
            window = (t >= lo - 1e-9) & (t <= hi + 1e-9)
            x = tr["mean_x"].values[:, window]
            curves.append((t[window], x))
            groups.append(np.arange(x.shape[0], dtype=float))
            gap = spectral_gap(config.reference_s(s))

            def rate_of(idx, t=t[window], x=x):
                return fit_rate(t, resampled_mean(x, idx))

            rates[s] = bootstrap_ci(groups[-1], rate_of)
            ratios[s] = rates[s].map(lambda r, g=gap: r / g)
        inv = np.array([1.0 / s for s in config.rate_temps])

        def slope_of(*idx):
            logs = [
                np.log(fit_rate(t, resampled_mean(x, i)))
                for (t, x), i in zip(curves, idx, strict=True)
            ]
            return float(np.polyfit(inv, logs, 1)[0])

        m["rate"] = {key(s): r for s, r in rates.items()}
        m["rate_fit_bias"] = {}  # the same fit on the exact FP curve of the run: its own bias
        for s in config.rate_temps:
            th = results["theory"][s]
            t = th["time"].values
            lo, hi = rate_window(config, s)
            w = (t >= lo - 1e-9) & (t <= hi + 1e-9)
            exact = spectral_gap(s * config.temperature_factor)
            m["rate_fit_bias"][key(s)] = fit_rate(t[w], th["mean_x"].values[w]) / exact - 1
        m["rate_ratio"] = {key(s): r for s, r in ratios.items()}
        m["gap_exact"] = {key(s): spectral_gap(config.reference_s(s)) for s in config.rate_temps}
        m["gap_em"] = {  # the EM chain's own rate at the run's temperature
            key(s): fp.em_relaxation_rate(s * config.temperature_factor, config.h)
            for s in config.rate_temps
        }
        m["kramers"] = {key(s): kramers_rate(config.reference_s(s)) for s in config.rate_temps}
        m["rate_slope"] = bootstrap_ci(groups, slope_of)
        m["barrier"] = BARRIER * config.gibbs_exponent / 2.0
        exact_slope = np.polyfit(inv, np.log([spectral_gap(s) for s in config.rate_temps]), 1)
        m["gap_slope_exact"] = float(exact_slope[0])
        # Ornstein–Uhlenbeck
        ou = results["ou"]
        t = ou["time"].values
        early = t <= config.ou_fit_to + 1e-9
        x = ou["mean_x"].values
        m["ou_rate"] = bootstrap_ci(
            np.arange(x.shape[0], dtype=float),
            lambda idx: fit_rate(t[early], resampled_mean(x[:, early], idx)),
        )
        late = t >= config.ou_burn - 1e-9
        m["ou_variance"] = mean_ci(np.mean(ou["sq_norm"].values[:, late], axis=1) / config.dim)
        m["ou_variance_exact"] = config.reference_s(config.ou_s) / (2 * config.ou_lam)
        m["ou_variance_em_factor"] = 1.0 / (1.0 - config.ou_lam * config.ou_h / 2)
        m["ou_mean_final"] = mean_ci(x[:, late].mean(axis=1))
        m["diverged"] = int(sum(int(tr["diverged"].sum()) for tr in [*runs.values(), ou]))
        return m

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        worst_bias = max(abs(b) for b in m["em_bias"].values())
        # the KS test must not resolve the EM chain's own law: its distance to μ_s below half
        # the 5 % critical value 1.36/√n (worst s)
        ks_margin = max(
            m["em_ks_distance"][k] * math.sqrt(m["ks_samples"][k]) / 1.36 for k in m["ks_p"]
        )
        return [
            Check.compare(
                "|EM bias of E F| (kernel, worst s)", worst_bias, "<=", config.mean_tol / 2
            ),
            Check.compare("EM KS distance of |θ| · √n / 1.36 (worst s)", ks_margin, "<=", 0.5),
            Check.compare("chains diverged", m["diverged"], "==", 0),
        ]

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        out = []
        for s in config.temps:
            k = key(s)
            exact = m["stationary_mean_F_exact"][k]
            out.append(
                Claim.within(
                    f"gibbs-mean-s{k}",
                    f"s = {k}: chain mean of the time-averaged F over t ∈ [{config.burn:g}, "
                    f"{config.burn + config.window:g}] per coordinate ({config.seeds} chains × "
                    f"{config.dim} coordinates, h = {config.h:g}, "
                    f"EM bias {m['em_bias'][k]:+.2%}) vs E_μF = {exact:.5f} (quadrature)",
                    m["stationary_mean_F_measured"][k],
                    exact,
                    config.mean_tol,
                    True,
                )
            )
        for s in config.temps:
            k = key(s)
            out.append(
                Claim.at_least(
                    f"gibbs-ks-s{k}",
                    f"s = {k}: KS p-value of {m['ks_samples'][k]} samples of |θ| (every "
                    f"{config.ks_spacing:g} time units of the window, all chains) against "
                    "2·exp(−2F/s)/Z on [0, ∞)",
                    m["ks_p"][k],
                    config.ks_p,
                )
            )
        cells = {s: m["rate_ratio"][key(s)] for s in config.rate_temps}
        bad = _farthest_from_one(cells)
        out.append(
            Claim.within(
                "relaxation-rate",
                "fitted rate of E θ(t) / exact gap λ_s at s = "
                + ", ".join(
                    f"{key(s)}: {m['rate'][key(s)].value:.4g}/{m['gap_exact'][key(s)]:.4g}"
                    for s in config.rate_temps
                )
                + f" ({config.seeds} chains × {config.dim} coordinates each, h = "
                f"{config.h:g}; EM chain's own "
                "rate / λ_s = "
                + ", ".join(
                    f"{m['gap_em'][key(s)] / m['gap_exact'][key(s)]:.3f}" for s in config.rate_temps
                )
                + f"); value: the worst s = {key(bad)}",
                cells[bad],
                1.0,
                config.rate_tol,
            )
        )
        target = -2.0 * m["barrier"]
        out.append(
            Claim.within(
                "eyring-kramers-slope",
                f"slope of log(rate) against 1/s over s = {[key(s) for s in config.rate_temps]} "
                f"(exact gaps: {m['gap_slope_exact']:.3f}; Eyring–Kramers: −2ΔF = {target:g})",
                m["rate_slope"],
                target,
                config.slope_tol * abs(target),
            )
        )
        out.append(
            Claim.within(
                "ou-decay-rate",
                f"OU λ = {config.ou_lam:g}, s = {config.ou_s:g}: fitted rate of E θ(t), "
                f"t ≤ {config.ou_fit_to:g} ({config.seeds} chains × {config.dim} coordinates; "
                "EM rate "
                f"{-math.log(1 - config.ou_lam * config.ou_h) / config.ou_h:.4f})",
                m["ou_rate"],
                config.ou_lam,
                config.ou_tol * config.ou_lam,
            )
        )
        out.append(
            Claim.within(
                "ou-stationary-variance",
                f"OU: chain mean of the time-averaged ‖θ‖²/dim for t ≥ {config.ou_burn:g} vs "
                f"s/(2λ) = {m['ou_variance_exact']:.4f} (EM factor "
                f"{m['ou_variance_em_factor']:.4f}; mean θ {m['ou_mean_final'].value:+.4f})",
                m["ou_variance"],
                m["ou_variance_exact"],
                config.ou_tol,
                True,
            )
        )
        return out

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        def ci(x: Interval) -> dict[str, Any]:
            return {"value": x.value, "low": x.low, "high": x.high, "n_seeds": x.n_seeds}

        out = {
            "stationary_mean_F_exact": m["stationary_mean_F_exact"],
            "stationary_mean_F_measured": {
                k: ci(v) for k, v in m["stationary_mean_F_measured"].items()
            },
            "em_bias_mean_F": m["em_bias"],
            "ks_p": m["ks_p"],
            "ks_samples": m["ks_samples"],
            "em_ks_distance": m["em_ks_distance"],
            "rate_fit_bias": m["rate_fit_bias"],
            "relaxation_rate": {k: ci(v) for k, v in m["rate"].items()},
            "spectral_gap_exact": m["gap_exact"],
            "em_chain_rate": m["gap_em"],
            "eyring_kramers_rate": m["kramers"],
            "rate_slope": ci(m["rate_slope"]),
            "gap_slope_exact": m["gap_slope_exact"],
            "ou_rate": ci(m["ou_rate"]),
            "ou_variance": ci(m["ou_variance"]),
            "ou_variance_exact": m["ou_variance_exact"],
            "diverged": m["diverged"],
        }
        return json_safe(out)

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:

        from attndyn.models.langevin.theory import fokker_planck as fp

        fig, axes = new_figure(1, 4, figsize=(18, 4.0))
        runs, d = results["runs"], config.dim
        ax = axes[0]
        grid = np.linspace(0.0, 2.0, 401)
        for i, s in enumerate(config.temps):
            tr = runs[s]
            inside = tr["time"].values >= config.burn - 1e-9
            ax.hist(np.abs(tr["x"].values[:, inside]).ravel(), bins=100, range=(0, 2),
                    density=True, histtype="step", color=f"C{i}", label=f"s = {key(s)}")  # fmt: skip
            w = np.exp(-2 * fp.f(grid) / config.reference_s(s))
            ax.plot(grid, w / (w.sum() * (grid[1] - grid[0])), "k--", lw=0.8)
        ax.set_xlabel("|θ₁|")
        ax.set_title("(a) stationary |θ| and 2·exp(−2F/s)/Z")
        ax.set_ylabel("density of |θ₁| (dashed: Gibbs)")
        ax.legend(frameon=False, fontsize=8)
        ax = axes[1]
        for i, s in enumerate(config.temps):
            tr, th = runs[s], results["theory"][s]
            short = tr["time"].values <= config.burn + config.window + 1e-9
            ax.plot(tr["time"][short], tr["F"].mean("seed")[short] / d, color=f"C{i}",
                    label=f"s = {key(s)}")  # fmt: skip
            keep = th["time"].values <= config.burn + config.window + 1e-9
            ax.plot(th["time"][keep], th["F"][keep] / d, "k--", lw=0.8)
            ax.axhline(m["stationary_mean_F_exact"][key(s)], color=f"C{i}", ls=":", lw=0.8)
        ou, ou_th = results["ou"], results["ou_theory"]
        ax.plot(ou["time"], ou["F"].mean("seed") / d, color="C5", label=f"OU (s = {config.ou_s:g})")
        ax.plot(ou_th["time"], ou_th["F"] / d, "k--", lw=0.8, label="theory (FP / OU)")
        ax.set_yscale("log")
        ax.set_xlabel("t")
        ax.set_ylim(bottom=1e-2)
        ax.set_title("(b) E F(t) per coordinate with theory; dotted: E_μF")
        ax.set_ylabel("E F / d (seed mean; dashed: theory)")
        ax.legend(frameon=False, fontsize=8)
        ax = axes[2]
        for i, s in enumerate(config.rate_temps):
            tr, th = runs[s], results["theory"][s]
            lam = m["gap_exact"][key(s)]
            ax.plot(tr["time"] * lam, tr["mean_x"].mean("seed"), color=f"C{i}",
                    label=f"s = {key(s)}")  # fmt: skip
            ax.plot(th["time"] * lam, th["mean_x"], "k--", lw=0.8)
        ax.set_yscale("log")
        ax.set_xlim(0, config.rate_horizon + 1)
        ax.set_xlabel("λ_s t")
        ax.set_title("(c) E θ(t) from θ₀ = 1 with the FP theory")
        ax.set_ylabel("E θ (seed mean; dashed: theory)")
        ax.legend(frameon=False, fontsize=8)
        ax = axes[3]
        inv = np.array([1 / s for s in config.rate_temps])
        r = [m["rate"][key(s)] for s in config.rate_temps]
        ax.errorbar(inv, [x.value for x in r],
                    yerr=[[x.value - x.low for x in r], [x.high - x.value for x in r]],
                    fmt="o", label="measured (95% CI)")  # fmt: skip
        fine = np.linspace(inv.min() * 0.9, inv.max() * 1.1, 50)
        ax.plot(inv, [m["gap_exact"][key(s)] for s in config.rate_temps], "k^", label="gap λ_s")
        ax.plot(fine, [_kramers(1 / v, config) for v in fine], "k:", label="Eyring–Kramers")
        ax.set_yscale("log")
        ax.set_xlabel("1/s")
        ax.set_ylabel("relaxation rate")
        ax.set_title(f"(d) log rate vs 1/s: slope {m['rate_slope'].value:.2f} (−2ΔF = −2)")
        ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)


def _kramers(s: float, config: Config) -> float:
    from attndyn.models.langevin.theory import kramers_rate

    return kramers_rate(config.reference_s(s))


def _farthest_from_one(cells: dict[float, Interval]) -> float:
    """The key whose interval reaches farthest from 1 (a non-finite end is farthest)."""

    def reach(c: Interval) -> float:
        ends = (c.low, c.high)
        return max(abs(e - 1) for e in ends) if all(map(math.isfinite, ends)) else math.inf

    return max(cells, key=lambda s: reach(cells[s]))
