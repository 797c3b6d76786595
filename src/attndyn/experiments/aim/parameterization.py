"""``aim-parameterization`` (P1 = arXiv 2609.03858, Fig. 2, Cor. 3, Cor. 7): W-flow (tied
S = WWᵀ) vs S-flow (direct S) from an uninformative start, activations h1, h2, h3, L = 1, inputs
N(0, I_d).

One statistic for every claim: the overlap of the student with the teacher's structure at a
horizon, relative to p₂₂ = q₂₂ − t₂² (its value at full recovery),

    s = overlap / p₂₂,   overlap = p_12 (tied, Eq. 15) or max(|p₊|, |p₋|) (direct, Eq. 408),

evaluated at two horizons, t_max and ``late_factor``·t_max (the same runs, recorded past t_max):
each claim takes the worse of the two, so its verdict does not rest on where the record stops.
Claims over seeds use the seed mean of s with its Student-t 95 % CI (a ratio: the percentile
bootstrap over seeds), and the cell (d, horizon) whose CI end is worst:

- ``direct-{h2,h3}-trapped``: √d·s ≤ 1 at every d and both horizons. Cor. 7: for h2, h3 the
  uninformative manifold is invariant, sup_{t≤T} |p±| → 0 as d → ∞; at finite d the overlap of
  an uninformative state is of order d^{-1/2} (its start, ≈ 0.1 d^{-1/2} here), so s ≤ d^{-1/2}
  is "still on the uninformative scale";
- ``direct-{h2,h3}-shrinks`` (for the activations in ``shrink_claims``; small: h2, as d = 64 → 80
  cannot resolve h3's decrease): s(largest d)/s(smallest d) < 1 at both horizons (Cor. 7: → 0);
- ``tied-{h2,h3}-recovers``: s ≥ 1/4 at every d and both horizons (Cor. 3: an O(1) overlap on
  the d² log d scale). 1/4 is above the trapped bound d^{-1/2} by a factor √d/4 ≥ 2 (d ≥ 64);
- ``h1-both-recover``: s ≥ 1/4 for tied and direct (Cor. 7: g₊ ≠ 0 for h1).

Preconditions: no seed diverged. The direct-S ODE's invariant manifold (Cor. 7) is an identity of
the ODE and is a unit test (tests/test_aim_theory.py), not a claim. Both parameterisations see the
same samples: tied runs to t (t = 4nα_d/d), direct S to t/4 on its own axis (t = nα_d/d).

Normalisation: Var G = 1 for every index at the start, the setting in which the normalised
Hermite activations are orthonormal (so E h₂'(Z) = E h₃'(Z) = 0 for Z ~ N(0, 1)): the Wishart
teacher (ρ* = 1/2) gets entries of variance √(2/3)/d (q₂₂ = 1/2, Var G₂ = 2q₂₂ = 1), the tied
student W entries of variance (2/3)^{1/2}/d (q₁₁(0) = q₂₂, the assumption of P1 Eq. 23), the
direct student i.i.d. entries of variance 1/d (Var G₁ = Ω₁₁ + Ψ₁₁ = 1).

h3 runs with smaller step constants (direct 0.002, tied 0.001) at d = 64, 80 and its own horizon
t_max_h3 = 0.45: its per-sample curvature grows like G⁴, SGD at lr = 0.05 diverges at these d, and
tied h3 still diverges at d ≤ 48. Measured values, both horizons and timings:
docs/claims/aim-parameterization.md and docs/experiments.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from attndyn.claims.base import Check, Claim, Control, Experiment, ExperimentConfig, RunContext
from attndyn.claims.stats import Interval, bootstrap_ci, mean_ci, worst
from attndyn.figures.draw import dropped_note, new_figure, save_figure

ACTIVATIONS = ("h1", "h2", "h3")
TEACHER_SCALE = (2 / 3) ** 0.5  # q22 = scale² ρ*(1 + ρ*) = 1/2 at ρ* = 1/2
TIED_INIT = (2 / 3) ** 0.25  # W entries N(0, s²/d): q11 = s⁴ ρ(1 + ρ) = 1/2
RECOVERED = 0.25  # s ≥ 1/4: an O(1) fraction of the teacher's structure
TRAPPED = 1.0  # √d·s ≤ 1: the overlap stays on the uninformative d^{-1/2} scale


class Config(ExperimentConfig):
    activations: list[Literal["h1", "h2", "h3"]] = Field(
        ["h1", "h2", "h3"], min_length=1, description="activations compared"
    )
    d: list[int] = Field([64, 128], min_length=2, description="dimensions for h1, h2 (increasing)")
    d_h3: list[int] = Field(
        [64, 80], min_length=2, description="dimensions for h3 (increasing; tied SGD diverges <64)"
    )
    seeds: int = Field(16, ge=2)
    lr: float = Field(0.05, gt=0, description="α_d = lr/(d log d) for h1, h2")
    lr_h3: float = Field(0.002, gt=0, description="α_d = lr_h3/(d log d) for direct h3")
    lr_h3_tied: float = Field(0.001, gt=0, description="α_d for tied h3 (G⁴ curvature)")
    batch: int = Field(32, ge=1)
    t_max: float = Field(1.0, gt=0, description="tied horizon for h1, h2; direct S gets t_max/4")
    t_max_h3: float = Field(0.45, gt=0, description="tied horizon for h3; direct S gets 1/4 of it")
    late_factor: float = Field(1.5, ge=1, description="second horizon = late_factor·t_max")
    records: int = Field(20, ge=4, description="records up to t_max (linear grid)")
    shrink_claims: list[Literal["h2", "h3"]] = Field(
        ["h2"], description="activations with a direct-{act}-shrinks claim (resolution: docs)"
    )
    swap: bool = Field(False, description="control: the tied arm runs direct S and vice versa")


def dims(config: Config, activation: str) -> list[int]:
    return config.d_h3 if activation == "h3" else config.d


def _run_values(config: Config, arm: str, act: str, d: int) -> dict[str, Any]:
    """The simulation of one arm ("tied" or "direct") at one activation and d; under ``swap`` the
    arm runs the other parameterisation (its own init and time axis, same samples)."""
    param = {"tied": "direct", "direct": "tied"}[arm] if config.swap else arm
    if act == "h3":
        lr = config.lr_h3_tied if param == "tied" else config.lr_h3
        t_max = config.t_max_h3
    else:
        lr, t_max = config.lr, config.t_max
    late = t_max * config.late_factor
    values = dict(
        L=1,
        d=d,
        param=param,
        activation=act,
        lr=lr,
        batch=config.batch,
        seeds=config.seeds,
        seed=config.seed,
        records=int(round(config.records * config.late_factor)) + 1,
        grid="linear",
        teacher_scale=TEACHER_SCALE,
        t_max=late if param == "tied" else late / 4,
    )
    if param == "tied":
        values["init_scale"] = TIED_INIT
    return values


def overlap_ratio(traj, horizon: float) -> np.ndarray:
    """Per seed: s = overlap/p₂₂ at the record nearest ``horizon`` (a fraction of the run's
    horizon); NaN for a diverged seed."""
    from attndyn.core.trajectory import config_of
    from attndyn.models.aim.theory.recovery import recovery_signal

    param = config_of(traj)["param"]
    p22 = float(traj["p_22"].isel(time=0).mean("seed"))
    signal = recovery_signal(traj, kind=param).values / p22
    time = traj["time"].values
    i = int(np.argmin(np.abs(time - horizon * time[-1])))
    return np.where(traj["diverged"].values, np.nan, signal[:, i])


def _horizons(config: Config) -> list[float]:
    return [1.0 / config.late_factor, 1.0] if config.late_factor > 1 else [1.0]


def _worst(cells: dict[str, Interval], end: str) -> tuple[str, Interval]:
    """The cell whose CI ``end`` ("low" or "high") is worst, and its interval."""
    key = worst(cells, end)
    return key, cells[key]


def _asdict(i: Interval) -> dict[str, float]:
    return {"value": i.value, "low": i.low, "high": i.high, "n_seeds": i.n_seeds}


class AIMParameterization(Experiment):
    name = "aim-parameterization"
    description = (
        "P1 Fig. 2: tied W-flow recovers, direct S-flow is trapped for h2/h3 (both recover for h1)"
    )
    Config = Config
    presets = {
        "tiny": {
            "activations": ["h2"],
            "d": [48, 64],
            "seeds": 8,
            "batch": 64,
            "t_max": 0.6,
            "shrink_claims": [],
        },
        "small": {},
        "paper": {
            "d": [100, 200, 400],
            "d_h3": [100, 200, 400],
            "shrink_claims": ["h2", "h3"],
            "seeds": 8,
            "records": 40,
        },
    }
    controls = {
        "param-swapped": Control(
            {"swap": True},
            ("direct-h2-trapped", "tied-h2-recovers"),
            "the tied and direct arms exchanged (the wrong parameterisation for each claim): "
            "tied S = WWᵀ recovers (Cor. 3) and direct S with h2 is trapped (Cor. 7)",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        names = []
        for act in ("h2", "h3"):
            if act in config.activations:
                names.append(f"direct-{act}-trapped")
                if act in config.shrink_claims:
                    names.append(f"direct-{act}-shrinks")
                names.append(f"tied-{act}-recovers")
        if "h1" in config.activations:
            names.append("h1-both-recover")
        return names

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check.compare("diverged seeds, all runs", m["diverged_seeds"], "==", 0)]

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        sims = {}
        for act in ACTIVATIONS:
            if act not in config.activations:
                continue
            for arm in ("direct", "tied"):
                for d in dims(config, act):
                    sims[(arm, act, d)] = ctx.simulate("aim", **_run_values(config, arm, act, d))
        return {"sims": sims}

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        horizons = _horizons(config)
        names = [f"{h * config.late_factor:g}·t_max" for h in horizons]
        cells: dict[str, dict[str, Any]] = {}
        per_seed: dict[tuple, np.ndarray] = {}
        for (arm, act, d), traj in sorted(results["sims"].items()):
            for h, hname in zip(horizons, names, strict=True):
                s = overlap_ratio(traj, h)
                per_seed[(arm, act, d, hname)] = s
                cells[f"{arm} {act} d={d} {hname}"] = {
                    "s": _asdict(mean_ci(s)),
                    "sqrt_d_s": _asdict(mean_ci(np.sqrt(d) * s)),
                }
        shrink = {}
        for act in ("h2", "h3"):
            if act not in config.activations:
                continue
            lo, hi = dims(config, act)[0], dims(config, act)[-1]
            for hname in names:
                a, b = per_seed[("direct", act, lo, hname)], per_seed[("direct", act, hi, hname)]
                ratio = _ratio_ci(a, b, config.seed)
                shrink[f"{act} d={hi}/d={lo} {hname}"] = _asdict(ratio)
        diverged = sum(int(t["diverged"].sum()) for t in results["sims"].values())
        return {"horizons": names, "cells": cells, "shrink": shrink, "diverged_seeds": diverged}

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        cells = m["cells"]

        def pick(prefixes, key):
            return {k: Interval(**v[key]) for k, v in cells.items() if k.startswith(prefixes)}

        out = []
        for act in ("h2", "h3"):
            if act not in config.activations:
                continue
            where, value = _worst(pick((f"direct {act} ",), "sqrt_d_s"), "high")
            out.append(
                Claim.at_most(
                    f"direct-{act}-trapped",
                    f"direct S with {act}: √d·(overlap/p₂₂), seed mean, worst over d = "
                    f"{dims(config, act)} and horizons {m['horizons']} (here {where})",
                    value,
                    TRAPPED,
                )
            )
            ratios = {k: Interval(**v) for k, v in m["shrink"].items() if k.startswith(act)}
            where, value = _worst(ratios, "high")
            if act in config.shrink_claims:
                out.append(
                    Claim.below(
                        f"direct-{act}-shrinks",
                        f"direct S with {act}: ratio of the seed-mean overlap/p₂₂ at the largest "
                        f"to the smallest d, worst over horizons (here {where})",
                        value,
                        1.0,
                    )
                )
            where, value = _worst(pick((f"tied {act} ",), "s"), "low")
            out.append(
                Claim.at_least(
                    f"tied-{act}-recovers",
                    f"tied with {act}: overlap/p₂₂ (p_12), seed mean, worst over d = "
                    f"{dims(config, act)} and horizons (here {where})",
                    value,
                    RECOVERED,
                )
            )
        if "h1" in config.activations:
            where, value = _worst(pick(("tied h1 ", "direct h1 "), "s"), "low")
            out.append(
                Claim.at_least(
                    "h1-both-recover",
                    "h1: overlap/p₂₂ of tied (p_12) and direct (max |p±|), seed mean, worst over "
                    f"both, d and horizons (here {where})",
                    value,
                    RECOVERED,
                )
            )
        return out

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:

        from attndyn.models.aim.theory.recovery import recovery_signal

        sims = results["sims"]
        acts = [a for a in ACTIVATIONS if a in config.activations]
        fig, axes = new_figure(1, len(acts), figsize=(4 * len(acts), 3.6), squeeze=False)
        for ax, act in zip(axes[0], acts, strict=True):
            for arm, colour in (("tied", "C0"), ("direct", "C1")):
                d = dims(config, act)[-1]
                scale = d**2 * np.log(d)
                traj = sims[(arm, act, d)]
                n = traj["samples"].values / scale
                p22 = float(traj["p_22"].isel(time=0).mean("seed"))
                s = recovery_signal(traj, kind=_run_values(config, arm, act, d)["param"]) / p22
                for seed in range(traj.sizes["seed"]):
                    ax.plot(n, s.isel(seed=seed), color=colour, alpha=0.25, lw=0.8)
                label = f"{arm}, d = {d}{dropped_note(traj)}"  # the mean of finite seeds
                ax.plot(n, s.mean("seed", skipna=True), color=colour, lw=2, label=label)
            ax.axhline(RECOVERED, color="0.4", lw=0.8, ls="--")
            ax.axhline(TRAPPED / np.sqrt(d), color="0.4", lw=0.8, ls=":")  # direct's largest d
            ax.axvline(n[-1] / config.late_factor, color="0.6", lw=0.6)
            ax.set_title(act)
            ax.set_xlabel("samples n / (d² log d)")
            ax.set_ylabel("overlap / p₂₂")
        axes[0][0].legend(frameon=False, title="thin: single seeds; thick: mean", title_fontsize=8)
        return save_figure(fig, path)


def _ratio_ci(a: np.ndarray, b: np.ndarray, seed: int) -> Interval:
    """mean(b)/mean(a) with its bootstrap CI over seeds (NaN if a seed diverged)."""
    return bootstrap_ci([a, b], lambda x, y: float(np.mean(y) / np.mean(x)), seed=seed)
