"""Real text for the focus–dilution family (arXiv 2605.01199, Section 4.2: WikiText, TinyStories).

A corpus becomes one stream of token ids; training windows are s + 1 consecutive tokens (inputs
x₁…x_s, next-token label x_{s+1}), the same shape as Def. 2.1's Markov sequences. The unigram π̂
and bigram P̂ of the stream give the population observables (docs/markov.md, "Text").

Sources (``corpus``): a local text file, or ``hf:wikitext-2`` / ``hf:wikitext-103`` (Hugging Face
``Salesforce/wikitext``, configs ``wikitext-2-raw-v1`` / ``wikitext-103-raw-v1``, split train) or
``hf:tinystories`` (``roneneldan/TinyStories``, split train) through the ``datasets`` library
(which caches what it downloads), or ``gen:topic-words``: words emitted by a known hidden Markov
chain (:class:`TopicWords`), generated here, so that tests and the tiny preset need no data.
WikiText's raw markup is undone everywhere (:func:`clean_wikitext`). Tokenizers (``tokenizer``):
``word`` (lower-cased words and punctuation, the ``vocab − 1`` most frequent kept, the rest
``<unk>``) or ``bpe`` (a byte-level BPE of ``vocab`` ids trained on the corpus with the Hugging
Face ``tokenizers`` library; id 0 is ``<unk>``, which only WikiText's own ``<unk>`` produces).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attndyn.errors import InputError

UNK = "<unk>"
_WORD = re.compile(r"<unk>|\w+|[^\w\s]")
_HEADING = re.compile(r"^ *(=+) [^\n]*? \1 *$", re.MULTILINE)
_MARKUP = {" @-@ ": "-", " @,@ ": ",", " @.@ ": "."}
INSTALL = "pip install 'attndyn[text]'"

HF_SOURCES: dict[str, tuple[str, str | None, str]] = {
    "hf:wikitext-2": ("Salesforce/wikitext", "wikitext-2-raw-v1", ""),
    "hf:wikitext-103": ("Salesforce/wikitext", "wikitext-103-raw-v1", ""),
    "hf:tinystories": ("roneneldan/TinyStories", None, "\n\n"),
}
"""``corpus`` name → (data set, config, separator joining its rows). WikiText's rows are lines
that keep their own newline (empty rows are blank lines); TinyStories' rows are whole stories."""

GENERATED_PREFIX = "gen:"
CHARS_PER_TOKEN = 8
"""Characters read from a Hugging Face data set per kept token (``max_tokens``): words average
under 6 characters with their space, so 8 leaves room for either tokenizer."""


@dataclass(frozen=True)
class Corpus:
    """A tokenised corpus: ids (int32), the vocabulary (id → string; id 0 is ``<unk>``) and,
    for BPE, the ``decode`` of ids back to text."""

    tokens: np.ndarray
    vocab: tuple[str, ...]
    decoder: Callable[[list[int]], str] | None = field(default=None, compare=False, repr=False)

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

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids``: the BPE decoder, or words joined by single spaces."""
        ids = [int(i) for i in ids]
        if self.decoder is not None:
            return self.decoder(ids)
        return " ".join(self.vocab[i] for i in ids)

    def label(self, i: int) -> str:
        """A printable name of token ``i`` (a leading space shown as ␣, a newline as ⏎)."""
        text = self.decode([i]) if self.decoder is not None else self.vocab[i]
        return text.replace(" ", "␣").replace("\n", "⏎") or repr(text)

    def index(self, text: str) -> int | None:
        """The id whose label or vocabulary string is ``text`` (None if absent)."""
        for i, v in enumerate(self.vocab):
            if text in (v, self.label(i)):
                return i
        return None


def clean_wikitext(text: str) -> str:
    """Undo WikiText's raw markup (Merity et al. 2016): `` @-@ `` → ``-``, `` @,@ `` → ``,``,
    `` @.@ `` → ``.`` (number and compound joins), and drop the `` = Heading = `` lines (section
    titles, whose ``=`` runs would otherwise become frequent tokens). ``<unk>`` is kept: it is
    the data set's own unknown word and maps to id 0. Text without this markup is unchanged."""
    for mark, plain in _MARKUP.items():
        text = text.replace(mark, plain)
    return _HEADING.sub("", text)


