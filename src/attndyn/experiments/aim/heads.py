"""``aim-heads`` (P1 = arXiv 2609.03858, Eqs. 1–2 with H heads summed, Thm 1, Eqs. 7, 25): online
SGD of multi-head attention-indexed models against the population gradient flow of Theorem 1's
potential, paired seed by seed (each seed's flow starts from that SGD seed's initial matrices,
:mod:`attndyn.experiments.aim.heads_flow`), for H = 2 and 3 student heads learning a teacher with
as many heads, L = 1, activations h1 and h2 (docs/claims/aim-heads.md).

What the theory says, and what is claimed:

- P1 Thm 1: the population loss is Φ of the heads' order parameters (m, Ω, Ψ); its gradient flow
  in the simulator's own parameters is SGD's mean path on the time axis t = 4nα_d/d (tied). So
  SGD's drift of the order parameters over the horizon is the flow's, up to finite-d terms.
- Finite d: for h1 at L = 1 the loss ½(Σ_k G_k − Σ_k G*_k)² is quadratic in the forms, so E_x L
  = Φ exactly (the forms' mean and covariance are exact at every d, Thm 1's proof); what is left
  is SGD's own fluctuation around its mean path. For h2 the loss is even in G, so the Edgeworth
  term of order d^−½ (Lemma 10, Eqs. 75–76) vanishes and the population gap is O(1/d)
  (docs/aim.md, "Finite d"). Either way SGD's distance from its own flow shrinks with d.
- Specialisation: with h1 the output is linear in Σ_k S_k, so every student head receives the
  same gradient matrix (dW_k = −g W_k) and no head can prefer a teacher head; with h2 the
  symmetric state is unstable and the heads split between the teacher heads. The statistic is
  spec = max_π (1/H) Σ_k p_{k,π(k)} − mean_{k,j} p_{kj} over the student–teacher overlaps p
  (π a permutation of the teacher heads): 0 when every student head overlaps every teacher head
  alike. The flow says how far each seed's heads split by the horizon.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig
from attndyn.claims.spec import Evidence, Retired, below, between, claim
from attndyn.claims.stats import jackknife_ci
from attndyn.claims.verdict import Check
from attndyn.figures.draw import new_figure, save_figure
from attndyn.models.aim.config import AIMConfig

NAME = "aim-heads"
CASE = re.compile(r"^(tied|untied)-(h1|h2)-([234])$")


class HeadsConfig(ExperimentConfig):
    base: AIMConfig = Base(
        AIMConfig,
        "tied students with Wishart teachers (untied: product teachers, horizon `t_max_untied` "
        "on τ = nα_d/d) with as many heads as the student, L = 1, batch 32, α_d = lr/(d log d),"
        " horizon t = 1 on a linear grid of 5 records; each case sets `param`, `heads`, "
        "`activation`, `lr`, `t_max` and `d`",
        param="tied",
        L=1,
        batch=32,
        lr=0.05,
        t_max=1.0,
        grid="linear",
        records=5,
        test_size=0,
    )
    cases: list[str] = Field(
        ["tied-h1-2", "tied-h2-2"],
        min_length=1,
        description="cases PARAM-ACTIVATION-HEADS: param tied or untied, activation h1 or h2, "
        "heads 2–4",
    )
    d_h1: list[int] = Field(
        [16, 32, 64], min_length=1, description="dimensions for h1 (increasing)"
    )
    d_h2: list[int] = Field([64, 96], min_length=1, description="dimensions for h2 (increasing)")
    d_untied: list[int] = Field(
        [16, 32, 64], min_length=1, description="dimensions for untied cases (increasing)"
    )
    t_max_untied: float = Field(
        0.5, gt=0, description="horizon of untied cases on their slow time τ = nα_d/d"
    )
    lr_h2: float = Field(
        0.03, gt=0, description="step constant c for h2 (G⁴ tails: c = 0.05 diverged at d = 64)"
    )
    seeds: int = Field(8, ge=2)
    quad_log2: int = Field(12, ge=8, le=18, description="log2 of the flow's quadrature budget")
    rtol: float = Field(1e-5, gt=0, lt=1e-2, description="relative tolerance of the flow's ODE")
    track_tol: float = Field(
        0.25, gt=0, description="largest relative gap ‖ḡ‖/‖Δ̄_flow‖ at the largest d"
    )
    slope_bound: float = Field(-0.25, description="largest slope of log(gap) on log d")
    spec_low: float = Field(0.5, gt=0, description="smallest ratio SGD/flow of spec")
    spec_high: float = Field(2.0, gt=0, description="largest ratio SGD/flow of spec")
    flow_activation: str = Field(
        "same", description="same | swapped: the flow's activation (control: h1 ↔ h2)"
    )
    flow_time: float = Field(
        1.0, gt=0, description="the flow read at flow_time·t (control time-direct: ¼)"
    )

    @field_validator("cases")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        bad = [c for c in value if not CASE.match(c)]
        if bad:
            raise ValueError(
                f"unknown cases {bad}; allowed: PARAM-ACT-H with PARAM tied or untied, ACT h1 or "
                "h2, H in 2, 3, 4"
            )
        return value

    @field_validator("flow_activation")
    @classmethod
    def _flow_act(cls, value: str) -> str:
        if value not in ("same", "swapped"):
            raise ValueError("must be one of same, swapped")
        return value


def parse(case: str) -> tuple[str, str, int]:
    param, act, heads = CASE.match(case).groups()  # type: ignore[union-attr]
    return param, act, int(heads)


def dims(config: HeadsConfig, case: str) -> list[int]:
    param, act, _ = parse(case)
    if param == "untied":
        return config.d_untied
    return config.d_h1 if act == "h1" else config.d_h2


def _cases(config: HeadsConfig) -> list[str]:
    return list(config.cases)


def _h1_cases(config: HeadsConfig) -> list[str]:
    return [c for c in config.cases if parse(c)[1] == "h1"]


def _h2_cases(config: HeadsConfig) -> list[str]:
    return [c for c in config.cases if parse(c)[1] == "h2"]


def _shrink_cases(config: HeadsConfig) -> list[str]:
    return [c for c in config.cases if len(dims(config, c)) >= 3]


def model_changes(config: HeadsConfig, case: str, d: int) -> dict[str, Any]:
    param, act, heads = parse(case)
    lr = config.lr_h2 if act == "h2" else config.base.lr
    t_max = config.t_max_untied if param == "untied" else config.base.t_max
    return dict(
        t_max=t_max,
        param=param,
        activation=act,
        heads=heads,
        teacher_heads=heads,
        lr=lr,
        d=d,
        seed=config.seed,
        seeds=config.seeds,
    )


def order_names(heads: int, param: str = "tied") -> list[str]:
    """The student's order parameters: tied t_k (k ≤ H) and q_kl (k ≤ H, k ≤ l ≤ 2H); untied
    m_k, tA_k, tB_k, q1_kl and q2_kl (P1 §4.1's order parameters of S = UVᵀ)."""
    n = 2 * heads
    ks = range(1, heads + 1)
    pairs = [f"{k}{l}" for k in ks for l in range(k, n + 1)]  # noqa: E741
    if param == "untied":
        one = [f"{x}_{k}" for x in ("m", "tA", "tB") for k in ks]
        return one + [f"{x}_{kl}" for x in ("q1", "q2") for kl in pairs]
    return [f"t_{k}" for k in ks] + [f"q_{kl}" for kl in pairs]


def overlap_names(heads: int) -> list[str]:
    return [f"p_{k}{heads + j}" for k in range(1, heads + 1) for j in range(1, heads + 1)]


def specialisation(p: np.ndarray) -> np.ndarray:
    """spec of overlaps p[..., k, j] (student k, teacher j): max over permutations π of the mean
    of p[k, π(k)] minus the mean of all p (module docstring)."""
    heads = p.shape[-1]
    best = np.max(
        [
            np.mean([p[..., k, pi[k]] for k in range(heads)], axis=0)
            for pi in itertools.permutations(range(heads))
        ],
        axis=0,
    )
    return best - p.mean(axis=(-2, -1))


def _spec_of(values: dict[str, np.ndarray], heads: int) -> np.ndarray:
    """spec per seed and record from {p_kl: (seed, time)}."""
    p = np.stack(
        [
            np.stack([values[f"p_{k}{heads + j}"] for j in range(1, heads + 1)], axis=-1)
            for k in range(1, heads + 1)
        ],
        axis=-2,
    )
    return specialisation(p)


def rel_gap(n: int):
    """‖seed mean of (Δ_SGD − Δ_flow)‖ / ‖seed mean of Δ_flow‖ over n order parameters, from
    the 2n groups (SGD's Δ of each, then the flow's)."""

    def stat(*groups):
        sgd = np.array([np.mean(g) for g in groups[:n]])
        flow = np.array([np.mean(g) for g in groups[n:]])
        return float(np.linalg.norm(sgd - flow) / np.linalg.norm(flow))

    return stat


def slope(d, values) -> float:
    """Least-squares slope of log(values) on log d."""
    return float(np.polyfit(np.log(np.asarray(d, float)), np.log(values), 1)[0])


class AIMHeads(Experiment[HeadsConfig]):
    name = NAME
    description = (
        "P1 Eqs. 1–2, Thm 1: multi-head SGD follows the population flow, the gap shrinking with "
        "d; h2 heads specialise, h1 heads cannot"
    )
    Config = HeadsConfig
    presets = {
        "tiny": {},
        "small": {
            "cases": ["tied-h1-2", "tied-h2-2", "tied-h1-3", "tied-h2-3", "untied-h1-2"],
            "d_h1": [16, 32, 64, 128],
            "d_h2": [64, 96, 128],
            "quad_log2": 14,
        },
        "paper": {
            "cases": [
                "tied-h1-2",
                "tied-h2-2",
                "tied-h1-3",
                "tied-h2-3",
                "tied-h2-4",
                "untied-h1-2",
                "untied-h1-3",
            ],
            "d_untied": [32, 64, 128],
            "d_h1": [64, 128, 256],
            "d_h2": [96, 192, 384],
            "seeds": 16,
            "quad_log2": 16,
        },
    }
    preset_notes = {
        "tiny": "two heads, h1 at d = 16, 32, 64 (c = 0.05) and h2 at d = 64, 96 (c = 0.03), 8 "
        "seeds, the flow on 2^12 nodes (Gauss–Hermite, exact for these polynomial losses). "
        "gap-shrinks is claimed for h1 only: over h2's two dimensions its interval was too "
        "wide (the retired claims). 24.7 s wall (21 s CPU) in a fresh results folder "
        "at load 4–5; in the end-to-end tests 17 s, 16 s at seed offset 1000, the controls "
        "4–6 s (they reuse the SGD runs).",
        "small": "two and three tied heads, h1 at d = 16, 32, 64, 128 and h2 at d = 64, 96, "
        "128, and two untied h1 heads at d = 16, 32, 64 (horizon τ = 0.5), 8 seeds, the flow on "
        "2^14 nodes (mirrored Sobol for three h2 heads). 230 s wall (150 s CPU) at seed offset 0 "
        "in a fresh results folder beside other jobs (load 6).",
        "paper": "two, three and four tied heads, h1 up to d = 256 and h2 up to d = 384, two "
        "and three untied h1 heads up to d = 128, 16 seeds, "
        "the flow on 2^16 nodes (not run on two cores; its dry run did not finish in 5 min "
        "under load).",
    }
    controls = {
        "wrong-activation": Control(
            {"flow_activation": "swapped"},
            "the flow of the model with the other activation (h2's flow for h1's SGD and h1's "
            "for h2's): a wrong model of the readout",
        ),
        "time-direct": Control(
            {"flow_time": 0.25},
            "the flow on direct S's time map t = nα_d/d (P1 §3.2) instead of tied's 4nα_d/d: a "
            "time scale wrong by a factor 4",
        ),
    }
    claims = (
        claim(
            "tracks-{}",
            "{}: SGD's drift of the order parameters over the horizon is the population flow's",
            statistic="at the largest d: r = ‖ḡ‖/‖Δ̄_flow‖ over the student's order parameters "
            "t_k, q_kl (untied: m_k, tA_k, tB_k, q1_kl, q2_kl); Δ the change over the "
            "horizon, g = Δ_SGD − Δ_flow paired by seed, bars seed means; jackknife-t 95 % CI "
            "over seed pairs",
            target=below("track_tol"),
            reason="P1 Thm 1 and Eqs. 7, 25: the flow of Φ is SGD's mean path, up to finite-d "
            "terms that vanish as d grows. The bound ¼ asks that the flow account for SGD's "
            "drift to within a quarter of its size; a flow on the wrong time map (factor 4) "
            "misses most of the drift (r near 1), the other activation's flow a third or more",
            controls=("wrong-activation", "time-direct"),
            over=_cases,
        ),
        claim(
            "gap-shrinks-{}",
            "{}: SGD's distance from its own flow shrinks as d grows",
            statistic="slope of log(seed mean of ‖g_s‖) on log d, g_s the gap vector of seed s "
            "over t_k, q_kl; jackknife-t 95 % CI (seeds left out within each d)",
            target=below("slope_bound"),
            reason="the finite-d population term is zero for h1 (a quadratic loss: E_x L = Φ) "
            "and O(1/d) for h2 (an even loss: Lemma 10's d^−½ Edgeworth term vanishes), and "
            "SGD's fluctuation about its mean path shrinks with d; so the slope is negative, "
            "with the tolerance ¼ of aim-landscape. A flow on the wrong time map leaves a gap "
            "of the size of the drift itself, which does not shrink: slope ≈ 0",
            controls=("time-direct",),
            over=_shrink_cases,
        ),
        claim(
            "split-rate-{}",
            "{}: the heads split between the teacher heads at the flow's rate",
            statistic="at the largest d: log(S̄(T)/S̄(T/2)) of SGD over that of the flow, S̄ "
            "the seed mean of spec, T the horizon, spec = max_π (1/H) Σ_k p_k,π(k) − mean p over "
            "the student–teacher overlaps; jackknife-t 95 % CI over seed pairs",
            target=between("spec_low", "spec_high"),
            reason="h2's symmetric state (every student head alike on every teacher head) is "
            "unstable under the flow of Φ: spec grows about tenfold by t = 1, at the rate of its "
            "unstable direction, while its amplitude is set by the initial O(d^−½) asymmetry "
            "and, in SGD, by the noise, which the flow does not see. So the claim is the "
            "growth over the second half of the horizon. The band [½, 2] is a factor 2 either "
            "way; the other activation's flow (h1: no unstable direction) lies outside it. The "
            "wrong time map's 2.35 [1.75, 2.94] (tiny) is outside it in value but its interval "
            "reaches in, so `time-direct` is not counted as refuting this claim (issue 49)",
            controls=("wrong-activation",),
            over=_h2_cases,
        ),
        claim(
            "no-split-{}",
            "{}: the heads do not split, as the flow says",
            statistic="at the largest d: (seed mean of SGD's spec) / (seed mean of the flow's "
            "spec) at the horizon; jackknife-t 95 % CI over seed pairs",
            target=between("spec_low", "spec_high"),
            reason="with h1 the output is linear in Σ_k S_k: every head receives the same "
            "gradient matrix, so spec stays at its initial O(d^−½) and the flow gives each "
            "seed's value. The band [½, 2] is a factor 2 either way; the other activation's "
            "flow (h2: the heads split) lies far outside it",
            controls=("wrong-activation",),
            over=_h1_cases,
        ),
    )
    notes = (
        "**Why these statistics.** A relative gap over all of the student's order parameters "
        "(rather than one chosen observable) is one number per case that any wrong drift "
        "moves. The gap's scaling is measured on SGD's per-seed distance from its own flow, "
        "which includes its fluctuation: for h1 the population gap is exactly zero (the loss "
        "is quadratic in the forms), so a mean gap would be a claim about noise.\n\n"
        "**Specialisation at finite d.** h2's heads leave the symmetric state by growth of the "
        "initial asymmetry, which is O(d^−½): at d = 128 SGD's noise sometimes picks the other "
        "matching than the seed's flow, so the claim compares how far the heads split (seed "
        "means), not which teacher head each student head takes.\n\n"
        "**Step size for h2.** With c = 0.05 (batch 32) two-head h2 SGD diverged in 3 of 8 seeds "
        "at d = 48 and in 1 of 16 at d = 64 (seed offset 2000); h2 runs use c = 0.03 and "
        "d ≥ 64. h1 is stable at d = 16 with c = 0.05.\n\n"
        "**Retired claims** (the table above): `gap-shrinks-tied-h2-2` over tiny's two h2 "
        "dimensions, `specialise-{case}` and the per-seed `split-rate-{case}`. After the last "
        "change small was run at offsets 4000 and 5000: `split-rate` 0.989 [0.898, 1.08] and "
        "1.07 [0.961, 1.18] (two heads), 1.00 [0.943, 1.06] and 0.954 [0.894, 1.02] (three); "
        "every claim passed (docs/claims.md).\n\n"
        "**Not covered.** Untied h2 heads were not run: untied h2 and h3 escape the "
        "uninformative state only after a d-dependent time (aim-untied-escape measures it), so "
        "a horizon would have to be chosen per d. Left for later, not claimed.\n\n"
        "**A control that did not fail.** The flow read at twice SGD's time (`time-2x`, first "
        "proposed) left `tracks-tied-h1-2` at 0.188 [0.162, 0.214], inside the ¼ bound: h1's "
        "drift saturates by t = 1, so doubling the time moves the order parameters little. "
        "It was replaced by `time-direct` (direct S's time map, a factor 4), which fails "
        "every claim it names."
    )

    retired = (
        Retired(
            "gap-shrinks-tied-h2-2 (tiny)",
            "two tied h2 heads: the SGD–flow gap shrinks with d, over tiny's d = 64, 96",
            "< −0.25 (95% CI)",
            "tiny, seed offset 0: −1.39 [−2.64, −0.15] (8 seeds; each seed's gap varies with "
            "when its heads split)",
            "2026-12-07",
            "a slope over two dimensions is not resolved by 8 seeds: the claim is made only "
            "over three or more (h2 at small: d = 64, 96, 128), target unchanged",
            "gap-shrinks-tied-h2-2 (small and paper)",
        ),
        Retired(
            "specialise-{case}",
            "the heads specialise as the flow's do: (seed mean of SGD's spec)/(seed mean of the "
            "flow's spec) at the horizon",
            "in [0.5, 2] (95% CI)",
            "small, seed offset 2000, two h2 heads at d = 128: 1.632 [0.725, 2.539] (passed at "
            "tiny and at small offsets 0, 1000)",
            "2026-12-07",
            "at t = 1 h2's split still grows exponentially from an amplitude SGD's noise sets "
            "as much as the initial asymmetry, which the flow alone sees: split into "
            "`split-rate` (h2: the growth of spec, the unstable direction's rate) and `no-split` "
            "(h1: the former statistic), band unchanged",
            "split-rate-{case}, no-split-{case}",
        ),
        Retired(
            "split-rate-{case} (per seed)",
            "h2: spec grows at the flow's rate, (seed mean of log(spec(T)/spec(T/2)) for SGD) / "
            "(the same for the flow)",
            "in [0.5, 2] (95% CI)",
            "small, seed offset 0, two heads at d = 128: 0.821 [0.377, 1.265] (offsets 1000, "
            "2000: 0.949 [0.794, 1.104], 1.023 [0.891, 1.154])",
            "2026-12-07",
            "spec is a distance to the symmetric state: a seed whose SGD split takes the other "
            "matching than its flow has spec ≈ 0 at T/2 and an unbounded log. Now the growth of "
            "the seed means, log(S̄(T)/S̄(T/2)); chosen on offsets 0–2000, so judged at 4000 "
            "and 5000 after the change",
            "split-rate-{case}",
        ),
    )

    def run(self, config: HeadsConfig, ctx: RunContext) -> dict[str, Any]:
        from attndyn.core.trajectory import make_trajectory
        from attndyn.experiments.aim.heads_flow import paired_flows

        out: dict[tuple[str, int], Any] = {}
        seeds = list(range(config.seed, config.seed + config.seeds))
        for case in config.cases:
            param, act, heads = parse(case)
            names = order_names(heads, param) + overlap_names(heads)
            for d in dims(config, case):
                changes = model_changes(config, case, d)
                sgd = ctx.simulate("aim", config.base, **changes)
                flow_act = act
                if config.flow_activation == "swapped":
                    flow_act = "h1" if act == "h2" else "h2"
                cfg = AIMConfig(**{**config.base.model_dump(), **changes, "activation": flow_act})
                times = sgd["time"].values

                def flow(cfg=cfg, times=times, names=names):
                    values = paired_flows(
                        cfg,
                        seeds,
                        times * config.flow_time,
                        names,
                        quad_log2=config.quad_log2,
                        rtol=config.rtol,
                    )
                    return make_trajectory(values, time=times, seeds=np.asarray(seeds))

                key = f"{NAME}:flow:v1:q{config.quad_log2}:r{config.rtol:g}:x{config.flow_time:g}"
                th = ctx.compute(key, cfg, flow)
                if not all(n in sgd and n in th for n in names):  # a dry run's placeholders
                    out[(case, d)] = {}
                    continue
                out[(case, d)] = {
                    "sgd": {n: sgd[n].values for n in names},
                    "flow": {n: th[n].values for n in names},
                    "time": times,
                    "diverged": int(np.sum(sgd["diverged"].values)),
                }
        return {"points": out}

    def measure(self, config: HeadsConfig, results: dict[str, Any]) -> dict[str, Any]:
        pts = results["points"]
        m: dict[str, Any] = {"cases": {}, "finite": True}
        for case in config.cases:
            param, _, heads = parse(case)
            ds = dims(config, case)
            names = order_names(heads, param)
            rows: dict[str, Any] = {"d": ds, "gap_norm": [], "rel_gap": [], "spec_sgd": []}
            rows |= {"spec_flow": [], "spec_sgd_time": None, "spec_flow_time": None}
            norms = []
            for d in ds:
                p = pts[(case, d)]
                if "sgd" not in p:  # a dry run's placeholder
                    return {"finite": False, "cases": {}}
                dsgd = {n: p["sgd"][n][:, -1] - p["sgd"][n][:, 0] for n in names}
                dflow = {n: p["flow"][n][:, -1] - p["flow"][n][:, 0] for n in names}
                gap = np.array([dsgd[n] - dflow[n] for n in names])  # (names, seeds)
                finite = bool(np.all(np.isfinite(gap))) and p["diverged"] == 0
                m["finite"] &= finite
                norms.append(np.linalg.norm(gap, axis=0))
                rows["gap_norm"].append(float(np.mean(norms[-1])))
                groups = [dsgd[n] for n in names] + [dflow[n] for n in names]
                rows["rel_gap"].append(jackknife_ci(groups, rel_gap(len(names)), paired=True))
                s_sgd, s_flow = _spec_of(p["sgd"], heads), _spec_of(p["flow"], heads)
                rows["spec_sgd"].append(float(np.mean(s_sgd[:, -1])))
                rows["spec_flow"].append(float(np.mean(s_flow[:, -1])))
                half = int(np.argmin(np.abs(np.asarray(p["time"]) - p["time"][-1] / 2)))

                def growth(a, b):  # log-growth of the seed mean of spec, T/2 → T
                    return float(np.log(np.mean(a) / np.mean(b)))

                groups = [s_sgd[:, -1], s_sgd[:, half], s_flow[:, -1], s_flow[:, half]]
                rows["split_rate"] = jackknife_ci(
                    groups, lambda a, b, c, e: growth(a, b) / growth(c, e), paired=True
                )
                rows["growth_sgd"] = growth(*groups[:2])
                rows["growth_flow"] = growth(*groups[2:])
                rows["spec_ratio"] = jackknife_ci(
                    [s_sgd[:, -1], s_flow[:, -1]],
                    lambda a, b: float(np.mean(a) / np.mean(b)),
                    paired=True,
                )
                rows["spec_sgd_time"] = np.mean(s_sgd, axis=0).tolist()
                rows["spec_flow_time"] = np.mean(s_flow, axis=0).tolist()
                rows["spec_initial"] = float(np.mean(s_sgd[:, 0]))
                rows["time"] = np.asarray(p["time"]).tolist()
            rows["slope"] = (
                jackknife_ci(norms, lambda *g, ds=ds: slope(ds, [np.mean(x) for x in g]))
                if len(ds) >= 2
                else None
            )
            m["cases"][case] = rows
        return m

    def preconditions(self, config: HeadsConfig, m: dict[str, Any]) -> list[Check]:
        return [Check("every seed finite (no SGD seed diverged, every flow finite)", m["finite"])]

    def evaluate(self, config: HeadsConfig, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for case, r in m["cases"].items():
            out[f"tracks-{case}"] = Evidence(
                r["rel_gap"][-1],
                detail="r over d = "
                + ", ".join(
                    f"{d}: {iv.value:.3g}" for d, iv in zip(r["d"], r["rel_gap"], strict=True)
                ),
            )
            if case in _shrink_cases(config):
                out[f"gap-shrinks-{case}"] = Evidence(
                    r["slope"],
                    detail="seed means of ‖g_s‖: " + ", ".join(f"{v:.3g}" for v in r["gap_norm"]),
                )
            spec = (
                f"spec at the horizon, SGD {r['spec_sgd'][-1]:.3g}, flow "
                f"{r['spec_flow'][-1]:.3g}; at t = 0 {r['spec_initial']:.3g}"
            )
            if case in _h2_cases(config):
                out[f"split-rate-{case}"] = Evidence(
                    r["split_rate"],
                    detail=f"log-growth of spec over the second half, SGD {r['growth_sgd']:.3g}, "
                    f"flow {r['growth_flow']:.3g}; {spec}",
                )
            else:
                out[f"no-split-{case}"] = Evidence(r["spec_ratio"], detail=spec)
        return out

    def figure(
        self, config: HeadsConfig, results: dict[str, Any], m: dict[str, Any], path: Path
    ) -> Path:
        fig, axes = new_figure(1, 2, figsize=(9.0, 3.8))
        for n, (case, r) in enumerate(m["cases"].items()):
            axes[0].plot(r["d"], r["gap_norm"], "o-", color=f"C{n}", label=case)
            axes[1].plot(r["time"], r["spec_sgd_time"], "o", color=f"C{n}", label=f"{case} SGD")
            axes[1].plot(r["time"], r["spec_flow_time"], "-", color=f"C{n}", label="flow")
        axes[0].set(xscale="log", yscale="log", xlabel="d", ylabel="seed mean of ‖g_s‖")
        axes[0].set_title("SGD's distance from its own flow")
        axes[1].set(
            xlabel="t", ylabel="spec (seed mean)", yscale="log", title="specialisation, largest d"
        )
        for ax in axes:
            ax.legend(frameon=False, fontsize=7)
        return save_figure(fig, path)
