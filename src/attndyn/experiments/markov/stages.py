"""``focus-stages`` (arXiv 2605.01199, Chen, Lin, Xu & Luo, ICML 2026): the stages of one
focus–dilution cycle, and its repetition, in the population gradient flow of Def. 2.2's model on
Markov data with π = (0.75, 0.19, 0.05, 0.01) (Section 4.1; Appendix E.1's geometric π with
``pi_kind='geometric'``; any π and λ with ``pi``, ``lam``).

One integration per config (:func:`attndyn.models.markov.snapshots.snapshots`, flow or GD) gives
the observables, W₀ at every record (PCA, Fig. 2B) and the W_QK drift. Claims (each over seeds,
95 % intervals; targets and reasons in docs/claims/focus-stages.md):

- ``stage1-rate``: the log-slope of Thm 3.2's growing mode u = ‖W₀ᵀπ̂ + W₁v̂‖/√2 (a pure
  e^{σ₁t} in the linearisation, snapshots.py) over the linear window, from t = 0 to the last
  record before u first exceeds ``top``, over σ₁ = ‖π‖‖π − 𝟙/d‖ (Eq. 10) within 1 ± ``rate_tol``;
- ``attention-frozen``: max ‖W_QK − W_QK(0)‖/‖W_QK(0)‖ up to the window's end ≤ ``frozen_tol``
  (Thm 3.2: ∂L/∂Φ|₀ = 0; Lemma 3.1's remainder);
- ``plateau-gap``: L − L* on the first plateau (the flattest record pair after the loss's
  steepest fall, condensation's drop, between the Stage-I window and the start of focus) over Σ_i π_i KL(P_i ‖ π) (Prop. 3.3) within
  1 ± ``plateau_tol``;
- ``focus-alignment``: cos_F(Φ, ππᵀ) at the end of the first focus stage (its end or the start
  of dilution, whichever is first) ≥ ``align_target``
  (Prop. 3.4, Thm 3.5, Eq. 16: Φ/‖Φ‖ → ππᵀ/‖π‖² near θ_c¹);
- ``dilution``: the smallest, over low-frequency queries i, fall of 𝔸_{i,0} from its peak to its
  later minimum ≥ ``dilution_margin`` (Section 3.3, Thm 3.7);
- ``rank-steps``: the number of effective-rank levels 1, 2, 3, … of W₀ reached in order
  (nearest integer) ≥ ``rank_steps`` (Thm 3.9: the cycle repeats).

Stages are detected by :func:`attndyn.models.markov.stages.detect_stages`. Negative controls:
uniform π (σ₁ = 0), a large init (no stage separation), two wrong Stage-I theories.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from attndyn.claims.base import (
    Check,
    Claim,
    Control,
    Experiment,
    ExperimentConfig,
    RunContext,
)
from attndyn.claims.stats import mean_ci
from attndyn.figures.draw import save_figure

NAME = "focus-stages"


class Config(ExperimentConfig):
    seeds: int = Field(8, ge=2, description="seeds (independent inits)")
    pi: tuple[float, ...] | None = Field(
        None, description="stationary law π (sums to 1); None: built by pi_kind"
    )
    pi_kind: Literal["paper", "geometric"] = Field(
        "paper", description="paper: (0.75, 0.19, 0.05, 0.01); geometric: Appendix E.1"
    )
    d: int = Field(4, ge=2, le=8, description="vocabulary size of the geometric π")
    lam: float = Field(
        0.8, gt=0, lt=1, description="λ of P = λI + (1 − λ)𝟙πᵀ (Eq. 2; Appendix E.1: 0.8)"
    )
    m: int = Field(8, ge=1, description="embedding width")
    init_scale: float | None = Field(1e-4, gt=0, description="init N(0, ε²); None: ε = 1/m")
    t_max: float = Field(1500.0, gt=0, description="flow time")
    records: int = Field(120, ge=10, description="log-spaced records")
    optimizer: Literal["flow", "gd"] = Field("flow", description="gradient flow or GD (lr)")
    lr: float = Field(0.05, gt=0, description="GD step (time = lr·step); flow: record grid")
    rtol: float = Field(1e-4, gt=0, lt=1, description="flow tolerance (global error ≈ rtol)")
    solver: Literal["ros2", "bs3"] = Field(
        "ros2", description="flow: Rosenbrock ROS2 (stiff late stages) or explicit bs3"
    )
    dtype: Literal["float32", "float64"] = Field("float64")
    # claims
    top: float = Field(0.1, gt=0, description="Stage-I window ends at ‖W₀ᵀπ̂ + W₁v̂‖/√2 = top")
    rate_tol: float = Field(0.05, gt=0, description="relative tolerance of the Stage-I rate")
    frozen_tol: float = Field(0.1, gt=0, description="max relative W_QK drift in Stage I")
    plateau_tol: float = Field(0.05, gt=0, description="relative tolerance of the plateau")
    align_target: float = Field(0.9, gt=0, le=1, description="cos_F(Φ, ππᵀ) at focus end")
    dilution_margin: float = Field(0.1, gt=0, description="fall of 𝔸_i0 after its peak")
    rank_steps: int = Field(3, ge=1, le=8, description="effective-rank levels reached in order")
    sigma1_theory: Literal["paper", "norm-squared", "time-x2"] = Field(
        "paper",
        description="negative controls: σ₁ as ‖π‖² or 2‖π‖‖π − 𝟙/d‖ (wrong Stage-I theories)",
    )

    @field_validator("pi")
    @classmethod
    def _pi(cls, v):
        if v is not None and not 2 <= len(v) <= 8:
            raise ValueError("needs 2 to 8 entries (every token is tracked)")
        return v


def sim_values(config: Config) -> dict[str, Any]:
    """The markov config of the experiment's run."""
    out = dict(
        data="population",
        pi_kind=config.pi_kind,
        d=config.d,
        lam=config.lam,
        m=config.m,
        init_scale=config.init_scale,
        t_max=config.t_max,
        records=config.records,
        grid="log",
        optimizer=config.optimizer,
        lr=config.lr,
        rtol=config.rtol,
        solver=config.solver,
        dtype=config.dtype,
        seeds=config.seeds,
        seed=config.seed,
    )
    if config.pi is not None:
        out["pi"] = config.pi
    return out


