"""``aim-direct-escape`` (P1 = arXiv 2609.03858 App. E, Cor. 7; open question Q5, issue 29): how
the escape time of the direct parameterisation (S itself trained, L = 1) from the uninformative
start grows with d for h2 and h3, which Cor. 7.2 only shows do not recover within O(d² log d)
samples, against the h1 control (Θ(d² log d)). Per seed the escape time τ_wr on τ = nα_d/d,
right-censored at the horizon; κ in KM-median τ_wr ∝ d^κ (docs/aim-open-questions.md). Cor. 7.2
is asymptotic, so the claim is that τ_wr(h2/h3)/τ_wr(h1) grows with d, not that it exceeds 1 at a
given d.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from attndyn.claims.base import Control, Experiment
from attndyn.claims.config import Base
from attndyn.claims.spec import Evidence, Retired, above, claim, measured, within
from attndyn.experiments.aim.escape import EscapeConfig, EscapeMixin
from attndyn.models.aim.config import AIMConfig

TEACHER_SCALE = (2 / 3) ** 0.5  # Wishart q22 = scale² ρ*(1 + ρ*) = 1/2 at ρ* = 1/2: Var G₂ = 1


class DirectEscapeConfig(EscapeConfig):
    base: AIMConfig = Base(
        AIMConfig,
        "direct S, L = 1, S₁ entries N(0, 1/d) (Assumption 10, centred forms, Eq. 396), "
        "Wishart teacher W₂W₂ᵀ of width d/2 with Var G₂ = 1 (teacher_scale = √(2/3), Eq. 417), "
        "γ = 0, α_d = lr/(d log d), batch-mean SGD (η = B·α_d), linear record grid; `t_max` is "
        "the slow horizon τ_max of h2",
        L=1,
        param="direct",
        teacher_scale=TEACHER_SCALE,
        teacher_rho=0.5,
        lr=0.02,
        lr_scaling="dlogd",
        batch=32,
        t_max=3.0,
        records=100,
        grid="linear",
        moment_degree=2,
        test_size=0,
    )
    activations: list[Literal["h1", "h2", "h3"]] = Field(
        ["h1", "h2", "h3"], min_length=1, description="activations; the first must be h1"
    )
    d: list[int] = Field([24, 32, 45, 64], min_length=2, description="dimensions (increasing)")
    seeds: int = Field(40, ge=2, description="seeds of every case but h1 (and h3)")
    h3_seeds: int | None = Field(20, ge=2, description="seeds of h3 (None: `seeds`)")
    t_max_h1: float = Field(0.6, gt=0, description="horizon τ_max of h1")
    t_max_h3: float = Field(0.8, gt=0, description="horizon τ_max of h3")
    lr_h3: float = Field(0.001, gt=0, description="α_d = lr_h3/(d log d) for h3")


NOTES = """\
**Observable.** The overlap of Eq. 413, max(|p_Ψ,12|, |p_Ω,12|) (`recovery_signal(traj,
kind="direct", direct="psi-omega")`), normalised by the Frobenius norms: ρ = max(|p_Ψ,12|,
|p_Ω,12|)/√(p_Ω,11 p_Ω,22), p_Ω,kk = ‖S_k‖²_F/d − t_k² (p_Ψ,11 = Tr(S₁²)/d − t₁² is not a norm
for a non-symmetric S). The teacher is symmetric, so p_Ψ,12 = p_Ω,12 here. **Threshold** 0.3,
fixed after the pilot (d = 32: ρ(0) ≤ 0.04; h1 plateaus near 0.6, as the student's skew part,
invisible at L = 1, does not learn) and before the small run.

**Escape time**, KM median, κ and its interval exactly as in aim-untied-escape (notes there).

**Why a growth claim, not a ratio > 1.** Cor. 7.2 says that τ_wr(h2/h3)/τ_wr(h1) → ∞, not that
the ratio exceeds 1 at a given d; and at d = 32 direct h3 escapes before h1 (KM medians 0.175
against 0.286, 2026-12-03), with the overlap p_Ω,12 itself growing to ≈ p_Ω,22 (a recovery, not
a shrinking student norm). A reading that explains it, a reconstruction [I] not in P1: at finite d
the pre-activations Z_k = (xᵀS_kx − Tr S_k)/√d are not jointly Gaussian; their joint cumulants
κ(Z₂, Z₂, Z₁) = 8 Tr(S₂²S₁)/d^{3/2} and κ(Z₂, Z₂, Z₂, Z₁) = 48 Tr(S₂³S₁)/d² give h2 and h3 a
first-order drift toward S₂² and S₂³ (both overlap the Wishart teacher S₂) of size d^{−1/2} and
d^{−1} relative to h1's, hence escape times growing like d^{1/2} and d (κ ≈ ½, 1) before the
asymptotic regime; the claim holds under either regime. (S₁ enters by its symmetric part.)

