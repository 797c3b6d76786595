"""The text pipeline of the markov family (src/attndyn/models/markov/text.py): on the corpus it
generates (``gen:topic-words``) everywhere, and on the real samples (WikiText-2, TinyStories)
where $ATTNDYN_TEXT_DATA names their folder (never copied into the project); then the pieces of
the markov-text experiment that are identities."""

from __future__ import annotations

import builtins
import os
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from attndyn.claims.runner import experiment_config
from attndyn.errors import InputError
from attndyn.experiments.markov.text import (
    GENERATED_CORPUS,
    bigram_information,
    corpus_key,
    order_free_information,
    resolve,
    retraction,
    sequence_attention,
    tracked,
)
from attndyn.models.markov import text
from attndyn.models.markov.text import Corpus

DATA = Path(os.environ.get("ATTNDYN_TEXT_DATA", "/nonexistent"))
WIKI = DATA / "wikitext2_valid.txt"
TINY = DATA / "tinystories_val_excerpt.txt"
needs_data = pytest.mark.skipif(
    not (WIKI.is_file() and TINY.is_file()),
    reason="set $ATTNDYN_TEXT_DATA to the folder of the WikiText-2 and TinyStories samples",
)
GEN = "gen:topic-words"


def cfg(corpus, vocab=64, tokenizer="word", max_tokens=2_000_000, **kw):
    return SimpleNamespace(
        corpus=str(corpus), vocab=vocab, tokenizer=tokenizer, max_tokens=max_tokens, **kw
    )


@needs_data
@pytest.mark.parametrize("path", [WIKI, TINY])
def test_word_vocab_is_top_k_plus_unk(path):
    vocab = 50
    corpus = text.load_corpus(cfg(path, vocab))
    assert corpus.vocab[0] == text.UNK and len(corpus.vocab) == vocab
    # independent count: the same word pattern, WikiText markup undone, headings dropped
    raw = path.read_text(encoding="utf-8")
    words = re.findall(r"<unk>|\w+|[^\w\s]", text.clean_wikitext(raw).lower())
    counts = Counter(w for w in words if w != "<unk>")
    kept = set(corpus.vocab[1:])
    cutoff = min(counts[w] for w in kept)
    assert all(counts[w] <= cutoff for w in counts if w not in kept)
    ids = corpus.tokens
    assert ids.size == len(words)
    for w in ("the", ","):
        assert np.sum(ids == corpus.index(w)) == counts[w]
    n_unk = sum(1 for w in words if w not in kept)
    assert np.sum(ids == 0) == n_unk


@needs_data
def test_wikitext_markup_is_undone():
    raw = WIKI.read_text(encoding="utf-8")
    assert " @-@ " in raw and re.search(r"^ = [^=\n]+ = $", raw, re.MULTILINE)
    clean = text.clean_wikitext(raw)
    assert " @-@ " not in clean and " @,@ " not in clean and " @.@ " not in clean
    assert not re.search(r"^ *=+ .* =+ *$", clean, re.MULTILINE)
    assert "<unk>" in clean  # the data set's own unknown word stays, as id 0
    assert text.clean_wikitext("a 1 @,@ 000 b @-@ c") == "a 1,000 b-c"
    assert text.clean_wikitext("no markup here.\n") == "no markup here.\n"


def test_corpus_is_deterministic():
    a = text.word_corpus(text.source_text(GEN, 10**6), 20, 10**6)
    b = text.word_corpus(text.source_text(GEN, 10**6), 20, 10**6)
    assert a.vocab == b.vocab and np.array_equal(a.tokens, b.tokens)
    c1 = text.load_corpus(cfg(GEN, 20, shuffle_tokens=True))
    c2 = text.load_corpus(cfg(GEN, 20, shuffle_tokens=True))
    assert np.array_equal(c1.tokens, c2.tokens)
    assert np.array_equal(np.sort(c1.tokens), np.sort(a.tokens))  # a permutation: π̂ kept
    assert not np.array_equal(c1.tokens, a.tokens)


def test_max_tokens_keeps_the_start():
    short = text.load_corpus(cfg(GEN, 20, max_tokens=500))
    assert short.tokens.size == 500
    raw = text.TopicWords().text()
    words = re.findall(r"<unk>|\w+|[^\w\s]", raw.lower())[:500]
    kept = set(short.vocab[1:])
    assert [short.vocab[i] for i in short.tokens] == [w if w in kept else "<unk>" for w in words]


