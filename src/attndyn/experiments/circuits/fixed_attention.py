"""``circuits-fixed-attention`` (arXiv 2608.06776, Fig. 3 and §5.3): attention frozen at mass α
on the distinct tokens, only the OV circuit trained, collapsed (W_P with bias) vs factorised
(W_P W_V).

The model and the reading of the authors' notebooks are in
:mod:`attndyn.models.circuits.theory.fixed_attention` (docs/circuits-theory.md §3). Recorded on a
fixed evaluation set: L^t(α) and the sensitivity (L^t(α) − L^t(α + δ))/δ, the gradient
"pressure" on attention that the current OV state exerts. The claims, controls and presets are
declared on :class:`CircuitsFixedAttention` (docs/claims/circuits-fixed-attention.md is generated
from them).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims import (
    Base,
    Check,
    Control,
    Evidence,
    Experiment,
    ExperimentConfig,
    Interval,
    RunContext,
    above,
    below,
    claim,
    mean_ci,
    variant,
    worst,
)
from attndyn.core.serial import json_safe
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.circuits.theory.fixed_attention import FixedAttentionConfig

OVS = ("collapsed", "factorised")
# the Fig. 3 notebooks' printed final losses (seed 1234, epoch 500; docs/circuits-theory.md §3)
PAPER_FINAL = {
    "collapsed": {0.2: 0.598, 0.4: 0.158, 0.6: 0.0645, 0.8: 0.0346, 1.0: 0.0216},
    "factorised": {0.2: 0.00379, 0.4: 0.00148, 0.6: 0.00089, 0.8: 0.00063, 1.0: 0.00049},
}
PAPER_LR_STEPS = 0.01 * 125_000  # the notebooks' lr × steps
# "an order of magnitude" (factorised OV drives the loss far lower; the notebooks' ratios are
# 0.006–0.023) and "decayed" (the factorised sensitivity falls to ≈ 0 from its peak): the
# digest's reading V7 of Fig. 3
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
    swap_ov: bool = Field(
        False, description="negative control: the collapsed and factorised labels exchanged"
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


def _model_alpha(config: Config, alpha: float) -> float:
    """The mass on the relevant tokens of the model labelled α (1 − α under ``attend_common``)."""
    return 1.0 - alpha if config.attend_common else alpha


def _worst(intervals: list[Interval]) -> Interval:
    """The interval whose upper end is highest (for an "every one below" claim: it passes only
    if all of them do)."""
    return intervals[worst(dict(enumerate(intervals)), "high")]


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
        "tiny": "α ∈ {0.2, 0.6}, SGD lr 1 for 1000 steps of 32 sequences (lr × steps = 1000, as "
        "small), evaluation set 512, 21 records, 4 seeds: every claim, with one consecutive pair "
        "of α for monotonicity.",
        "small": "the five α, lr 0.1 × 10 000 steps (lr × steps = 1000: 400 of the notebooks' "
        "500 epochs), batch 128, evaluation set 8192, 4 seeds. Tiny and small reach the same "
        "gradient-flow time, so they test the same late-time shapes; neither can speak to the "
        "notebooks' exact numbers (different lr, batch and evaluation set).",
        "paper": "the notebooks' setting (lr 1e-2 × 125 000 steps, evaluation set 32 768), 4 "
        "seeds; the only preset that reports `notebook_deviation`.",
    }
    controls = {
        "swapped-ov": Control(
            {"swap_ov": True},
            "the collapsed and factorised runs' labels exchanged (the same runs, reused): the "
            "comparisons and the sensitivity shapes are attributed to the wrong parameterisation",
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
            controls=("swapped-ov",),
        ),
        claim(
            "collapsed-sensitivity-larger-at-small-alpha",
            "at the smallest α, a collapsed OV keeps a larger final sensitivity "
            "(L(α) − L(α+δ))/δ than a factorised OV",
            statistic="per seed S_coll − S_fact of the final sensitivity at the smallest α "
            "(paired by seed); seed mean (Student-t 95 % CI)",
            target=above(0.0),
            reason="an ordering (collapsed OV keeps the pressure on attention)",
            controls=("swapped-ov",),
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
            controls=("swapped-ov",),
        ),
        claim(
            "collapsed-sensitivity-still-rising",
            "collapsed OV at the smallest α: the sensitivity still rises at the end of the run",
            statistic="per seed S_coll(end) − S_coll at `rising_from` of the run, smallest α; "
            "seed mean (Student-t 95 % CI)",
            target=above(0.0),
            reason="Fig. 3: the collapsed α = 0.2 curve still rises at epoch 500 (a sign)",
            controls=("swapped-ov",),
        ),
        claim(
            "factorised-sensitivity-decayed",
            "factorised OV at the smallest α: the sensitivity has decayed from its early peak",
            statistic="per seed S_fact(end) / max_t S_fact, smallest α; seed mean (Student-t "
            "95 % CI)",
            target=below(ORDER_OF_MAGNITUDE),
            reason='Fig. 3: the factorised curve "falls to ≈ 0" after its early peak; 10 % of '
            'the peak is the reading V7 of "≈ 0"',
            controls=("swapped-ov",),
        ),
    )
    notes = """\
