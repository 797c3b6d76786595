"""``markov-adam`` (arXiv 2605.01199, Section 4.1, Fig. 2 and Appendix E.1): the paper's own
protocol — Adam at a fixed step size 1.5·10⁻⁴ on 100,000 sampled sequences, m = 256, init
N(0, 1/m²), λ = 0.8 — read with the stage detector (:mod:`attndyn.models.markov.stages`), against
the stage order of Section 4.1 and the step numbers of Fig. 2C."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
from pydantic import Field, model_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig, variant
from attndyn.claims.spec import Evidence, at_least, at_most, claim
from attndyn.claims.stats import mean_ci
from attndyn.claims.verdict import Check
from attndyn.experiments.markov.stages import STAGE_COLOURS, finite_mean, first_arrival
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.markov.config import MarkovConfig
from attndyn.models.markov.stages import RANK_FRACTION

NAME = "markov-adam"
PAPER_LR = 1.5e-4
"""Appendix E.1's Adam step size (no schedule)."""


class Config(ExperimentConfig):
    base: MarkovConfig = Base(
        MarkovConfig,
        "Appendix E.1: Def. 2.2's model, m = 256, every weight N(0, 1/m²), Adam at lr 1.5·10⁻⁴ "
        "(optax defaults β = (0.9, 0.999), ε = 10⁻⁸, as PyTorch's), 100,000 sequences of 20 "
        "tokens drawn once per seed (19 inputs and the label X[−1]), π of Section 4.1, λ = 0.8; "
        "batch = n_sequences is the whole set each step (our reading: Appendix E.2 indexes the "
        "snapshots by epoch and Fig. 2 by step, so a step is an epoch); observables on the "
        "population law",
        data="fixed",
        n_sequences=100_000,
        seq_len=19,
        batch=100_000,
        pi_kind="paper",
        d=4,
        lam=0.8,
        m=256,
        init_scale=None,
        optimizer="adam",
        lr=PAPER_LR,
        t_max=PAPER_LR * 1000,
        records=100,
        grid="linear",
        dtype="float32",
    )
    seeds: int = Field(8, ge=2, description="seeds (inits and data sets)")
    rank_fraction: float = Field(
        RANK_FRACTION, gt=0, le=1, description="W₀'s rank #{k: σ_k ≥ a σ₁}: a"
    )
    order_fraction: float = Field(
        0.5, ge=0, le=1, description="stage-order: fraction of seeds in order (CI low end)"
    )
    window_low: float = Field(350.0, ge=0, description="Fig. 2C: focus from this step")
    window_high: float = Field(550.0, gt=0, description="Fig. 2C: focus up to this step")
    sync_tol: float = Field(
        0.15, gt=0, description="focus-synchronous: spread of rise times / focus duration"
    )
    self_focus: float = Field(0.9, gt=0, le=1, description="self-focus: 𝔸_top,top at the end")
    dilution_margin: float = Field(0.1, gt=0, description="fall of 𝔸_i,top after its peak")
    retraction_margin: float = Field(
        0.2, gt=0, lt=1, description="relative fall of ‖W₀[i]‖ in the first dilution"
    )
    heatmap_level: float = Field(
        0.9, gt=0, le=1, description="condensed: min |cos(W₀[i], W₀[j])| at the focus leg's end"
    )
    entropy_fall: float = Field(
        0.5, gt=0, lt=1, description="entropy-cycle: fall by focus end, fraction of the init"
    )
    entropy_rise: float = Field(
        0.1, gt=0, description="entropy-cycle: rise after the minimum, fraction of the init"
    )

    @model_validator(mode="after")
    def _window(self) -> Config:
        if self.window_high <= self.window_low:
            raise ValueError("'window_high' must exceed 'window_low'")
        b = self.base
        if b.optimizer == "flow" or b.data == "text":
            raise ValueError("base: sampled Markov data (fixed or online) with gd or adam")
        if b.pi is None and b.pi_kind == "geometric" and b.d > 8 or b.pi and len(b.pi) > 8:
            raise ValueError("base: at most 8 tokens (every token is tracked)")
        return self


