"""Configuration of the one-layer transformer on Markov chains and text (arXiv 2605.01199).

Chen, Lin, Xu & Luo, "Focus and Dilution: The Multi-stage Learning Process of Attention" (ICML
2026). The model (Def. 2.2), the data (Def. 2.1, Eqs. 1–2), the population limit (Prop. 2.3) and
the readings we chose where the paper is silent are in docs/markov.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from attndyn.core.config import SEED_LIMIT, SimulationConfig
from attndyn.models.markov.data import PAPER_PI, two_group_pi


class MarkovConfig(SimulationConfig):
    """One-layer attention f(X) = softmax(E_X W₀ W_Q W_Kᵀ W₀ᵀ E_Xᵀ)_{s,:} E_X W₀ W₁ (Def. 2.2).

    Data (``data``): ``population`` trains on the exact population loss of Prop. 2.3 (no sampling;
    the s → ∞ limit); ``online`` draws a fresh batch of Markov sequences (Def. 2.1) each step;
    ``fixed`` draws ``n_sequences`` sequences once per seed and samples mini-batches from them
    (the paper's 100,000 sequences of length 20); ``text`` trains on windows of a tokenised corpus
    (``corpus``). π is ``pi`` when given, else built by ``pi_kind`` (docs/markov.md, "Data").
    Time: ``time`` = lr·step, the gradient-flow time for GD and the flow solver.
    """

    ID_NEUTRAL: ClassVar[dict] = {"corpus_revision": None}
    """Fields added after runs were stored, at the value that keeps their ids
    (:func:`attndyn.core.config.identity`)."""

    t_max: float = Field(500.0, gt=0, description="horizon in flow time lr·step")
    # --- data ---------------------------------------------------------------------------------
    data: Literal["population", "online", "fixed", "text"] = Field(
        "population",
        description="population: exact loss of Prop. 2.3; online: fresh Markov batches; fixed: "
        "n_sequences sampled once; text: windows of a tokenised corpus",
    )
    d: int = Field(4, ge=2, le=100_000, description="vocabulary size (ignored when pi is given)")
    pi: tuple[float, ...] | None = Field(
        None, description="stationary law π (entries > 0, summing to 1); overrides pi_kind"
    )
    pi_kind: Literal["paper", "two-group", "geometric"] = Field(
        "paper",
        description=f"paper: Section 4.1's {PAPER_PI}; two-group: Eq. 1 with pi1, "
        "delta and the pattern c_i; geometric: Appendix E.1's (1/2, …, 1/2^d) normalised to sum 1",
    )
    pi1: float = Field(0.7, gt=0, lt=1, description="two-group: mass π₁ of the frequent token")
    delta: float = Field(0.0, ge=0, description="two-group: asymmetry δ of Eq. 1")
    pattern: Literal["linear", "alternating"] = Field(
        "linear",
        description="two-group c_i (Σc_i = 0): linear c_i ∝ (d+1)/2 − i scaled to max|c_i| = 1, "
        "or alternating +1, −1, … (0 for the last when d − 1 is odd)",
    )
    lam: float = Field(0.5, gt=0, lt=1, description="λ of P = λI + (1 − λ)𝟙πᵀ (Eq. 2)")
    transition: Literal["lazy", "metropolis"] = Field(
        "lazy",
        description="lazy: Eq. 2, P = λI + (1 − λ)𝟙πᵀ; metropolis: P = λQ + (1 − λ)𝟙πᵀ with Q a "
        "random Metropolis chain reversible for π (Section 4.1's transition matrices sharing π)",
    )
    transition_seed: int = Field(
        0, ge=0, lt=SEED_LIMIT, description="metropolis: seed of Q's random symmetric proposal"
    )
    seq_len: int = Field(20, ge=1, le=4096, description="sequence length s (online/fixed/text)")
    n_sequences: int = Field(
        100_000, ge=1, le=10_000_000, description="fixed: sequences drawn once per seed"
    )
    batch: int = Field(
        256,
        ge=1,
        le=1_000_000,
        description="sequences per step (not population); fixed: drawn with replacement from "
        "the n_sequences, or all of them (one epoch per step) when batch = n_sequences",
    )
    # --- text ---------------------------------------------------------------------------------
    corpus: str | None = Field(
        None,
        description="text: a local text file, or hf:wikitext-2 / hf:wikitext-103 / "
        "hf:tinystories (Hugging Face datasets, when installed)",
    )
    corpus_revision: str | None = Field(
        None,
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9._/-]+$",
        description="text, hf: corpora: the data set's Hub revision (a commit hash, tag or "
        "branch), read with it and part of the run id; None reads the default branch, which "
        'the run id cannot follow (docs/markov.md, "Text")',
    )
    vocab: int = Field(200, ge=3, le=100_000, description="text: vocabulary size incl. <unk>")
    tokenizer: Literal["word", "bpe"] = Field(
        "word",
        description="text: word (top-k words + <unk>) or bpe (byte-level BPE trained on the "
        "corpus with the tokenizers library)",
    )
    max_tokens: int = Field(
        2_000_000, ge=100, lt=2**31, description="text: corpus tokens kept (from the start)"
    )
    shuffle_tokens: bool = Field(
        False,
        description="text: permute the corpus's tokens once (seed 0): keeps π̂, destroys every "
        "order statistic (a negative control)",
    )
    # --- model --------------------------------------------------------------------------------
    m: int = Field(256, ge=1, le=16_384, description="embedding width m (Appendix E.1: 256)")
    m_k: int | None = Field(None, ge=1, le=16_384, description="query/key width; None: m")
    init_scale: float | None = Field(
        None, gt=0, description="init N(0, ε²) for every weight; None: ε = 1/m (Appendix E.1)"
    )
    logit_scale: Literal["none", "inv_sqrt_m"] = Field(
        "none", description="attention logits as in Def. 2.2 (none) or divided by √m_k"
    )
    residual: bool = Field(False, description="add the last token's embedding before W₁")
    value: bool = Field(False, description="insert a value matrix W_V (m×m) after attention")
    causal: bool = Field(
        False,
        description="train every position j on x_{j+1} with causal attention (not population)",
    )
    track: tuple[int, ...] | None = Field(
        None,
        description="tokens whose attention rows, entropies and norms are recorded; None: all "
        "when d ≤ 8, else the 3 most frequent and the 3 around the median frequency",
    )
    train_attention: bool = Field(
        True,
        description="train W_Q and W_K; false freezes them at their init (their gradient is "
        "zeroed for every optimizer): a negative control without attention learning",
    )
    # --- training -----------------------------------------------------------------------------
    optimizer: Literal["gd", "adam", "flow"] = Field(
        "gd",
        description="gd: θ ← θ − lr∇L; adam: optax Adam (Appendix E.1); flow: adaptive "
        "integration of θ̇ = −∇L (population only; see solver)",
    )
    lr: float = Field(0.05, gt=0, description="step size; time = lr·step")
    rtol: float = Field(
        1e-4, gt=0, lt=1, description="flow: relative tolerance per step (global error ≈ rtol)"
    )
    solver: Literal["ros2", "bs3"] = Field(
        "ros2",
        description="flow: ros2 (Rosenbrock W-method with the Gauss–Newton Jacobian, for stiff "
        "late stages) or bs3 (explicit Bogacki–Shampine); see attndyn.core.flow",
    )

    @field_validator("pi")
    @classmethod
    def _pi(cls, v: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if v is None:
            return v
        if len(v) < 2:
            raise ValueError("needs at least 2 entries")
        if min(v) <= 0:
            raise ValueError("entries must be > 0")
        if abs(sum(v) - 1.0) > 1e-6:
            raise ValueError(f"entries must sum to 1 (sum {sum(v):.6g})")
        return tuple(float(x) for x in v)

    @field_validator("corpus")
    @classmethod
    def _corpus(cls, v: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("data") == "text" and not v:
            raise ValueError("data='text' needs corpus (a text file path or hf:NAME)")
        return v

    @field_validator("corpus_revision")
    @classmethod
    def _revision(cls, v: str | None, info: ValidationInfo) -> str | None:
        corpus = info.data.get("corpus") or ""
        if v is not None and not corpus.startswith("hf:"):
            raise ValueError("needs an hf: corpus (a Hugging Face data set)")
        return v

    @field_validator("causal")
    @classmethod
    def _causal(cls, v: bool, info: ValidationInfo) -> bool:
        if v and info.data.get("data") == "population":
            raise ValueError("causal=true needs sampled sequences (data online/fixed/text)")
        return v

    @field_validator("optimizer")
    @classmethod
    def _flow(cls, v: str, info: ValidationInfo) -> str:
        if v == "flow" and info.data.get("data") != "population":
            raise ValueError("optimizer='flow' needs data='population' (a deterministic loss)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> MarkovConfig:
        if self.pi is None and self.pi_kind == "two-group":
            two_group_pi(self.d, self.pi1, self.delta, self.pattern)  # raises on a bad π
        return self

    def input_hashes(self) -> dict[str, str]:
        """The content hash of a local corpus file (``data='text'``): part of the run id
        (:func:`attndyn.core.config.run_id`), so an edited corpus is a new run. Data sets
        (``hf:``) and generated corpora (``gen:``) are named by ``corpus`` alone."""
        from attndyn.core.config import file_digest
        from attndyn.models.markov.text import GENERATED_PREFIX

        if self.data != "text" or not self.corpus:
            return {}
        if self.corpus.startswith(("hf:", GENERATED_PREFIX)):
            return {}
        path = Path(self.corpus).expanduser()
        if not path.is_file():  # loading it says so, naming the field
            return {}
        return {"corpus": file_digest(path)}

    @property
    def key_width(self) -> int:
        return self.m if self.m_k is None else self.m_k

    @property
    def epsilon(self) -> float:
        """Init scale ε (default 1/m, Appendix E.1)."""
        return 1.0 / self.m if self.init_scale is None else self.init_scale

    @property
    def total_steps(self) -> int:
        return max(1, int(math.ceil(self.t_max / self.lr - 1e-9)))


NAME = "markov"
"""The registered family name."""

EXAMPLE = dict(m=16, t_max=20.0, lr=0.1, records=5, seeds=2)
"""A small config that runs in about a second (contract tests, docs)."""
