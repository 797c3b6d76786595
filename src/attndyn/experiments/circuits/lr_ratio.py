"""``circuits-lr-ratio`` (arXiv 2608.06776, Fig. 2 faster-QK rows): the learning-rate ratio
r = η_QK/η_OV sets how sharp attention is at a given loss, for collapsed (CACO) and factorised
(FAFO) models, and an increasing-r schedule (the QK step times a linear ramp, base ratio 1) also
sharpens (model, data and readings: docs/circuits.md). Each seed is read where its test loss
first reaches the model's matched loss (:func:`~attndyn.experiments.circuits.readings.at_loss`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig
from attndyn.claims.spec import Evidence, above, claim
from attndyn.claims.stats import mean_ci, worst
from attndyn.claims.verdict import Check
from attndyn.experiments.circuits.readings import at_loss
from attndyn.figures.draw import get_cmap, new_figure, save_figure
from attndyn.models.circuits.config import CircuitsConfig

SMALL = dict(lr=0.3, t_max=6_667, test_size=1024, records=60)  # both models, η_OV·steps = 2000
PER_MODEL = dict(over="models", key=str.lower)  # claims caco-…, fafo-… for each of `models`


class Config(ExperimentConfig):
    caco: CircuitsConfig = Base(
        CircuitsConfig,
        "the CACO runs: PyTorch-default init (the notebooks' Net_CACO), seq_len 128 as in the "
        "notebooks' CACO runs, η_OV·steps = 2000 (the notebooks' 0.01 × 200 000); `ratio` and "
        "the QK schedule are set per run",
        **SMALL,
        param="CACO",
        seq_len=128,
    )
    fafo: CircuitsConfig = Base(
        CircuitsConfig,
        "the FAFO runs: all four matrices eye·1e-6 (the CACO_FAFO notebook's init), "
        "η_OV·steps = 2000; `ratio` and the QK schedule are set per run",
        **SMALL,
        param="FAFO",
        **{f"init_{m}": "eye" for m in "qkvp"},
    )
    models: list[Literal["CACO", "FAFO"]] = Field(
        ["CACO", "FAFO"], min_length=1, description="models whose claims are made: CACO, FAFO"
    )
    caco_ratios: list[float] = Field([1.0, 5.0, 10.0], min_length=2, description="r for CACO")
    caco_ramp_end: float = Field(10.0, gt=0, description="QK multiplier ramp 1 → this (CACO)")
    caco_loss_match: float = Field(0.1, gt=0, description="test loss where CACO runs compare")
    fafo_ratios: list[float] = Field(
        [1.0, 15.0, 20.0, 30.0, 40.0], min_length=2, description="r for FAFO"
    )
    fafo_ramp_end: float = Field(40.0, gt=0, description="QK multiplier ramp 1 → this (FAFO)")
    fafo_loss_match: float = Field(0.01, gt=0, description="test loss where FAFO runs compare")
    seeds: int = Field(5, ge=2)
    seed: int = Field(1234, ge=0, description="seed offset (the notebooks use 1234, …)")
    swap_rates: bool = Field(
        False, description="control: η_QK and η_OV exchanged (η_QK = lr, η_OV = r·lr)"
    )

    @field_validator("models")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("must list each of CACO, FAFO at most once")
        return value

    @field_validator("caco_ratios", "fafo_ratios")
    @classmethod
    def _ratios(cls, value: list[float]) -> list[float]:
        if any(b <= a for a, b in zip(value, value[1:], strict=False)) or 1.0 not in value:
            raise ValueError(
                "must be strictly increasing and contain 1 (the constant rate the ramp is "
                "compared with)"
            )
        return value

    def of(self, model: str, field: str) -> Any:
        """The experiment's ``caco_<field>`` or ``fafo_<field>``, or the model's base config
        (``field`` "base")."""
        prefix = model.lower()
        return getattr(self, prefix) if field == "base" else getattr(self, f"{prefix}_{field}")


def _rates(config: Config, lr: float, r: float) -> dict[str, float]:
    """(η_OV, r) of a constant-ratio run; ``swap_rates`` exchanges η_QK = r·lr and η_OV = lr."""
    return dict(lr=r * lr, ratio=1.0 / r) if config.swap_rates else dict(lr=lr, ratio=r)


class CircuitsLRRatio(Experiment):
    name = "circuits-lr-ratio"
    description = (
        "Faster QK learning (r = η_QK/η_OV, or an increasing-r schedule) sharpens attention at "
        "matched loss, CACO and FAFO"
    )
    Config = Config
    presets = {
        "tiny": {
            "models": ["CACO"],
            "caco.lr": 3.0,
            "caco.t_max": 667,
            "seeds": 16,
            "caco.test_size": 256,
            "caco.records": 20,
        },
        "small": {},
        "paper": {
            "caco_ratios": [1.0, 2.0, 3.0, 4.0, 5.0, 10.0],
            "caco.lr": 0.01,
            "caco.t_max": 200_000,
            "fafo.lr": 0.01,
            "fafo.t_max": 200_000,
            "seeds": 5,
            "caco.test_size": 6400,
            "fafo.test_size": 6400,
        },
    }
    preset_notes = {
        "tiny": "CACO only: FAFO's five ratios and ramp would double the compilations; the small "
        "preset (slow tests) covers it. 16 seeds: with three, the weakest step's interval "
        "reached below 0 at seed offset 1000 ([−0.0002, 0.135]); with five it failed at 2 of 10 "
        "unused offsets (52000: 0.025 [−0.068, 0.117], 53000: 0.061 [−0.022, 0.143]; issue 49 "
        "found one more), and with 16 it passed at 50000–55000 (both failing ones among them) "
        "and at 0, 1000, 2000 (smallest margin 1.6 SE, 2026-12-07).",
        "small": "both models at the defaults.",
        "paper": "the notebooks' η_OV and steps. The FAFO part (`--set 'models=[\"FAFO\"]'`) ran "
        "in 655 s niced and passed.",
    }
    controls = {
        "swapped-rates": Control(
            {"swap_rates": True, "fafo_ratios": [1.0, 2.0, 4.0]},
            "η_QK and η_OV exchanged (OV learns r times faster than QK): the paper's mechanism "
            "then makes attention more diffuse, not sharper, as r grows. FAFO at r = 1, 2, 4 "
            "(η_OV ≤ 4 × 0.3 at small): at its 15–40, η_OV = r·lr reaches 12 and diverges",
        ),
        "decreasing-ramp": Control(
            {"caco_ramp_end": 0.1, "fafo_ramp_end": 0.025},
            "the QK step ramps down (×1 → ×0.1) instead of up: QK slows relative to OV",
        ),
    }
    claims = (
        claim(
            "{}-ratio-monotone",
            "{}: the mean distinct-token attention mass at matched loss increases strictly along "
            "the ratios r",
            statistic="per seed, mass at the matched loss (`caco_loss_match`, "
            "`fafo_loss_match`; linear in log loss between records); every consecutive "
            "difference mass(r_{k+1}) − mass(r_k), paired by seed, Student-t 95 % CI; value: the "
            "one with the lowest interval end",
            target=above(0.0),
            reason="the paper: larger r, sharper attention at comparable loss (the reduced "
            "flow's α increases strictly with r at every loss threshold, `circuits-ode`); a flat "
            "step fails (its interval is [0, 0])",
            controls=("swapped-rates",),
            **PER_MODEL,
        ),
        claim(
            "{}-schedule-sharpens",
            "{}: a QK step that grows (linear ramp ×1 → ×`*_ramp_end`, base r = 1) sharpens "
            "attention at matched loss",
            statistic="mass(QK ramp) − mass(constant r = 1) at the matched loss, paired by seed; "
            "seed mean (Student-t 95 % CI)",
            target=above(0.0),
            reason='the notebook\'s "increasing learning rate" runs: a QK step that grows sharpens',
            controls=("decreasing-ramp",),
            **PER_MODEL,
        ),
    )
    notes = """\
