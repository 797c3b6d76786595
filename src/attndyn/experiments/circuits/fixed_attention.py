"""``circuits-fixed-attention`` (arXiv 2608.06776, Fig. 3 and §5.3): attention frozen at mass α
on the distinct tokens, only the OV circuit trained, collapsed (W_P with bias) vs factorised
(W_P W_V); model: :mod:`attndyn.models.circuits.theory.fixed_attention` (docs/circuits-theory.md
§3). A fixed evaluation set records L^t(α) and the sensitivity (L^t(α) − L^t(α + δ))/δ, the
gradient "pressure" on attention that the current OV state exerts."""

from __future__ import annotations

import math
from itertools import product
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig, variant
from attndyn.claims.spec import Evidence, above, below, claim
from attndyn.claims.stats import Interval, mean_ci, worst
from attndyn.claims.verdict import Check
from attndyn.core.serial import json_safe
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.circuits.theory.fixed_attention import (
    FixedAttentionConfig,
    observable_name,
    stored_run,
)

OVS = ("collapsed", "factorised")
# the Fig. 3 notebooks' printed final losses (seed 1234, epoch 500; docs/circuits-theory.md §3)
PAPER_FINAL = {
    "collapsed": {0.2: 0.598, 0.4: 0.158, 0.6: 0.0645, 0.8: 0.0346, 1.0: 0.0216},
    "factorised": {0.2: 0.00379, 0.4: 0.00148, 0.6: 0.00089, 0.8: 0.00063, 1.0: 0.00049},
}
PAPER_LR_STEPS = 0.01 * 125_000  # the notebooks' lr × steps
# "an order of magnitude" and "decayed" (≈ 0): the digest's reading V7 of Fig. 3
ORDER_OF_MAGNITUDE = 0.1


class Config(ExperimentConfig):
    base: FixedAttentionConfig = Base(
        FixedAttentionConfig,
        "the Fig. 3 notebooks' runs: α ∈ {0.2, 0.4, 0.6, 0.8, 1}, SGD lr 1e-2 for 125 000 steps "
        "(500 epochs × 250) of 128 sequences, seq_len 64, 101 linear records, evaluation set "
        "32 768, δ = 0.005; `alphas` are the labels of the runs (increasing), `ov` is set per run",
    )
    seeds: int = Field(4, ge=2, description="seeds (a one-seed interval is infinite)")
    seed: int = Field(1234, ge=0, description="first seed (the notebooks': 1234)")
    rising_from: float = Field(
        0.9, gt=0, lt=1, description="'still rising': end vs this fraction of the run"
    )
    one_ov: Literal["collapsed", "factorised"] | None = Field(
        None,
        description="negative control: both runs use this OV circuit (the parameterisation "
        "made irrelevant, the null hypothesis of every comparison)",
    )
    attend_common: bool = Field(
        False,
        description="negative control: mass α on the common (irrelevant) tokens, i.e. the "
        "model trained at 1 − α on the relevant ones",
    )

    @model_validator(mode="after")
    def _increasing(self) -> Config:
        a = self.base.alphas
        if any(y <= x for x, y in zip(a, a[1:], strict=False)) or a[0] + self.base.delta > 1:
            raise ValueError(
                f"alphas: must increase strictly with alphas[0] + delta <= 1 (got {a})"
            )
        return self


def _highest(intervals: list[Interval]) -> Interval:
    """The interval reaching highest (an "every one below" claim passes only if it does)."""
    return intervals[worst(dict(enumerate(intervals)), "high")]


def _series(results: dict[str, Any], ov: str, name: str, alpha: float) -> np.ndarray:
    """The observable of the model labelled α per seed and record, [seed, time]."""
    return results["runs"][ov][observable_name(name, results["model_alpha"][alpha])].values


