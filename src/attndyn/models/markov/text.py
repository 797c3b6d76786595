"""Real text for the focus–dilution family (arXiv 2605.01199, Section 4.2: WikiText, TinyStories).

A corpus becomes one stream of token ids; training windows are s + 1 consecutive tokens (inputs
x₁…x_s, next-token label x_{s+1}), the same shape as Def. 2.1's Markov sequences. The unigram π̂
and bigram P̂ of the stream give the population observables (docs/focus.md, "Text").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attndyn.errors import InputError

UNK = "<unk>"
_WORD = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Corpus:
    """A tokenised corpus: ids (int32), the vocabulary (id → string; id 0 is ``<unk>``)."""

    tokens: np.ndarray
    vocab: tuple[str, ...]

    def unigram(self) -> np.ndarray:
        """π̂: token frequencies (every entry > 0 after adding one count, so log π̂ is finite)."""
        counts = np.bincount(self.tokens, minlength=len(self.vocab)).astype(np.float64) + 1.0
        return counts / counts.sum()

    def bigram(self) -> np.ndarray:
        """P̂_ij: frequency of j after i (rows of unseen predecessors: π̂)."""
        v = len(self.vocab)
        counts = np.zeros((v, v))
        np.add.at(counts, (self.tokens[:-1], self.tokens[1:]), 1.0)
        rows = counts.sum(axis=1, keepdims=True)
        return np.where(rows > 0, counts / np.maximum(rows, 1.0), self.unigram()[None, :])


def read_text(source: str) -> str:
    """The raw text of a local file (``source`` a path)."""
    path = Path(source).expanduser()
    if not path.is_file():
        raise InputError(f"invalid value for 'corpus': no such file {source!r}")
    return path.read_text(encoding="utf-8", errors="replace")


def word_corpus(text: str, vocab: int, max_tokens: int) -> Corpus:
    """Lower-cased words and punctuation; the ``vocab − 1`` most frequent kept, the rest ``<unk>``
    (ties broken by first appearance)."""
    words = _WORD.findall(text.lower())[:max_tokens]
    if len(words) < 2:
        raise InputError("invalid value for 'corpus': fewer than 2 tokens in the text")
    ranked = [w for w, _ in Counter(words).most_common() if w != UNK][: vocab - 1]
    index = {w: i + 1 for i, w in enumerate(ranked)}
    ids = np.fromiter((index.get(w, 0) for w in words), dtype=np.int32, count=len(words))
    return Corpus(ids, (UNK, *ranked))


def load_corpus(config) -> Corpus:
    """The tokenised corpus of a config (``corpus``, ``vocab``, ``tokenizer``, ``max_tokens``)."""
    return word_corpus(read_text(config.corpus), config.vocab, config.max_tokens)
