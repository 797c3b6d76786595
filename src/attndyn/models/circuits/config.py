"""Configuration of the QK/OV circuits toy (Vashisht & Ramaswamy, ICML 2026, arXiv 2608.06776).

Every size of the distinct/common-token task and of the single-query self-attention model of the
authors' code (docs/circuits.md, "Data" and "Model") is a field; training is plain SGD with a
fresh batch each step ("Training"), so the time axis is the SGD step: ``t_max`` is the number of
steps.

Learning rates (one way only): ``lr`` is η_OV and ``ratio`` is r = η_QK/η_OV, so η_QK = r·lr;
the QK step is additionally multiplied by ``qk_schedule`` (constant 1, or a linear ramp from
``qk_ramp_start`` at step 0 to ``qk_ramp_end`` at the last step, the notebooks' increasing-ratio
schedule, docs/circuits.md, "Training"). ``optimizer`` chooses the update rule of both circuits
(default ``sgd``, the paper's; ``adam`` and the others of :data:`attndyn.core.config.OPTIMIZERS`
use the same two step sizes).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from attndyn.core.config import SEED_LIMIT, Optimizer, SimulationConfig

Init = Literal["auto", "eye", "default"]
PARAMS = ("FAFO", "FACO", "CAFO", "CACO")

# Paper (notebook) initialisations per parameterisation (docs/circuits.md, "Model"):
# Row-1 notebook (Fig. 2 equal-lr runs): FAFO W_q, W_k PyTorch default, W_V, W_P eye·1e-6;
# FACO and CAFO all eye·1e-6; CACO (Net_CACO) PyTorch default for W_KQ and W_P.
PAPER_INIT: dict[str, dict[str, str]] = {
    "FAFO": {"q": "default", "k": "default", "v": "eye", "p": "eye"},
    "FACO": {"q": "eye", "k": "eye", "p": "eye"},
    "CAFO": {"kq": "eye", "v": "eye", "p": "eye"},
    "CACO": {"kq": "default", "p": "default"},
}

MATRICES: dict[str, tuple[str, ...]] = {
    "FAFO": ("q", "k", "v", "p"),
    "FACO": ("q", "k", "p"),
    "CAFO": ("kq", "v", "p"),
    "CACO": ("kq", "p"),
}


class CircuitsConfig(SimulationConfig):
    """Single-query self-attention on one-hot tokens, trained by SGD on the distinct/common task.

    Data (docs/circuits.md, "Data"): class c ~ U{0..n_classes−1}; seq_len−2 i.i.d. context tokens
    with unnormalised weights ``common_weight`` on the common ids 0..n_common−1 and the ramp
    linspace(distinct_min, distinct_max, n_distinct) on the class's distinct ids
    n_common + c·n_distinct + (0..n_distinct−1); then the query id query_start + c. The model
    input is those seq_len−1 tokens; the target is the label id label_start + c.
    """

    t_max: float = Field(
        10_000, gt=0, description="number of SGD steps (the time axis is the step)"
    )
    seeds: int = Field(4, ge=1, le=4096, description="number of seeds, run in parallel with vmap")
    seed: int = Field(1234, ge=0, description="first seed (the notebooks use 1234..1238)")

    # --- data ---
    vocab: int = Field(50, ge=2, le=4096, description="vocabulary size V = d_model (one-hot)")
    n_classes: int = Field(4, ge=1, le=256, description="number of classes")
    n_common: int = Field(10, ge=1, description="common tokens: ids 0..n_common-1")
    n_distinct: int = Field(10, ge=1, description="distinct tokens per class")
    distinct_min: float = Field(0.1, gt=0, description="smallest distinct-token weight")
    distinct_max: float = Field(1.0, gt=0, description="largest distinct-token weight")
    common_weight: float = Field(1.0, gt=0, description="weight of each common token")
    label_start: int = Field(1, ge=0, description="label (next token) of class c is label_start+c")
    query_start: int = Field(5, ge=0, description="query token of class c is query_start+c")
    seq_len: int = Field(
        64, ge=3, le=8192, description="sequence length incl. query and label (input: seq_len-1)"
    )

    # --- model ---
    param: Literal["FAFO", "FACO", "CAFO", "CACO"] = Field(
        "FAFO", description="factorised/collapsed attention (FA/CA) and output (FO/CO)"
    )
    score_scale: float | None = Field(
        None, gt=0, description="score multiplier; None = 1/sqrt(vocab) as in the code"
    )
    init_q: Init = Field("auto", description="W_q init (FA): eye, default or auto (paper)")
    init_k: Init = Field("auto", description="W_k init (FA): eye, default or auto (paper)")
    init_kq: Init = Field("auto", description="W_KQ init (CA): eye, default or auto (paper)")
    init_v: Init = Field("auto", description="W_V init (FO): eye, default or auto (paper)")
    init_p: Init = Field("auto", description="W_P init: eye, default or auto (paper)")
    eye_scale: float = Field(1e-6, ge=0, description="'eye' init is eye_scale·I")

    # --- optimisation ---
    lr: float = Field(1e-2, gt=0, description="η_OV, SGD step of the OV circuit")
    ratio: float = Field(1.0, gt=0, description="r = η_QK/η_OV (η_QK = ratio·lr)")
    qk_schedule: Literal["constant", "linear"] = Field(
        "constant", description="QK step multiplier: constant 1 or a linear ramp over the run"
    )
    qk_ramp_start: float = Field(1.0, gt=0, description="QK multiplier at step 0 (linear)")
    qk_ramp_end: float = Field(1.0, gt=0, description="QK multiplier at the last step (linear)")
    batch: int = Field(32, ge=1, le=65_536, description="sequences per SGD step")
    optimizer: Optimizer = "sgd"

    # --- observation ---
    test_size: int = Field(
        2048, ge=1, le=100_000, description="fixed test sequences (the notebooks use 6400)"
    )
    test_seed: int = Field(
        0,
        ge=0,
        lt=SEED_LIMIT,
        description="key of the test set (same for every seed, not the training stream; < 2^31)",
    )
    top_sv: int = Field(3, ge=1, le=16, description="recorded top singular values per circuit")
    sharp_threshold: float = Field(
        0.6, gt=0, lt=1, description="distinct-token mass counted as 'sharp' (frac_sharp)"
    )

    records: int = Field(40, ge=2, le=100_000, description="number of record points")

    @model_validator(mode="after")
    def _check_layout(self) -> CircuitsConfig:
        top = self.n_common + self.n_classes * self.n_distinct
        if top > self.vocab:
            raise ValueError(
                f"vocab must be >= n_common + n_classes*n_distinct = {top} (got {self.vocab})"
            )
        if self.label_start + self.n_classes > self.vocab:
            raise ValueError("label_start + n_classes must be <= vocab")
        if self.query_start + self.n_classes > self.vocab:
            raise ValueError("query_start + n_classes must be <= vocab")
        if self.distinct_min > self.distinct_max:
            raise ValueError("distinct_min must be <= distinct_max")
        for name in ("q", "k", "kq", "v"):
            if getattr(self, f"init_{name}") != "auto" and name not in MATRICES[self.param]:
                raise ValueError(f"init_{name} does not apply to param={self.param}")
        return self

    @property
    def total_steps(self) -> int:
        return max(1, int(np.ceil(self.t_max)))

    @property
    def scale(self) -> float:
        """Score multiplier 1/√d_model (docs/circuits.md, "Model")."""
        return self.score_scale if self.score_scale is not None else 1.0 / np.sqrt(self.vocab)

    @property
    def lr_qk(self) -> float:
        return self.lr * self.ratio

    def init_of(self, matrix: str) -> str:
        """Resolved init ('eye' or 'default') of ``matrix`` in q, k, kq, v, p."""
        value = getattr(self, f"init_{matrix}")
        return PAPER_INIT[self.param][matrix] if value == "auto" else value


NAME = "circuits"
"""The registered family name."""

EXAMPLE = dict(param="CACO", t_max=20, seeds=2, records=3, test_size=32)
"""A small config that runs in about a second (contract tests, docs)."""
