"""``langevin-plateau`` (arXiv 2605.07959; our reconstruction, docs/langevin.md): under the SDE
dΘ = −∇F dt + √s dW, the ensemble mean E F(Θ_t) of an attention regressor and of a LoRA net
approaches a plateau exponentially, the plateau falls with s, and at small s the gap to the
minimum is the Laplace value

    E_μF − min F = s·p_eff/4 + O(s²),     μ_s ∝ exp(−2F/s)

(docs/langevin.md; the digest's T3, T4), p_eff = p − dim(symmetry orbit through the minimiser)
(:func:`attndyn.models.langevin.model.orbit_dimension`; at a generic point
:func:`~attndyn.models.langevin.model.effective_params`).

Per model (``models``), one run of ``seeds`` chains at each s of ``s_grid`` (the same chain
seeds at every s: common random numbers; attention runs use ``attention_h`` and
``attention_t_max``, :func:`run_length`), records of F; min F by gradient descent (s = 0) from
``gd_starts`` initialisations (damped Newton: the s = 0 descent, converged quadratically), and
the Hessian spectrum at the best one.

Tolerance of the Laplace claim (docs/claims/langevin-plateau.md): the gap's next order is O(s²),
i.e. a relative correction c·s; that s_max = max(s_grid) still lies in the Laplace regime
(|c|·s_max ≤ 1, checked: the ratio at s_max in (0, 2)) bounds it at s_min by s_min/s_max. The
EM bias of the Gaussian part, δ_h = (1/p_eff)Σ 1/(1 − hH_i/2) − 1 (H_i the Hessian's non-flat
eigenvalues, :func:`attndyn.models.langevin.stationary.em_gap_factor`), is added:
τ = s_min/s_max + δ_h.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
import xarray as xr
from pydantic import BaseModel, ConfigDict, Field, model_validator

from attndyn.claims.base import Check, Claim, Control, Experiment, ExperimentConfig, RunContext
from attndyn.claims.stats import Interval, bootstrap_ci, mean_ci, worst
from attndyn.core.serial import json_safe
from attndyn.figures.draw import new_figure, save_figure

NAME = "langevin-plateau"
MODELS = ("attention", "lora")
GD_SEED = 1_000_000  # GD starts use seeds GD_SEED + seed + i, apart from the chains'
FLAT_EIG = 0.01  # an eigenvalue |H_i| < FLAT_EIG·λ counts as flat (λ: the regulariser's curvature)


class Common(ExperimentConfig):
    """The potentials' fields shared by langevin-plateau and langevin-size."""

    seeds: int = Field(32, ge=2, description="chains per run (the same seeds at every s)")
    lam: float = Field(0.3, gt=0, description="regularisation λ")
    h: float = Field(0.01, gt=0, description="Euler–Maruyama step")
    t_max: float = Field(30.0, gt=0, description="SDE time of each run")
    burn: float = Field(0.5, gt=0, lt=1, description="plateau window: t ≥ burn·t_max")
    records: int = Field(61, ge=10, description="record points (linear grid)")
    n: int = Field(32, ge=1, description="training samples")
    labels: Literal["teacher", "random"] = Field("teacher", description="labels")
    teacher_scale: float = Field(3.0, ge=0, description="teacher weights' scale")
    label_noise: float = Field(0.3, ge=0, description="label noise std (keeps min F > 0)")
    data_seed: int = Field(0, ge=0, description="data, teacher and frozen weights")
    init_scale: float = Field(
        0.3,
        gt=0,
        description="attention: chains' and GD starts' weights N(0, init_scale²/fan_in) (small: "
        "every start reaches the global basin)",
    )
    lora_init_scale: float = Field(
        1.0, gt=0, description="lora: the same (F starts well above the plateau)"
    )
    gd_starts: int = Field(8, ge=1, description="gradient-descent starts for min F")
    gd_steps: int = Field(200, ge=1, description="damped-Newton iterations per start")
    horizon: float = Field(
        1.0,
        gt=0,
        le=1,
        description="control short-horizon: every run stops at this fraction of its t_max "
        "(the plateau window is still its last half)",
    )
    beta_s: float = Field(
        2.0,
        gt=0,
        description="β·s of the predicted Gibbs measure exp(−βF): 2 (μ_s ∝ exp(−2F/s)); the "
        "control beta-1/s sets 1",
    )