def sigma1(config: Config, pi: np.ndarray) -> float:
    """σ₁ of Thm 3.2 (or a control's wrong version)."""
    from attndyn.models.markov.theory.closed_forms import stage1_rate

    if config.sigma1_theory == "norm-squared":
        return float(np.dot(pi, pi))
    factor = 2.0 if config.sigma1_theory == "time-x2" else 1.0
    return factor * stage1_rate(pi)


def run_trajectory(sim_config):
    """The snapshots of ``sim_config`` as a Trajectory: every observable, ``w0_pi``,
    ``stage1_mode``, ``w0_norm``,
    ``wqk_drift`` and the PCA coordinates ``pc1_i``, ``pc2_i`` of each row of W₀ (per seed, PCA
    of the centred concatenated snapshots, Section 4.1)."""
    from attndyn.core.config import canonical
    from attndyn.core.trajectory import make_trajectory
    from attndyn.models.markov.snapshots import snapshots

    snap = snapshots(sim_config)
    W0 = snap.pop("W0")
    times, seeds = snap.pop("time"), snap.pop("seed")
    S, T, d, _ = W0.shape
    for s in range(S):
        rows = W0[s].reshape(T * d, -1)
        centred = rows - rows.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        proj = (centred @ vt[:2].T).reshape(T, d, 2)
        for i in range(d):
            for k in range(2):
                snap.setdefault(f"pc{k + 1}_{i}", np.zeros((S, T)))[s] = proj[:, i, k]
    return make_trajectory(
        snap,
        time=times,
        seeds=seeds,
        family="markov",
        config=canonical(sim_config),
    )


