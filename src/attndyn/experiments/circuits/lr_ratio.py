"""``circuits-lr-ratio`` (arXiv 2608.06776, Fig. 2 faster-QK rows): the learning-rate ratio
r = η_QK/η_OV sets how sharp attention is at a given loss, for collapsed (CACO) and factorised
(FAFO) models, and an increasing-r schedule (the QK step multiplied by a linear ramp, base ratio 1)
also sharpens.

The paper's statement: "when QK learns faster than OV, attention is sharper" at comparable loss.
Each seed is read at the first time its test loss reaches the model's matched loss
(``caco_loss_match`` 0.1, ``fafo_loss_match`` 0.01; linear in log loss between records,
:func:`attndyn.experiments.circuits.readings.at_loss`), as the reduced flow is read at loss
thresholds (Fig. 4, docs/circuits-theory.md §1). Runs of one model share their seeds (the same
initialisation and training stream per seed), so differences are taken per seed and their mean
gets a 95 % Student-t interval. Claims, per model in ``models``
(docs/claims/circuits-lr-ratio.md):

- ``*-ratio-monotone``: the distinct mass at matched loss strictly increases along the ratios:
  every consecutive difference's interval lies above 0 (the value shown is the weakest one);
- ``*-ratio-effect``: mass(largest r) − mass(smallest r) > 0;
- ``*-schedule-sharpens``: mass(QK ramp ×1→×ramp_end) − mass(constant r = 1) > 0.

Preconditions: every seed of every run reaches its matched loss, and none diverges.

Readings (docs/circuits.md):
- CACO (PyTorch-default init, as the notebooks' ``Net_CACO``), seq_len 128 as in the notebooks'
  CACO runs, r ∈ {1, 5, 10}, ramp ×1 → ×10; η_OV·steps = 2000 (the notebooks' 0.01 × 200,000).
  At seq_len 64 the trend is not monotone: r = 10 learns the query-token shortcut.
- FAFO (all four matrices eye·1e-6, the CACO_FAFO notebook's init), r ∈ {1, 15, 20, 30, 40},
  ramp ×1 → ×40, η_OV·steps = 2000 (the notebook's ramp run, 0.01 × 200,000). From eye·1e-6 the
  QK product (1e-12) leaves its saddle before the matched loss only when QK is fast: for
  r ≤ 10 the mass at matched loss stays within 5e-4 of the uniform value (a flat step), so those
  ratios are not listed.

SGD here follows one path in η·steps (docs/circuits.md), so the presets differ only in η_OV:
paper 0.01 (the notebooks'), small 0.3, tiny 3 (CACO only). Controls: ``swapped-rates``
(η_QK and η_OV exchanged in every constant-ratio run) and ``decreasing-ramp`` (the QK step ramps
down ×1 → ×0.1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from attndyn.claims.base import Check, Claim, Control, Experiment, ExperimentConfig, RunContext
from attndyn.claims.stats import mean_ci, worst
from attndyn.experiments.circuits.readings import at_loss
from attndyn.figures.draw import get_cmap, new_figure, save_figure

MODELS = ("CACO", "FAFO")
CLAIMS = ("ratio-monotone", "ratio-effect", "schedule-sharpens")


def _increasing_with_one(value: list[float]) -> list[float]:
    if any(b <= a for a, b in zip(value, value[1:], strict=False)) or 1.0 not in value:
        raise ValueError(
            "must be strictly increasing and contain 1 (the constant rate the ramp is compared "
            "with)"
        )
    return value


class Config(ExperimentConfig):
    models: list[Literal["CACO", "FAFO"]] = Field(
        ["CACO", "FAFO"], min_length=1, description="models whose claims are made: CACO, FAFO"
    )
    caco_ratios: list[float] = Field([1.0, 5.0, 10.0], min_length=2, description="r for CACO")
    caco_lr: float = Field(0.3, gt=0, description="η_OV for CACO")
    caco_steps: int = Field(6_667, ge=1)
    caco_seq_len: int = Field(128, ge=3)
    caco_ramp_end: float = Field(10.0, gt=0, description="QK multiplier ramp 1 → this (CACO)")
    fafo_ratios: list[float] = Field(
        [1.0, 15.0, 20.0, 30.0, 40.0], min_length=2, description="r for FAFO"
    )
    fafo_lr: float = Field(0.3, gt=0, description="η_OV for FAFO")
    fafo_steps: int = Field(6_667, ge=1)
    fafo_seq_len: int = Field(64, ge=3)
    fafo_ramp_end: float = Field(40.0, gt=0, description="QK multiplier ramp 1 → this (FAFO)")
    seeds: int = Field(5, ge=1)
    seed: int = Field(1234, ge=0, description="seed offset (the notebooks use 1234, …)")
    batch: int = Field(32, ge=1)
    test_size: int = Field(1024, ge=1)
    records: int = Field(60, ge=4)
    caco_loss_match: float = Field(0.1, gt=0, description="test loss where CACO runs compare")
    fafo_loss_match: float = Field(0.01, gt=0, description="test loss where FAFO runs compare")
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
        return _increasing_with_one(value)


def mass_at_loss(traj, loss_level: float, name: str = "attn_distinct") -> float:
    """Seed mean of :func:`~attndyn.experiments.circuits.readings.at_loss` (NaN if a seed never
    reaches ``loss_level``)."""
    return float(np.mean(at_loss(traj, loss_level, name)))


def _settings(config: Config, model: str) -> dict[str, Any]:
    if model == "CACO":
        return dict(
            param="CACO", lr=config.caco_lr, t_max=config.caco_steps, seq_len=config.caco_seq_len
        )
    return dict(
        param="FAFO",
        lr=config.fafo_lr,
        t_max=config.fafo_steps,
        seq_len=config.fafo_seq_len,
        init_q="eye",
        init_k="eye",
        init_v="eye",
        init_p="eye",
    )


def _ratios(config: Config, model: str) -> list[float]:
    return config.caco_ratios if model == "CACO" else config.fafo_ratios


def _loss_match(config: Config, model: str) -> float:
    return config.caco_loss_match if model == "CACO" else config.fafo_loss_match


def _ramp_end(config: Config, model: str) -> float:
    return config.caco_ramp_end if model == "CACO" else config.fafo_ramp_end


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
            "caco_lr": 3.0,
            "caco_steps": 667,
            "seeds": 3,
            "test_size": 256,
            "records": 20,
        },
        "small": {},
        "paper": {
            "caco_ratios": [1.0, 2.0, 3.0, 4.0, 5.0, 10.0],
            "caco_lr": 0.01,
            "caco_steps": 200_000,
            "fafo_lr": 0.01,
            "fafo_steps": 200_000,
            "seeds": 5,
            "test_size": 6400,
        },
    }
    controls = {
        "swapped-rates": Control(
            {"swap_rates": True},
            ("caco-ratio-monotone", "caco-ratio-effect"),
            "η_QK and η_OV exchanged (OV learns r times faster than QK): the paper's mechanism "
            "then makes attention more diffuse, not sharper, as r grows",
        ),
        "decreasing-ramp": Control(
            {"caco_ramp_end": 0.1, "fafo_ramp_end": 0.025},
            ("caco-schedule-sharpens",),
            "the QK step ramps down (×1 → ×0.1) instead of up: QK slows relative to OV",
        ),
    }

    def claim_names(self, config: Config) -> list[str]:
        return [f"{m.lower()}-{c}" for m in config.models for c in CLAIMS]

    def run(self, config: Config, ctx: RunContext) -> dict[str, Any]:
        base = dict(
            seeds=config.seeds,
            seed=config.seed,
            batch=config.batch,
            test_size=config.test_size,
            records=config.records,
        )
        sims: dict[tuple[str, str], Any] = {}
        for model in config.models:
            settings = _settings(config, model)
            lr = settings.pop("lr")
            for r in _ratios(config, model):
                sims[(model, f"r={r:g}")] = ctx.simulate(
                    "circuits", **_rates(config, lr, r), **settings, **base
                )
            sims[(model, "ramp")] = ctx.simulate(
                "circuits",
                lr=lr,
                ratio=1.0,
                qk_schedule="linear",
                qk_ramp_start=1.0,
                qk_ramp_end=_ramp_end(config, model),
                **settings,
                **base,
            )
        return {"sims": sims}

    def measure(self, config: Config, results: dict[str, Any]) -> dict[str, Any]:
        sims = results["sims"]
        per_seed = {k: at_loss(v, _loss_match(config, k[0])) for k, v in sims.items()}
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
            names = [f"r={r:g}" for r in _ratios(config, model)]
            seq = [per_seed[(model, n)] for n in names]
            models[model] = {
                "steps": {
                    f"{a}->{b}": (y - x).tolist()
                    for a, b, x, y in zip(names, names[1:], seq, seq[1:], strict=False)
                },
                "effect": (seq[-1] - seq[0]).tolist(),
                "schedule_effect": (per_seed[(model, "ramp")] - per_seed[(model, "r=1")]).tolist(),
            }
        loss_match = {model: _loss_match(config, model) for model in config.models}
        return {"loss_match": loss_match, "models": models, "runs": rows}

    def preconditions(self, config: Config, m: dict[str, Any]) -> list[Check]:
        checks = []
        for model in config.models:
            rows = [r for r in m["runs"] if r["model"] == model]
            reached = all(np.all(np.isfinite(r["mass_at_matched_loss"])) for r in rows)
            checks.append(
                Check(
                    f"{model}: every seed of every run reaches test loss "
                    f"{m['loss_match'][model]:g}",
                    bool(reached),
                )
            )
            checks.append(
                Check.compare(
                    f"{model}: diverged seeds", sum(r["diverged_seeds"] for r in rows), "<=", 0
                )
            )
        return checks

    def claims(self, config: Config, m: dict[str, Any]) -> list[Claim]:
        out = []
        for model in config.models:
            x = m["models"][model]
            level = m["loss_match"][model]
            ratios = _ratios(config, model)
            shown = ", ".join(f"{r:g}" for r in ratios)
            steps = {k: mean_ci(v) for k, v in x["steps"].items()}
            weakest = worst(steps, "low")
            out += [
                Claim.above(
                    f"{model.lower()}-ratio-monotone",
                    f"{model}: mean distinct mass at test loss {level:g} along r = {shown}; "
                    f"weakest consecutive increase ({weakest}, paired by seed)",
                    steps[weakest],
                    0.0,
                ),
                Claim.above(
                    f"{model.lower()}-ratio-effect",
                    f"{model}: mass at loss {level:g}, r = {ratios[-1]:g} minus r = {ratios[0]:g} "
                    "(paired by seed)",
                    mean_ci(x["effect"]),
                    0.0,
                ),
                Claim.above(
                    f"{model.lower()}-schedule-sharpens",
                    f"{model}: mass at loss {level:g}, QK ramp ×1→×{_ramp_end(config, model):g} "
                    "minus constant r = 1 (paired by seed)",
                    mean_ci(x["schedule_effect"]),
                    0.0,
                ),
            ]
        return out

    def figure(
        self, config: Config, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:

        sims = results["sims"]
        models = config.models
        fig, axes = new_figure(1, len(models), figsize=(5 * len(models), 3.8), squeeze=False)
        for ax, model in zip(axes[0], models, strict=True):
            runs = [f"r={r:g}" for r in _ratios(config, model)] + ["ramp"]
            cmap = get_cmap("viridis")
            for i, run in enumerate(runs):
                traj = sims[(model, run)]
                loss = traj["loss"].mean("seed").values
                mass = traj["attn_distinct"].mean("seed").values
                colour = "C3" if run == "ramp" else cmap(i / max(len(runs) - 2, 1))
                label = f"ramp ×1→×{_ramp_end(config, model):g}" if run == "ramp" else run
                style = "--" if i == 0 else "-"  # r = 1 can coincide with the next ratio
                ax.plot(loss, mass, color=colour, lw=1.8, ls=style, label=label, zorder=3 - i / 10)
            ax.axvline(_loss_match(config, model), color="0.6", lw=0.8, ls="--")
            ax.set_xscale("log")
            ax.invert_xaxis()
            ax.set_xlabel("test loss (decreasing →)")
            ax.set_title(model + (" (η_QK, η_OV swapped)" if config.swap_rates else ""))
            ax.legend(frameon=False, fontsize=8)
        axes[0][0].set_ylabel("mean attention mass on distinct tokens")
        return save_figure(fig, path)