class Config(Common):
    t_max: float = Field(60.0, gt=0, description="SDE time of each run")
    records: int = Field(121, ge=10, description="record points (linear grid)")
    models: list[Literal["attention", "lora"]] = Field(
        list(MODELS), min_length=1, description="potentials"
    )
    s_grid: list[float] = Field(
        [0.4, 0.2, 0.1, 0.05], min_length=2, description="temperatures s, decreasing"
    )
    d: int = Field(4, ge=1, description="token (attention) / input (lora) dimension")
    tokens: int = Field(4, ge=1, description="attention: tokens")
    heads: int = Field(1, ge=1, description="attention: heads")
    d_k: int = Field(2, ge=1, description="attention: query/key width")
    pooling: Literal["mean", "last", "none"] = Field("last", description="attention pooling")
    width: int = Field(8, ge=1, description="lora: hidden width")
    rank: int = Field(2, ge=1, description="lora: rank")
    attention_t_max: float = Field(
        240.0,
        gt=0,
        description="attention: SDE time of each run (its window t ≥ burn·attention_t_max): "
        "from small starts the chains settle along the softest Hessian mode late: E F over "
        "t ∈ [30, 60] lay 2–9 % of the gap above the plateau (docs/claims/langevin-plateau.md)",
    )
    attention_h: float = Field(
        0.02, gt=0, description="attention: Euler–Maruyama step (its O(h) bias is δ_h)"
    )
    fixed_s: bool = Field(
        False,
        description="control fixed-s: every run at s_grid[0], each compared with the "
        "predictions at its own s (noise that does not follow s)",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Config:
        g = self.s_grid
        if any(y >= x for x, y in zip(g, g[1:], strict=False)) or g[-1] <= 0:
            raise ValueError(f"'s_grid' must be positive and decrease strictly (got {g})")
        return self


def common_values(config: Common) -> dict[str, Any]:
    return dict(
        lam=config.lam,
        n=config.n,
        labels=config.labels,
        teacher_scale=config.teacher_scale,
        label_noise=config.label_noise,
        data_seed=config.data_seed,
    )


def model_values(config: Config, model: str) -> dict[str, Any]:
    """The langevin family's potential fields of ``model`` (no s, run length or seeds)."""
    if model == "attention":
        shape = dict(
            d=config.d,
            tokens=config.tokens,
            heads=config.heads,
            d_k=config.d_k,
            d_out=1,
            pooling=config.pooling,
            init_scale=config.init_scale,
        )
    else:
        shape = dict(
            d=config.d, width=config.width, rank=config.rank, init_scale=config.lora_init_scale
        )
    return dict(common_values(config), model=model, **shape)


def run_length(config: Common, model: str) -> tuple[float, float]:
    """(h, t_max) of ``model``'s runs: ``attention_h``, ``attention_t_max`` where the config
    has them (langevin-plateau), else ``h``, ``t_max``."""
    if model == "attention" and hasattr(config, "attention_t_max"):
        return config.attention_h, config.attention_t_max
    return config.h, config.t_max


def run_values(config: Common, values: dict[str, Any], s: float) -> dict[str, Any]:
    """One SDE run of ``values`` at temperature s."""
    h, t_max = run_length(config, values["model"])
    if getattr(config, "fixed_s", False):
        s = config.s_grid[0]
    return dict(
        values,
        s=s,
        h=h,
        t_max=t_max * config.horizon,
        records=config.records,
        grid="linear",
        seeds=config.seeds,
        seed=config.seed,
    )


class MinimumConfig(BaseModel):
    """What min F depends on (the run id of :func:`minimum`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    potential: dict[str, Any]
    starts: int
    steps: int
    seed: int


def orbit_tolerance(grad_sq: float, lam: float) -> float:
    """How far the Newton end point may lie from the exact minimiser: with ∇F = H(θ − θ*) and
    every non-flat eigenvalue ≥ FLAT_EIG·λ, ‖θ − θ*‖ ≤ ‖∇F‖/(FLAT_EIG·λ); by Weyl's inequality
    the singular values of the weights' k-vectors move by no more, so a singular value below
    this bound is indistinguishable from zero (the span's rank, hence the orbit, is read with
    it: :func:`attndyn.models.langevin.model.orbit_dimension`)."""
    return math.sqrt(grad_sq) / (FLAT_EIG * lam)


def minimum(ctx: RunContext, config: Common, values: dict[str, Any]) -> xr.Dataset:
    """min F by damped Newton from ``gd_starts`` starts (stored): ``F``, ``grad_sq`` per
    start, the Hessian eigenvalues ``eig`` at the best start and ``orbit``, the dimension of
    the symmetry orbit through it (:func:`orbit_tolerance`)."""
    mc = MinimumConfig(
        potential=values,
        starts=config.gd_starts,
        steps=config.gd_steps,
        seed=config.seed,
    )

    def compute() -> xr.Dataset:
        from attndyn.models.langevin import LangevinConfig, frozen_part
        from attndyn.models.langevin.model import orbit_dimension
        from attndyn.models.langevin.stationary import minimise_newton

        lc = LangevinConfig(**values, s=0.0)
        seeds = range(GD_SEED + config.seed, GD_SEED + config.seed + config.gd_starts)
        F, g_sq, eig, params = minimise_newton(lc, seeds, config.gd_steps)
        tol = orbit_tolerance(float(g_sq[int(np.argmin(F))]), lc.lam)
        orbit = orbit_dimension(lc, params, frozen_part(lc).get("fixed", {}), tol)
        # the store keeps (time,) tables: one axis of length max(starts, p), NaN-padded
        size = max(len(F), len(eig))

        def pad(x):
            return ("time", np.concatenate([x, np.full(size - len(x), np.nan)]))

        return xr.Dataset(
            {"F": pad(F), "grad_sq": pad(g_sq), "eig": pad(eig), "orbit": pad(np.array([orbit]))},
            coords={"time": np.arange(size, dtype=float)},
            attrs={"family": "langevin"},
        )

    return ctx.compute(f"{NAME}:minimum-orbit", mc, compute)


def _finite(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x[np.isfinite(x)]


def spectrum(values: dict[str, Any], eig: np.ndarray, h: float, orbit: int) -> dict[str, Any]:
    """p, p_eff = p − ``orbit`` (the orbit through the minimiser, :func:`minimum`), the flat
    count expected (``orbit``; ``flat_generic`` at a generic point) and observed, the extreme
    non-flat eigenvalues and Euler–Maruyama's gap factor (stationary.em_gap_factor) at step h."""
    from attndyn.models.langevin import LangevinConfig
    from attndyn.models.langevin.model import flat_directions, n_params
    from attndyn.models.langevin.stationary import em_gap_factor

    lc = LangevinConfig(**values, s=0.0)
    flat = int(orbit)
    order = np.sort(np.abs(eig))
    return {
        "p": n_params(lc),
        "p_eff": n_params(lc) - flat,
        "flat": flat,
        "flat_generic": flat_directions(lc),
        "flat_observed": int(np.sum(np.abs(eig) < FLAT_EIG * values["lam"])),
        "eig_min_nonflat": float(order[flat]) if flat < len(order) else float("nan"),
        "eig_max": float(np.max(eig)),
        "em_factor": em_gap_factor(eig, h, flat),
    }


def chains(tr: xr.Dataset, F_min: float, pred: float, burn: float) -> dict[str, Any]:
    """Per run: per-chain plateau (time average over t ≥ burn·t_max), the gap ratio
    (plateau − min F)/pred, the relaxation rate and the window change of E F (bootstrap over
    chains), the smallest F any chain recorded."""
    from attndyn.models.langevin.stationary import relaxation_rate, time_average, window_change

    F = tr["F"].values.astype(float)
    t = tr["time"].values.astype(float)
    t_from = burn * t[-1]
    avg = time_average(F, t, t_from)
    late = t >= t_from
    chains_idx = np.arange(F.shape[0], dtype=float)

    def rate(idx) -> float:
        sub = F[idx.astype(int)]
        plateau = float(np.mean(sub[:, late]))
        se = float(np.mean(np.std(sub[:, late], axis=0))) / math.sqrt(sub.shape[0])
        return relaxation_rate(t, sub.mean(axis=0), plateau, 3.0 * se)

    def change(idx) -> float:
        return window_change(F[idx.astype(int)], t, t_from) / pred

    return {
        "avg": avg,
        "plateau": mean_ci(avg),
        "ratio": mean_ci((avg - F_min) / pred),
        "rate": bootstrap_ci(chains_idx, rate, n_boot=1000),
        "change": bootstrap_ci(chains_idx, change, n_boot=1000),
        "F_lowest": float(np.min(F)),
        "diverged": int(tr["diverged"].sum()),
        "mean_curve": F.mean(axis=0),
        "time": t,
    }


def tolerance(s_min: float, s_max: float, em_factor: float) -> float:
    """τ = s_min/s_max + δ_h: the O(s) relative correction bounded by its value ≤ 1 at s_max,
    plus EM's O(h) bias δ_h = em_factor − 1 (module docstring)."""
    return s_min / s_max + abs(em_factor - 1.0)


def largest_deviation(cells: dict[Any, Interval]) -> Any:
    """The key whose interval reaches farthest from 0 (either end)."""
    return max(cells, key=lambda k: max(abs(cells[k].low), abs(cells[k].high)))


class LangevinPlateau(Experiment):
    name = NAME
    description = (
        "arXiv 2605.07959 (reconstruction): attention and LoRA under dΘ = −∇F dt + √s dW: E F "
        "approaches a plateau exponentially, the plateau falls with s, gap → s·p_eff/4"
    )
    Config = Config
    presets = {
        "tiny": {"models": ["lora"], "s_grid": [0.2, 0.05], "t_max": 24.0, "records": 41},
        "small": {},
        "paper": {
            "seeds": 64,
            "s_grid": [0.8, 0.4, 0.2, 0.1, 0.05],
            "t_max": 120.0,
            "records": 241,
            "gd_starts": 16,
            "gd_steps": 400,
            "attention_t_max": 480.0,
        },
    }
    controls = {
        "short-horizon": Control(
            {"horizon": 0.125},
            ("plateau-reached-lora", "plateau-reached-attention"),
            "every run stopped at t_max/8, before the relaxation ends: E F still moves over "
            "the window (its last half), so the window mean is not the plateau",
        ),
        "fixed-s": Control(
            {"fixed_s": True},
            (
                "plateau-falls-lora",
                "plateau-falls-attention",
                "laplace-lora",
                "laplace-attention",
            ),
            "every run at the largest s (a noise that does not follow s): the plateau cannot "
            "fall with s and the smallest s's gap is s_grid[0]/s_min times its prediction",
        ),
        "beta-1/s": Control(
            {"beta_s": 1.0},
            ("laplace-lora", "laplace-attention"),
            "the prediction reads the Gibbs measure as exp(−F/s) (β = 1/s, the SGLD convention "
            "dθ = −∇F dt + √(2s) dW) instead of the SDE's exp(−2F/s): the predicted gap "
            "doubles to s·p_eff/2, so the measured ratio is ≈ 1/2 and leaves 1 ± τ (τ ≤ 1/4 + "
            "δ_h in every preset); the simulations are reused",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        names = []
        for m in config.models:
            names += [f"plateau-reached-{m}", f"plateau-falls-{m}"]
            names.append(f"laplace-{m}")
        return names

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        out: dict[str, Any] = {"sims": {}, "minimum": {}}
        for m in config.models:
            values = model_values(config, m)
            for s in config.s_grid:
                out["sims"][(m, s)] = ctx.simulate("langevin", **run_values(config, values, s))
            out["minimum"][m] = minimum(ctx, config, values)
        return out

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"models": {}}
        s_min, s_max = config.s_grid[-1], config.s_grid[0]
        for m in config.models:
            values = model_values(config, m)
            mn = {
                k: _finite(results["minimum"][m][k].values)
                for k in ("F", "grad_sq", "eig", "orbit")
            }
            F_gd = np.sort(mn["F"])
            F_min = float(F_gd[0])
            spec = spectrum(values, mn["eig"], run_length(config, m)[0], int(mn["orbit"][0]))
            tau = tolerance(s_min, s_max, spec["em_factor"])
            rec: dict[str, Any] = {
                **spec,
                "F_min": F_min,
                "F_gd": F_gd.tolist(),
                "gd_global": int(np.sum(F_gd - F_min <= 1e-5 * (1 + abs(F_min)))),
                "gd_grad_sq": float(mn["grad_sq"][int(np.argmin(mn["F"]))]),
                "tau": tau,
                "runs": {},
            }
            for s in config.s_grid:
                pred = 2.0 * s * spec["p_eff"] / (4.0 * config.beta_s)
                rec["runs"][s] = chains(results["sims"][(m, s)], F_min, pred, config.burn)
                rec["runs"][s]["pred"] = pred
            grid = config.s_grid
            rec["falls"] = {
                (a, b): mean_ci(rec["runs"][a]["avg"] - rec["runs"][b]["avg"])
                for a, b in zip(grid, grid[1:], strict=False)
            }
            rec["F_lowest"] = min(r["F_lowest"] for r in rec["runs"].values())
            rec["diverged"] = sum(r["diverged"] for r in rec["runs"].values())
            out["models"][m] = rec
        return out

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        checks, s_min = [], config.s_grid[-1]
        for name, rec in m["models"].items():
            slack = 1e-4 * (1 + abs(rec["F_min"]))
            checks += [
                Check.compare(f"{name}: chains diverged", rec["diverged"], "==", 0),
                Check.compare(
                    f"{name}: lowest recorded F − min F (min F is the minimum)",
                    rec["F_lowest"] - rec["F_min"],
                    ">=",
                    -slack,
                ),
                Check.compare(
                    f"{name}: Hessian eigenvalues < {FLAT_EIG}·λ at min F (the symmetry orbit: "
                    f"{rec['flat']})",
                    rec["flat_observed"],
                    "==",
                    rec["flat"],
                ),
                Check.compare(
                    f"{name}: E F relaxes toward its window mean at s = {s_min} (rate λ_s of "
                    "log|E F − plateau| ≈ c − λ_s t, low end of its bootstrap 95 % CI)",
                    rec["runs"][s_min]["rate"].low,
                    ">",
                    0.0,
                ),
            ]
        return checks

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        out = []
        s_min, s_max = config.s_grid[-1], config.s_grid[0]
        for name, rec in m["models"].items():
            runs, tau = rec["runs"], rec["tau"]
            changes = {s: r["change"] for s, r in runs.items()}
            wc = largest_deviation(changes)
            out.append(
                Claim.between(
                    f"plateau-reached-{name}",
                    f"change of E F over the window t ≥ {config.burn}·t_max (least-squares slope × "
                    "length) over the predicted gap, at s = "
                    + ", ".join(f"{s}: {r.value:+.3f}" for s, r in changes.items())
                    + f"; value: the farthest from 0, s = {wc} (a drift Δ biases the window mean "
                    "by Δ/2: |Δ| ≤ 2τ keeps it inside the Laplace tolerance τ)",
                    changes[wc],
                    -2 * tau,
                    2 * tau,
                )
            )
            falls = rec["falls"]
            wf = worst(falls, "low")
            out.append(
                Claim.above(
                    f"plateau-falls-{name}",
                    "plateau(s) − plateau(s') for adjacent s > s' (paired over chains): "
                    + ", ".join(f"{a}→{b}: {x.value:.4f}" for (a, b), x in falls.items())
                    + f"; value: the smallest, {wf[0]}→{wf[1]}",
                    falls[wf],
                    0.0,
                )
            )
            lo, hi = runs[s_min]["ratio"], runs[s_max]["ratio"]
            out.append(
                Claim.within(
                    f"laplace-{name}",
                    f"(plateau − min F)/(s·p_eff/{4 * config.beta_s / 2:g}) at s = {s_min}: "
                    f"p = {rec['p']}, p_eff = {rec['p_eff']}, min F = {rec['F_min']:.5f}; "
                    f"τ = s_min/s_max + δ_h = {s_min / s_max:.3f} + "
                    f"{abs(rec['em_factor'] - 1):.4f}; at s_max = {s_max}: {hi.value:.3f} "
                    f"[{hi.low:.3f}, {hi.high:.3f}]",
                    lo,
                    1.0,
                    tau,
                    False,
                    Check(
                        f"ratio at s_max in (0, 2) (95% CI; the Laplace regime reaches s = {s_max})",
                        bool(hi.low > 0 and hi.high < 2),
                    ),
                )
            )
        return out

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, rec in m["models"].items():
            keep = {
                k: rec[k]
                for k in (
                    "p",
                    "p_eff",
                    "flat",
                    "flat_observed",
                    "eig_min_nonflat",
                    "eig_max",
                    "em_factor",
                    "F_min",
                    "F_gd",
                    "gd_global",
                    "gd_grad_sq",
                    "tau",
                )
            }
            for key in ("plateau", "ratio", "rate", "change"):
                keep[key] = {
                    str(s): [r[key].value, r[key].low, r[key].high] for s, r in rec["runs"].items()
                }
            keep["predicted_gap"] = {str(s): r["pred"] for s, r in rec["runs"].items()}
            keep["falls"] = {
                f"{a}->{b}": [x.value, x.low, x.high] for (a, b), x in rec["falls"].items()
            }
            out[name] = keep
        return json_safe(out)

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:

        models = list(m["models"])
        fig, axes = new_figure(1, len(models) + 1, figsize=(5 * (len(models) + 1), 4.0))
        for ax, name in zip(axes, models, strict=False):
            rec = m["models"][name]
            for i, (s, r) in enumerate(rec["runs"].items()):
                ax.semilogy(
                    r["time"], r["mean_curve"] - rec["F_min"], color=f"C{i}", label=f"s = {s}"
                )
                ax.axhline(r["pred"], color=f"C{i}", ls="--", lw=0.8)
            ax.axvline(config.burn * run_length(config, name)[1], color="k", lw=0.5)
            ax.set_xlabel("SDE time t")
            ax.set_ylabel("E F(Θ_t) − min F")
            ax.set_title(f"{name}: p_eff = {rec['p_eff']} (dashed: s·p_eff/4)")
            ax.legend(frameon=False, fontsize=8)
        ax = axes[-1]
        for i, name in enumerate(models):
            rec = m["models"][name]
            s = np.array(list(rec["runs"]))
            r = [rec["runs"][x]["ratio"] for x in s]
            ax.errorbar(
                s,
                [x.value for x in r],
                yerr=[[x.value - x.low for x in r], [x.high - x.value for x in r]],
                fmt="o-",
                color=f"C{i}",
                label=name,
            )
        ax.axhline(1.0, color="k", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("temperature s")
        ax.set_ylabel("(plateau − min F)/(s·p_eff/4)")
        ax.set_title("Laplace ratio → 1 as s → 0")
        ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        return save_figure(fig, path)
