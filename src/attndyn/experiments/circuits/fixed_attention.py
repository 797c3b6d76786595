"""``circuits-fixed-attention`` (arXiv 2608.06776, Fig. 3; digest qkov.md §6 "Fixed-attention
sensitivity", §7 Fig 3, validation target V7): attention frozen at mass α on the distinct tokens,
only the OV circuit trained, collapsed (W_P with bias) vs factorised (W_P W_V).

The model and the reading of the notebooks are in
:mod:`attndyn.models.circuits.theory.fixed_attention`. Recorded on a fixed evaluation set:
L^t(α) and the sensitivity (L^t(α) − L^t(α + δ))/δ, δ = 0.005, the gradient "pressure" on
attention that the current OV state exerts. The paper's explanation (§5.3): a factorised OV's
effective learning rate grows with |W_OV|, so it drives the loss (and with it the pressure on
attention) down quickly at any α, while a collapsed OV keeps the pressure on — which is why
collapsed OV ends with sharper attention when attention is trained.

Claims (the issue's, and V7 of the digest):

- ``collapsed-loss-larger-at-small-alpha``: at the smallest α, the final L^t(α) of the collapsed
  OV over that of the factorised OV (> 1);
- ``collapsed-sensitivity-larger-at-small-alpha``: the same ratio for the final sensitivity (> 1);
- ``final-loss-decreasing-in-alpha-<ov>`` (V7): the final loss decreases strictly in α; value:
  the largest ratio L(α_{i+1})/L(α_i) (< 1);
- ``factorised-loss-below-tenth-of-collapsed`` (V7): max over α of L_fact/L_coll (< 0.1);
- ``collapsed-sensitivity-still-rising`` (V7): at the smallest α, the collapsed sensitivity at
  the end minus its value at 90 % of the run (> 0);
- ``factorised-sensitivity-decayed`` (V7): at the smallest α, the factorised sensitivity at the
  end over its peak over the run (< 0.1);
- ``final-losses-match-notebook`` (only when lr × steps is the notebooks' 1e-2 × 125 000): the
  final L(α) of both parameterisations against the notebooks' printed values (qkov.md §7);
  value: the largest relative deviation, target < 0.1 (measured 0.051; the notebooks are one
  seed with fresh evaluation data, ours one seed on a fixed evaluation set).

Presets:

- ``paper``: the notebooks' setting: SGD lr 1e-2, 500 epochs × 250 steps = 125 000 steps of 128
  sequences (4 classes × 32), seq_len 64, α ∈ {0.2, 0.4, 0.6, 0.8, 1}, seed 1234, 101 records
  (every 5 epochs), evaluation set 32 768 sequences (the notebooks: 128 000 fresh ones per
  record). Measured: 9.1 minutes wall on two cores shared with other jobs (43 % of a core on
  average, 1.1 GB peak memory); all 8 claims pass. Final losses: collapsed 0.598, 0.158, 0.0644,
  0.0345, 0.0215 (notebook 0.598, 0.158, 0.0645, 0.0346, 0.0216), factorised 0.00382, 0.00149,
  0.000909, 0.000598, 0.000474 (notebook 0.00379, 0.00148, 0.00089, 0.00063, 0.00049); the
  factorised α = 0.2 sensitivity peaks at 2.77 at epoch 60 and ends at 4 % of it; the collapsed
  one is still rising at 2.73.
- ``small``: lr 0.1 for 10 000 steps: the same gradient-flow time (lr × steps = 1000) as 400 of
  the notebook's 500 epochs, with 10× fewer steps (more SGD noise per unit time); evaluation set
  8192, 41 records. Measured: ≈ 60 s on two cores shared with other jobs (load ≈ 8), all claims
  pass; its final losses (collapsed 0.70 … 0.027, factorised 0.0053 … 0.0006 at α = 0.2 … 1)
  are close to Fig. 3's at epoch 500 (0.598 … 0.0216 and 0.0038 … 0.0005).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from attndyn.experiments.base import Claim, Experiment, ExperimentConfig, RunContext
from attndyn.report.figures import save_figure

OVS = ("collapsed", "factorised")
# qkov.md §7 Fig 3 (notebook output, seed 1234, epoch 500)
PAPER_FINAL = {
    "collapsed": {0.2: 0.598, 0.4: 0.158, 0.6: 0.0645, 0.8: 0.0346, 1.0: 0.0216},
    "factorised": {0.2: 0.00379, 0.4: 0.00148, 0.6: 0.00089, 0.8: 0.00063, 1.0: 0.00049},
}


class Config(ExperimentConfig):
    alphas: list[float] = Field(
        [0.2, 0.4, 0.6, 0.8, 1.0], min_length=2, description="fixed attention masses (increasing)"
    )
    lr: float = Field(1e-2, gt=0, description="SGD step size")
    steps: int = Field(125_000, ge=10, description="SGD steps (500 epochs × 250)")
    batch: int = Field(128, ge=1, description="sequences per step (notebook: 4 classes × 32)")
    seq_len: int = Field(64, ge=3)
    records: int = Field(101, ge=11, description="linear record points")
    eval_size: int = Field(32_768, ge=64, description="fixed evaluation sequences")
    delta: float = Field(0.005, gt=0, lt=1)
    seeds: int = Field(1, ge=1)
    seed: int = Field(1234, ge=0)
    query_in_common: bool = Field(True, description="see fixed_attention (notebook reading)")
    dtype: Literal["float32", "float64"] = Field("float32")
    rising_from: float = Field(
        0.9, gt=0, lt=1, description="'still rising': end vs this fraction of the run"
    )
    decay_fraction: float = Field(0.1, gt=0, lt=1, description="V7: end/peak below this")
    loss_ratio_max: float = Field(0.1, gt=0, description="V7: L_fact/L_coll below this")
    notebook_tol: float = Field(
        0.1,
        gt=0,
        description="relative deviation allowed from the notebooks' final losses (paper "
        "setting only; measured 0.051)",
    )


def _run_config(config: Config, ov: str):
    from attndyn.models.circuits.theory.fixed_attention import FixedAttentionConfig

    return FixedAttentionConfig(
        alphas=config.alphas,
        ov=ov,
        lr=config.lr,
        t_max=config.steps,
        batch=config.batch,
        seq_len=config.seq_len,
        records=config.records,
        grid="linear",
        eval_size=config.eval_size,
        delta=config.delta,
        seeds=config.seeds,
        seed=config.seed,
        query_in_common=config.query_in_common,
        dtype=config.dtype,
    )


class CircuitsFixedAttention(Experiment):
    name = "circuits-fixed-attention"
    description = (
        "arXiv 2608.06776 Fig. 3: attention fixed at α, OV trained; collapsed OV keeps a larger "
        "loss and attention sensitivity than factorised OV"
    )
    Config = Config
    presets = {
        "small": {"lr": 0.1, "steps": 10_000, "records": 41, "eval_size": 8192},
        "paper": {},
    }

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        from attndyn.models.circuits.theory.fixed_attention import stored_run

        runs = {ov: stored_run(_run_config(config, ov), ctx) for ov in OVS}
        return {"config": config, "runs": runs}

    @staticmethod
    def _series(results, ov: str, name: str, alpha: float) -> np.ndarray:
        from attndyn.models.circuits.theory.fixed_attention import observable_name

        return results["runs"][ov][observable_name(name, alpha)].mean("seed").values

    def _final(self, results, ov, name, alpha) -> float:
        return float(self._series(results, ov, name, alpha)[-1])

    def claims(self, results: dict[str, Any]) -> list[Claim]:
        config = results["config"]
        a0 = min(config.alphas)
        alphas = sorted(config.alphas)
        out = []
        for name, label in (("loss", "final loss"), ("sensitivity", "final sensitivity")):
            c = self._final(results, "collapsed", name, a0)
            f = self._final(results, "factorised", name, a0)
            out.append(
                Claim(
                    f"collapsed-{name}-larger-at-small-alpha",
                    f"α = {a0:g}: {label} collapsed {c:.4g} vs factorised {f:.4g} (value: ratio)",
                    c / f if f > 0 else float("inf"),
                    "> 1",
                    c > f,
                )
            )
        for ov in OVS:
            final = [self._final(results, ov, "loss", a) for a in alphas]
            worst = max(y / x for x, y in zip(final, final[1:], strict=False))
            out.append(
                Claim(
                    f"final-loss-decreasing-in-alpha-{ov}",
                    f"{ov} OV: final loss at α = "
                    + ", ".join(f"{a:g}" for a in alphas)
                    + ": "
                    + ", ".join(f"{x:.3g}" for x in final)
                    + "; value: largest L(α_next)/L(α)",
                    worst,
                    "< 1",
                    worst < 1,
                )
            )
        ratios = [
            self._final(results, "factorised", "loss", a)
            / self._final(results, "collapsed", "loss", a)
            for a in alphas
        ]
        out.append(
            Claim(
                "factorised-loss-below-tenth-of-collapsed",
                "final loss factorised/collapsed per α: "
                + ", ".join(f"{r:.3g}" for r in ratios)
                + "; value: the largest",
                max(ratios),
                f"< {config.loss_ratio_max:g}",
                max(ratios) < config.loss_ratio_max,
            )
        )
        sens = self._series(results, "collapsed", "sensitivity", a0)
        i = int(round(config.rising_from * (len(sens) - 1)))
        rise = float(sens[-1] - sens[i])
        out.append(
            Claim(
                "collapsed-sensitivity-still-rising",
                f"collapsed OV, α = {a0:g}: sensitivity at the end ({sens[-1]:.3g}) minus at "
                f"{config.rising_from:.0%} of the run ({sens[i]:.3g})",
                rise,
                "> 0",
                rise > 0,
            )
        )
        sens = self._series(results, "factorised", "sensitivity", a0)
        peak = float(np.max(sens))
        frac = float(sens[-1]) / peak if peak > 0 else float("nan")
        out.append(
            Claim(
                "factorised-sensitivity-decayed",
                f"factorised OV, α = {a0:g}: sensitivity at the end ({sens[-1]:.3g}) over its "
                f"peak ({peak:.3g})",
                frac,
                f"< {config.decay_fraction:g}",
                bool(frac < config.decay_fraction),
            )
        )
        return out + self._notebook_claim(results)

    def _notebook_claim(self, results: dict[str, Any]) -> list[Claim]:
        """Final losses vs the notebooks' (qkov.md §7), only at the notebooks' lr × steps."""
        config = results["config"]
        if abs(config.lr * config.steps - 0.01 * 125_000) > 1e-9:
            return []
        devs = []
        for ov in OVS:
            for a in config.alphas:
                ref = PAPER_FINAL[ov].get(round(a, 6))
                if ref is not None:
                    devs.append(abs(self._final(results, ov, "loss", a) / ref - 1))
        if not devs:
            return []
        return [
            Claim(
                "final-losses-match-notebook",
                "final L(α) of both OV parameterisations vs the notebooks' epoch-500 values "
                "(Fig. 3, single seed); value: largest relative deviation",
                max(devs),
                f"< {config.notebook_tol:g}",
                max(devs) < config.notebook_tol,
            )
        ]

    def summary(self, results: dict[str, Any]) -> dict[str, Any]:
        config = results["config"]
        out: dict[str, Any] = {}
        for ov in OVS:
            steps = results["runs"][ov]["step"].values
            rows = []
            for a in sorted(config.alphas):
                sens = self._series(results, ov, "sensitivity", a)
                k = int(np.argmax(sens))
                rows.append(
                    {
                        "alpha": a,
                        "final_loss": self._final(results, ov, "loss", a),
                        "final_sensitivity": float(sens[-1]),
                        "peak_sensitivity": float(sens[k]),
                        "peak_step": int(steps[k]),
                        "final_accuracy": self._final(results, ov, "accuracy", a),
                        "paper_final_loss": PAPER_FINAL[ov].get(round(a, 6)),
                    }
                )
            out[ov] = rows
        return out

    def figure(self, results: dict[str, Any], path: Path) -> Path:
        import matplotlib.pyplot as plt

        config = results["config"]
        fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
        for col, ov in enumerate(OVS):
            steps = results["runs"][ov]["step"].values
            t = steps * config.lr / (0.01 * 250)  # notebook epochs of the same lr × steps
            for i, a in enumerate(sorted(config.alphas)):
                axes[0, col].plot(
                    t, self._series(results, ov, "loss", a), color=f"C{i}", label=f"α = {a:g}"
                )
                axes[1, col].plot(t, self._series(results, ov, "sensitivity", a), color=f"C{i}")
            axes[0, col].set_yscale("log")
            axes[0, col].set_title(f"{ov} OV: loss L^t(α)")
            axes[1, col].set_title(f"{ov} OV: (L^t(α) − L^t(α+δ))/δ, δ = {config.delta:g}")
            axes[1, col].set_xlabel("epochs at lr 1e-2 (250 steps each) of the same lr × steps")
        axes[0, 0].legend(frameon=False, fontsize=8)
        fig.suptitle(
            f"Fixed attention (arXiv 2608.06776 Fig. 3): lr {config.lr:g}, {config.steps} steps"
        )
        fig.tight_layout()
        return save_figure(fig, path)