@needs_data
def test_bpe_round_trip_and_vocab():
    pytest.importorskip("tokenizers")
    raw = text.clean_wikitext(WIKI.read_text(encoding="utf-8")[:60_000])
    corpus = text.bpe_corpus(raw, 300, 10**7)
    assert len(corpus.vocab) == 300 and corpus.vocab[0] == text.UNK
    assert corpus.decode(corpus.tokens) == raw
    assert np.sum(corpus.tokens == 0) == raw.count("<unk>")  # <unk> is the special id 0
    assert corpus.tokens.max() < 300
    again = text.bpe_corpus(raw, 300, 10**7)
    assert np.array_equal(again.tokens, corpus.tokens)
    with pytest.raises(InputError, match="'vocab'"):
        text.bpe_corpus(raw, 100, 10**7)


def test_bpe_without_tokenizers_is_one_clear_line(monkeypatch):
    real = builtins.__import__

    def no_tokenizers(name, *args, **kw):
        if name == "tokenizers" or name.startswith("tokenizers."):
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_tokenizers)
    with pytest.raises(InputError) as err:
        text.bpe_corpus("some text to split", 300, 100)
    msg = str(err.value)
    assert "'tokenizer'" in msg and "pip install 'attndyn[text]'" in msg and "\n" not in msg


def test_unigram_and_bigram_rows_sum_to_one():
    corpus = text.load_corpus(cfg(GEN, 40))
    pi, P = corpus.unigram(), corpus.bigram()
    assert np.isclose(pi.sum(), 1.0) and np.all(pi > 0)
    assert np.allclose(P.sum(axis=1), 1.0)
    # P̂ is the empirical successor law: one row checked against a direct count
    i = corpus.index("w00")
    nxt = corpus.tokens[1:][corpus.tokens[:-1] == i]
    assert np.allclose(P[i], np.bincount(nxt, minlength=len(corpus.vocab)) / nxt.size)


def test_generated_corpus_shows_its_chains_laws():
    """π̂, P̂ and L_uni − L* of the generated words against the closed forms of TopicWords."""
    chain = text.TopicWords()
    assert np.allclose(chain.P.sum(axis=1), 1.0)
    assert np.allclose(chain.pi @ chain.P, chain.pi)  # the word process is stationary
    corpus = text.load_corpus(cfg(GEN, chain.n_words + 1))
    assert corpus.tokens.size == chain.n_tokens and np.sum(corpus.tokens == 0) == 0
    order = [corpus.index(w) for w in chain.words]  # ids are frequency ranks, not word order
    counts = np.bincount(corpus.tokens, minlength=len(corpus.vocab))[order]
    pi_hat = counts / counts.sum()
    assert np.abs(pi_hat - chain.pi).max() < 0.005  # N = 2·10⁵: sd ≤ 0.004 even with stay 0.95
    P_hat = corpus.bigram()[np.ix_(order, order)]
    assert np.abs(P_hat[0] - chain.P[0]).max() < 0.01  # the most frequent word's row
    # the bigram information of the sample against Σ π_w KL(P_w ‖ π); the bias ≈ k/2N ≈ 0.002
    m = pi_hat @ P_hat
    plogp = np.where(P_hat > 0, P_hat * np.log(np.where(P_hat > 0, P_hat, 1.0)), 0.0)
    info = -np.sum(m * np.log(m)) + np.sum(pi_hat[:, None] * plogp)
    assert info == pytest.approx(chain.bigram_information(), abs=0.02)
    assert chain.bigram_information() > 0.3  # far above any order-free corpus's τ ≈ 0.003


def test_unknown_generated_corpus_is_one_clear_line():
    with pytest.raises(InputError, match="'corpus': unknown generated corpus"):
        text.load_corpus(cfg("gen:no-such-corpus"))


def test_windows_align_inputs_and_labels():
    n_tok = 1000
    corpus = text.Corpus(np.arange(n_tok, dtype=np.int32), tuple(map(str, range(n_tok))))
    w = text.windows(corpus, seq_len=20, n=500, seed=3)
    assert w.shape == (500, 21)
    # token id = stream position: each row is 21 consecutive positions inside the stream, the
    # label (last column) the token right after the last input
    assert np.all(np.diff(w, axis=1) == 1)
    assert w[:, 0].min() >= 0 and w[:, -1].max() <= n_tok - 1
    inputs, labels = w[:, :-1], w[:, -1]
    assert np.array_equal(labels, inputs[:, -1] + 1)
    assert np.array_equal(w, text.windows(corpus, 20, 500, seed=3))
    assert len(np.unique(w[:, 0])) > 300  # starts spread over the stream
    with pytest.raises(InputError, match="seq_len"):
        text.windows(text.Corpus(np.zeros(10, np.int32), ("<unk>",)), 20, 5)


