"""Censored escape times for ``aim-untied-escape`` and ``aim-direct-escape`` (issue 29, open
questions Q1 and Q5 of P1 = arXiv 2609.03858; docs/aim-open-questions.md).

Per seed the escape time τ_wr is the first slow time τ = nα_d/d at which a normalised overlap
reaches a threshold; a seed that has not reached it by the horizon τ_max is right-censored. The
censored seeds are encoded as τ = τ_max (the observed times are < τ_max by construction, a crossing
exactly at the last record counts as censored), so a group of per-seed values stays a plain float
array that :func:`attndyn.claims.stats.bootstrap_ci` can resample.

- :func:`km_survival`, :func:`km_median`: the Kaplan–Meier estimator (Kaplan & Meier 1958) of the
  survival function P(τ_wr > t) and its median, the latter only when fewer than half the seeds
  are censored (otherwise NaN: the data bound the median from below by τ_max, nothing more);
- :func:`kappa`: κ in median τ_wr ∝ d^κ, the least-squares slope of log KM median on log d
  (N_wr = τ_wr d/α_d ∝ d^{2+κ} log d at α_d = c/(d log d); κ = 0 is P1's Θ(d² log d));
- :func:`kappa_interval`: its interval, the percentile bootstrap over seeds within each d (≥ 20
  seeds per d, :data:`attndyn.claims.stats.MIN_BOOTSTRAP_SEEDS`), else the jackknife-t;
- :func:`kappa_lower`: when the median is censored at some d, the slope with τ_max in its place,
  a lower bound of κ when the censored d are the largest ones;
- :func:`growth_statistic`: κ(case) − κ(h1), the slope of log(median ratio) on log d: > 0 when
  the case's escape time outgrows the reference's, i.e. the case does not recover on the
  reference's d² log d scale (τ_wr(case)/τ_wr(h1) → ∞).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from attndyn.claims.config import ExperimentConfig
from attndyn.claims.stats import MIN_BOOTSTRAP_SEEDS, Interval, bootstrap_ci, jackknife_ci
from attndyn.figures.draw import new_figure, save_figure


class EscapeConfig(ExperimentConfig):
    """The fields both escape experiments share; each adds its ``base`` (the model) and its
    cases, and may change a default."""

    d: list[int] = Field([24, 32, 45], min_length=2, description="dimensions (increasing)")
    seeds: int = Field(20, ge=2, description="seeds of every case but h1 (and h3)")
    h3_seeds: int | None = Field(None, ge=2, description="seeds of h3 (None: `seeds`)")
    h1_seeds: int = Field(
        160, ge=2, description="seeds of h1 (cheap; its κ claim needs a tight median)"
    )
    threshold: float = Field(0.3, gt=0, lt=1, description="escape level of the overlap cosine")
    t_max_h1: float = Field(0.4, gt=0, description="horizon τ_max of h1")
    t_max_h3: float = Field(1.0, gt=0, description="horizon τ_max of h3")
    lr_h3: float = Field(0.002, gt=0, description="α_d = lr_h3/(d log d) for h3")
    batch_h3: int = Field(16, ge=1, description="batch of h3")
    h3_from: int = Field(
        32, ge=0, description="h3 runs at d ≥ this (at d = 24 a seed of 20 diverged)"
    )
    ratio_from: int = Field(0, ge=0, description="the slower-than-h1 claims at d ≥ this")
    teacher_shrink: bool = Field(
        False, description="control: the h1 teacher entries × d_min/d (signal O(1/d) at large d)"
    )
    trained_as: Literal["h1"] | None = Field(
        None, description="control: the h2/h3 cases train this activation instead"
    )


def escape_times(tau: np.ndarray, signal: np.ndarray, level: float, horizon: float) -> np.ndarray:
    """Per seed (rows of ``signal``): the first crossing of ``level``, or ``horizon`` where the
    seed never crosses before it (right-censored). A seed whose signal is not finite before its
    crossing (diverged) gives NaN."""
    from attndyn.models.aim.theory.recovery import first_crossing

    out = np.empty(signal.shape[0])
    for s, row in enumerate(signal):
        t = first_crossing(tau, row, level)
        upto = tau <= (t if np.isfinite(t) else horizon)
        if not np.all(np.isfinite(row[upto])):
            out[s] = np.nan
        else:
            out[s] = min(t, horizon) if np.isfinite(t) else horizon
    return out


def km_survival(
    times: npt.ArrayLike, horizon: float = np.inf, events: npt.ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Kaplan–Meier survival S(t) = Π_{t_j ≤ t} (1 − e_j/n_j): the distinct event times t_j and
    S just after each (a step function, S = 1 before the first). Censoring: ``events`` (1 event,
    0 censored at that time) when given, else every value ≥ ``horizon`` is censored."""
    x = np.asarray(times, dtype=float).ravel()
    event = x < horizon if events is None else np.asarray(events, bool).ravel()
    steps, survival, s = [], [], 1.0
    for t in np.unique(x[event]):
        at_risk = int(np.sum(x >= t))
        s *= 1.0 - int(np.sum(x[event] == t)) / at_risk
        steps.append(float(t))
        survival.append(s)
    return np.asarray(steps), np.asarray(survival)


