"""Configuration of the single-query softmax-attention simulator (arXiv 2606.22406, Truong).

The paper's body was not available (only its abstract); the model is our reconstruction, and
every choice the abstract leaves open is a field here. The model, the defaults and the reasons
for them are in docs/query.md.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from attndyn.core.config import SimulationConfig

BLOCK = 128
"""Tokens are drawn in blocks of ``min(BLOCK, n)`` rows, block b from ``fold_in(key, b)``, so
the tokens of a sample do not depend on how they are streamed (see model.py)."""


class QueryConfig(SimulationConfig):
    """Projected stochastic gradient *ascent* on ‖a(q; X)‖², a(q; X) = Σ softmax(β⟨q, x_i⟩) x_i.

    Tokens (docs/query.md, "Model"): latent unit u; n_I informative x_i = θ ξ_i u + z_i, n_N
    nuisance x_j = z_j, z ~ N(0, σ² I_d), ξ a Rademacher sign per sequence, per token, or ξ = 1.
    Step: q ← Π(q + η_k ĝ) with ĝ the mini-batch mean of ∇_q‖a‖², Π the normalisation onto the
    unit sphere (or the identity), η_k = η (k0/(k + k0))^γ (Robbins–Monro) or η. The time axis
    counts SGA steps (``t_max`` is the number of steps); ``ode_time`` = Σ_{j<k} η_j is the
    limiting ODE's time.
    """

    t_max: float = Field(
        2000, gt=0, description="number of SGA steps (the 'time' axis counts steps)"
    )
    d: int = Field(20, ge=2, le=65_536, description="token dimension")
    n_informative: int = Field(20, ge=0, le=1_000_000, description="informative tokens n_I")
    n_nuisance: int = Field(200, ge=0, le=10_000_000, description="nuisance tokens n_N")
    theta: float = Field(1.0, ge=0, description="signal strength θ")
    sigma: float = Field(1.0, gt=0, description="noise scale σ (see noise_scaling)")
    noise_scaling: Literal["unit", "inv_d"] = Field(
        "unit", description="z ~ N(0, σ² I_d) (unit) or N(0, σ²/d · I_d) (inv_d)"
    )
    beta: float = Field(1.0, gt=0, description="softmax inverse temperature (see beta_scaling)")
    beta_scaling: Literal["none", "inv_sqrt_d"] = Field(
        "none", description="effective β = beta (none) or beta/√d (inv_sqrt_d)"
    )
    sign_mode: Literal["sequence", "token", "none"] = Field(
        "sequence",
        description="ξ: one Rademacher sign per sequence, one per informative token, or ξ = 1",
    )
    latent: Literal["random", "e1"] = Field(
        "random",
        description="u uniform on the sphere per seed (random) or u = e_1; the law of every "
        "observable is the same (rotation invariance) when init is rotation invariant",
    )
    constraint: Literal["sphere", "unconstrained"] = Field(
        "sphere", description="Π = normalisation onto the unit sphere, or Π = identity"
    )
    l2: float = Field(0.0, ge=0, description="unconstrained only: maximise ‖a‖² − (l2/2)‖q‖²")
    schedule: Literal["robbins-monro", "constant"] = Field(
        "robbins-monro", description="η_k = eta0·(k0/(k+k0))^gamma, or η_k = eta0"
    )
    eta0: float = Field(
        0.5, gt=0, description="step size at k = 0 (times 1/d for lr_scaling=inv_d)"
    )
    k0: float = Field(100.0, gt=0, description="Robbins–Monro offset k0")
    gamma: float = Field(1.0, description="Robbins–Monro exponent, in (1/2, 1]")
    lr_scaling: Literal["none", "inv_d"] = Field(
        "none", description="step sizes as given (none) or divided by d (inv_d)"
    )
    batch: int = Field(8, ge=1, le=65_536, description="samples (sequences) per SGA step")
    init_overlap: float | None = Field(
        None,
        description="initial m = ⟨q,u⟩/‖q‖ set exactly (direction ⊥ u uniform); None: q "
        "uniform on the sphere",
    )
    init_norm: float = Field(1.0, gt=0, description="unconstrained only: initial ‖q‖")
    stream: Literal["auto", "whole", "chunked"] = Field(
        "auto",
        description="whole: draw a sample's tokens once and keep them (one draw, fastest); "
        "chunked: two passes over chunks regenerated from the same keys (memory chunk·d); "
        "auto: whole when seeds·batch·n·d values fit in max_token_mb",
    )
    chunk: int = Field(
        2048,
        ge=BLOCK,
        le=1 << 24,  # more tokens than a sample has (n_informative + n_nuisance)
        description="tokens per chunk when streaming (multiple of 128)",
    )
    max_token_mb: float = Field(
        1024.0, gt=0, description="stream=auto: largest token memory (MB) for the whole route"
    )
    sampler: Literal["full", "reduced"] = Field(
        "full",
        description="full: draw every token (n·d values per sample); reduced: the exact "
        "O(n)-scalar sampler of the (α, b) chain (docs/query-reduced-sampler.md)",
    )
    eval_samples: int = Field(
        8,
        ge=0,
        le=4096,
        description="fixed samples (same keys at every record) for the 'objective' observable; "
        "0 disables it",
    )

    @field_validator("gamma")
    @classmethod
    def _gamma(cls, v: float) -> float:
        if not 0.5 < v <= 1.0:
            raise ValueError("must be in (1/2, 1] (Robbins–Monro)")
        return v

    @field_validator("n_nuisance")
    @classmethod
    def _some_tokens(cls, v: int, info: ValidationInfo) -> int:
        if v + info.data.get("n_informative", 1) < 1:
            raise ValueError("n_informative + n_nuisance must be >= 1")
        return v

    @field_validator("chunk")
    @classmethod
    def _chunk(cls, v: int) -> int:
        if v % BLOCK:
            raise ValueError(f"must be a multiple of {BLOCK}")
        return v

    @field_validator("init_overlap")
    @classmethod
    def _overlap(cls, v: float | None) -> float | None:
        if v is not None and not -1.0 <= v <= 1.0:
            raise ValueError("must be in [-1, 1] or omitted (uniform init)")
        return v

    @field_validator("l2")
    @classmethod
    def _l2(cls, v: float, info: ValidationInfo) -> float:
        if v != 0 and info.data.get("constraint") == "sphere":
            raise ValueError("needs constraint='unconstrained' (on the sphere it is void)")
        return v

    @field_validator("init_norm")
    @classmethod
    def _init_norm(cls, v: float, info: ValidationInfo) -> float:
        if v != 1.0 and info.data.get("constraint") == "sphere":
            raise ValueError("needs constraint='unconstrained' (on the sphere ‖q‖ = 1)")
        return v

    @property
    def n_tokens(self) -> int:
        return self.n_informative + self.n_nuisance

    @property
    def sigma_eff(self) -> float:
        """Standard deviation of each noise coordinate."""
        return self.sigma / math.sqrt(self.d) if self.noise_scaling == "inv_d" else self.sigma

    @property
    def beta_eff(self) -> float:
        """The β multiplying ⟨q, x⟩ in the softmax."""
        return self.beta / math.sqrt(self.d) if self.beta_scaling == "inv_sqrt_d" else self.beta

    @property
    def eta(self) -> float:
        """Base step size η (η_k = η·s(k))."""
        return self.eta0 / self.d if self.lr_scaling == "inv_d" else self.eta0

    @property
    def total_steps(self) -> int:
        return max(1, int(math.ceil(self.t_max)))


NAME = "query"
"""The registered family name."""

EXAMPLE = dict(
    d=6, n_informative=3, n_nuisance=40, batch=3, t_max=20, records=4, seeds=2, eval_samples=2
)
"""A small config that runs in about a second (contract tests, docs)."""