AdamConfig = Config
"""The experiment's config (an alias for annotations inside :class:`MarkovAdam`)."""


def first(stages: list[dict], name: str, after: float = -np.inf) -> dict | None:
    """The first stage called ``name`` that starts at or after ``after``."""
    return next((s for s in stages if s["name"] == name and s["start"] >= after), None)


def seed_stats(config: AdamConfig, t: np.ndarray, pi: np.ndarray, one: dict) -> tuple[dict, list]:
    """One seed's statistics and its stages (dicts), times in Adam steps (t / lr)."""
    from attndyn.models.markov.stages import (
        detect_stages,
        rank_label,
        rank_signal,
        stage_signals,
    )

    lr, d, top = config.base.lr, len(pi), int(np.argmax(pi))
    nan = float("nan")
    track = tuple(range(d))
    steps = t / lr
    rank = rank_signal(one, "count", config.rank_fraction)
    f_sig, d_sig = stage_signals(one, pi, track)
    label = rank_label("count", config.rank_fraction)
    found = [s.as_dict() for s in detect_stages(steps, rank, f_sig, d_sig, label=label)]
    cond, focus = first(found, "condensation"), first(found, "focus")
    dil = first(found, "dilution", focus["start"]) if focus else None
    restart = first(found, "restart", dil["start"]) if dil else None
    in_order = bool(
        cond
        and focus
        and dil
        and restart
        and cond["end"] <= focus["end"] <= dil["start"] <= restart["start"]
    )
    low = [i for i in track if i != top]
    sync = nan
    if focus is not None and focus["end"] > focus["start"]:
        # the midpoint of each query's rise, as the first time −a falls to −(a₀ + a_peak)/2
        attn = [one[f"attn_{i}_{top}"] for i in track]
        rise = [first_arrival(steps, -a, -0.5 * (a[0] + np.nanmax(a))) for a in attn]
        sync = float((max(rise) - min(rise)) / (focus["end"] - focus["start"]))
    falls = []
    for i in low:
        a = one[f"attn_{i}_{top}"]
        peak = int(np.nanargmax(a))
        falls.append(float(a[peak] - np.nanmin(a[peak:])))
    retraction = nan
    if dil is not None:
        k_end = int(np.searchsorted(steps, dil["end"]))
        shrink = []
        for i in low:
            n = one[f"norm_{i}"][: k_end + 1]
            q = int(np.nanargmax(n))
            shrink.append(float(1.0 - np.nanmin(n[q:]) / n[q]))
        retraction = min(shrink)
    # the end of the first focus leg, or without one the peak of the π-weighted attention on top
    at = focus["end"] if focus is not None else float(steps[int(np.nanargmax(f_sig))])
    pairs = [one[f"cos_{i}_{j}"] for i in track for j in track if j > i]
    heatmap = float(min(abs(np.interp(at, steps, c)) for c in pairs))
    h = one["entropy_mean"]
    k_min = int(np.nanargmin(h[: int(np.searchsorted(steps, at)) + 1]))
    entropy_fall = float((h[0] - h[k_min]) / h[0])
    entropy_rise = float((np.nanmax(h[k_min:]) - h[k_min]) / h[0])
    row = {
        "in_order": float(in_order),
        "heatmap": heatmap,
        "entropy_fall": entropy_fall,
        "entropy_rise": entropy_rise,
        "entropy_cycle": min(
            entropy_fall / config.entropy_fall, entropy_rise / config.entropy_rise
        ),
        "condensation_end": cond["end"] if cond else nan,
        "focus_start": focus["start"] if focus else nan,
        "focus_end": focus["end"] if focus else nan,
        "focus_mid": 0.5 * (focus["start"] + focus["end"]) if focus else nan,
        "dilution_start": dil["start"] if dil else nan,
        "dilution_end": dil["end"] if dil else nan,
        "restart_start": restart["start"] if restart else nan,
        "sync": sync,
        "self_focus": float(one[f"attn_{top}_{top}"][-1]),
        "dilution": min(falls),
        "retraction": retraction,
        "loss_gap_focus_start": float(np.interp(focus["start"], steps, one["loss_gap"]))
        if focus
        else nan,
        "loss_gap_focus_end": float(np.interp(focus["end"], steps, one["loss_gap"]))
        if focus
        else nan,
        "top_norm_growth": float(one[f"norm_{top}"][-1] / np.nanmax(one[f"norm_{top}"])),
        "sv_ratio_min": float(np.nanmin(one["sv_ratio_W0"])),
    }
    return row, found