def censored_fraction(times: npt.ArrayLike, horizon: float) -> float:
    x = np.asarray(times, dtype=float).ravel()
    return float(np.mean(x >= horizon))


def km_median(times: npt.ArrayLike, horizon: float) -> float:
    """The KM median, the first event time where S ≤ ½; NaN when half the seeds or more are
    censored (or any value is not finite). Every censored value lies at the horizon, after every
    event, so S(t) = #{τ > t}/n below the horizon and the median is the ⌈n/2⌉-th order
    statistic (tests/test_aim_escape.py checks it against :func:`km_survival`)."""
    x = np.asarray(times, dtype=float).ravel()
    # half or more censored: 2·#{x ≥ horizon} ≥ n (censored_fraction ≥ ½, counted in integers:
    # the bootstrap calls this 10⁵–10⁶ times per interval check)
    if x.size == 0 or not np.isfinite(x).all() or 2 * np.count_nonzero(x >= horizon) >= x.size:
        return float("nan")
    k = (x.size + 1) // 2 - 1
    return float(np.partition(x, k)[k])


def kappa(ds: Sequence[float], horizons: Sequence[float], *groups: np.ndarray) -> float:
    """κ: least-squares slope of log KM median τ_wr on log d (one group of per-seed times per
    d); NaN if a median is censored."""
    med = [km_median(g, h) for g, h in zip(groups, horizons, strict=True)]
    if not np.all(np.isfinite(med)):
        return float("nan")
    return float(np.polyfit(np.log(np.asarray(ds, float)), np.log(med), 1)[0])


def kappa_lower(ds: Sequence[float], horizons: Sequence[float], groups) -> float:
    """The slope with each censored median replaced by its horizon τ_max (a lower bound of that
    median): a lower bound of κ when the censored dimensions are the largest ones (NaN if the
    smallest d is censored, where the replacement would bias κ the other way)."""
    med = []
    for g, h in zip(groups, horizons, strict=True):
        m = km_median(g, h)
        med.append(m if np.isfinite(m) else h)
    if not np.isfinite(km_median(groups[0], horizons[0])):
        return float("nan")
    return float(np.polyfit(np.log(np.asarray(ds, float)), np.log(med), 1)[0])


def median_interval(times: np.ndarray, horizon: float) -> Interval:
    """The KM median with its percentile-bootstrap interval over seeds (≥ 20 seeds), else a
    point value with an infinite interval (the jackknife is inconsistent for a median)."""
    x = np.asarray(times, float)
    if x.size < MIN_BOOTSTRAP_SEEDS:
        m = km_median(x, horizon)
        return Interval(
            m, -np.inf if np.isfinite(m) else m, np.inf if np.isfinite(m) else m, x.size
        )
    return bootstrap_ci(x, lambda g: km_median(g, horizon))


def groups_interval(groups: list[np.ndarray], statistic) -> Interval:
    """``statistic(*groups)`` with the percentile bootstrap over seeds within each group when
    every group has ≥ 20 seeds, else the jackknife-t (stats.py's rule)."""
    if min(np.asarray(g).size for g in groups) >= MIN_BOOTSTRAP_SEEDS:
        return bootstrap_ci(groups, statistic)
    return jackknife_ci(groups, statistic)


def kappa_interval(ds: Sequence[float], horizons: Sequence[float], groups) -> Interval:
    """κ (:func:`kappa`) with its interval (:func:`groups_interval`)."""
    return groups_interval(list(groups), lambda *g: kappa(ds, horizons, *g))


def median_or_horizon(times: np.ndarray, horizon: float) -> float:
    """The KM median, or ``horizon`` (a lower bound of it) where half the seeds or more are
    censored."""
    m = km_median(times, horizon)
    return m if np.isfinite(m) or not np.all(np.isfinite(times)) else float(horizon)


def median_ratios(groups, h_num: Sequence[float], h_den: Sequence[float]) -> np.ndarray:
    """Per d, median(numerator)/median(denominator), the groups being the k numerator groups
    (one per d) then the k denominator groups: a censored numerator median counts as its
    horizon, a censored denominator median gives NaN."""
    k = len(h_num)
    return np.array(
        [
            median_or_horizon(groups[i], h_num[i]) / km_median(groups[k + i], h_den[i])
            for i in range(k)
        ]
    )


