"""Pieces of the focus-text experiment that are identities (docs/claims/focus-text.md)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from attndyn.claims.runner import experiment_config
from attndyn.errors import InputError
from attndyn.experiments.markov.text import (
    GENERATED_CORPUS,
    corpus_key,
    resolve,
    sequence_attention,
    tracked,
)
from attndyn.models.markov.text import Corpus


def test_sequence_attention_is_the_softmax_of_phi_over_the_tracked_tokens():
    rng = np.random.default_rng(1)
    d, T = 7, [0, 2, 3, 5]
    pi = rng.dirichlet(np.ones(d))
    phi = rng.normal(size=(3, 4, d, d))  # (seed, time, d, d)
    A = pi * np.exp(phi)
    A /= A.sum(-1, keepdims=True)  # Prop. 2.3's population attention
    tr = xr.Dataset({f"attn_{i}_{j}": (("seed", "time"), A[..., i, j]) for i in T for j in T})
    for q in T:
        got = sequence_attention(tr, pi, q, T)
        logits = phi[..., q, :][..., T]
        want = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        assert np.allclose(got, want)


def test_tracked_tokens_top3_paper_words_then_median():
    words = ["<unk>", "the", ",", "a", "x1", "x2", "full", "x3", "x4", "x5", "x6"]
    counts = np.array([50, 40, 30, 20, 10, 9, 8, 7, 6, 5, 4], float)
    corpus = Corpus(np.zeros(2, np.int32), tuple(words))
    pi = counts / counts.sum()
    T, mid, origin = tracked(corpus, pi, "tinystories")
    assert T[:3] == [0, 1, 2]  # the three most frequent
    assert mid == [3, 6, 5] and origin == ["paper", "paper", "median"]  # a, full; then rank 5
    T, mid, origin = tracked(corpus, pi, "other")
    assert origin == ["median"] * 3 and mid == [5, 4, 6]  # median rank 5, then 4, 6


def test_corpus_keys():
    assert corpus_key("wikitext2_valid.txt") == "wikitext"
    assert corpus_key("hf:wikitext-103") == "wikitext"
    assert corpus_key("/data/tinystories_val_excerpt.txt") == "tinystories"
    assert corpus_key("/data/my_book.txt") == "my-book"


def test_tiny_runs_on_the_generated_corpus():
    _, config = experiment_config("focus-text", "tiny", {})
    assert config.corpus == [GENERATED_CORPUS] == ["gen:topic-words"]
    assert resolve(config, GENERATED_CORPUS) == GENERATED_CORPUS
    assert corpus_key(GENERATED_CORPUS) == "topic-words"


def test_relative_corpora_need_a_folder(monkeypatch, tmp_path):
    """Real corpora come from data_dir or $ATTNDYN_TEXT_DATA, never from beside the repository."""
    monkeypatch.delenv("ATTNDYN_TEXT_DATA", raising=False)
    _, config = experiment_config("focus-text", "small", {})
    with pytest.raises(InputError) as err:
        resolve(config, "wikitext2_valid.txt")
    msg = str(err.value)
    assert "'data_dir'" in msg and "$ATTNDYN_TEXT_DATA" in msg and "\n" not in msg
    monkeypatch.setenv("ATTNDYN_TEXT_DATA", str(tmp_path))
    with pytest.raises(InputError, match=r"'corpus': no file 'wikitext2_valid.txt' .*ATTNDYN"):
        resolve(config, "wikitext2_valid.txt")
    (tmp_path / "wikitext2_valid.txt").write_text("some words")
    assert resolve(config, "wikitext2_valid.txt") == str(tmp_path / "wikitext2_valid.txt")
    _, config = experiment_config("focus-text", "small", {"data_dir": str(tmp_path / "x")})
    with pytest.raises(InputError, match=r"\(data_dir\)"):
        resolve(config, "wikitext2_valid.txt")
