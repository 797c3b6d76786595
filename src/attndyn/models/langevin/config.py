"""Configuration of the Langevin family (arXiv 2605.07959, Frangi, Mukherjee, Kumar, Sun & Sun).

Only the paper's abstract is public. The setting is reconstructed from the group's earlier papers
(docs/langevin.md): the learning-rate-dependent SDE of Shi, Su & Jordan (arXiv 2004.06977)

    dΘ = −∇F(Θ) dt + √s dW,      F = L̂ + (λ/2) Σ_g ‖W_g‖²_F,

whose Gibbs measure is μ_s ∝ exp(−2F/s) (inverse temperature β = 2/s: :data:`BETA_OF_S`), on an
attention layer's or a LoRA net's empirical regression loss, and two test potentials with known
Gibbs measures. Every choice the abstract leaves open is a field here.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from attndyn.core.config import SimulationConfig

BETA_OF_S = "beta = 2 / s"
"""The one convention: μ_s ∝ exp(−2F/s), i.e. the Langevin form dΘ = −∇F dt + √(2/β) dW with
β = 2/s; ``dynamics='lmc'`` takes β and runs the same SDE at s = 2/β (:attr:`temperature`)."""

MODELS = ("attention", "lora", "quadratic", "double-well")
TEST_POTENTIALS = ("quadratic", "double-well")


class LangevinConfig(SimulationConfig):
    """One potential F and one noisy gradient method on it (docs/langevin.md).

    Dynamics, with k the step and ξ_k ~ N(0, I) drawn from the step's key:

    - ``sde``: Euler–Maruyama of dΘ = −∇F dt + √s dW with step h:
      θ ← θ − h∇F(θ) + √(s h) ξ (full-batch F);
    - ``lmc``: Langevin Monte Carlo with explicit β: θ ← θ − h∇F(θ) + √(2h/β) ξ (the sde at
      s = 2/β);
    - ``sgd``: minibatch SGD at learning rate s, the process the SDE mimics:
      θ ← θ − s ∇(L̂_B + (λ/2)‖θ‖²), L̂_B over ``batch`` samples drawn with replacement;
    - ``sme1``, ``sme2``: the stochastic modified equations of that SGD (Li, Tai & E, JMLR 20
      (2019), arXiv 1811.01558), dΘ = −∇F̃ dt + √(s Σ_b(Θ)) dW with Σ_b = Cov_i(∇ℓ_i)/b the
      minibatch gradient covariance at Θ (ℓ_i the per-sample losses, b = ``batch``) and
      F̃ = F (order 1) or F + (s/4)‖∇F‖² (order 2), by Euler–Maruyama with step h:
      θ ← θ − h∇F̃ + √(s h/(b n)) Σ_i (ζ_i − ζ̄) ∇ℓ_i, ζ_i ~ N(0, 1) (covariance exactly hΣ_b·s).

    ``time`` = k·h (sde, lmc, sme1, sme2) or k·s (sgd), so every method shares the SDE's time axis.
    """

    t_max: float = Field(10.0, gt=0, le=1e7, description="horizon in SDE time t = k·h (sgd: k·s)")
    model: Literal["attention", "lora", "quadratic", "double-well"] = Field(
        "attention",
        description="attention regression, LoRA on a shallow net, or a test potential: "
        "quadratic F = (λ/2)‖θ‖² (Ornstein–Uhlenbeck) or double-well F = Σ(θᵢ² − 1)² + (λ/2)‖θ‖²",
    )
    dynamics: Literal["sde", "lmc", "sgd", "sme1", "sme2"] = Field(
        "sde",
        description="sde (Euler–Maruyama, temperature s), lmc (explicit beta), sgd (lr s), "
        "sme1 / sme2 (SGD's stochastic modified equations of order 1 / 2 at lr s and batch)",
    )
    s: float = Field(
        0.05,
        ge=0,
        le=1e3,
        description="SDE temperature s (diffusion √s; Gibbs ∝ exp(−2F/s)); sgd: the learning "
        "rate; 0 gives gradient descent",
    )
    h: float | None = Field(
        None,
        gt=0,
        le=10,
        description=(
            "Euler–Maruyama step (sde, lmc; default 0.01); not used by sgd, whose step is s"
        ),
    )
    beta: float | None = Field(
        None, gt=0, le=1e12, description="lmc only: inverse temperature β (s = 2/β)"
    )
    lam: float = Field(0.1, ge=0, le=1e6, description="Frobenius regularisation λ in F")
    # data (attention, lora)
    n: int = Field(64, ge=1, le=1_000_000, description="training samples (fixed per data_seed)")
    batch: int = Field(
        8, ge=1, le=1_000_000, description="sgd, sme1, sme2: minibatch size (of the SGD mimicked)"
    )
    data_seed: int = Field(
        0, ge=0, le=2**31 - 1, description="seed of the data, teacher and frozen weights"
    )
    labels: Literal["teacher", "random"] = Field(
        "teacher", description="teacher: a random model of the same architecture; random: N(0,1)"
    )
    inputs: Literal["gaussian", "heavy-tailed", "near-duplicate"] = Field(
        "gaussian",
        description="inputs: i.i.d. N(0, 1) entries; heavy-tailed: Student-t with 3 degrees of "
        "freedom scaled to unit variance; near-duplicate: ⌈n/2⌉ Gaussian inputs, each twice "
        "with an independent N(0, 0.01²) perturbation",
    )
    label_noise: float = Field(0.0, ge=0, le=1e3, description="std of noise added to labels")
    teacher_scale: float = Field(
        1.0, ge=0, le=1e3, description="teacher weights N(0, teacher_scale²/fan_in)"
    )
    init_scale: float = Field(
        1.0,
        ge=0,
        le=1e3,
        description="student weights N(0, init_scale²/fan_in); test potentials: θ₀ = x0 + "
        "init_scale·N(0, I)",
    )
    # attention
    d: int = Field(8, ge=1, le=4096, description="token (attention) or input (lora) dimension")
    tokens: int = Field(8, ge=1, le=4096, description="attention: tokens per sequence T")
    heads: int = Field(2, ge=1, le=256, description="attention: heads H")
    d_k: int = Field(4, ge=1, le=4096, description="attention: query/key width per head")
    d_v: int = Field(4, ge=1, le=4096, description="attention with output=true: value width")
    d_out: int = Field(1, ge=1, le=4096, description="attention: output width")
    pooling: Literal["mean", "last", "none"] = Field(
        "mean", description="attention output: mean over tokens, last token, or every token"
    )
    train_q: bool = Field(True, description="attention: W_Q trained (else frozen at init)")
    train_k: bool = Field(True, description="attention: W_K trained")
    train_v: bool = Field(True, description="attention: W_V trained")
    output: bool = Field(
        False,
        description="attention: with a trained output matrix W_O (d_v × d_out per head); "
        "without, W_V maps to d_out",
    )
    # lora
    width: int = Field(16, ge=1, le=65_536, description="lora: hidden width p of the frozen net")
    rank: int = Field(2, ge=1, le=4096, description="lora: adapter rank r (B: p×r, A: r×d)")
    activation: Literal["sigmoid", "tanh", "softplus"] = Field(
        "tanh", description="lora: smooth activation σ"
    )
    train_outer: bool = Field(False, description="lora: outer weights a trained too")
    lora_init: Literal["zero-b", "gaussian"] = Field(
        "gaussian", description="lora: B = 0 (the LoRA convention) or B Gaussian like A"
    )
    teacher_rank: int | None = Field(
        None, ge=0, le=4096, description="lora teacher: rank of its adapter (default: rank)"
    )
    # test potentials
    dim: int = Field(1, ge=1, le=1_000_000, description="test potentials: dimension of θ")
    x0: float = Field(0.0, ge=-1e3, le=1e3, description="test potentials: centre of θ₀")

    @model_validator(mode="after")
    def _consistent(self) -> LangevinConfig:
        if self.dynamics == "lmc" and self.beta is None:
            raise ValueError("beta: dynamics='lmc' needs beta (> 0); or use dynamics='sde' with s")
        if self.dynamics != "lmc" and self.beta is not None:
            raise ValueError("beta: beta is for dynamics='lmc' only; the sde and sgd take s")
        if self.dynamics == "sgd":
            if self.h is not None:
                raise ValueError("h: dynamics='sgd' steps by s; h is for 'sde' and 'lmc'")
            if self.model in TEST_POTENTIALS:
                raise ValueError(
                    "dynamics: 'sgd' needs data: model must be attention or lora "
                    f"(got {self.model!r})"
                )
            if self.s <= 0:
                raise ValueError("s: dynamics='sgd' needs a learning rate s > 0")
        if self.dynamics in ("sme1", "sme2"):
            if self.model in TEST_POTENTIALS:
                raise ValueError(
                    f"dynamics: {self.dynamics!r} needs per-sample losses: model must be "
                    f"attention or lora (got {self.model!r})"
                )
            if self.s <= 0:
                raise ValueError(f"s: dynamics={self.dynamics!r} needs a learning rate s > 0")
        if self.model == "quadratic" and self.lam <= 0:
            raise ValueError("lam: model='quadratic' is F = (λ/2)‖θ‖²: lam must be > 0")
        if self.model == "attention" and not (self.train_q or self.train_k or self.train_v):
            if not self.output:
                raise ValueError(
                    "train_v: attention must train at least one of train_q, train_k, train_v"
                )
        if self.model == "lora":  # rank, width and teacher_rank are LoRA's only
            if self.teacher_rank is not None and self.teacher_rank > min(self.width, self.d):
                raise ValueError("teacher_rank: must be at most min(width, d)")
            if self.rank > min(self.width, self.d):
                raise ValueError("rank: must be at most min(width, d)")
        if self.total_steps > 50_000_000:
            raise ValueError(
                f"t_max: t_max / step = {self.total_steps} steps is above 5e7; "
                "raise h or lower t_max"
            )
        return self

    @property
    def step(self) -> float:
        """The step size: h (sde, lmc; default 0.01) or s (sgd)."""
        if self.dynamics == "sgd":
            return self.s
        return 0.01 if self.h is None else self.h

    @property
    def temperature(self) -> float:
        """The SDE's isotropic s: ``s`` (sde), 2/β (lmc: :data:`BETA_OF_S`), 0 for sgd (its noise
        is the minibatch's) and sme1/sme2 (theirs is Σ_b's, drawn in the loss)."""
        if self.dynamics == "lmc":
            assert self.beta is not None  # the validator requires beta for lmc
            return 2.0 / self.beta
        return self.s if self.dynamics == "sde" else 0.0

    @property
    def total_steps(self) -> int:
        return max(1, int(math.ceil(self.t_max / self.step - 1e-9)))


NAME = "langevin"
"""The registered family name."""

EXAMPLE = dict(n=16, d=4, tokens=4, heads=1, d_k=2, t_max=0.5, records=4, seeds=2)
"""A small config that runs in about a second (contract tests, docs)."""

THEORY_EXAMPLE = dict(model="double-well", lam=0.0, s=0.5, x0=1.0, init_scale=0.2, t_max=1.0)
"""Values over EXAMPLE for the contract test of the theory, which covers the test potentials
only."""