def test_missing_file_is_one_clear_line(tmp_path):
    with pytest.raises(InputError, match="'corpus': no such file"):
        text.load_corpus(cfg(tmp_path / "absent.txt"))


def test_missing_datasets_is_one_clear_line(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "datasets", None)  # import fails
    with pytest.raises(InputError) as err:
        text.load_corpus(cfg("hf:wikitext-2"))
    msg = str(err.value)
    assert "'corpus'" in msg and "datasets" in msg and "pip install 'attndyn[text]'" in msg
    assert "\n" not in msg


def test_unloadable_dataset_and_unknown_name_are_one_line():
    def offline(name, config, split):
        raise ConnectionError(f"Couldn't reach {name} on the Hub\nretry later")

    with pytest.raises(InputError) as err:
        text.hf_text("hf:tinystories", 1000, load_dataset=offline)
    msg = str(err.value)
    assert "roneneldan/TinyStories" in msg and "ConnectionError" in msg and "\n" not in msg
    with pytest.raises(InputError, match="unknown data set"):
        text.hf_text("hf:penn-treebank", 1000, load_dataset=offline)


def test_hf_loaders_join_rows_like_the_data_sets():
    wiki_rows = [
        {"text": ""},
        {"text": " = Valkyria Chronicles III = \n"},
        {"text": ""},
        {"text": " Senjō no Valkyria 3 @:@ <unk> Chronicles , 1 @,@ 000 units .\n"},
        {"text": " It met with positive sales in Japan .\n"},
    ]
    calls = []

    def fake(name, config, split):
        calls.append((name, config, split))
        return wiki_rows if name == "Salesforce/wikitext" else stories

    got = text.hf_text("hf:wikitext-103", 10**6, load_dataset=fake)
    assert calls[-1] == ("Salesforce/wikitext", "wikitext-103-raw-v1", "train")
    assert got == "".join(r["text"] for r in wiki_rows)  # WikiText rows keep their newlines
    assert text.clean_wikitext(got).count("Valkyria Chronicles III") == 0
    assert "1,000" in text.clean_wikitext(got)
    text.hf_text("hf:wikitext-2", 10**6, load_dataset=fake)
    assert calls[-1] == ("Salesforce/wikitext", "wikitext-2-raw-v1", "train")
    stories = [{"text": "Once upon a time."}, {"text": "The end."}, {"text": "Never read."}]
    got = text.hf_text("hf:tinystories", 25, load_dataset=fake)
    assert calls[-1] == ("roneneldan/TinyStories", None, "train")
    assert got == "Once upon a time.\n\nThe end."  # stories as paragraphs; stops at max_chars


def test_build_samples_windows_of_the_corpus():
    import jax

    from attndyn.core.config import validate
    from attndyn.models import markov

    config = validate(
        markov.Config,
        dict(data="text", corpus=GEN, vocab=20, seq_len=8, batch=64, optimizer="adam"),
    )
    law = markov.DataLaw(config)
    batch = np.asarray(markov.build(config, law).sample(jax.random.PRNGKey(0)))
    assert batch.shape == (64, 9)
    view = np.lib.stride_tricks.sliding_window_view(law.tokens, 9)
    for row in batch:
        candidates = np.flatnonzero(law.tokens[: len(view)] == row[0])
        assert np.all(view[candidates] == row, axis=1).any()


# --- the markov-text experiment (experiments/markov/text.py) ---


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


def test_retraction_is_the_fall_after_the_peak():
    norms = np.array(
        [[1.0, 2.0, 4.0, 3.0, 3.5], [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 1.5, 0.5, 1.0]]
    )
    # peak 4 then lowest 3; monotone growth; the peak is the first record, lowest after it 0.5
    assert np.allclose(retraction(norms), [0.25, 0.0, 0.75])


def test_bigram_information_of_a_deterministic_cycle_is_log_d():
    """0 → 1 → 2 → 0 …: P̂ is a permutation (L* = 0) and π̂ is uniform up to the +1 counts, so
    𝕀̂ = H(π̂ᵀP̂) = log 3; any order of the same tokens has 𝕀̂ near 0."""
    c = Corpus(np.tile(np.arange(3, dtype=np.int32), 30_000), ("a", "b", "c"))
    assert bigram_information(c.unigram(), c.bigram()) == pytest.approx(np.log(3), abs=1e-6)
    assert order_free_information(c, draws=5).max() < 1e-3


