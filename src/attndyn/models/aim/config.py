"""Configuration of the attention-indexed model (AIM) simulator, arXiv 2609.03858.

Readings chosen where the paper is silent are documented per field; see docs/aim.md.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from attndyn.core.config import SimulationConfig


class AIMConfig(SimulationConfig):
    """Teacher–student AIM trained by online SGD.

    Tokens X ~ N(0, C ⊗ I_d) (L tokens in R^d). Every index k (student or teacher) enters only
    through the quadratic forms G_ijk = (x_iᵀ S_k x_j − c C_ij Tr S_k)/√d, with c = 1 (centred) for
    tied and direct students and symmetric teachers, c = 0 for untied students and the product
    teacher (P1 §3.1, §4.1, App. E). With ``head_params`` / ``teacher_head_kinds`` each head has
    its own parameterisation (P1 Eqs. 1–2: each head its own S^(h)) and the rule holds per index.
    """

    d: int = Field(64, ge=2, le=65_536, description="input dimension")
    L: int = Field(1, ge=1, le=64, description="number of tokens")
    C: list[list[float]] | None = Field(
        None, description="L×L token covariance (PSD); identity when omitted"
    )
    param: Literal["tied", "direct", "untied"] = Field(
        "tied", description="student parameterisation: S = WWᵀ, S itself, or S = UVᵀ"
    )
    rho: float = Field(0.5, gt=0, le=8, description="student width ratio r/d (tied, untied)")
    init_scale: float = Field(
        1.0, ge=0, description="student entries ~ N(0, init_scale²/d) (W, S or U)"
    )
    v_scale: float = Field(
        0.8,
        gt=0,
        description="untied: V entries ~ N(0, (init_scale·v_scale)²/d); ≠ 1 gives the "
        "balance gap |t^A − t^B| of Assumption 4.4",
    )
    init_mean: float | None = Field(
        None,
        description="untied: set the student's initial mean m = Tr(UVᵀ)/√d to this value exactly "
        "(V ← V + cU); None keeps the drawn value, O(d^-1/2)",
    )
    teacher_mean: float | None = Field(
        None,
        description="product teacher: set its mean m = Tr(U*V*ᵀ)/√d to this value exactly "
        "(V* ← V* + cU*); None keeps the drawn value, O(d^-1/2)",
    )
    teacher: Literal["auto", "wishart", "identity", "product"] = Field(
        "auto",
        description="teacher S*: wishart W*W*ᵀ, identity (scale·I), product U*V*ᵀ; "
        "auto = product for untied students, wishart otherwise",
    )
    head_params: list[Literal["tied", "direct", "untied"]] | None = Field(
        None,
        description="per-head student parameterisation (one entry per head, P1 Eqs. 1–2 give "
        "each head its own S^(h)); every layer of head h uses entry h; None = every head uses "
        "param; param must be one of the entries and sets the time axis (docs/aim.md)",
    )
    teacher_head_kinds: list[Literal["wishart", "identity", "product"]] | None = Field(
        None,
        description="per-head teacher kind (one entry per teacher head); None = every head is "
        "teacher's kind",
    )
    teacher_rho: float = Field(0.5, gt=0, le=8, description="teacher width ratio r*/d")
    teacher_scale: float = Field(
        1.0, gt=0, description="teacher entries ~ N(0, scale/d); identity teacher = scale·I"
    )
    output: Literal["index", "softmax"] = Field(
        "index",
        description="the readout σ: index = the activation on each form; softmax = row-wise "
        "softmax(β G) ('two-layer' is read as softmax with layers = 1)",
    )
    layers: int = Field(
        0,
        ge=0,
        le=3,
        description="M: residual attention layers before the readout, X_m = c·X_{m−1} + "
        "Σ_h softmax(β A_m^(h)) X_{m−1} V^(h) (P1 Eqs. 1–2, App. B.1); 0 = one layer",
    )
    values: Literal["identity", "gaussian"] = Field(
        "identity",
        description="value matrices V^(h) of the residual layers: identity, or fixed Gaussian "
        "with N(0, value_scale²/d) entries (needs uncentred forms: param untied, product teacher)",
    )
    value_scale: float = Field(
        1.0, gt=0, description="values=gaussian: entries of V ~ N(0, value_scale²/d)"
    )
    activation: str = Field(
        "h2",
        description="activation for output='index' (h1, h2, h3, relu, tanh, erf or registered)",
    )
    beta: float = Field(1.0, gt=0, description="softmax inverse temperature β")
    heads: int = Field(1, ge=1, le=4, description="student heads (outputs summed over heads)")
    teacher_heads: int | None = Field(None, ge=1, le=4, description="teacher heads (= heads)")
    layer_c: float = Field(1.0, description="residual weight c of the layers' recursion")
    loss_scale: Literal["half", "full"] = Field(
        "half",
        description="half: ½‖y − y*‖² (P1 Eqs. 22–23); full: ‖y − y*‖² (P1 App. D.3); "
        "full doubles every rate",
    )
    label_noise: float = Field(0.0, ge=0, description="std of Gaussian noise on teacher outputs")
    lr: float = Field(
        0.05, gt=0, description="step-size constant c (small: h2, h3 tails destabilise larger c)"
    )
    lr_scaling: Literal["dlogd", "d", "d2", "raw"] = Field(
        "dlogd", description="α_d = c/(d log d), c/d, c/d², or c"
    )
    batch: int = Field(1, ge=1, le=65_536, description="batch size B; step η = B·α_d on the mean")
    weight_decay: float = Field(0.0, ge=0, description="γ in the penalty (γ/2d)‖W‖_F²")
    moment_degree: int = Field(
        3, ge=2, le=6, description="largest degree of recorded trace moments"
    )
    test_size: int = Field(256, ge=0, le=100_000, description="held-out samples for the test loss")

    ID_NEUTRAL: ClassVar[dict] = {
        "layers": 0,
        "values": "identity",
        "value_scale": 1.0,
        "head_params": None,
        "teacher_head_kinds": None,
    }
    """Fields added after runs were stored, at the value that keeps their ids
    (:func:`attndyn.core.config.identity`)."""

    @model_validator(mode="before")
    @classmethod
    def _two_layer(cls, values: Any) -> Any:
        """``output='two-layer'`` (the former spelling) is softmax with one residual layer."""
        if isinstance(values, dict) and values.get("output") == "two-layer":
            if values.get("layers", 1) != 1:
                raise ValueError("output: 'two-layer' means layers = 1; use output='softmax'")
            values = {**values, "output": "softmax", "layers": 1}
        return values

    @model_validator(mode="before")
    @classmethod
    def _uniform_heads(cls, values: Any) -> Any:
        """A per-head list whose entries all equal the plain field's value is that plain config
        (``None``): the same run id and the same simulation, bit for bit."""
        if not isinstance(values, dict):
            return values
        param = values.get("param", "tied")
        heads = values.get("heads", 1)
        teacher_heads = values.get("teacher_heads") or heads
        kind = values.get("teacher", "auto")
        if kind == "auto":
            kind = "product" if param == "untied" else "wishart"
        for name, plain, n in (
            ("head_params", param, heads),
            ("teacher_head_kinds", kind, teacher_heads),
        ):
            given = values.get(name)
            if isinstance(given, list) and len(given) == n and all(g == plain for g in given):
                values = {**values, name: None}
        return values

    @field_validator("activation")
    @classmethod
    def _known_activation(cls, value: str) -> str:
        from attndyn.models.aim.model import ACTIVATIONS

        if value not in ACTIVATIONS:
            raise ValueError(f"must be one of {', '.join(sorted(ACTIVATIONS))}")
        return value

    @model_validator(mode="after")
    def _check_head_lists(self) -> AIMConfig:
        if self.head_params is not None:
            if len(self.head_params) != self.heads:
                raise ValueError(
                    f"head_params: needs one entry per head (heads = {self.heads}), got "
                    f"{len(self.head_params)}"
                )
            if self.param not in self.head_params:
                raise ValueError(
                    f"head_params: param ({self.param!r}) must be one of the entries: it sets the "
                    "time axis of a mixed student"
                )
        if self.teacher_head_kinds is not None:
            if len(self.teacher_head_kinds) != self.n_teacher_heads:
                raise ValueError(
                    f"teacher_head_kinds: needs one entry per teacher head (teacher_heads = "
                    f"{self.n_teacher_heads}), got {len(self.teacher_head_kinds)}"
                )
            if self.teacher_kind not in self.teacher_head_kinds:
                raise ValueError(
                    f"teacher_head_kinds: teacher ({self.teacher_kind!r}) must be one of the "
                    "entries (wishart, identity, product)"
                )
        return self

    @model_validator(mode="after")
    def _check_means(self) -> AIMConfig:
        if self.init_mean is not None and "untied" not in self.student_kinds:
            raise ValueError("init_mean needs param='untied' (or an untied head in head_params)")
        if self.teacher_mean is not None and "product" not in self.teacher_kinds:
            raise ValueError(
                "teacher_mean needs the product teacher (or a product head in teacher_head_kinds)"
            )
        return self

    @model_validator(mode="after")
    def _check_indices(self) -> AIMConfig:
        if self.n_student + self.n_teacher > 9:
            raise ValueError(
                f"layers: heads·(layers + 1) student plus teacher indices must be at most 9 (got "
                f"{self.n_student} + {self.n_teacher}): observable names q_kl give each index "
                "one digit"
            )
        return self

    @model_validator(mode="after")
    def _check_values(self) -> AIMConfig:
        uncentred = set(self.student_kinds) == {"untied"} and set(self.teacher_kinds) == {"product"}
        if self.values != "identity" and not uncentred:
            raise ValueError(
                "values: gaussian value matrices need uncentred forms (param='untied' with the "
                "product teacher, P1 App. B.1); tied and direct forms are centred through V = I"
            )
        return self

    @model_validator(mode="after")
    def _check_covariance(self) -> AIMConfig:
        if self.C is None:
            return self
        shape = [len(row) for row in self.C]  # rows of any lengths (a ragged C too)
        if shape != [self.L] * self.L:
            raise ValueError(f"C must be an L×L matrix with L = {self.L}; got rows {shape}")
        c = np.asarray(self.C, dtype=float)
        if not np.allclose(c, c.T, atol=1e-12):
            raise ValueError("C must be symmetric")
        if np.linalg.eigvalsh(c).min() < -1e-10:
            raise ValueError("C must be positive semi-definite (it has a negative eigenvalue)")
        return self

    @property
    def teacher_kind(self) -> str:
        if self.teacher != "auto":
            return self.teacher
        return "product" if self.param == "untied" else "wishart"

    @property
    def mixed(self) -> bool:
        """Whether the heads differ in parameterisation (student) or kind (teacher)."""
        return self.head_params is not None or self.teacher_head_kinds is not None

    @property
    def student_kinds(self) -> list[str]:
        """The parameterisation of each student index (head h's layers take entry h)."""
        per_head: list[str] = [self.param] * self.heads
        if self.head_params is not None:
            per_head = list(self.head_params)
        return [p for p in per_head for _ in range(self.layers + 1)]

    @property
    def teacher_kinds(self) -> list[str]:
        """The kind of each teacher index (head h's layers take entry h)."""
        per_head: list[str] = [self.teacher_kind] * self.n_teacher_heads
        if self.teacher_head_kinds is not None:
            per_head = list(self.teacher_head_kinds)
        return [p for p in per_head for _ in range(self.layers + 1)]

    @property
    def observed_param(self) -> str | tuple[str, ...]:
        """The ``param`` argument of :func:`~attndyn.models.aim.observables.observe`: ``param``,
        or the student's kinds when the heads differ (each kind's extra observables)."""
        return self.param if self.head_params is None else tuple(sorted(set(self.head_params)))

    @property
    def n_teacher_heads(self) -> int:
        return self.teacher_heads or self.heads

    @property
    def n_student(self) -> int:
        """Student indices K_s = heads·(layers + 1), head h's layer m at h·(layers + 1) + m."""
        return self.heads * (self.layers + 1)

    @property
    def n_teacher(self) -> int:
        """Teacher indices, laid out as the student's with its own heads."""
        return self.n_teacher_heads * (self.layers + 1)

    @property
    def alpha_d(self) -> float:
        """Per-sample step size α_d (P1 Thms 2–4: α_d ≤ c0/(d log d))."""
        d = self.d
        rates = {"dlogd": self.lr / (d * np.log(d)), "d": self.lr / d, "d2": self.lr / d**2}
        return rates.get(self.lr_scaling, self.lr)  # "raw": α_d = c

    @property
    def time_per_sample(self) -> float:
        """Macroscopic time per sample (P1 §3.2, §4.2, App. E): tied 4α_d/d, direct and untied
        (slow) α_d/d; a mixed student (``head_params``) runs on the axis of ``param``."""
        factor = 4.0 if self.param == "tied" else 1.0
        return factor * self.alpha_d / self.d

    @property
    def total_steps(self) -> int:
        """OverflowError when the step underflows (core/config.py names ``t_max`` then)."""
        with np.errstate(divide="ignore", over="ignore"):
            steps = np.ceil(self.t_max / (self.time_per_sample * self.batch))
        return max(1, int(steps))


NAME = "aim"
"""The registered family name."""

EXAMPLE = dict(d=12, seeds=2, t_max=0.05, records=4, batch=4, test_size=16)
"""A small config that runs in about a second (contract tests, docs)."""
