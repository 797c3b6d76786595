"""Words over the AIM alphabet and their normalised traces, shared by the simulator's observables
and the moment hierarchies of the theory (arXiv 2609.03858 Eqs. 10, 26).

Letters name d×d matrices of one index k (1-based): ``"k"`` = S_k (tied, direct) or M_k = U_kV_kᵀ
(untied), ``"kT"`` its transpose, ``"Ak"`` = U_kU_kᵀ and ``"Bk"`` = V_kV_kᵀ (untied). A word
α = (Z_1, …, Z_w) stands for the moment

    μ_α = Tr(Z_1 ⋯ Z_w)/d,

which is unchanged by cyclic rotation and by transpose-reversal (Tr Z_1⋯Z_w = Tr Z_wᵀ⋯Z_1ᵀ);
:func:`canonical` picks one representative per class. A word's observable name is t_k, tA_k,
tB_k (degree 1), q_kl (tied) or q1_kl = μ_(M_k, M_lᵀ), q2_kl = μ_(M_k, M_l) (untied) at degree
2, otherwise ``mu_`` + the dot-joined letters.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def letter_kind(letter: str) -> tuple[str, int]:
    """("M" | "MT" | "A" | "B", index k) of a letter name."""
    if letter.startswith("A"):
        return "A", int(letter[1:])
    if letter.startswith("B"):
        return "B", int(letter[1:])
    if letter.endswith("T"):
        return "MT", int(letter[:-1])
    return "M", int(letter)


def transpose_letter(letter: str) -> str:
    """The letter of Zᵀ: k ↔ kT; A_k, B_k are symmetric."""
    kind, k = letter_kind(letter)
    return {"M": f"{k}T", "MT": f"{k}", "A": letter, "B": letter}[kind]


def canonical(word: tuple[str, ...], transpose: Callable[[str], str] | None = None) -> tuple:
    """Class representative (the smallest) of ``word`` under cyclic rotation and
    transpose-reversal; ``transpose`` maps a letter to its transpose's (default: symmetric
    letters, so transpose-reversal is plain reversal)."""
    n = len(word)
    rev = tuple(reversed(word)) if transpose is None else tuple(map(transpose, reversed(word)))
    return min([word[i:] + word[:i] for i in range(n)] + [rev[i:] + rev[:i] for i in range(n)])


def canonical_words(names: list[str], transpose: Mapping[str, str], degree: int) -> list[tuple]:
    """One representative per class of the words of length ``degree`` over ``names``, in the
    order of their first appearance in lexicographic enumeration."""
    seen, words = set(), []
    for word in itertools.product(names, repeat=degree):
        key = canonical(word, transpose.__getitem__)
        if key not in seen:
            seen.add(key)
            words.append(key)
    return words


def moment_name(word: tuple[str, ...], symmetric: bool) -> str:
    """The simulator's observable name of a canonical word; ``symmetric``: tied letters (S_k
    symmetric, degree 2 is q_kl), else untied (q1_kl, q2_kl)."""
    if len(word) == 1:
        kind, k = letter_kind(word[0])
        return {"M": f"t_{k}", "A": f"tA_{k}", "B": f"tB_{k}"}[kind]
    if len(word) == 2:
        (k1, a), (k2, b) = letter_kind(word[0]), letter_kind(word[1])
        if symmetric:
            return f"q_{a}{b}"
        if k1 == "M" and k2 == "MT" and a <= b:
            return f"q1_{a}{b}"
        if k1 == "M" and k2 == "M" and a <= b:
            return f"q2_{a}{b}"
    return "mu_" + ".".join(word)


def word_traces(mats: Mapping[str, Any], words: Sequence[tuple[str, ...]]) -> list:
    """μ_α = Tr(Z_1⋯Z_w)/d of each word, for letter matrices ``mats`` (NumPy or JAX arrays);
    products of prefixes are cached, and the last factor enters through Tr(PZ) = Σ P ∘ Zᵀ."""
    d = next(iter(mats.values())).shape[0]
    prefix: dict[tuple, Any] = {}

    def product(word: tuple):
        if len(word) == 1:
            return mats[word[0]]
        if word not in prefix:
            prefix[word] = product(word[:-1]) @ mats[word[-1]]
        return prefix[word]

    out = []
    for word in words:
        if len(word) == 1:
            out.append(mats[word[0]].diagonal().sum() / d)
        else:
            out.append((product(word[:-1]) * mats[word[-1]].T).sum() / d)
    return out