**Statement (paper abstract; the authors' CACO_FAFO notebook).** "When QK learns faster than OV,
attention is sharper": the ratio r = η_QK/η_OV governs attention concentration at comparable
predictive performance, and an increasing-r schedule also sharpens. The notebook runs CACO at
r = 5 (η_QK 0.05, η_OV 0.01; seq_len 128, 200 000 steps) and a QK ramp ×1 → ×10, FAFO (all four
matrices eye·1e-6) at r = 20 and a ramp ×1 → ×40.

The effect of the whole range, mass(largest r) − mass(smallest r) per seed, is the sum of the
consecutive steps: `*-ratio-monotone` implies it, so it is reported in the summary
(`models.*.effect`), not claimed.

Runs of one model use the same seeds (seed s: the same initialisation and training stream in
every run), so every comparison is the seed mean of a per-seed difference (paired design).
Preconditions (unmet → invalid): every seed of every run of the model reaches its matched loss,
and no seed diverges. `caco_ratios` and `fafo_ratios` must increase strictly and contain 1.

The FAFO ratios skip r = 5, 10: from the all-eye·1e-6 init the QK product (1e-12) leaves its
saddle before the matched loss only when QK is fast, so they would be flat steps at the uniform
mass (docs/circuits.md "Experiments"); 20 is the notebook's r, 40 its ramp's end. CACO runs at
the notebooks' seq_len 128: at 64 it is not monotone (r = 10 learns the query-token shortcut).

SGD here follows one path in η·steps (docs/circuits.md), so every preset runs η_OV·steps = 2000
(which also sets the ramps' slope). At the small preset `swapped-rates` would put η_OV up to
40 × 0.3 = 12 on FAFO, which diverges: the control runs FAFO at r = 1, 2, 4 instead.

**Seeds re-drawn (tiny, the default `seed` 1234 / `--seed 1000` / `--seed 2000`, 5 seeds,
2026-12-03).** `caco-ratio-monotone`
0.0855 [0.0773, 0.0936] / 0.0674 [0.0434, 0.0914] / 0.0896 [0.0843, 0.0950];
`caco-schedule-sharpens` 0.1014 [0.1003, 0.1025] / 0.1010 [0.1003, 0.1017] / 0.1011 [0.1002,
0.1020].

**FAFO controls (small preset only, 2026-12-03).** Under `swapped-rates` (FAFO at r = 1, 2, 4)
every FAFO run reaches the matched loss with QK still at its saddle: `fafo-ratio-monotone` 0
[0, 0] (flat steps) against > 0. Under `decreasing-ramp` (×1 → ×0.025) the ramp run's mass equals
the constant run's: `fafo-schedule-sharpens` 0 [0, 0] against > 0. Both runs valid (every seed
reaches test loss 0.01, none diverges).
"""

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        sims: dict[tuple[str, str], Any] = {}
        for model in config.models:
            base = config.of(model, "base")
            for r in config.of(model, "ratios"):
                rates = _rates(config, base.lr, r)
                sims[(model, f"r={r:g}")] = ctx.simulate("circuits", base, **rates)
            ramp = dict(
                qk_schedule="linear", qk_ramp_start=1.0, qk_ramp_end=config.of(model, "ramp_end")
            )
            sims[(model, "ramp")] = ctx.simulate("circuits", base, ratio=1.0, **ramp)
        return {"sims": sims}

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        sims = results["sims"]
        per_seed = {k: at_loss(v, config.of(k[0], "loss_match")) for k, v in sims.items()}
        rows = [
            {
                "model": model,
                "run": run,
                "mass_at_matched_loss": per_seed[(model, run)].tolist(),
                "final_loss": traj["loss"].isel(time=-1).values.tolist(),
                "final_attn_distinct": float(traj["attn_distinct"].isel(time=-1).mean("seed")),
                "final_frac_sharp": float(traj["frac_sharp"].isel(time=-1).mean("seed")),
                "final_accuracy": float(traj["accuracy"].isel(time=-1).mean("seed")),
                "diverged_seeds": int(traj["diverged"].sum()),
            }
            for (model, run), traj in sims.items()
        ]
        models = {}
        for model in config.models:
            names = [f"r={r:g}" for r in config.of(model, "ratios")]
            seq = [per_seed[(model, n)] for n in names]
            models[model] = {
                "steps": {
                    f"{a}->{b}": (y - x).tolist()
                    for a, b, x, y in zip(names, names[1:], seq, seq[1:], strict=False)
                },
                "effect": (seq[-1] - seq[0]).tolist(),
                "schedule_effect": (per_seed[(model, "ramp")] - per_seed[(model, "r=1")]).tolist(),
            }
        loss_match = {model: config.of(model, "loss_match") for model in config.models}
        return {"loss_match": loss_match, "models": models, "runs": rows}

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        checks = []
        for model in config.models:
            rows = [r for r in m["runs"] if r["model"] == model]
            reached = all(np.all(np.isfinite(r["mass_at_matched_loss"])) for r in rows)
            level, diverged = m["loss_match"][model], sum(r["diverged_seeds"] for r in rows)
            checks += [
                Check(
                    f"{model}: every seed of every run reaches test loss {level:g}", bool(reached)
                ),
                Check.compare(f"{model}: diverged seeds", diverged, "<=", 0),
            ]
        return checks

    def evaluate(self, config: Config, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for model in config.models:
            x, key = m["models"][model], model.lower()
            at = f"at test loss {m['loss_match'][model]:g}"
            ratios = f"{at}, r = " + ", ".join(f"{r:g}" for r in config.of(model, "ratios"))
            steps = {k: mean_ci(v) for k, v in x["steps"].items()}
            weak = worst(steps, "low")
            ramp = f"{at}, ramp ×1→×{config.of(model, 'ramp_end'):g}"
            out[f"{key}-ratio-monotone"] = Evidence(
                steps[weak], detail=f"{ratios}; weakest step {weak}"
            )
            out[f"{key}-schedule-sharpens"] = Evidence(mean_ci(x["schedule_effect"]), detail=ramp)
        return out

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        sims, models, cmap = results["sims"], config.models, get_cmap("viridis")
        fig, axes = new_figure(1, len(models), figsize=(5 * len(models), 3.8), squeeze=False)
        for ax, model in zip(axes[0], models, strict=True):
            runs = [f"r={r:g}" for r in config.of(model, "ratios")] + ["ramp"]
            for i, run in enumerate(runs):
                loss, mass = (
                    sims[(model, run)][n].mean("seed").values for n in ("loss", "attn_distinct")
                )
                colour = "C3" if run == "ramp" else cmap(i / max(len(runs) - 2, 1))
                label = f"ramp ×1→×{config.of(model, 'ramp_end'):g}" if run == "ramp" else run
                style = "--" if i == 0 else "-"  # r = 1 can coincide with the next ratio
                ax.plot(loss, mass, color=colour, lw=1.8, ls=style, label=label, zorder=3 - i / 10)
            ax.axvline(config.of(model, "loss_match"), color="0.6", lw=0.8, ls="--")
            ax.set_xscale("log")
            ax.invert_xaxis()
            swapped = " (η_QK, η_OV swapped)" if config.swap_rates else ""
            ax.set(xlabel="test loss (decreasing →)", title=model + swapped)
            ax.legend(frameon=False, fontsize=8)
        axes[0][0].set_ylabel("mean attention mass on distinct tokens")
        return save_figure(fig, path)