def stage1(time, u, drift, top) -> tuple[float, float, float, float]:
    """(slope, max drift, t_start, t_end) of log u over the records before u first exceeds
    ``top``; NaN when u never exceeds it (no escape) or fewer than 3 records precede it (an
    init already beyond the linear window). u is a pure exponential there (snapshots.py), so
    the window starts at t = 0."""
    over = np.flatnonzero(u > top)
    if not len(over) or over[0] < 3:
        return (float("nan"),) * 4
    idx = np.arange(int(over[0]))
    slope = float(np.polyfit(time[idx], np.log(u[idx]), 1)[0])
    return slope, float(np.max(drift[: idx[-1] + 1])), float(time[idx[0]]), float(time[idx[-1]])


def plateau_after_drop(time, gap, t_from, focus) -> tuple[float, float]:
    """(L − L*, t) on the first plateau: over the records from ``t_from`` (the Stage-I window's
    end) to the start of the first of ``focus``, the pair of consecutive records after the
    steepest fall of L − L* against log t (condensation's drop) where |ΔL/Δ log t| is smallest
    (their mean, geometric-mean time); NaN without a window, a focus stage or such a pair."""
    if not np.isfinite(t_from) or not focus:
        return float("nan"), float("nan")
    k = np.flatnonzero((time >= t_from) & (time <= focus[0].start) & (time > 0))
    if len(k) < 4:
        return float("nan"), float("nan")
    g, log_t = gap[k], np.log(time[k])
    k = k[int(np.argmin(np.diff(g) / np.diff(log_t))) + 1 :]  # from the end of the steepest fall
    if len(k) < 2:
        return float("nan"), float("nan")
    g, log_t = gap[k], np.log(time[k])
    j = int(np.argmin(np.abs(np.diff(g) / np.diff(log_t))))
    return float(0.5 * (g[j] + g[j + 1])), float(np.sqrt(time[k][j] * time[k][j + 1]))