def read_text(source: str) -> str:
    """The raw text of a local file (``source`` a path)."""
    path = Path(source).expanduser()
    if not path.is_file():
        raise InputError(f"invalid value for 'corpus': no such file {source!r}")
    return path.read_text(encoding="utf-8", errors="replace")


def join_rows(rows: Iterable[dict], separator: str, max_chars: int) -> str:
    """The ``text`` fields of data-set rows joined by ``separator``, stopping once ``max_chars``
    characters are read (so a large data set is read only as far as it is used)."""
    parts, n = [], 0
    for row in rows:
        text = row["text"]
        parts.append(text)
        n += len(text) + len(separator)
        if n >= max_chars:
            break
    return separator.join(parts)


def hf_text(source: str, max_chars: int, load_dataset=None, revision: str | None = None) -> str:
    """The text of ``hf:NAME`` through Hugging Face ``datasets`` (``load_dataset`` injectable
    for tests) at the Hub ``revision`` (None: the default branch); a one-line
    :class:`InputError` when the library or the data set is missing."""
    if source not in HF_SOURCES:
        raise InputError(
            f"invalid value for 'corpus': unknown data set {source!r} (known: "
            f"{', '.join(HF_SOURCES)}, or a local text file)"
        )
    name, config, separator = HF_SOURCES[source]
    if load_dataset is None:
        try:
            import datasets
        except ImportError:
            raise InputError(
                f"invalid value for 'corpus': {source} needs the Hugging Face datasets "
                f"library ({INSTALL})"
            ) from None
        load_dataset = datasets.load_dataset
    try:
        pinned = {} if revision is None else {"revision": revision}
        rows = load_dataset(name, config, split="train", **pinned)
        return join_rows(rows, separator, max_chars)
    except Exception as err:  # any failure (offline, no cache, renamed set) → one line
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise InputError(
            f"invalid value for 'corpus': could not load {name}"
            f"{f' ({config})' if config else ''} split train through Hugging Face datasets: "
            f"{type(err).__name__}: {first}"
        ) from None


