"""``langevin-regularization`` (arXiv 2605.07959, reconstruction: docs/langevin.md; digest
checks T5, T6): without regularisation the parameters drift along the symmetry orbit, with it
they stay bounded, and the Villani probe grows with the radius.

Symmetry (exact): LoRA's L̂ depends on BA only, attention's on W_Q^h (W_K^h)ᵀ only. Then
⟨A, ∇_A L̂⟩ = ⟨B, ∇_B L̂⟩ (and ⟨W_Q, ∇_Q⟩ = ⟨W_K, ∇_K⟩), and Itô's formula for the SDE
dΘ = −∇F dt + √s dW (Shi, Su & Jordan, arXiv 2004.06977) gives for the balance
b = ‖A‖² − ‖B‖² (or ‖W_Q‖² − ‖W_K‖²)

    db = −2λ b dt + s (rd − pr) dt + 2√s (⟨A, dW_A⟩ − ⟨B, dW_B⟩)

(attention: the Itô term is 0, Q and K having one shape). At λ = 0 the drift is deterministic
and Var(b_t − b_0) = 4s ∫₀ᵗ E(‖A‖² + ‖B‖²) du grows at least linearly in t: an unbounded random
walk along the GL orbit (no Gibbs probability measure exists). At λ > 0, b is mean-reverting at
rate 2λ and its variance saturates.

Claims (models m ∈ ``models``: lora, attention; ``seeds`` chains per arm; docs/claims/
langevin-regularization.md):
- ``m-walk`` (λ = ``lam_free``, default 0): the log–log slope of Var_chains(b_t − b_0) against t
  over the late window t ≥ ``window``·t_max, percentile bootstrap over chains, ≥ 1/2 (midway
  between 0, a saturated variance, and 1, a random walk);
- ``m-bounded`` (λ = ``lam``): the same slope ≤ 1/2;
- ``m-villani-grows`` (λ = ``lam``): V_s = ‖∇F‖²/s − ΔF (Hutchinson Laplacian) at θ = R·u along
  ``rays`` uniform unit rays, R = ``radii`` × √E‖θ₀‖²; the log–log slope of min_u V_s(R) against
  R over the upper half of the radii, bootstrap over rays, ≥ 1 (midway between 0, bounded, and
  2, the regulariser's λ²R²/s); a non-positive minimum has no logarithm and fails.

Negative controls: ``no-regularisation`` (λ = 0 in the regularised arm: ``m-bounded`` and
``lora-villani-grows`` fail; the attention probe still grows along random rays, which cannot
see the flat Q/K orbit — docs); ``regularised-walk`` (``lam_free`` = ``lam``: ``m-walk`` fails).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from attndyn.claims.base import Claim, Control, Experiment, ExperimentConfig, RunContext
from attndyn.claims.stats import Interval, bootstrap_ci
from attndyn.figures.draw import new_figure, save_figure

NAME = "langevin-regularization"
WALK_SLOPE = 0.5  # midway between a saturated variance (0) and a random walk (1)
PROBE_SLOPE = 1.0  # midway between bounded (0) and the regulariser's λ²R²/s (2)
BALANCE = {"lora": "balance", "attention": "balance_qk"}
Model = Literal["lora", "attention"]


class Config(ExperimentConfig):
    seeds: int = Field(64, ge=4, description="chains per arm")
    models: list[Model] = Field(["lora", "attention"], min_length=1)
    lam: float = Field(0.5, ge=0, description="λ of the regularised arm")
    lam_free: float = Field(0.0, ge=0, description="λ of the unregularised arm")
    s: float = Field(0.1, gt=0, description="SDE temperature s (also the probe's)")
    h: float = Field(0.02, gt=0, description="Euler–Maruyama step")
    t_max: float = Field(16.0, gt=0, description="SDE time")
    records: int = Field(33, ge=8, description="record points (linear grid)")
    window: float = Field(0.25, gt=0, lt=1, description="late window: t ≥ window·t_max")
    dtype: Literal["float32", "float64"] = Field("float32")
    # lora
    lora_n: int = Field(32, ge=1)
    width: int = Field(16, ge=2)
    lora_d: int = Field(8, ge=2)
    rank: int = Field(2, ge=1)
    activation: Literal["sigmoid", "tanh", "softplus"] = Field("tanh")
    # attention (heads = 1 with d_k = 2 and ≥ 32 chains trips an XLA:CPU YNNPACK bug: docs)
    att_n: int = Field(16, ge=1)
    att_d: int = Field(4, ge=2)
    tokens: int = Field(4, ge=2)
    heads: int = Field(2, ge=1)
    d_k: int = Field(2, ge=1)
    att_train_v: bool = Field(
        True, description="attention: W_V trained (the control softmax-only freezes it)"
    )
    # Villani probe
    rays: int = Field(32, ge=4, description="random unit rays")
    probes: int = Field(16, ge=2, description="Rademacher probes per Hutchinson estimate")
    radii: list[float] = Field(
        [1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
        min_length=4,
        description="radii in units of √E‖θ₀‖² (increasing)",
    )

    @model_validator(mode="after")
    def _check(self) -> Config:
        if any(b <= a for a, b in zip(self.radii, self.radii[1:], strict=False)):
            raise ValueError(f"radii: must increase strictly (got {self.radii})")
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"models: repeated model (got {self.models})")
        return self


class ProbeConfig(BaseModel):
    """The stored probe run: the potential's config and the probe's own parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    potential: dict[str, Any]
    radii: list[float]
    rays: int
    probes: int
    seed: int
    s: float


