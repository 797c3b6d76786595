"""``circuits-ode`` (arXiv 2608.06776, Fig. 4 and §5.1): the reduced two-scalar gradient flow of
the QK and OV circuits for r = η_QK/η_OV ∈ {0.01, 0.1, 1, 10, 100}.

The flow (:mod:`attndyn.models.circuits.theory.reduced`, docs/circuits-theory.md §1) is integrated
with DOP853 (float64, rtol 1e-10) from μ_OV = μ_QK = 0 until the loss reaches 1e-4, with events at
loss thresholds; Fig. 4's constants m = 5, n = 50, b = 50, M = 20, η_OV = 1. Nothing random
enters: the experiment is ``deterministic`` (``seed``/``seeds`` are recorded, change nothing),
and its claims are plain numbers without confidence intervals (docs/claims/circuits-ode.md).

Claims:

- ``published-r<r>`` (r = 0.01, 0.1; only with ``compare_published``, which requires Fig. 4's
  constants, ``stop_loss`` ≤ 1e-4 and both r among ``ratios``): α at L = 1, 1e-1, 1e-2, 1e-3,
  1e-4 and μ_OV, μ_QK at L = 1e-4 equal the output of the authors' Fig. 4 notebook (three
  decimals, docs/circuits-theory.md §1) to within half a unit of the third decimal (the printed
  precision) plus the notebook's own RK4 error; value: the largest deviation;
- ``alpha-increases-with-r``: α at L = ``stop_loss`` increases strictly with r (faster QK learning
  sharpens attention); value: the smallest step between consecutive r;
- ``ov-decreases-with-r``: μ_OV at L = ``stop_loss`` decreases strictly with r (less OV growth at
  the same loss: faster QK changes the learned solution, not only the speed); value: the smallest
  step.

That the path depends on the rates only through r (both η × c: same states at every threshold,
crossing times ÷ c) is an identity of the flow (rescaling time), tested in
tests/test_circuits_theory.py (``test_v3_path_invariance``), not a claim.

Precondition: every r reaches L = ``stop_loss`` (else the outcome is invalid).

Negative control ``swapped-rates`` (``swap_rates``): η_QK and η_OV exchanged (r → 1/r at the same
labels), under which α decreases with the labelled r and the published rows are missed.

``--json`` summary: the measurements, among them ``crossings``, a list of {ratio, loss, mu_ov,
mu_qk, alpha, time, tau} for each r and each threshold 1, 1e-1, …, 1e-4 (time: gradient-flow
time with η_OV = 1; tau = t·min(η_OV, η_QK), the notebook's axis). Figure: μ_OV, μ_QK, loss and α
against log10(1 + t), and (μ_OV, μ_QK, α) at the first crossing of 50 log-spaced thresholds from 1
to 1e-4, as Fig. 4. Presets ``small`` and ``paper`` are the same, ``tiny`` records fewer points;
measured values and timings are in docs/experiments.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims.base import Check, Claim, Control, Experiment, ExperimentConfig, RunContext
from attndyn.figures.draw import new_figure, save_figure

# output of the authors' notebook Fig-4 Code/Simulated_Differential_equations.ipynb (arXiv
# 2608.06776, three decimals; docs/circuits-theory.md §1): α at L = 1, 1e-1, 1e-2, 1e-3, 1e-4,
# and μ_OV, μ_QK at L = 1e-4
PUBLISHED = {
    0.01: {"alpha": (0.096, 0.108, 0.122, 0.135, 0.149), "mu_ov": 81.669, "mu_qk": 0.559},
    0.1: {"alpha": (0.122, 0.174, 0.214, 0.252, 0.287), "mu_ov": 42.282, "mu_qk": 1.395},
}
TABLE_THRESHOLDS = (1.0, 1e-1, 1e-2, 1e-3, 1e-4)
FIG4 = {"m": 5.0, "n": 50.0, "b": 50.0, "n_classes": 20.0}  # the constants of PUBLISHED
# half a unit of the third printed decimal: the precision of the published values
PRINTED_HALF_UNIT = 5e-4


class Config(ExperimentConfig):
    ratios: list[float] = Field(
        [0.01, 0.1, 1.0, 10.0, 100.0], min_length=2, description="r = η_QK/η_OV (increasing)"
    )
    eta_ov: float = Field(1.0, gt=0, description="η_OV (Fig. 4: 1)")
    m: float = Field(5.0, gt=0)
    n: float = Field(50.0, gt=0)
    b: float = Field(50.0, gt=0)
    n_classes: float = Field(20.0, gt=1, description="M, the number of output classes")
    stop_loss: float = Field(1e-4, gt=0, description="integration ends at this loss")
    fig_thresholds: int = Field(50, ge=2, description="log-spaced thresholds 1 … stop_loss")
    records: int = Field(200, ge=10, description="record points per trajectory")
    rtol: float = Field(1e-10, gt=0, lt=1e-6)
    seeds: int = Field(1, ge=1, description="recorded only: the flow is deterministic")
    compare_published: bool = Field(
        True,
        description="claim the published rows (needs Fig. 4's m, n, b, n_classes, "
        "stop_loss <= 1e-4 and r = 0.01, 0.1 among ratios)",
    )
    swap_rates: bool = Field(
        False, description="negative control: η_QK and η_OV exchanged (r → 1/r)"
    )

    @model_validator(mode="after")
    def _meaningful(self) -> Config:
        r = self.ratios
        if any(y <= x for x, y in zip(r, r[1:], strict=False)):
            raise ValueError(f"'ratios' must increase strictly (got {r})")
        if not self.compare_published:
            return self
        differ = [k for k, v in FIG4.items() if getattr(self, k) != v]
        if differ:
            raise ValueError(
                f"compare_published=true needs Fig. 4's constants: '{differ[0]}' must be "
                f"{FIG4[differ[0]]:g} (or set compare_published=false)"
            )
        if self.stop_loss > 1e-4:
            raise ValueError(
                "compare_published=true needs 'stop_loss' <= 1e-4 (or compare_published=false)"
            )
        missing = [x for x in PUBLISHED if x not in r]
        if missing:
            raise ValueError(
                f"compare_published=true needs 'ratios' to include {', '.join(map(str, PUBLISHED))}"
                " (or set compare_published=false)"
            )
        return self


def _rates(config: Config, ratio: float) -> tuple[float, float]:
    """(η_OV, r) of the run labelled ``ratio``; ``swap_rates`` exchanges η_OV and η_QK."""
    if config.swap_rates:
        return ratio * config.eta_ov, 1.0 / ratio
    return config.eta_ov, ratio


def _params(config: Config, ratio: float):
    from attndyn.models.circuits.theory.reduced import ReducedParams

    eta_ov, r = _rates(config, ratio)
    return ReducedParams(
        m=config.m, n=config.n, b=config.b, M=config.n_classes, eta_ov=eta_ov, eta_qk=r * eta_ov
    )


class CircuitsODE(Experiment):
    name = "circuits-ode"
    description = (
        "arXiv 2608.06776 Fig. 4: reduced QK/OV flow, faster QK gives sharper attention and less "
        "OV growth at a fixed loss"
    )
    Config = Config
    presets = {"tiny": {"fig_thresholds": 6, "records": 20}, "small": {}, "paper": {}}
    deterministic = True
    controls = {
        "swapped-rates": Control(
            {"swap_rates": True},
            (
                "published-r0.01",
                "published-r0.1",
                "alpha-increases-with-r",
                "ov-decreases-with-r",
            ),
            "η_QK and η_OV exchanged (the run labelled r has η_QK/η_OV = 1/r): attention "
            "sharpens with 1/r, so α falls and μ_OV rises along the labelled r",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        published = [f"published-r{r:g}" for r in PUBLISHED] if config.compare_published else []
        return [*published, "alpha-increases-with-r", "ov-decreases-with-r"]

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        from attndyn.models.circuits.theory.reduced import solve

        thresholds = sorted(
            set(TABLE_THRESHOLDS) | set(np.geomspace(1.0, config.stop_loss, config.fig_thresholds)),
            reverse=True,
        )
        thresholds = [t for t in thresholds if t >= config.stop_loss]
        trajectories, crossings = {}, {}
        for r in config.ratios:
            eta_ov, ratio = _rates(config, r)
            trajectories[r] = ctx.predict(
                "circuits",
                m=config.m,
                n=config.n,
                b=config.b,
                n_classes=config.n_classes,
                eta_ov=eta_ov,
                ratio=ratio,
                stop_loss=config.stop_loss,
                records=config.records,
                rtol=config.rtol,
            )
            crossings[r] = solve(
                _params(config, r),
                thresholds,
                stop_loss=config.stop_loss,
                records=2,
                rtol=config.rtol,
            ).crossings
        return {"trajectories": trajectories, "crossings": crossings, "thresholds": thresholds}

    @staticmethod
    def _at(rows: list[dict], loss: float) -> dict:
        return min(rows, key=lambda row: abs(np.log(row["loss"]) - np.log(loss)))

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        crossings = results["crossings"]
        table = []
        for rows in crossings.values():
            for th in TABLE_THRESHOLDS:
                if th < config.stop_loss:
                    continue
                row = self._at(rows, th)
                keys = ("ratio", "loss", "mu_ov", "mu_qk", "alpha", "time", "tau")
                table.append({k: float(row[k]) for k in keys})
        published = {}
        for r, ref in PUBLISHED.items() if config.compare_published else ():
            rows = crossings[r]
            dev = [
                abs(self._at(rows, th)["alpha"] - a)
                for th, a in zip(TABLE_THRESHOLDS, ref["alpha"], strict=True)
            ]
            last = self._at(rows, 1e-4)
            dev += [abs(last["mu_ov"] - ref["mu_ov"]), abs(last["mu_qk"] - ref["mu_qk"])]
            published[r] = max(dev)
        final = [self._at(crossings[r], config.stop_loss) for r in config.ratios]
        crossed = all(np.isfinite(row["alpha"]) and np.isfinite(row["mu_ov"]) for row in final)
        a = [row["alpha"] for row in final]
        mu = [row["mu_ov"] for row in final]
        return {
            "crossings": table,
            "published_deviation": published,
            "final_alpha": a,
            "final_mu_ov": mu,
            "alpha_step": min(y - x for x, y in zip(a, a[1:], strict=False)),
            "ov_step": min(x - y for x, y in zip(mu, mu[1:], strict=False)),
            "n_thresholds": len(results["thresholds"]),
            "every_r_crossed": bool(crossed),
        }

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check(f"every r reached L = {config.stop_loss:g}", m["every_r_crossed"])]

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        out = [
            Claim.at_most(
                f"published-r{r:g}",
                f"r = {r:g}: α at L = 1 … 1e-4 and μ_OV, μ_QK at 1e-4 vs the authors' notebook "
                "output (arXiv 2608.06776 Fig. 4, 3 decimals); value: largest deviation",
                dev,
                PRINTED_HALF_UNIT,
            )
            for r, dev in m["published_deviation"].items()
        ]
        rs = ", ".join(f"{r:g}" for r in config.ratios)
        out.append(
            Claim.above(
                "alpha-increases-with-r",
                f"α at L = {config.stop_loss:g} for r = {rs}: "
                + ", ".join(f"{x:.3f}" for x in m["final_alpha"])
                + "; value: smallest increase between consecutive r",
                m["alpha_step"],
                0,
            )
        )
        out.append(
            Claim.above(
                "ov-decreases-with-r",
                f"μ_OV at L = {config.stop_loss:g} for r = {rs}: "
                + ", ".join(f"{x:.3f}" for x in m["final_mu_ov"])
                + "; value: smallest decrease between consecutive r",
                m["ov_step"],
                0,
            )
        )
        return out

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:

        fig, axes = new_figure(2, 4, figsize=(16, 7))
        for i, r in enumerate(config.ratios):
            traj = results["trajectories"][r]
            x = np.log10(1.0 + traj.time.values)
            colour = f"C{i}"
            for ax, name in zip(axes[0], ("mu_ov", "mu_qk", "loss", "alpha"), strict=True):
                ax.plot(x, traj[name].values, color=colour, label=f"r = {r:g}")
            rows = results["crossings"][r]
            th = np.array([row["loss"] for row in rows])
            for ax, name in zip(axes[1], ("mu_ov", "mu_qk", "alpha"), strict=False):
                ax.plot(th, [row[name] for row in rows], color=colour, label=f"r = {r:g}")
        for ax, name in zip(axes[0], ("μ_OV", "μ_QK", "loss", "α"), strict=True):
            ax.set_xlabel("log10(1 + t)")
            ax.set_title(f"{name}(t)")
            ax.set_ylabel(name)
        axes[0, 2].set_yscale("log")
        for ax, name in zip(axes[1], ("μ_OV", "μ_QK", "α"), strict=False):
            ax.set_xscale("log")
            ax.invert_xaxis()
            ax.set_xlabel("loss threshold")
            ax.set_title(f"{name} at the first crossing")
            ax.set_ylabel(f"{name} when the loss first crosses")
        axes[0, 0].legend(frameon=False, fontsize=8)
        ax = axes[1, 3]
        for i, r in enumerate(config.ratios):
            traj = results["trajectories"][r]
            ax.plot(traj["mu_ov"].values, traj["mu_qk"].values, color=f"C{i}")
        ax.set_xlabel("μ_OV")
        ax.set_ylabel("μ_QK")
        ax.set_title("path in (μ_OV, μ_QK)")
        fig.suptitle("Reduced QK/OV flow (arXiv 2608.06776 Fig. 4): m=5, n=50, b=50, M=20")
        fig.tight_layout()
        return save_figure(fig, path)