Seeds: the collapsed and factorised runs of one seed share the training batches and the fixed
evaluation set, so the comparisons are paired by seed.

Precondition: no seed of either run diverged (the trainer freezes a diverged seed at its last
finite state); otherwise the outcome is invalid.

Under `attention-on-common` the recorded sensitivity keeps the model's direction (towards more
mass on the relevant tokens), so only the two `final-loss-decreasing-in-alpha-*` claims are read
under it; monotonicity in α holds for both parameterisations, so `swapped-ov` does not fail them.

**Not a claim: the notebooks' printed final losses.** At the notebooks' lr × steps only (paper
preset), the summary reports `notebook_deviation`: the largest relative deviation of the first
seed's (seed 1234) final losses from the notebooks' printed ones, with the largest relative
seed-to-seed standard deviation beside it. The measured seed-to-seed spread is < 2 % (0.07 % for
collapsed, ≤ 1.7 % for factorised at the small preset), while the paper run deviated by 5.1 %
(docs/circuits-theory.md §3): the difference is the notebooks' fresh evaluation batches and their
random stream, which a seed-spread tolerance cannot cover, so it is reported, not claimed.
"""

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        from attndyn.models.circuits.theory.fixed_attention import stored_run

        alphas = [_model_alpha(config, a) for a in config.base.alphas]
        runs = {ov: stored_run(variant(config.base, alphas=alphas, ov=ov), ctx) for ov in OVS}
        if config.swap_ov:
            runs = {"collapsed": runs["factorised"], "factorised": runs["collapsed"]}
        return {
            "runs": runs,
            "model_alpha": {a: _model_alpha(config, a) for a in config.base.alphas},
        }

    @staticmethod
    def _series(results, ov: str, name: str, alpha: float) -> np.ndarray:
        """The observable of the model labelled α per seed and record, [seed, time]."""
        from attndyn.models.circuits.theory.fixed_attention import observable_name

        return results["runs"][ov][observable_name(name, results["model_alpha"][alpha])].values

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        alphas = list(config.base.alphas)
        a0 = alphas[0]
        final = {
            (ov, name, a): self._series(results, ov, name, a)[:, -1]
            for ov in OVS
            for name in ("loss", "sensitivity", "accuracy")
            for a in alphas
        }
        m: dict[str, Any] = {"table": {}}
        for ov in OVS:
            steps = results["runs"][ov]["step"].values
            rows = []
            for a in alphas:
                sens = self._series(results, ov, "sensitivity", a).mean(axis=0)
                k = int(np.argmax(sens))
                loss = final[(ov, "loss", a)]
                rows.append(
                    {
                        "alpha": a,
                        "final_loss": float(loss.mean()),
                        "final_loss_seed_rel_sd": float(loss.std(ddof=1) / loss.mean()),
                        "final_sensitivity": float(final[(ov, "sensitivity", a)].mean()),
                        "peak_sensitivity": float(sens[k]),
                        "peak_step": int(steps[k]),
                        "final_accuracy": float(final[(ov, "accuracy", a)].mean()),
                        "paper_final_loss": PAPER_FINAL[ov].get(round(a, 6)),
                    }
                )
            m["table"][ov] = rows
            m[f"loss_step_{ov}"] = _worst(
                [
                    mean_ci(np.log(final[(ov, "loss", y)] / final[(ov, "loss", x)]))
                    for x, y in zip(alphas, alphas[1:], strict=False)
                ]
            ).map(math.exp)
        for name in ("loss", "sensitivity"):
            c, f = final[("collapsed", name, a0)], final[("factorised", name, a0)]
            m[f"{name}_difference"] = mean_ci(c - f)
            m[f"{name}_small_alpha"] = {"collapsed": float(c.mean()), "factorised": float(f.mean())}
        log_ratios = [
            mean_ci(np.log(final[("factorised", "loss", a)] / final[("collapsed", "loss", a)]))
            for a in alphas
        ]
        m["loss_ratios"] = [math.exp(x.value) for x in log_ratios]
        m["loss_ratio_worst"] = _worst(log_ratios).map(math.exp)
        sens = self._series(results, "collapsed", "sensitivity", a0)
        i = int(round(config.rising_from * (sens.shape[1] - 1)))
        m["collapsed_rise"] = mean_ci(sens[:, -1] - sens[:, i])
        m["collapsed_rise_ends"] = {
            "end": float(sens[:, -1].mean()),
            "before": float(sens[:, i].mean()),
        }
        sens = self._series(results, "factorised", "sensitivity", a0)
        peak = sens.max(axis=1)
        m["factorised_decay"] = mean_ci(
            np.where(peak > 0, sens[:, -1] / np.where(peak > 0, peak, 1), np.nan)
        )
        m["factorised_decay_ends"] = {
            "end": float(sens[:, -1].mean()),
            "peak": float(peak.mean()),
        }
        m["notebook_deviation"] = self._notebook_deviation(config, results)
        m["diverged"] = int(sum(int(results["runs"][ov]["diverged"].sum()) for ov in OVS))
        return m

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        return [Check.compare("seeds diverged (both runs)", m["diverged"], "==", 0)]

    def _notebook_deviation(self, config: Config, results) -> dict[str, Any] | None:
        """Largest relative deviation of the first seed's final losses from the notebooks'
        (a measurement), at the notebooks' lr × steps only (None elsewhere), with the largest
        relative seed-to-seed standard deviation of the same losses beside it."""
        if abs(config.base.lr * config.base.t_max - PAPER_LR_STEPS) > 1e-9:
            return None
        devs, spread = [], []
        for ov in OVS:
            for a in config.base.alphas:
                ref = PAPER_FINAL[ov].get(round(a, 6))
                loss = self._series(results, ov, "loss", a)[:, -1]
                spread.append(float(loss.std(ddof=1) / loss.mean()))
                if ref is not None:
                    devs.append(abs(float(loss[0]) / ref - 1))
        if not devs:
            return None
        return {"seed": config.seed, "deviation": max(devs), "seed_rel_sd": max(spread)}

    def evaluate(self, config: Config, m: dict[str, Any]) -> dict[str, Any]:
        alphas = config.base.alphas
        a0 = alphas[0]
        out: dict[str, Any] = {}
        for name, label in (("loss", "final loss"), ("sensitivity", "final sensitivity")):
            x = m[f"{name}_small_alpha"]
            out[f"collapsed-{name}-larger-at-small-alpha"] = Evidence(
                m[f"{name}_difference"],
                detail=f"α = {a0:g}: {label} collapsed {x['collapsed']:.4g} vs factorised "
                f"{x['factorised']:.4g} (seed means)",
            )
        for ov in OVS:
            losses = ", ".join(f"{row['final_loss']:.3g}" for row in m["table"][ov])
            out[f"final-loss-decreasing-in-alpha-{ov}"] = Evidence(
                m[f"loss_step_{ov}"],
                detail=f"final loss at α = {', '.join(f'{a:g}' for a in alphas)}: {losses}",
            )
        out["factorised-loss-below-tenth-of-collapsed"] = Evidence(
            m["loss_ratio_worst"],
            detail="factorised/collapsed per α (geometric seed means): "
            + ", ".join(f"{r:.3g}" for r in m["loss_ratios"]),
        )
        ends = m["collapsed_rise_ends"]
        out["collapsed-sensitivity-still-rising"] = Evidence(
            m["collapsed_rise"],
            detail=f"α = {a0:g}: at the end {ends['end']:.3g}, at {config.rising_from:.0%} of "
            f"the run {ends['before']:.3g} (seed means)",
        )
        ends = m["factorised_decay_ends"]
        out["factorised-sensitivity-decayed"] = Evidence(
            m["factorised_decay"],
            detail=f"α = {a0:g}: at the end {ends['end']:.3g}, peak {ends['peak']:.3g} (seed "
            "means)",
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
            steps = results["runs"][ov]["step"].values
            t = steps * base.lr / (0.01 * 250)  # notebook epochs of the same lr × steps
            for i, a in enumerate(base.alphas):
                loss = self._series(results, ov, "loss", a).mean(axis=0)
                sens = self._series(results, ov, "sensitivity", a).mean(axis=0)
                axes[0, col].plot(t, loss, color=f"C{i}", label=f"α = {a:g}")
                axes[1, col].plot(t, sens, color=f"C{i}")
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