@dataclass(frozen=True)
class TopicWords:
    """A generated corpus: ``n_tokens`` words from a hidden Markov chain of topics.

    The topic z follows arXiv 2605.01199's lazy chain (Eq. 2) on ``n_topics`` equally likely
    states, T = λI + (1 − λ)𝟙μᵀ with λ = ``stay``; each word is drawn from the topic's law
    B_z: the ``n_common`` common words w00, w01, … (shared by every topic, mass ``common``, Zipf
    ∝ 1/(k + 1) within) or the topic's own ``per_topic`` words (Zipf within). The next word
    depends on the topic, which the whole window reveals, so attention that spreads over the
    window beats attention on the frequent words. Its unigram and bigram laws are known in
    closed form: π = μB and P_ww' = Σ_z P(z | w) (TB)_zw' with P(z | w) = μ_z B_zw / π_w, hence
    the bigram information L_uni − L* = Σ_w π_w KL(P_w ‖ π) (as in Prop. 3.3), which a corpus
    of these words shows up to sampling error."""

    n_topics: int = 4
    per_topic: int = 7
    n_common: int = 3
    common: float = 0.4
    stay: float = 0.95
    n_tokens: int = 200_000
    seed: int = 0

    @property
    def n_words(self) -> int:
        return self.n_common + self.n_topics * self.per_topic

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(f"w{k:02d}" for k in range(self.n_words))

    def emissions(self) -> np.ndarray:
        """B (topics × words): each topic's word law."""

        def zipf(n: int) -> np.ndarray:
            w = 1.0 / np.arange(1.0, n + 1.0)
            return w / w.sum()

        B = np.zeros((self.n_topics, self.n_words))
        B[:, : self.n_common] = self.common * zipf(self.n_common)
        for z in range(self.n_topics):
            start = self.n_common + z * self.per_topic
            B[z, start : start + self.per_topic] = (1.0 - self.common) * zipf(self.per_topic)
        return B

    def topic_chain(self) -> np.ndarray:
        # the lazy chain of Eq. 2 over uniform topics, λ = stay (as data.lazy_chain, which
        # imports this module)
        k = self.n_topics
        return self.stay * np.eye(k) + (1.0 - self.stay) * np.full((k, k), 1.0 / k)

    @property
    def pi(self) -> np.ndarray:
        return np.full(self.n_topics, 1.0 / self.n_topics) @ self.emissions()

    @property
    def P(self) -> np.ndarray:  # noqa: N802 - the paper's name
        """The words' bigram law P(w' | w) (class docstring)."""
        B, mu = self.emissions(), np.full(self.n_topics, 1.0 / self.n_topics)
        posterior = (mu[:, None] * B / self.pi[None, :]).T  # (words, topics): P(z | w)
        return posterior @ self.topic_chain() @ B

    def bigram_information(self) -> float:
        """Σ_w π_w KL(P_w ‖ π) (nats): what the best unigram predictor leaves above L*."""
        from attndyn.models.markov.theory.closed_forms import plateau_gap

        return plateau_gap(self.pi, self.P)

    def states(self) -> np.ndarray:
        """The ``n_tokens`` word indices, fixed by ``seed``."""
        rng = np.random.default_rng(self.seed)
        n = self.n_tokens
        draws = rng.integers(0, self.n_topics, n)  # topic draws from μ (uniform)
        stay = rng.random(n) < self.stay
        stay[0] = False
        # each position keeps the topic drawn at the last position that did not stay
        topics = draws[np.maximum.accumulate(np.where(stay, 0, np.arange(n)))]
        cdf = np.cumsum(self.emissions(), axis=1)
        u = rng.random(n)
        return np.minimum((cdf[topics] < u[:, None]).sum(axis=1), self.n_words - 1)

    def text(self) -> str:
        return " ".join(np.asarray(self.words)[self.states()])


GENERATED: dict[str, TopicWords] = {"gen:topic-words": TopicWords()}
"""``corpus`` name → the generated corpus it stands for."""


def generated_text(source: str) -> str:
    """The text of a generated corpus (one-line :class:`InputError` for an unknown name)."""
    if source not in GENERATED:
        raise InputError(
            f"invalid value for 'corpus': unknown generated corpus {source!r} (known: "
            f"{', '.join(GENERATED)})"
        )
    return GENERATED[source].text()


def source_text(source: str, max_tokens: int, revision: str | None = None) -> str:
    """The cleaned text of ``corpus`` (a file or a Hugging Face data set at ``revision``; a
    generated corpus as it is)."""
    if source.startswith("hf:"):
        text = hf_text(source, CHARS_PER_TOKEN * max_tokens, revision=revision)
    elif source.startswith(GENERATED_PREFIX):
        return generated_text(source)
    else:
        text = read_text(source)
    return clean_wikitext(text)


def word_corpus(text: str, vocab: int, max_tokens: int) -> Corpus:
    """Lower-cased words and punctuation; the ``vocab − 1`` most frequent kept, the rest ``<unk>``
    (ties broken by first appearance; WikiText's own ``<unk>`` is id 0 too)."""
    words = _WORD.findall(text.lower())[:max_tokens]
    if len(words) < 2:
        raise InputError("invalid value for 'corpus': fewer than 2 tokens in the text")
    ranked = [w for w, _ in Counter(words).most_common() if w != UNK][: vocab - 1]
    index = {w: i + 1 for i, w in enumerate(ranked)}
    ids = np.fromiter((index.get(w, 0) for w in words), dtype=np.int32, count=len(words))
    return Corpus(ids, (UNK, *ranked))