def _mean(values) -> float:
    """Mean of the finite values (NaN when none)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


def rank_levels(erank: np.ndarray) -> int:
    """Levels 1, 2, … of round(erank) reached in this order (0 if never ≈ 1)."""
    r = np.asarray(erank, dtype=np.float64)
    ones = np.flatnonzero(r < 1.5)
    if not len(ones):
        return 0
    level, k = 1, int(ones[0])
    while True:
        nxt = np.flatnonzero(r[k:] >= level + 0.5)
        if not len(nxt):
            return level
        level, k = level + 1, k + int(nxt[0])


class FocusStages(Experiment):
    name = NAME
    description = (
        "arXiv 2605.01199: condensation at rate σ₁ with attention frozen, the unigram plateau, "
        "focus Φ ∥ ππᵀ, dilution of low-frequency attention, W₀'s rank rising in steps"
    )
    Config = Config
    presets = {
        "tiny": {"seeds": 4, "t_max": 350.0, "records": 100, "rank_steps": 2},
        "small": {"seeds": 8, "t_max": 1500.0, "records": 120, "rank_steps": 3},
        "paper": {
            "seeds": 4,
            "m": 256,
            "init_scale": None,
            "t_max": 1500.0,
            "records": 140,
            "rank_steps": 3,
        },
    }
    controls = {
        "uniform-pi": Control(
            {"pi": (0.25, 0.25, 0.25, 0.25)},
            ("stage1-rate", "plateau-gap", "focus-alignment", "dilution", "rank-steps"),
            "uniform π: ∂L/∂M|₀ = −π(π − 𝟙/d)ᵀ = 0, so σ₁ = 0 — nothing condenses, no plateau "
            "is left, Φ never grows along ππᵀ and no attention focuses or dilutes",
        ),
        "large-init": Control(
            {"init_scale": 0.3},
            ("stage1-rate", "attention-frozen", "plateau-gap", "focus-alignment", "rank-steps"),
            "init ε = 0.3: the init is already beyond the linear window (no Stage I to measure) "
            "and W₀ never condenses to rank one, so there is no condensation ray, no unigram "
            "plateau after it and no focus stage that follows condensation: the stages are not "
            "separated",
        ),
        "sigma1-norm-squared": Control(
            {"sigma1_theory": "norm-squared"},
            ("stage1-rate",),
            "a wrong Stage-I theory: σ₁ = ‖π‖² instead of ‖π‖‖π − 𝟙/d‖ (0.601 vs 0.4595 at "
            "the paper's π)",
        ),
        "sigma1-time-x2": Control(
            {"sigma1_theory": "time-x2"},
            ("stage1-rate",),
            "a wrong time unit: σ₁ doubled (as if the flow ran at rate 2)",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        return [
            "stage1-rate",
            "attention-frozen",
            "plateau-gap",
            "focus-alignment",
            "dilution",
            "rank-steps",
        ]

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        from attndyn import runs

        sim = runs.family_config("markov", sim_values(config))
        # ":2": the runs record stage1_mode (runs stored without it are not reused)
        traj = ctx.compute(f"{NAME}:snapshots:2", sim, lambda: run_trajectory(sim))
        return {"traj": traj, "sim": sim}

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        from attndyn.models.markov import DataLaw
        from attndyn.models.markov.stages import detect_stages, stage_signals
        from attndyn.models.markov.theory.closed_forms import plateau_gap

        traj, sim = results["traj"], results["sim"]
        law = DataLaw(sim)
        pi, P = law.pi, law.P
        d = len(pi)
        track = tuple(range(d))
        top = int(np.argmax(pi))
        low = [i for i in track if i != top]
        t = traj["time"].values
        m: dict[str, Any] = {
            "pi": [float(x) for x in pi],
            "lam": config.lam,
            "sigma1_theory": sigma1(config, pi),
            "plateau_gap_theory": plateau_gap(pi, P),
        }
        per: dict[str, list[float]] = {
            k: []
            for k in (
                "rate",
                "drift",
                "window_start",
                "window_end",
                "plateau",
                "plateau_time",
                "align",
                "align_at_peak",
                "focus_end",
                "dilution",
                "below_pi",
                "levels",
                "erank_min",
            )
        }
        stages = []
        for s in range(traj.sizes["seed"]):
            one = {k: traj[k].values[s] for k in traj.data_vars}
            rate, drift, ta, tb = stage1(t, one["stage1_mode"], one["wqk_drift"], config.top)
            per["rate"].append(rate)
            per["drift"].append(drift)
            per["window_start"].append(ta)
            per["window_end"].append(tb)
            f, dl = stage_signals(one, pi, track)
            found = detect_stages(t, one["erank_W0"], f, dl)
            stages.append([st.as_dict() for st in found])
            # condensation after the Stage-I window: the loss's steepest fall (in log t) before
            # the first focus stage; the detector's erank ≤ 1.15 is not used, since at ε = 1/m the
            # frozen init bulk of W₀ keeps erank ≥ 1.5 (docs/claims/focus-stages.md, "Presets")
            focus = [st for st in found if st.name == "focus" and st.end > tb]
            plateau, t_plat = plateau_after_drop(t, one["loss_gap"], tb, focus)
            per["plateau"].append(plateau)
            per["plateau_time"].append(t_plat)
            align, f_end, align_late = np.nan, np.nan, np.nan
            if focus:
                # focus ends where it peaks or where dilution begins, whichever comes first
                dil = [
                    st.start for st in found if st.name == "dilution" and st.end > focus[0].start
                ]
                f_end = min([focus[0].end, *dil])
                align = float(np.interp(f_end, t, one["align_phi"]))
                align_late = float(np.interp(focus[0].end, t, one["align_phi"]))
            per["align"].append(align)
            per["align_at_peak"].append(align_late)
            per["focus_end"].append(f_end)
            falls, below = [], []
            for i in low:
                a = one[f"attn_{i}_{top}"]
                p = int(np.nanargmax(a))
                after = a[p:]
                falls.append(float(a[p] - np.nanmin(after)))
                below.append(float(pi[top] - np.nanmin(after)))
            per["dilution"].append(min(falls) if falls else np.nan)
            per["below_pi"].append(min(below) if below else np.nan)
            per["levels"].append(float(rank_levels(one["erank_W0"])))
            per["erank_min"].append(float(np.nanmin(one["erank_W0"])))
        m["per_seed"] = per
        m["stages"] = stages
        sig = m["sigma1_theory"]
        m["rate_ci"] = mean_ci(per["rate"])
        m["sigma1_measured"] = m["rate_ci"].value
        m["rate_ratio"] = m["rate_ci"].map(lambda x: x / sig if sig > 0 else float("nan"))
        m["drift_ci"] = mean_ci(per["drift"])
        m["plateau_ci"] = mean_ci(per["plateau"])
        m["plateau_gap_measured"] = m["plateau_ci"].value
        gap = m["plateau_gap_theory"]
        m["plateau_ratio"] = m["plateau_ci"].map(lambda x: x / gap if gap > 0 else float("nan"))
        m["align_ci"] = mean_ci(per["align"])
        m["dilution_ci"] = mean_ci(per["dilution"])
        m["levels_ci"] = mean_ci(per["levels"])
        m["diverged"] = int(traj["diverged"].sum())
        m["final_loss_gap"] = float(np.nanmean(traj["loss_gap"].values[:, -1]))
        return m

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check.compare("seeds diverged", m["diverged"], "==", 0)]

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        per = m["per_seed"]
        window = (
            f"window t ∈ [{_mean(per['window_start']):.3g}, "
            f"{_mean(per['window_end']):.3g}] (seed means)"
        )
        return [
            Claim.within(
                "stage1-rate",
                f"log-slope of ‖W₀ᵀπ̂ + W₁v̂‖/√2 = {m['rate_ci'].value:.4f} [{m['rate_ci'].low:.4f}, "
                f"{m['rate_ci'].high:.4f}] over σ₁ = {m['sigma1_theory']:.4f} "
                f"({config.sigma1_theory}), {window}",
                m["rate_ratio"],
                1.0,
                config.rate_tol,
            ),
            Claim.at_most(
                "attention-frozen",
                f"max ‖W_QK − W_QK(0)‖/‖W_QK(0)‖ from t = 0 to the end of the Stage-I {window}",
                m["drift_ci"],
                config.frozen_tol,
            ),
            Claim.within(
                "plateau-gap",
                f"L − L* on the first plateau = {m['plateau_ci'].value:.5f} "
                f"[{m['plateau_ci'].low:.5f}, {m['plateau_ci'].high:.5f}] over Σπ_i KL(P_i‖π) "
                f"= {m['plateau_gap_theory']:.5f} (Prop. 3.3)",
                m["plateau_ratio"],
                1.0,
                config.plateau_tol,
            ),
            Claim.at_least(
                "focus-alignment",
                "cos_F(Φ, ππᵀ) at the end of the first focus stage, before dilution begins (t ≈ "
                f"{_mean(per['focus_end']):.3g}; at the peak of the π-weighted focus "
                f"{_mean(per['align_at_peak']):.3f}, seed mean)",
                m["align_ci"],
                config.align_target,
            ),
            Claim.at_least(
                "dilution",
                "min over low-frequency queries i of the fall of 𝔸_{i,top} from its peak to its "
                f"later minimum (it ends {_mean(per['below_pi']):.3f} below π_top, seed mean)",
                m["dilution_ci"],
                config.dilution_margin,
            ),
            Claim.at_least(
                "rank-steps",
                "effective-rank levels of W₀ reached in order (round(erank) = 1, 2, 3, …; min "
                f"erank {_mean(per['erank_min']):.3f})",
                m["levels_ci"],
                float(config.rank_steps),
            ),
        ]

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        from attndyn.core.serial import json_safe

        keys = (
            "pi",
            "lam",
            "sigma1_theory",
            "sigma1_measured",
            "plateau_gap_theory",
            "plateau_gap_measured",
            "final_loss_gap",
            "per_seed",
            "stages",
        )
        out = {k: m[k] for k in keys}
        for k in ("rate_ci", "drift_ci", "plateau_ci", "align_ci", "dilution_ci", "levels_ci"):
            out[k] = m[k]
        return json_safe(out)

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        from attndyn.experiments.markov.stages_figure import draw

        return save_figure(draw(config, results["traj"], m), path)