class MarkovAdam(Experiment):
    name = NAME
    description = (
        "arXiv 2605.01199 Section 4.1 at Appendix E.1's protocol (Adam, 100,000 sequences, "
        "m = 256): the stage order, the condensation heatmap, Fig. 2C's synchronous focus and "
        "self-focus, the entropy cycle, dilution and retraction; the steps against Fig. 2C's"
    )
    Config = Config
    presets = {
        "tiny": {"seeds": 16, "base.batch": 64, "base.t_max": PAPER_LR * 600, "base.records": 60},
        "small": {"seeds": 8, "base.batch": 256},
        "paper": {"seeds": 8},
    }
    preset_notes = {
        "tiny": "Mini-batches of 64 of the 100,000 sequences, 600 steps (the first cycle).",
        "small": "Mini-batches of 256 (batch size is not stated in the paper): the stage steps "
        "are the same as the paper preset's within a record (batches 16 to 100,000 measured, "
        'docs/markov.md, "Adam protocol"), at about 1/100 of the cost (8 s against 14 min for '
        "the paper preset, the latter beside other runs).",
        "paper": "Appendix E.1 with the whole set of 100,000 sequences each step.",
    }
    controls = {
        "frozen-attention": Control(
            {"base.train_attention": False},
            "W_Q, W_K frozen at their init (their gradient zeroed): attention cannot focus, so "
            "there is no focus or dilution stage and no order",
        ),
        "large-init": Control(
            {"base.init_scale": 0.3},
            "init N(0, 0.3²) instead of N(0, 1/m²): the rows of W₀ start far from one "
            "direction and are not condensed when attention focuses",
        ),
        "gradient-descent": Control(
            {"base.optimizer": "gd", "base.lr": 0.2, "base.t_max": 300.0, "base.records": 150},
            "plain gradient descent (lr 0.2, 1,500 steps, the flow's stages within the horizon) "
            "instead of Adam: the queries' attention rises at different times and the "
            "low-frequency embeddings do not retract (tiny: spread 0.23 [0.14, 0.33] of the "
            "focus duration, retraction 0.00)",
        ),
    }
    claims = (
        claim(
            "stage-order",
            "Section 4.1: condensation (Stage I), focus (II), dilution (III) and a new direction "
            "(IV) follow in this order",
            statistic="per seed 1 if the detector finds W₀'s rank #{k: σ_k ≥ a σ₁} at 1 (end of "
            "condensation) no later than the end of the first focus leg, which ends no later "
            "than the first dilution leg after it starts, which starts no later than the first "
            "restart (rank through 1.5) after it; else 0; seed mean, Student-t 95 % CI",
            target=at_least("order_fraction"),
            reason="Section 4.1's Stages I–IV and Fig. 2; the order is what the paper's theory "
            "(Thms 3.2–3.9) predicts for gradient flow, and the figure shows it under Adam",
            controls=("frozen-attention",),
        ),
        claim(
            "condensed-heatmap",
            "Fig. 2A: the embedding rows condense onto one direction (rank one) by the end of "
            "the focus",
            statistic="per seed, min over token pairs i < j of |cos(W₀[i], W₀[j])| (Appendix "
            "E.2's condensation heatmap) at the end of the first focus leg (without one, at the "
            "peak of the π-weighted attention on the top token); seed mean, Student-t 95 % CI",
            target=at_least("heatmap_level"),
            reason="Section 4.1, Stages I–II: 'the outer weights rapidly evolve into rank-1' "
            "(Thm 3.2–3.3); 0.9 is a chosen level against |cos| ≈ 0.06 between random rows at "
            "m = 256",
            controls=("large-init", "gradient-descent"),
        ),
        claim(
            "focus-synchronous",
            "Fig. 2C: the attention of every query on the first token rises synchronously",
            statistic="per seed, the spread max_i t_i − min_i t_i of the steps t_i at which "
            "query i's attention on the top token first reaches the midpoint of its own rise "
            "(from its initial value to its peak; linear between records), over the duration "
            "of the first focus leg; seed mean, Student-t 95 % CI",
            target=at_most("sync_tol"),
            reason="Fig. 2C's caption: 'the attention given to the first token by all query "
            "pairs increases synchronously'. A chosen 0.15 of the rise's duration: 2.5× the "
            "spread Adam gives at tiny (0.06), below plain gradient descent's 0.23",
            controls=("gradient-descent",),
        ),
        claim(
            "self-focus",
            "Fig. 2C: afterwards the first token focuses its attention on itself",
            statistic="per seed, the top token's attention on itself 𝔸_{top,top} at the last "
            "record; seed mean, Student-t 95 % CI",
            target=at_least("self_focus"),
            reason="Fig. 2C's caption ('the first token focuses attention on itself, while "
            "other tokens reduce their attention towards it'); a chosen 0.9 against its init "
            "π_top = 0.75",
            controls=("frozen-attention",),
        ),
        claim(
            "entropy-cycle",
            "Fig. 2D1: the attention entropy falls during focus and rises again in dilution",
            statistic="per seed, min(fall / `entropy_fall`, rise / `entropy_rise`), fall = the "
            "drop of Σ_i π_i H(𝔸_i) from its init to its minimum up to the end of the first focus "
            "leg (the time `condensed-heatmap` reads) and rise = its largest later increase, both "
            "as fractions of the init value (0.727 nats at Section 4.1's π); seed mean, Student-t "
            "95 % CI",
            target=at_least(1.0),
            reason="Focus concentrates every query on one token (entropy → 0) and dilution "
            "spreads the low-frequency queries again (Section 4.1, Stages II–III, Fig. 2D1); "
            "a chosen half of the init for the fall and a tenth for the rise",
            controls=("frozen-attention", "gradient-descent"),
        ),
        claim(
            "dilution",
            "Stage III: afterwards the other tokens reduce their attention on the first token",
            statistic="per seed, min over the low-frequency queries i of the fall of 𝔸_{i,top} "
            "from its peak to its later minimum; seed mean, Student-t 95 % CI",
            target=at_least("dilution_margin"),
            reason="Fig. 2C and Section 4.1, Stage III; a chosen margin of 10 points of attention",
            controls=("frozen-attention",),
        ),
        claim(
            "retraction",
            "Stage III: the embedding norms of the low-frequency tokens drop (Fig. 2B2, D2)",
            statistic="per seed, min over the low-frequency tokens i of 1 − min ‖W₀[i]‖ / max "
            "‖W₀[i]‖, the minimum taken after the maximum and both up to the end of the first "
            "dilution leg (NaN without one); seed mean, Student-t 95 % CI",
            target=at_least("retraction_margin"),
            reason="Section 4.1, Stage III: 'accompanied by a significant drop in the embedding "
            "norms of low-frequency tokens'; 'significant' read as a chosen 20 %",
            controls=("gradient-descent",),
        ),
    )
    notes = (
        "Appendix E.1 fixes the optimizer, step size, width, init, data size and λ; it does not "
        "state the batch size, the number of steps or seeds. The stage detector and W₀'s rank "
        'count are docs/markov.md\'s ("Stages"); the observables are evaluated on the '
        "population law (π, P), the test loss of infinitely many sequences.\n\n"
        "**The step numbers disagree with Fig. 2C.** Its caption puts the synchronous rise "
        "between steps 350 and 550; this protocol completes it by step ≈ 160 (the claims' "
        "detail gives the seed means and the factor; the summary has `paper_over_measured_focus`"
        "). The steps do not move with the batch (16 to 100,000), the sequence length (19 or 20 "
        "inputs) or π (Section 4.1's or Appendix E.1's geometric law); they move with m (focus "
        "midpoint ≈ 200 steps at m = 64, ≈ 95 at m = 512) and the init scale, and Adam's steps "
        "scale as 1/lr. A window claim with the paper's numbers fails at every preset, so it is "
        "not a claim: the order, synchrony and self-focus the caption describes are, and the "
        'factor is reported (docs/markov.md, "Adam protocol"). We cannot tell from the text '
        "whether the figure used an unstated setting or counts steps differently.\n\n"
        "**Adam's stages overlap.** Under Adam every coordinate moves at about lr per step, so "
        "attention starts to focus while W₀ is still condensing: the population loss gap at the "
        "start of the focus leg is ≈ 1.0 (the uniform predictor's 1.08), not the unigram "
        "plateau 0.424 that the gradient flow reaches first (markov-stages), and the focus is "
        "complete (𝔸 → 1 for every query) where the flow's rises to ≈ 0.76.\n\n"
        "Controls: `frozen-attention` has no focus or dilution leg, so `focus-synchronous` and "
        "`retraction` are undefined there (NaN, inconclusive); they are failed by value by "
        "`gradient-descent`, which passes the order, self-focus and dilution claims (the "
        "population flow's stages, markov-stages), so those are not listed for it. "
        "`large-init` (ε = 0.3) keeps W₀'s rows apart (min |cos| 0.02 at tiny) and fails "
        "`condensed-heatmap`; it also has no focus leg."
    )

    def run(self, config: AdamConfig, ctx: RunContext) -> dict[str, Any]:
        sim = cast(MarkovConfig, variant(config.base))
        return {"traj": ctx.simulate_config("markov", sim), "sim": sim}

    def measure(self, config: AdamConfig, results: dict[str, Any]) -> dict[str, Any]:
        from attndyn.models.markov import DataLaw

        traj, law = results["traj"], DataLaw(results["sim"])
        t = traj["time"].values
        rows, stages = [], []
        for s in range(traj.sizes["seed"]):
            one = {k: traj[k].values[s] for k in traj.data_vars}
            row, found = seed_stats(config, t, law.pi, one)
            rows.append(row)
            stages.append(found)
        per = {k: [r[k] for r in rows] for k in rows[0]}
        m: dict[str, Any] = {
            "pi": [float(x) for x in law.pi],
            "per_seed": per,
            "stages": stages,
            "diverged": int(traj["diverged"].sum()),
            "final_loss_gap": float(np.nanmean(traj["loss_gap"].values[:, -1])),
        }
        for k in (
            "in_order",
            "focus_mid",
            "heatmap",
            "sync",
            "self_focus",
            "entropy_cycle",
            "dilution",
            "retraction",
        ):
            m[f"{k}_ci"] = mean_ci(per[k])
        window = 0.5 * (config.window_low + config.window_high)
        m["paper_window"] = [config.window_low, config.window_high]
        m["paper_over_measured_focus"] = window / m["focus_mid_ci"].value
        return m

    def preconditions(self, config: AdamConfig, m: dict[str, Any]) -> list[Check]:
        return [Check.compare("seeds diverged", m["diverged"], "==", 0)]

    def evaluate(self, config: AdamConfig, m: dict[str, Any]) -> dict[str, Any]:
        mu = {k: finite_mean(v) for k, v in m["per_seed"].items()}
        steps = (
            f"steps (seed means): condensation ends {mu['condensation_end']:.0f}, focus "
            f"{mu['focus_start']:.0f}–{mu['focus_end']:.0f}, dilution from "
            f"{mu['dilution_start']:.0f}, restart from {mu['restart_start']:.0f}"
        )
        return {
            "stage-order": Evidence(m["in_order_ci"], detail=steps),
            "condensed-heatmap": Evidence(m["heatmap_ci"]),
            "entropy-cycle": Evidence(
                m["entropy_cycle_ci"],
                detail=f"fall {mu['entropy_fall']:.3f}, rise "
                f"{mu['entropy_rise']:.3f} of the init (seed means)",
            ),
            "focus-synchronous": Evidence(
                m["sync_ci"],
                detail=f"focus {mu['focus_start']:.0f}–{mu['focus_end']:.0f} "
                f"(seed means; Fig. 2C: {config.window_low:g}–{config.window_high:g}, "
                f"{m['paper_over_measured_focus']:.2f}× later); L − L* "
                f"{mu['loss_gap_focus_start']:.3f} → "
                f"{mu['loss_gap_focus_end']:.3f} over it",
            ),
            "self-focus": Evidence(m["self_focus_ci"]),
            "dilution": Evidence(m["dilution_ci"], detail=steps),
            "retraction": Evidence(
                m["retraction_ci"],
                detail=f"the top token's norm ends at {mu['top_norm_growth']:.3f} of its "
                "maximum (seed mean)",
            ),
        }

    def summary(self, m: dict[str, Any]) -> dict[str, Any]:
        from attndyn.core.serial import json_safe

        return json_safe({k: v for k, v in m.items() if k != "diverged"})

    def figure(
        self, config: AdamConfig, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        return save_figure(draw(config, results["traj"], m), path)


def draw(config: AdamConfig, traj, m: dict[str, Any]):
    """Seed 0 against Adam steps: the loss gap of each query group S_i (Fig. 2A), the attention
    on the top token (Fig. 2C), the
    embedding norms (Fig. 2D2) and W₀'s σ_k/σ₁ with the detected stages and Fig. 2C's window."""
    steps = traj["time"].values / config.base.lr
    d, top, stages = len(m["pi"]), int(np.argmax(m["pi"])), m["stages"][0]
    fig, axes = new_figure(1, 4, figsize=(16, 4))

    def one(name: str) -> np.ndarray:
        return traj[name].values[0]

    panels = [
        (
            [(one("loss_gap"), "all (Σπ_i)")]
            + [(one(f"loss_gap_{i}"), f"group S_{i}") for i in range(d)],
            "L − L* = KL(P_i‖ℙ_i)",
            "(a) loss gap per query group (Fig. 2A)",
        ),
        (
            [(one(f"attn_{i}_{top}"), f"query {i}") for i in range(d)],
            f"𝔸_(i,{top})",
            "(b) attention on the top token",
        ),
        ([(one(f"norm_{i}"), f"token {i}") for i in range(d)], "‖W₀[i]‖", "(c) embedding norms"),
        (
            [(one("sv_ratio_W0"), "σ₂/σ₁")]
            + [(one(f"sv_ratio{k}_W0"), f"σ_{k}/σ₁") for k in range(3, d + 1)],
            "σ_k/σ₁",
            "(d) W₀'s singular values",
        ),
    ]
    for ax, (lines, ylabel, title) in zip(axes, panels, strict=True):
        for y, label in lines:
            ax.plot(steps, y, label=label)
        ax.axvspan(config.window_low, config.window_high, color="k", alpha=0.08)
        for st in stages:
            ax.axvspan(st["start"], st["end"], color=STAGE_COLOURS[st["name"]], alpha=0.15)
        ax.set(xlabel="Adam step", ylabel=ylabel, title=title)
        ax.legend(fontsize=7, frameon=False)
    axes[3].axhline(config.rank_fraction, color="k", ls=":", lw=1)
    fig.suptitle(
        f"markov-adam: m = {config.base.m}, batch {config.base.batch} of "
        f"{config.base.n_sequences}, lr {config.base.lr:g}; grey: Fig. 2C's focus window"
    )
    return fig