def test_order_free_information_of_an_iid_stream_follows_the_g_test():
    """For N i.i.d. tokens over v symbols with every cell well filled, 2N𝕀̂ ~ χ²_k, k = (v − 1)²
    (the G-test): the mean of 20 random orders has sd √(2k/20) ≈ 0.95 around k = 9, so a
    4-sd band; every order keeps π̂."""
    rng = np.random.default_rng(3)
    c = Corpus(rng.integers(0, 4, 100_000).astype(np.int32), tuple("abcd"))
    null = order_free_information(c, draws=20)
    assert abs(2 * (c.tokens.size - 1) * null.mean() - 9) < 4
    assert null.std() > 0


def test_tracked_tokens_top3_paper_words_then_median():
    words = ["<unk>", "the", ",", "a", "x1", "x2", "full", "x3", "x4", "x5", "x6"]
    counts = np.array([50, 40, 30, 20, 10, 9, 8, 7, 6, 5, 4], float)
    corpus = Corpus(np.zeros(2, np.int32), tuple(words))
    pi = counts / counts.sum()
    T, mid, origin = tracked(corpus, pi, "tinystories")
    assert T[:3] == [0, 1, 2]  # the three most frequent
    # 'full' (the paper's medium-frequency word; 'a' is one of its high-frequency ones), then
    # median ranks 5, 4
    assert mid == [6, 5, 4] and origin == ["paper", "median", "median"]
    T, mid, origin = tracked(corpus, pi, "other")
    assert origin == ["median"] * 3 and mid == [5, 4, 6]  # median rank 5, then 4, 6


def test_corpus_keys():
    assert corpus_key("wikitext2_valid.txt") == "wikitext"
    assert corpus_key("hf:wikitext-103") == "wikitext"
    assert corpus_key("/data/tinystories_val_excerpt.txt") == "tinystories"
    assert corpus_key("/data/my_book.txt") == "my-book"


def test_tiny_runs_on_the_generated_corpus():
    _, config = experiment_config("markov-text", "tiny", {})
    assert config.corpus == [GENERATED_CORPUS] == ["gen:topic-words"]
    assert resolve(config, GENERATED_CORPUS) == GENERATED_CORPUS
    assert corpus_key(GENERATED_CORPUS) == "topic-words"


def test_relative_corpora_need_a_folder(monkeypatch, tmp_path):
    """Real corpora come from data_dir or $ATTNDYN_TEXT_DATA, never from beside the repository."""
    monkeypatch.delenv("ATTNDYN_TEXT_DATA", raising=False)
    _, config = experiment_config("markov-text", "small", {})
    with pytest.raises(InputError) as err:
        resolve(config, "wikitext2_valid.txt")
    msg = str(err.value)
    assert "'data_dir'" in msg and "$ATTNDYN_TEXT_DATA" in msg and "\n" not in msg
    monkeypatch.setenv("ATTNDYN_TEXT_DATA", str(tmp_path))
    with pytest.raises(InputError, match=r"'corpus': no file 'wikitext2_valid.txt' .*ATTNDYN"):
        resolve(config, "wikitext2_valid.txt")
    (tmp_path / "wikitext2_valid.txt").write_text("some words")
    assert resolve(config, "wikitext2_valid.txt") == str(tmp_path / "wikitext2_valid.txt")
    _, config = experiment_config("markov-text", "small", {"data_dir": str(tmp_path / "x")})
    with pytest.raises(InputError, match=r"\(data_dir\)"):
        resolve(config, "wikitext2_valid.txt")


def test_hf_revision_is_read_and_in_the_run_id(monkeypatch):
    """Issue 48: a data set's revision is an input. ``corpus_revision`` reaches load_dataset and
    the run id; without it nothing is passed and the id is the one runs were stored under."""
    from attndyn.core.config import run_id, validate
    from attndyn.models import markov

    seen = []

    def fake(name, config, split, **kw):
        seen.append(kw)
        return [{"text": "the cat sat on the mat ."}] * 50

    text.hf_text("hf:wikitext-2", 100, load_dataset=fake, revision="b08601e")
    text.hf_text("hf:wikitext-2", 100, load_dataset=fake)
    assert seen == [{"revision": "b08601e"}, {}]
    base = dict(data="text", corpus="hf:wikitext-2")
    plain = validate(markov.Config, base)
    pinned = validate(markov.Config, dict(base, corpus_revision="b08601e"))
    other = validate(markov.Config, dict(base, corpus_revision="refs/convert/parquet"))
    ids = {run_id("markov", c) for c in (plain, pinned, other)}
    assert len(ids) == 3
    assert plain.corpus_revision is None
    for bad, corpus in (("b08601e", "gen:topic-words"), ("a b", "hf:wikitext-2")):
        with pytest.raises(InputError, match="corpus_revision"):
            validate(markov.Config, dict(data="text", corpus=corpus, corpus_revision=bad))