def sim_values(config: Config, model: str, lam: float) -> dict[str, Any]:
    """The langevin family's config of one arm."""
    common = dict(
        model=model,
        dynamics="sde",
        lam=lam,
        s=config.s,
        h=config.h,
        t_max=config.t_max,
        records=config.records,
        grid="linear",
        seeds=config.seeds,
        seed=config.seed,
        dtype=config.dtype,
    )
    if model == "lora":
        return dict(
            common,
            n=config.lora_n,
            width=config.width,
            d=config.lora_d,
            rank=config.rank,
            activation=config.activation,
        )
    return dict(
        common,
        n=config.att_n,
        d=config.att_d,
        tokens=config.tokens,
        heads=config.heads,
        d_k=config.d_k,
        train_v=config.att_train_v,
    )


def variance_slope(b: np.ndarray, t: np.ndarray, t_from: float) -> float:
    """Log–log slope of Var_chains(b_t − b_0) against t over the records with t ≥ t_from."""
    var = np.var(b - b[:, :1], axis=0, ddof=1)
    late = t >= t_from
    return float(np.polyfit(np.log(t[late]), np.log(var[late]), 1)[0])


def probe_slope(V: np.ndarray, radii: np.ndarray) -> float:
    """Log–log slope of min over rays of V (rays, radii) against R over the upper half of the
    radii; NaN when a minimum there is ≤ 0 (no growth to +∞ to measure)."""
    upper = slice(len(radii) // 2, None)
    low = V[:, upper].min(axis=0)
    if np.any(low <= 0):
        return float("nan")
    return float(np.polyfit(np.log(radii[upper]), np.log(low), 1)[0])


def ito_variance(traj, model: str, s: float) -> np.ndarray:
    """4s ∫₀ᵗ E(‖A‖² + ‖B‖²) du (trapezoid over the records): Itô's Var(b_t − b_0) at λ = 0."""
    if model == "lora":
        pair = traj["sq_norm"].values
    else:
        pair = traj["norm_Q"].values ** 2 + traj["norm_K"].values ** 2
    m = pair.mean(axis=0)
    t = traj["time"].values
    return 4 * s * np.concatenate([[0.0], np.cumsum(np.diff(t) * (m[1:] + m[:-1]) / 2)])


class LangevinRegularization(Experiment):
    name = NAME
    description = (
        "arXiv 2605.07959 (reconstruction): λ = 0 drifts along the LoRA GL(r) / attention Q–K "
        "orbit (balance variance grows), λ > 0 stays bounded; the Villani probe grows with R"
    )
    Config = Config
    presets = {
        "tiny": {"models": ["lora"], "t_max": 12.0, "h": 0.03, "records": 25, "rays": 24},
        "small": {},
        "paper": {
            "seeds": 128,
            "t_max": 40.0,
            "h": 0.01,
            "records": 81,
            "lora_n": 256,
            "width": 64,
            "lora_d": 16,
            "rank": 4,
            "att_n": 128,
            "att_d": 8,
            "tokens": 8,
            "heads": 2,
            "d_k": 4,
            "rays": 128,
            "probes": 32,
            "radii": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0],
        },
    }
    controls = {
        "no-regularisation": Control(
            {"lam": 0.0},
            ("lora-bounded", "lora-villani-grows", "attention-bounded"),
            "λ = 0 in the regularised arm: no Gibbs probability measure exists (the GL orbits "
            "are non-compact), so the balance keeps spreading and, for LoRA, V_s does not grow "
            "along rays (tanh saturates: ∇F, ΔF → 0)",
        ),
        "softmax-only": Control(
            {"lam": 0.0, "att_train_v": False},
            ("lora-bounded", "lora-villani-grows", "attention-bounded", "attention-villani-grows"),
            "λ = 0 and, for attention, W_V frozen: F depends on (W_Q, W_K) only through the "
            "softmax, which saturates along every ray, so ∇F and ΔF → 0 and V_s stays bounded "
            "(no Gibbs measure: the Villani probe must see it); LoRA as in no-regularisation",
        ),
        "regularised-walk": Control(
            {"lam_free": 0.5},
            ("lora-walk", "attention-walk"),
            "the 'free' arm regularised like the other (λ = 0.5): the balance is mean-reverting "
            "at rate 2λ, so its variance saturates and no walk is seen",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        names = []
        for m in config.models:
            names += [f"{m}-walk", f"{m}-bounded", f"{m}-villani-grows"]
        return names

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        from attndyn import runs
        from attndyn.models.langevin.villani import init_radius, probe_trajectory

        out: dict[str, Any] = {"free": {}, "reg": {}, "probe": {}, "radius0": {}}
        for m in config.models:
            out["free"][m] = ctx.simulate("langevin", **sim_values(config, m, config.lam_free))
            reg = sim_values(config, m, config.lam)
            out["reg"][m] = ctx.simulate("langevin", **reg)
            lc = runs.family_config("langevin", reg)
            r0 = init_radius(lc)
            radii = [r * r0 for r in config.radii]
            pc = ProbeConfig(
                potential=lc.model_dump(mode="json"),
                radii=radii,
                rays=config.rays,
                probes=config.probes,
                seed=config.seed,
                s=config.s,
            )
            out["probe"][m] = ctx.compute(
                f"{NAME}:probe",
                pc,
                lambda lc=lc, radii=radii: probe_trajectory(
                    lc, radii, config.rays, config.probes, config.seed, config.s
                ),
            )
            out["radius0"][m] = r0
        return out

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        t_from = config.window * config.t_max
        out: dict[str, Any] = {"diverged": 0}
        for m in config.models:
            key = BALANCE[m]
            row: dict[str, Any] = {}
            for arm in ("free", "reg"):
                tr = results[arm][m]
                out["diverged"] += int(tr["diverged"].values.sum())
                b, t = tr[key].values, tr["time"].values
                chains = np.arange(b.shape[0], dtype=float)
                row[f"{arm}_slope"] = bootstrap_ci(
                    chains, lambda i, b=b, t=t: variance_slope(b[i.astype(int)], t, t_from)
                )
                row[f"{arm}_var"] = np.var(b - b[:, :1], axis=0, ddof=1).tolist()
                row[f"{arm}_sq_norm"] = tr["sq_norm"].values.mean(axis=0).tolist()
                row["time"] = t.tolist()
            ito = ito_variance(results["free"][m], m, config.s)
            row["ito_var"] = ito.tolist()
            row["ito_ratio_final"] = row["free_var"][-1] / ito[-1] if config.lam_free == 0 else None
            pr = results["probe"][m]
            V, radii = pr["V"].values, pr["radius"].values
            rays = np.arange(V.shape[0], dtype=float)
            row["probe_slope"] = bootstrap_ci(
                rays, lambda i, V=V, radii=radii: probe_slope(V[i.astype(int)], radii)
            )
            row["probe_radii"] = radii.tolist()
            row["probe_min"] = V.min(axis=0).tolist()
            row["probe_median"] = np.median(V, axis=0).tolist()
            row["laplacian_se_max"] = float(pr["laplacian_se"].values.max())
            row["radius0"] = results["radius0"][m]
            out[m] = row
        return out

    def preconditions(self, config: Config, m: dict[str, Any]):
        from attndyn.claims.base import Check

        return [Check.compare("diverged chains", m["diverged"], "==", 0)]

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        out = []
        w = f"t ≥ {config.window * config.t_max:g}"
        for model in config.models:
            r = m[model]
            b = "‖A‖² − ‖B‖²" if model == "lora" else "‖W_Q‖² − ‖W_K‖²"
            out.append(
                Claim.at_least(
                    f"{model}-walk",
                    f"{model}, λ = {config.lam_free:g}, s = {config.s:g}: log–log slope of "
                    f"Var(b_t − b_0), b = {b}, over {w} ({config.seeds} chains; final variance "
                    f"{r['free_var'][-1]:.3g}, Itô 4s∫E‖pair‖² = {r['ito_var'][-1]:.3g})",
                    r["free_slope"],
                    WALK_SLOPE,
                )
            )
            out.append(
                Claim.at_most(
                    f"{model}-bounded",
                    f"{model}, λ = {config.lam:g}: the same slope (final variance "
                    f"{r['reg_var'][-1]:.3g}, E‖θ‖² {r['reg_sq_norm'][0]:.3g} → "
                    f"{r['reg_sq_norm'][-1]:.3g})",
                    r["reg_slope"],
                    WALK_SLOPE,
                )
            )
            mins = ", ".join(f"{v:.3g}" for v in r["probe_min"])
            out.append(
                Claim.at_least(
                    f"{model}-villani-grows",
                    f"{model}, λ = {config.lam:g}, s = {config.s:g}: log–log slope of "
                    f"min over {config.rays} rays of ‖∇F‖²/s − ΔF against R (upper half of "
                    f"R/R₀ = {config.radii}, R₀ = {r['radius0']:.3g}); minima {mins}",
                    r["probe_slope"],
                    PROBE_SLOPE,
                )
            )
        return out

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        from attndyn.core.serial import json_safe

        out: dict[str, Any] = {}
        for model, r in m.items():
            if not isinstance(r, dict):
                out[model] = r
                continue
            out[model] = {
                k: (
                    {"value": v.value, "low": v.low, "high": v.high}
                    if isinstance(v, Interval)
                    else v
                )
                for k, v in r.items()
                if not k.endswith(("_var", "_sq_norm")) and k != "time"
            }
        return json_safe(out)

    def figure(self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path):

        models = config.models
        fig, axes = new_figure(2, len(models), figsize=(5.5 * len(models), 7.5), squeeze=False)
        for j, model in enumerate(models):
            r = m[model]
            t = np.asarray(r["time"])
            ax = axes[0, j]
            ax.plot(t[1:], r["free_var"][1:], label=f"λ = {config.lam_free:g}")
            ax.plot(t[1:], r["ito_var"][1:], "k:", label="Itô 4s∫E‖pair‖² (λ = 0)")
            ax.plot(t[1:], r["reg_var"][1:], label=f"λ = {config.lam:g}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("SDE time t")
            ax.set_ylabel("Var(b_t − b_0) over chains")
            pair = "‖A‖² − ‖B‖²" if model == "lora" else "‖W_Q‖² − ‖W_K‖²"
            ax.set_title(f"({'ab'[j]}) {model}: balance b = {pair}")
            ax.legend(frameon=False, fontsize=8)
            ax = axes[1, j]
            radii = np.asarray(r["probe_radii"])
            V = results["probe"][model]["V"].values
            for k in range(V.shape[0]):
                ax.plot(radii, np.abs(V[k]), color="0.8", lw=0.5)
            mins = np.asarray(r["probe_min"])
            ax.plot(radii, np.where(mins > 0, mins, np.nan), "o-", label="min over rays (> 0)")
            ax.plot(radii, config.lam**2 * radii**2 / config.s, "k--", label="λ²R²/s")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("radius R = ‖θ‖")
            ax.set_ylabel("V_s = ‖∇F‖²/s − ΔF  (grey: |V| per ray)")
            ax.set_title(f"({'cd'[j]}) {model}: Villani probe, λ = {config.lam:g}")
            ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)