**Reported, not claimed**: κ of h2 and h3 (Q5: Cor. 7.2 says only "not within O(d² log d)"),
and since 2026-12-07 the growth κ(h3) − κ(h1) (`summary.growth.h3`).

**A retired control** (issue 49: a control must fail a claim by value, its interval on the wrong
side of the target). `direct-h1` (the h2/h3 arms train h1, breaking Cor. 7.2's hypothesis) is a
null model: it gives κ(arm) − κ(h1) = −0.006 [−0.135, 0.105] at tiny (offset 0), consistent with
0 as Cor. 7.2's mechanism predicts, but a null value cannot put the interval of a claim "> 0" on
its wrong side. `h2-escape-outgrows-h1` is now failed by `teacher-shrinks`, a wrong h1 reference
whose escape time grows like d (tiny: −0.663 [−1.02, −0.279]). The h3 claims are retired (the
table above): `h3-escape-outgrows-h1` is reported, since no control refutes it by value.

h1, h2 at lr 0.02 (batch 32); h3 at lr 0.001, batch 16, at d ≥ `h3_from` = 32 (the untied
pilot diverged at lr 0.05 for h3, untied h3 lost a seed at d = 24 at lr 0.002, and direct h3 at
lr 0.002 lost one of 20 seeds at d = 45: that small run was invalid; at d = 24, lr 0.001, a
20-seed pilot diverged too, 2026-12-04). h2 at 40 seeds, h3 at 20 (`h3_seeds`), h1 at 160.
Preconditions: no seed diverged; the h1 reference censored in < 50 % of seeds at every d.
"""


class AIMDirectEscape(EscapeMixin, Experiment):
    name = "aim-direct-escape"
    description = (
        "P1 Q5 (App. E, Cor. 7.2): direct-S h2/h3 escape time against d (κ), h1 control Θ(d² log d)"
    )
    Config = DirectEscapeConfig
    presets = {
        "tiny": {
            "d": [16, 32],
            "activations": ["h1", "h2"],
            "base.t_max": 1.5,
            "seeds": 80,
        },
        "small": {},
        "paper": {"d": [64, 91, 128, 181, 256], "base.t_max": 6.0, "t_max_h3": 4.0},
    }
    preset_notes = {
        "tiny": "h1 (160 seeds) and h2 (80) at d = 16, 32, no h3. Passed at offsets 0, 1000, "
        "2000 (2026-12-04); with h1 at 80 and h2 at 40 seeds the growth failed at offset 1000 "
        "(0.63 [−0.10, 1.05]) and h1's κ at offset 2000 (0.086 [−0.036, 0.175]).",
        "small": "d = 24, 32, 45, 64 (h3 at 32, 45, 64, horizon 0.8), h2 40 seeds, h3 20, h1 "
        "160. Passed at offsets 0, 1000, 2000 (2026-12-04), 575–640 s on two cores; h3's "
        "median at d = 64 is censored (50–70 % of seeds beyond τ = 0.8), so its growth is a "
        "lower bound. The former small preset (d ≤ 45, claim `h3-slower-than-h1`: ratio > 1 at "
        "every d) failed at offset 0: 0.61 [0.45, 0.84], h3 escaping before h1 at d = 32.",
        "paper": "d = 64 … 256 on a √2 grid (dry-run estimate).",
    }
    controls = {
        "teacher-shrinks": Control(
            {"teacher_shrink": True, "t_max_h1": 3.0},
            "the teacher's entries shrink like d_min/d: h1's drift toward it on the slow scale "
            "falls like 1/d, so its escape time grows like d (κ ≈ 1), not Θ(d² log d) (κ = 0). "
            "The h1 horizon is 3 here: the overlap's plateau, ≈ √(p₂₂/(p₂₂ + ‖skew S₁(0)‖²/d)) "
            "(the skew part does not learn at L = 1), falls to ≈ 0.4 with the teacher at half "
            "size, and at τ_max = 0.6 the d = 32 run was 94 % censored (inconclusive). For the "
            "h2 claim it is a wrong reference: the arm is compared with an h1 whose escape "
            "time grows like d, so κ(h2) − κ(h1) < 0",
        ),
    }
    claims = (
        claim(
            "h1-escape-d-scale",
            "h1 (control): the escape time on τ = nα_d/d does not grow with d (Cor. 7: "
            "Θ(d² log d) when a₊g₊(0) ≠ 0)",
            statistic="κ: least-squares slope of log KM-median τ_wr on log d (per seed τ_wr the "
            "first τ with the normalised overlap ≥ `threshold`); percentile bootstrap 95 % CI "
            "over seeds within each d",
            target=within(0.0, measured("1/(2 ln d̄)")),
            reason="the midpoint between a d-independent τ_wr (κ = 0) and τ_wr ∝ log d (κ ≈ "
            "1/ln d̄), as in aim-recovery-scaling",
            controls=("teacher-shrinks",),
        ),
        claim(
            "{}-escape-outgrows-h1",
            "direct S with {}: the escape time grows faster with d than h1's, so {} does not "
            "recover on h1's Θ(d² log d) scale (Cor. 7.2)",
            statistic="κ({}) − κ(h1): least-squares slope on log d of log(KM-median τ_wr({}) / "
            "KM-median τ_wr(h1)) over the d where both run (a censored median of {} counts as "
            "τ_max); percentile bootstrap 95 % CI over seeds within each (activation, d)",
            target=above(0.0),
            reason="Cor. 7.2: g± = 0 at the uninformative start, so weak recovery does not occur "
            "within O(d² log d) samples: τ_wr({})/τ_wr(h1) → ∞. The corollary is asymptotic, "
            "so the ratio itself may be below 1 at small d (it is for h3 at d = 32, see the "
            "notes), but it must grow with d",
            controls=("teacher-shrinks",),
            over=lambda c: [a for a in c.activations if a == "h2"],
        ),
    )
    notes = NOTES

    retired = (
        Retired(
            "h3-slower-than-h1",
            "direct h3 escapes later than h1 at every d: τ_wr(h3)/τ_wr(h1) > 1",
            "> 1 (95% CI) at every d",
            "small (then d ≤ 45), seed offset 0: 0.61 [0.45, 0.84], h3 escaping before h1 at "
            "d = 32 (KM medians 0.175 against 0.286)",
            "2026-12-04",
            "Cor. 7.2 says τ_wr(h3)/τ_wr(h1) → ∞, not that the ratio exceeds 1 at a given d "
            '(App. E, Eq. 418, P1 @≈242,100: "for every fixed T < ∞ and every ε > 0, '
            'lim P(sup_{t∈[0,T]} max(|p_Ψ,12|, |p_Ω,12|) > ε) = 0"); replaced by the growth '
            "κ(h3) − κ(h1) > 0",
            "h3-escape-outgrows-h1",
        ),
        Retired(
            "h3-escape-outgrows-h1",
            "direct h3's escape time grows faster with d than h1's: κ(h3) − κ(h1)",
            "> 0 (95% CI)",
            "did not fail (small, offsets 0, 1000, 2000: 2.18 [1.47, 2.59], 2.16 [1.94, 2.33], "
            "2.12 [1.67, 2.87]); no control refutes it by value (`direct-h1` gives a null "
            "value, `teacher-shrinks` leaves κ(h3) ≈ 2.2 above the shrunk h1's ≈ 1.3)",
            "2026-12-07",
            "a claim no wrong model fails is not evidence (issue 49): the finite-d cumulant "
            "mechanism in the notes predicts growth as well as Cor. 7.2 does",
            "reported (summary.growth.h3)",
        ),
    )

    def cases(self, config: DirectEscapeConfig) -> list[str]:
        return list(config.activations)

    def ratio_cases(self, config: DirectEscapeConfig) -> dict[str, str]:
        return {a: a for a in config.activations if a != "h1"}

    def run_changes(self, config: DirectEscapeConfig, case: str, d: int) -> dict[str, Any]:
        return self.step_changes(config, case, case, d)

    @staticmethod
    def signal(traj) -> np.ndarray:
        p = np.maximum(np.abs(traj["pPsi_12"].values), np.abs(traj["pOmega_12"].values))
        return p / np.sqrt(traj["pOmega_11"].values * traj["pOmega_22"].values)

    def evaluate(self, config: Any, m: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "h1-escape-d-scale": Evidence(
                m["kappa"]["h1"],
                bounds=(m["kappa_band"],),
                detail=self.kappa_detail(config, m, "h1"),
            )
        }
        for act in [a for a in self.ratio_cases(config) if a == "h2"]:  # h3: reported (notes)
            r = m["ratio"][act]
            out[f"{act}-escape-outgrows-h1"] = Evidence(
                m["growth"][act],
                detail=self.kappa_detail(config, m, act) + f"; κ = {m['kappa'][act].value:.3g}; "
                f"min ratio to h1 {r.value:.3g} [{r.low:.3g}, {r.high:.3g}]",
            )
        return out