def ratio_statistic(h_num: Sequence[float], h_den: Sequence[float]):
    """min over d of median(numerator at d)/median(denominator at d); the groups are the k
    numerator groups (one per d) then the k denominator groups. A censored numerator median
    counts as its horizon (so the ratio is a lower bound there); a censored denominator median
    gives NaN."""

    def statistic(*groups) -> float:
        r = median_ratios(groups, h_num, h_den)
        return float(np.min(r)) if np.all(np.isfinite(r)) else float("nan")

    return statistic


def growth_statistic(ds: Sequence[float], h_num: Sequence[float], h_den: Sequence[float]):
    """κ(numerator) − κ(denominator): the least-squares slope on log d of log(median numerator /
    median denominator), the groups ordered as in :func:`ratio_statistic`. A censored numerator
    median counts as its horizon; a censored denominator median gives NaN. (With the numerator
    censored only at the largest d the slope is then a lower bound.)"""
    x = np.log(np.asarray(ds, float))

    def statistic(*groups) -> float:
        r = median_ratios(groups, h_num, h_den)
        return float(np.polyfit(x, np.log(r), 1)[0]) if np.all(np.isfinite(r)) else float("nan")

    return statistic


# --------------------------------------------------------------------------------------------
# The experiment both escape experiments share


def log_d_band(ds: Sequence[int]) -> float:
    """1/(2 ln d̄), d̄ the geometric-mean d: half the slope of log τ on log d that τ ∝ log d has
    there (aim-recovery-scaling's band)."""
    return 0.5 / float(np.mean(np.log(np.asarray(ds, float))))