def bpe_corpus(text: str, vocab: int, max_tokens: int) -> Corpus:
    """Byte-level BPE (Sennrich et al. 2016; GPT-2's byte alphabet) with ``vocab`` ids trained
    on ``text`` by the ``tokenizers`` library, ``<unk>`` the special id 0. ``vocab`` must cover
    the 256 byte symbols plus ``<unk>``; text round-trips exactly through :meth:`Corpus.decode`."""
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    except ImportError:
        raise InputError(
            f"invalid value for 'tokenizer': 'bpe' needs the Hugging Face tokenizers library "
            f"({INSTALL})"
        ) from None
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if vocab < len(alphabet) + 1:
        raise InputError(
            f"invalid value for 'vocab': tokenizer='bpe' needs at least {len(alphabet) + 1} ids "
            f"(256 bytes + <unk>), got {vocab}"
        )
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=[UNK], initial_alphabet=alphabet, show_progress=False
    )
    tok.train_from_iterator([text], trainer=trainer)
    ids = np.asarray(tok.encode(text).ids[:max_tokens], dtype=np.int32)
    if ids.size < 2:
        raise InputError("invalid value for 'corpus': fewer than 2 tokens in the text")
    size = tok.get_vocab_size()
    tokens = [tok.id_to_token(i) for i in range(size)]
    strings = tuple(t for t in tokens if t is not None)
    assert len(strings) == size  # every id below the vocabulary size has a token
    return Corpus(ids, strings, lambda x: tok.decode(x, skip_special_tokens=False))


TOKENIZERS = {"word": word_corpus, "bpe": bpe_corpus}


@functools.lru_cache(maxsize=8)
def _cached(
    source: str, stamp: str, vocab: int, tokenizer: str, max_tokens: int, revision: str | None
) -> Corpus:
    return TOKENIZERS[tokenizer](source_text(source, max_tokens, revision), vocab, max_tokens)


def load_corpus(config) -> Corpus:
    """The tokenised corpus of a config (``corpus``, ``vocab``, ``tokenizer``, ``max_tokens``);
    with ``shuffle_tokens`` the stream is permuted once (fixed seed 0), which keeps π̂ and
    destroys every order statistic (a negative control). Cached per file content (its hash)."""
    from attndyn.core.config import file_digest

    source = config.corpus
    path = Path(source).expanduser()
    local = not source.startswith(("hf:", GENERATED_PREFIX))
    stamp = file_digest(path) if local and path.is_file() else ""  # its content, as the run id
    revision = getattr(config, "corpus_revision", None)
    corpus = _cached(source, stamp, config.vocab, config.tokenizer, config.max_tokens, revision)
    if getattr(config, "shuffle_tokens", False):
        perm = np.random.default_rng(0).permutation(corpus.tokens.size)
        corpus = Corpus(corpus.tokens[perm], corpus.vocab, corpus.decoder)
    return corpus


def require_windows(n_tokens: int, seq_len: int) -> int:
    """``n_tokens``, or a one-line error when no window of s + 1 tokens with a start to draw
    fits (fewer than s + 2 tokens)."""
    if n_tokens < seq_len + 2:
        raise InputError(
            f"invalid value for 'seq_len': the corpus has {n_tokens} tokens, fewer than "
            f"seq_len + 2 = {seq_len + 2}"
        )
    return n_tokens


def windows(corpus: Corpus, seq_len: int, n: int, seed: int = 0) -> np.ndarray:
    """``n`` windows (n, s + 1) of consecutive tokens at uniform starts in [0, N − s − 1] (the
    law ``markov.build`` samples with data='text'): inputs ``[:, :-1]``, label ``[:, -1]``."""
    N = require_windows(corpus.tokens.size, seq_len)
    starts = np.random.default_rng(seed).integers(0, N - seq_len, n)
    return corpus.tokens[starts[:, None] + np.arange(seq_len + 1)[None, :]]