class CircuitsFixedAttention(Experiment):
    name = "circuits-fixed-attention"
    description = (
        "arXiv 2608.06776 Fig. 3: attention fixed at α, OV trained; collapsed OV keeps a larger "
        "loss and attention sensitivity than factorised OV"
    )
    Config = Config
    presets = {
        "tiny": {
            "base.alphas": [0.2, 0.6],
            "base.lr": 1.0,
            "base.t_max": 1000,
            "base.batch": 32,
            "base.records": 21,
            "base.eval_size": 512,
        },
        "small": {"base.lr": 0.1, "base.t_max": 10_000, "base.records": 41, "base.eval_size": 8192},
        "paper": {},
    }
    preset_notes = {
        "tiny": "lr × steps = 1000, as small: every claim, with one consecutive pair of α for "
        "monotonicity.",
        "small": "the five α, lr × steps = 1000 (400 of the notebooks' 500 epochs). Tiny and small "
        "reach the same gradient-flow time, so they test the same late-time shapes; neither can "
        "speak to the notebooks' exact numbers (different lr, batch and evaluation set).",
        "paper": "the notebooks' setting; the only preset that reports `notebook_deviation`.",
    }
    controls = {
        "all-collapsed": Control(
            {"one_ov": "collapsed"},
            "both runs train a collapsed OV (W_P with bias): the theory in which the OV "
            "parameterisation does not matter. The comparisons then have no difference to find "
            "and the run read as factorised keeps the collapsed run's rising sensitivity",
        ),
        "all-factorised": Control(
            {"one_ov": "factorised"},
            "both runs train a factorised OV (W_P W_V): the run read as collapsed then has the "
            "factorised run's sensitivity, which peaks early and decays",
        ),
        "attention-on-common": Control(
            {"attend_common": True},
            "the mass α sits on the common (uninformative) tokens, so a larger α takes attention "
            "off the relevant ones (the model runs at 1 − α on them): the loss must rise with α",
        ),
    }
    claims = (
        claim(
            "collapsed-loss-larger-at-small-alpha",
            "at the smallest α, a collapsed OV keeps a larger final loss than a factorised OV",
            statistic="per seed L_coll − L_fact of the final test loss at the smallest α (runs "
            "paired by seed); seed mean (Student-t 95 % CI)",
            target=above(0.0),
            reason="the paper's statement is an ordering (collapsed OV keeps a larger loss)",
            controls=("all-collapsed",),
        ),
        claim(
            "collapsed-sensitivity-larger-at-small-alpha",
            "at the smallest α, a collapsed OV keeps a larger final sensitivity "
            "(L(α) − L(α+δ))/δ than a factorised OV",
            statistic="per seed S_coll − S_fact of the final sensitivity at the smallest α "
            "(paired by seed); seed mean (Student-t 95 % CI)",
            target=above(0.0),
            reason="an ordering (collapsed OV keeps the pressure on attention)",
            controls=("all-collapsed",),
        ),
        claim(
            "final-loss-decreasing-in-alpha-{}",
            "{} OV: the final loss decreases with α at every consecutive pair of α",
            statistic="per seed log(L(α_{i+1})/L(α_i)) per consecutive pair; value: the pair "
            "whose seed-mean interval reaches highest, mapped to a ratio (geometric seed mean)",
            target=below(1.0),
            reason="an ordering (more attention on the relevant tokens, lower loss); each pair "
            "has its own interval and all must clear the target (an intersection–union test, no "
            "multiplicity correction needed)",
            controls=("attention-on-common",),
            over=lambda _: OVS,
            weak=(
                "listed weak by issue 49's referee (a wrong model passes it); not yet re-examined"
            ),
        ),
        claim(
            "factorised-loss-below-tenth-of-collapsed",
            "at every α, a factorised OV ends at a final loss an order of magnitude below a "
            "collapsed OV's",
            statistic="per seed log(L_fact/L_coll) per α; value: the α whose seed-mean interval "
            "reaches highest, mapped to a ratio (geometric seed mean)",
            target=below(ORDER_OF_MAGNITUDE),
            reason='"far lower" read as one order of magnitude (the digest\'s reading V7); the '
            "notebooks' printed ratios are 0.006–0.023, so the target is the weakest reading of "
            "the figure, not a fit to our values",
            controls=("all-collapsed",),
        ),
        claim(
            "collapsed-sensitivity-still-rising",
            "collapsed OV at the smallest α: the sensitivity still rises at the end of the run",
            statistic="per seed S_coll(end) − S_coll at `rising_from` of the run, smallest α; "
            "seed mean (Student-t 95 % CI)",
            target=above(0.0),
            reason="Fig. 3: the collapsed α = 0.2 curve still rises at epoch 500 (a sign)",
            controls=("all-factorised",),
        ),
        claim(
            "factorised-sensitivity-decayed",
            "factorised OV at the smallest α: the sensitivity has decayed from its early peak",
            statistic="per seed S_fact(end) / max_t S_fact, smallest α; seed mean (Student-t "
            "95 % CI)",
            target=below(ORDER_OF_MAGNITUDE),
            reason='Fig. 3: the factorised curve "falls to ≈ 0" after its early peak; 10 % of '
            'the peak is the reading V7 of "≈ 0"',
            controls=("all-collapsed",),
        ),
    )
    notes = """\
Seeds: the collapsed and factorised runs of one seed share the training batches and the fixed
evaluation set, so the comparisons are paired by seed.

Precondition: no seed of either run diverged (the trainer freezes a diverged seed at its last
finite state); otherwise the outcome is invalid.

Under `attention-on-common` the recorded sensitivity keeps the model's direction (towards more
mass on the relevant tokens), so only the two `final-loss-decreasing-in-alpha-*` claims are read
under it; monotonicity in α holds for both parameterisations, so `all-collapsed` and
`all-factorised` do not fail them. Under `all-collapsed` the two runs are the same run (same
seeds, same batches), so the paired differences are 0 and the ratio 1: the null hypothesis of
the comparisons, failed by value; `all-factorised` is named only where its run differs from
the claim's (`collapsed-sensitivity-still-rising`). These replace the former label swap
(`swapped-ov`), which read the same runs under exchanged names.

**Seeds re-drawn (tiny, the default `seed` 1234 / `--seed 1000` / `--seed 2000`, 4 seeds,
2026-12-03).** `collapsed-loss-larger-at-small-alpha` 0.698 [0.695, 0.701] / 0.695 [0.690, 0.701]
/ 0.697 [0.692, 0.701]; `collapsed-sensitivity-larger-at-small-alpha` 2.424 [2.419, 2.430] /
2.426 [2.420, 2.431] / 2.421 [2.414, 2.428]; `final-loss-decreasing-in-alpha-collapsed` 0.1186
[0.1181, 0.1191] / 0.1190 [0.1184, 0.1197] / 0.1188 [0.1182, 0.1194];
`final-loss-decreasing-in-alpha-factorised` 0.226 [0.223, 0.229] / 0.224 [0.223, 0.225] / 0.225
[0.223, 0.227]; `factorised-loss-below-tenth-of-collapsed` 0.01466 [0.01463, 0.01470] / 0.01455
[0.01429, 0.01482] / 0.01473 [0.01449, 0.01498]; `collapsed-sensitivity-still-rising` 0.106
[0.091, 0.121] / 0.104 [0.102, 0.107] / 0.104 [0.101, 0.108]; `factorised-sensitivity-decayed`
0.0540 [0.0519, 0.0562] / 0.0544 [0.0517, 0.0571] / 0.0545 [0.0522, 0.0567].

**Not a claim: the notebooks' printed final losses.** At the notebooks' lr × steps only (paper
preset), the summary reports `notebook_deviation`: the first seed's (1234) largest relative
deviation from them, beside the largest relative seed-to-seed standard deviation. The paper run
deviated by 5.1 % against a seed spread < 2 % (0.07 % collapsed, ≤ 1.7 % factorised at small;
docs/circuits-theory.md §3): the notebooks' fresh evaluation batches and random stream differ
from ours, which a seed-spread tolerance cannot cover, so it is reported, not claimed.
"""

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        # attend_common: the model labelled α runs at 1 − α on the relevant tokens
        model_alpha = {a: 1.0 - a if config.attend_common else a for a in config.base.alphas}
        alphas = list(model_alpha.values())
        trained = {ov: config.one_ov or ov for ov in OVS}  # one_ov: the negative control
        runs = {
            ov: stored_run(variant(config.base, alphas=alphas, ov=trained[ov]), ctx) for ov in OVS
        }
        return {"runs": runs, "model_alpha": model_alpha}

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        alphas, a0 = list(config.base.alphas), config.base.alphas[0]
        final = {  # per seed
            (ov, name, a): _series(results, ov, name, a)[:, -1]
            for ov in OVS
            for name in ("loss", "sensitivity", "accuracy")
            for a in alphas
        }
        m: dict[str, Any] = {"final": final, "table": {}}
        m["sensitivity_a0"] = {ov: _series(results, ov, "sensitivity", a0) for ov in OVS}
        devs, spread = [], []  # the first seed vs the notebooks' printed losses; seed spread
        for ov in OVS:
            steps = results["runs"][ov]["step"].values
            m["table"][ov] = []
            for a in alphas:
                sens = _series(results, ov, "sensitivity", a).mean(axis=0)
                k = int(np.argmax(sens))
                loss, paper = final[(ov, "loss", a)], PAPER_FINAL[ov].get(round(a, 6))
                spread.append(float(loss.std(ddof=1) / loss.mean()))
                if paper is not None:
                    devs.append(abs(float(loss[0]) / paper - 1))
                m["table"][ov].append(
                    {
                        "alpha": a,
                        "final_loss": float(loss.mean()),
                        "final_loss_seed_rel_sd": spread[-1],
                        "final_sensitivity": float(final[(ov, "sensitivity", a)].mean()),
                        "peak_sensitivity": float(sens[k]),
                        "peak_step": int(steps[k]),
                        "final_accuracy": float(final[(ov, "accuracy", a)].mean()),
                        "paper_final_loss": paper,
                    }
                )
        at_paper = abs(config.base.lr * config.base.t_max - PAPER_LR_STEPS) <= 1e-9
        m["notebook_deviation"] = (
            {"seed": config.seed, "deviation": max(devs), "seed_rel_sd": max(spread)}
            if at_paper and devs
            else None
        )
        m["diverged"] = int(sum(int(results["runs"][ov]["diverged"].sum()) for ov in OVS))
        return m

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check.compare("seeds diverged (both runs)", m["diverged"], "==", 0)]

    def evaluate(self, config: Config, m: dict[str, Any]) -> dict[str, Any]:
        alphas, a0, final = config.base.alphas, config.base.alphas[0], m["final"]
        out: dict[str, Any] = {}
        for name in ("loss", "sensitivity"):
            c, f = final[("collapsed", name, a0)], final[("factorised", name, a0)]
            out[f"collapsed-{name}-larger-at-small-alpha"] = Evidence(
                mean_ci(c - f),
                detail=f"α = {a0:g}: final {name} collapsed {float(c.mean()):.4g} vs factorised "
                f"{float(f.mean()):.4g} (seed means)",
            )
        for ov in OVS:  # geometric seed means of the ratios of consecutive α
            steps = [
                mean_ci(np.log(final[(ov, "loss", y)] / final[(ov, "loss", x)]))
                for x, y in zip(alphas, alphas[1:], strict=False)
            ]
            losses = ", ".join(f"{row['final_loss']:.3g}" for row in m["table"][ov])
            out[f"final-loss-decreasing-in-alpha-{ov}"] = Evidence(
                _highest(steps).map(math.exp),
                detail=f"final loss at α = {', '.join(f'{a:g}' for a in alphas)}: {losses}",
            )
        ratios = [
            mean_ci(np.log(final[("factorised", "loss", a)] / final[("collapsed", "loss", a)]))
            for a in alphas
        ]
        out["factorised-loss-below-tenth-of-collapsed"] = Evidence(
            _highest(ratios).map(math.exp),
            detail="factorised/collapsed per α (geometric seed means): "
            + ", ".join(f"{math.exp(r.value):.3g}" for r in ratios),
        )
        sens = m["sensitivity_a0"]["collapsed"]
        i = int(round(config.rising_from * (sens.shape[1] - 1)))
        out["collapsed-sensitivity-still-rising"] = Evidence(
            mean_ci(sens[:, -1] - sens[:, i]),
            detail=f"α = {a0:g}: at the end {float(sens[:, -1].mean()):.3g}, at "
            f"{config.rising_from:.0%} of the run {float(sens[:, i].mean()):.3g} (seed means)",
        )
        sens = m["sensitivity_a0"]["factorised"]
        peak = sens.max(axis=1)
        out["factorised-sensitivity-decayed"] = Evidence(
            mean_ci(np.where(peak > 0, sens[:, -1] / np.where(peak > 0, peak, 1), np.nan)),
            detail=f"α = {a0:g}: at the end {float(sens[:, -1].mean()):.3g}, peak "
            f"{float(peak.mean()):.3g} (seed means)",
        )
        return out

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        return json_safe({**m["table"], "notebook_deviation": m["notebook_deviation"]})

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        base = config.base
        fig, axes = new_figure(2, 2, figsize=(11, 7.5), sharex=True)
        for col, ov in enumerate(OVS):
            t = results["runs"][ov]["step"].values * base.lr / (0.01 * 250)  # notebook epochs
            for (row, name), (i, a) in product(
                enumerate(("loss", "sensitivity")), enumerate(base.alphas)
            ):
                y = _series(results, ov, name, a).mean(axis=0)
                axes[row, col].plot(t, y, color=f"C{i}", label=f"α = {a:g}")
            axes[0, col].set_yscale("log")
            axes[0, col].set_title(f"{ov} OV: loss L^t(α), mean of {config.seeds} seeds")
            axes[1, col].set_title(f"{ov} OV: (L^t(α) − L^t(α+δ))/δ, δ = {base.delta:g}")
            for ax in axes[:, col]:
                ax.set_xlabel("epochs at lr 1e-2 (250 steps each) of the same lr × steps")
            axes[0, col].set_ylabel("test loss L^t(α)")
            axes[1, col].set_ylabel("sensitivity (L^t(α) − L^t(α+δ))/δ")
        axes[0, 0].legend(frameon=False, fontsize=8)
        fig.suptitle(
            f"Fixed attention (arXiv 2608.06776 Fig. 3): lr {base.lr:g}, {base.t_max:g} steps"
        )
        fig.tight_layout()
        return save_figure(fig, path)