class EscapeMixin:
    """measure / preconditions / figure of the escape experiments. A subclass gives ``cases``
    (the first is the h1 reference), ``ratio_cases`` (activation → case compared with the
    reference), ``run_changes(config, case, d)`` and ``signal(traj)``."""

    def cases(self, config) -> list[str]:
        raise NotImplementedError

    def ratio_cases(self, config) -> dict[str, str]:
        raise NotImplementedError

    def run_changes(self, config, case: str, d: int) -> dict:
        raise NotImplementedError

    @staticmethod
    def signal(traj) -> np.ndarray:
        raise NotImplementedError

    def step_changes(self, config, case: str, act: str, d: int) -> dict:
        """The fields every case sets: d; the activation trained (a control's `trained_as` for
        the h2/h3 cases); the horizon, step constant, batch and seeds of ``act``; for the h1
        reference (the first case) its seeds and the `teacher-shrinks` control's teacher."""
        h3 = act == "h3"
        changes: dict = dict(
            d=d,
            activation=config.trained_as if act != "h1" and config.trained_as else act,
            t_max={"h1": config.t_max_h1, "h3": config.t_max_h3}.get(act, config.base.t_max),
            lr=config.lr_h3 if h3 else config.base.lr,
            batch=config.batch_h3 if h3 else config.base.batch,
        )
        if h3 and config.h3_seeds is not None:
            changes["seeds"] = config.h3_seeds
        if case == self.cases(config)[0]:
            changes["seeds"] = config.h1_seeds
            if config.teacher_shrink:
                changes["teacher_scale"] = config.base.teacher_scale * config.d[0] / d
        return changes

    def case_ds(self, config, case: str) -> list[int]:
        """The dimensions a case runs at: h3 at d ≥ ``h3_from``, the others at every d."""
        if case.split("/")[0] == "h3":
            return [d for d in config.d if d >= config.h3_from]
        return list(config.d)

    def run(self, config, ctx) -> dict:
        sims = {
            f"{case}@{d}": ctx.simulate("aim", config.base, **self.run_changes(config, case, d))
            for case in self.cases(config)
            for d in self.case_ds(config, case)
        }
        return {"sims": sims}

    def measure(self, config, results: dict) -> dict:
        times: dict[str, list[np.ndarray]] = {}
        horizons: dict[str, list[float]] = {}
        for case in self.cases(config):
            times[case], horizons[case] = [], []
            for d in self.case_ds(config, case):
                traj = results["sims"][f"{case}@{d}"]
                tau = traj["time"].values
                horizon = float(tau[-1])
                times[case].append(escape_times(tau, self.signal(traj), config.threshold, horizon))
                horizons[case].append(horizon)
        diverged = {c: int(sum(np.sum(~np.isfinite(t)) for t in v)) for c, v in times.items()}
        censored = {c: [censored_fraction(t, h) for t, h in zip(v, horizons[c], strict=True)]
                    for c, v in times.items()}  # fmt: skip
        medians = {c: [median_interval(t, h) for t, h in zip(v, horizons[c], strict=True)]
                   for c, v in times.items()}  # fmt: skip
        kappas, lower = {}, {}
        for c, v in times.items():
            if diverged[c]:
                kappas[c] = Interval(math.nan, math.nan, math.nan, config.seeds)
                lower[c] = float("nan")
                continue
            kappas[c] = kappa_interval(self.case_ds(config, c), horizons[c], v)
            lower[c] = kappa_lower(self.case_ds(config, c), horizons[c], v)
        ref = self.cases(config)[0]
        ratios: dict[str, Interval] = {}
        growth: dict[str, Interval] = {}
        for act, case in self.ratio_cases(config).items():
            ds_c = self.case_ds(config, case)
            common = [d for d in config.d if d in ds_c]

            def paired(ds: list[int], case=case, ds_c=ds_c):
                """The case's groups then the reference's at ``ds``, and their horizons."""
                groups = [times[case][ds_c.index(d)] for d in ds]
                groups += [times[ref][config.d.index(d)] for d in ds]
                h_num = [horizons[case][ds_c.index(d)] for d in ds]
                return groups, h_num, [horizons[ref][config.d.index(d)] for d in ds]

            nan = Interval(math.nan, math.nan, math.nan, config.seeds)
            valid = not (diverged[case] or diverged[ref])
            groups, h_num, h_den = paired([d for d in common if d >= config.ratio_from])
            ratios[act] = groups_interval(groups, ratio_statistic(h_num, h_den)) if valid else nan
            groups, h_num, h_den = paired(common)
            growth[act] = (
                groups_interval(groups, growth_statistic(common, h_num, h_den))
                if valid and len(common) >= 2
                else nan
            )
        return {
            "times": times,
            "horizons": horizons,
            "diverged": diverged,
            "censored": censored,
            "medians": medians,
            "kappa": kappas,
            "kappa_lower": lower,
            "kappa_band": log_d_band(config.d),
            "ratio": ratios,
            "growth": growth,
        }

    def preconditions(self, config, m: dict) -> list:
        from attndyn.claims.verdict import Check

        ref = self.cases(config)[0]
        return [
            Check.compare("diverged seeds, all runs", sum(m["diverged"].values()), "==", 0),
            Check.compare(
                f"censored fraction of the reference {ref}, largest over d",
                max(m["censored"][ref]),
                "<",
                0.5,
            ),
        ]

    def kappa_detail(self, config, m: dict, case: str) -> str:
        med = ", ".join(
            f"{iv.value:.3g}" if np.isfinite(iv.value) else f"> {h:.3g}"
            for iv, h in zip(m["medians"][case], m["horizons"][case], strict=True)
        )
        cens = ", ".join(f"{c:.2f}" for c in m["censored"][case])
        return f"{case}: KM medians {med} at d = {self.case_ds(config, case)}, censored {cens}"

    def figure(self, config, results: dict, m: dict, path):
        cases = self.cases(config)
        fig, axes = new_figure(1, len(cases) + 1, figsize=(3.4 * (len(cases) + 1), 3.4),
                               squeeze=False)  # fmt: skip
        for ax, case in zip(axes[0], cases, strict=False):
            for i, d in enumerate(self.case_ds(config, case)):
                t, h = m["times"][case][i], m["horizons"][case][i]
                steps, surv = km_survival(t[np.isfinite(t)], h)
                x = np.concatenate([[0.0], np.repeat(steps, 2), [h]])
                y = np.concatenate([np.repeat(np.concatenate([[1.0], surv]), 2)])
                ax.plot(x, y, color=f"C{i}", label=f"d = {d}")
            ax.axhline(0.5, color="0.6", lw=0.6)
            ax.set(title=case, xlabel="slow time τ = nα_d/d", ylabel="KM P(τ_wr > τ)")
            ax.set_ylim(-0.02, 1.02)
            ax.legend(frameon=False, fontsize=7)
        bx = axes[0][-1]
        for j, case in enumerate(cases):
            iv = m["kappa"][case]
            if iv.finite:
                bx.errorbar([j], [iv.value], yerr=[[iv.value - iv.low], [iv.high - iv.value]],
                            marker="o", color="C0", capsize=3)  # fmt: skip
            elif np.isfinite(m["kappa_lower"][case]):
                bx.plot([j], [m["kappa_lower"][case]], marker="^", color="C3")
        band = m["kappa_band"]
        bx.axhspan(-band, band, color="0.85")
        bx.set_xticks(range(len(cases)), cases, rotation=60, fontsize=7)
        bx.set(xlabel="case", ylabel="κ (median τ_wr ∝ d^κ), 95 % CI")
        bx.set_title("κ (▲: lower bound, censored)")
        return save_figure(fig, path)
