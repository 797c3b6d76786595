"""Stage detector: condensation, focus, dilution and restart on a recorded trajectory.

arXiv 2605.01199 (abstract, Section 3) describes one focus–dilution cycle as
1. condensation — W₀, W₁ collapse to rank one while attention stays frozen (Thm 3.2–3.3);
2. focus — attention concentrates on the high-frequency token (Props 3.4–3.5);
3. dilution — attention of low-frequency queries on the frequent token falls (Thm 3.7);
4. restart — a new embedding direction opens: the rank of W₀ rises (Thm 3.9),
and the cycle repeats. The detector reads each stage off one signal (docs/markov.md, "Stages"):

- ``condensation``: a rank signal r(t) of W₀ (:func:`rank_signal`) falling from its initial value
  to ≤ 1 + ``rank_tol``;
- ``restart``: after condensation, the first upward crossing of each level k + 1/2 (k ≥ 1) by r,
  from the last time r ≤ k + ``rank_tol`` to the first time r ≥ k + 1 − ``rank_tol`` (or the next
  crossing, or the end);
- ``focus``: every rise of F(t) = Σ_i π_i 𝔸_{i,top} (the π-weighted attention on the most frequent
  token) by at least ``min_swing``;
- ``dilution``: every fall of D(t) = Σ_{i≠top} π_i 𝔸_{i,top} / Σ_{i≠top} π_i (the low-frequency
  queries' attention on the frequent token) by at least ``min_swing``.

A rise or fall ("leg") is found by a zig-zag filter with hysteresis: an extremum is confirmed once
the signal has moved away from it by the threshold. A leg from value a to value b starts at the
last time before its end where the signal is within 5 % of |b − a| of a (it has left a) and ends
at the first time it is within 5 % of b (it has arrived), so flat plateaus do not count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

STAGE_NAMES = ("condensation", "focus", "dilution", "restart")
RANK_SIGNALS = ("count", "stable", "erank")
"""W₀'s rank signals (:func:`rank_signal`)."""
RANK_FRACTION = 0.2
"""Default a of the ``count`` rank #{k: σ_k ≥ a σ₁}: five times the untrained bulk's σ_k/σ₁ at
the paper's init (≈ 0.03–0.04 at m = 256, ε = 1/m, once σ₁ has grown: docs/markov.md,
"Stages") and below the σ₂/σ₁ ≈ 0.7–0.9 of a restarted direction."""
EDGE = 0.05
"""Fraction of a leg's amplitude that marks its departure and arrival."""


@dataclass(frozen=True)
class Stage:
    """One detected stage: ``name`` (a :data:`STAGE_NAMES` entry), ``start``/``end`` on the
    trajectory's time axis, ``signal`` (what fixed it), ``start_value``/``end_value`` of that
    signal."""

    name: str
    start: float
    end: float
    signal: str
    start_value: float
    end_value: float

    def as_dict(self) -> dict:
        return asdict(self)


def legs(values: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """Zig-zag extrema: index pairs (i, j) of consecutive confirmed extrema whose values differ
    by at least ``threshold`` (a rise when values[j] > values[i]). NaNs end the series."""
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    n = int(np.argmin(finite)) if not finite.all() else len(v)
    v = v[:n]
    if n < 2:
        return []
    lo = hi = 0  # running min / max before the first move of at least the threshold
    pivots: list[int] = []
    trend = 0  # +1 rising from the last pivot, −1 falling
    ext = 0  # running extremum of the current leg
    for k in range(1, n):
        if trend == 0:
            lo = k if v[k] < v[lo] else lo
            hi = k if v[k] > v[hi] else hi
            if v[k] - v[lo] >= threshold:
                pivots, trend, ext = [lo], 1, k
            elif v[hi] - v[k] >= threshold:
                pivots, trend, ext = [hi], -1, k
        elif trend * (v[k] - v[ext]) >= 0:
            ext = k
        elif trend * (v[ext] - v[k]) >= threshold:  # turned: the extremum is confirmed
            pivots.append(ext)
            trend, ext = -trend, k
    if trend != 0 and abs(v[ext] - v[pivots[-1]]) >= threshold:
        pivots.append(ext)
    return [(a, b) for a, b in zip(pivots, pivots[1:], strict=False)]


def _span(time: np.ndarray, v: np.ndarray, i: int, j: int) -> tuple[float, float]:
    """(departure, arrival) times of the leg i → j (:data:`EDGE` of its amplitude)."""
    a, b = v[i], v[j]
    tol = EDGE * abs(b - a)
    seg = v[i : j + 1]
    near_a = np.flatnonzero(np.abs(seg - a) <= tol)
    near_b = np.flatnonzero(np.abs(seg - b) <= tol)
    start = i + int(near_a[near_a < near_b[0]].max()) if len(near_a) else i
    end = i + int(near_b[0])
    return float(time[start]), float(time[end])


def sv_ratios(obs: Mapping[str, np.ndarray]) -> np.ndarray:
    """σ_k(W₀)/σ₁(W₀) for k = 2, 3, … as recorded (``sv_ratio_W0``, ``sv_ratio{k}_W0``),
    shape (K − 1, T)."""
    rows = [np.asarray(obs["sv_ratio_W0"], np.float64)]
    k = 3
    while f"sv_ratio{k}_W0" in obs:
        rows.append(np.asarray(obs[f"sv_ratio{k}_W0"], np.float64))
        k += 1
    return np.stack(rows)


def rank_signal(
    obs: Mapping[str, np.ndarray], kind: str = "count", fraction: float = RANK_FRACTION
) -> np.ndarray:
    """W₀'s rank r(t) as ``kind`` reads it:

    - ``count``: #{k: σ_k ≥ a σ₁}, a = ``fraction`` — a direction counts once it has grown to a
      fraction a of the leading one, so the untrained init bulk (σ_k/σ₁ ≪ a) is not counted;
    - ``stable``: ‖W₀‖²_F/σ₁² = 1 + Σ_{k≥2}(σ_k/σ₁)²: a direction at ratio ρ adds ρ², a bulk
      of n directions at ratio ε adds nε²;
    - ``erank``: the entropy effective rank exp(H(σ/Σσ)) (counts the bulk: 1.5 at σ = (1, .03,
      .03, .03))."""
    if kind == "count":
        if not 0 < fraction <= 1:
            raise ValueError(f"rank fraction a must be in (0, 1] (got {fraction})")
        ratios = sv_ratios(obs)
        count = 1.0 + np.sum(ratios >= fraction, axis=0)
        return np.where(np.isfinite(ratios).all(axis=0), count, np.nan)
    if kind == "stable":
        return np.asarray(obs["stable_rank_W0"], np.float64)
    if kind == "erank":
        return np.asarray(obs["erank_W0"], np.float64)
    raise ValueError(f"rank signal must be one of {', '.join(RANK_SIGNALS)} (got {kind!r})")


def rank_label(kind: str = "count", fraction: float = RANK_FRACTION) -> str:
    """How a :func:`rank_signal` is written in a stage's ``signal``."""
    return {"count": f"#(σ_k >= {fraction:g} σ_1)", "stable": "stable rank W0"}.get(
        kind, "erank_W0"
    )


def detect_stages(
    time: np.ndarray,
    erank: np.ndarray,
    focus: np.ndarray,
    dilution: np.ndarray,
    *,
    rank_tol: float = 0.15,
    min_swing: float = 0.05,
    label: str = "erank_W0",
) -> list[Stage]:
    """Stages from a rank signal of W₀ (``erank``: :func:`rank_signal`, named ``label`` in the
    stages), F(t) and D(t) (module docstring), sorted by start."""
    time = np.asarray(time, dtype=np.float64)
    erank = np.asarray(erank, dtype=np.float64)
    out: list[Stage] = []
    below = np.flatnonzero(erank <= 1.0 + rank_tol)
    if len(below) and erank[0] > 1.0 + rank_tol:
        j = int(below[0])
        leave = np.flatnonzero(erank[: j + 1] <= erank[0] - EDGE * (erank[0] - erank[j]))
        i = int(leave[0]) if len(leave) else 0
        out.append(
            Stage(
                "condensation",
                float(time[i]),
                float(time[j]),
                f"{label} <= {1 + rank_tol:g}",
                float(erank[0]),
                float(erank[j]),
            )
        )
    out.extend(_restarts(time, erank, rank_tol, label))
    for name, series, sign, thr, label in (
        ("focus", np.asarray(focus, np.float64), +1, min_swing, "attention on top token rise"),
        (
            "dilution",
            np.asarray(dilution, np.float64),
            -1,
            min_swing,
            "low-frequency attention on top token fall",
        ),
    ):
        for i, j in legs(series, thr):
            if sign * (series[j] - series[i]) <= 0:
                continue
            start, end = _span(time, series, i, j)
            out.append(Stage(name, start, end, label, float(series[i]), float(series[j])))
    return sorted(out, key=lambda s: (s.start, STAGE_NAMES.index(s.name)))


def _restarts(time: np.ndarray, erank: np.ndarray, rank_tol: float, label: str) -> list[Stage]:
    """Rank rises through k + 1/2 (see the module docstring)."""
    out: list[Stage] = []
    n = len(erank)
    condensed = np.flatnonzero(erank <= 1.0 + rank_tol)
    if not len(condensed):
        return out  # no rank-one stage, so nothing restarts
    first = int(condensed[0])
    up = lambda k: np.flatnonzero((erank[first:-1] < k + 0.5) & (erank[first + 1 :] >= k + 0.5))  # noqa: E731
    crossings = sorted(
        (first + 1 + int(up(k)[0]), k) for k in range(1, int(np.nanmax(erank)) + 1) if len(up(k))
    )
    crossings = [(k, idx) for idx, k in crossings]
    for c, (k, idx) in enumerate(crossings):
        before = np.flatnonzero(erank[:idx] <= k + rank_tol)
        if not len(before):
            continue  # never near level k before rising through k + 1/2
        i = int(before[-1])
        stop = crossings[c + 1][1] if c + 1 < len(crossings) else n - 1
        after = np.flatnonzero(erank[idx : stop + 1] >= k + 1 - rank_tol)
        j = idx + int(after[0]) if len(after) else stop
        out.append(
            Stage(
                "restart",
                float(time[i]),
                float(time[j]),
                f"{label} through {k + 0.5:g}",
                float(erank[i]),
                float(erank[j]),
            )
        )
    return out


def stage_signals(
    obs: Mapping[str, np.ndarray], pi: np.ndarray, track: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """F(t) and D(t) from the recorded ``attn_i_j`` of the tracked tokens (one seed): the top
    token is the most frequent tracked token; weights π restricted to the tracked queries."""
    pi = np.asarray(pi, dtype=np.float64)
    top = max(track, key=lambda t: pi[t])
    w = {i: pi[i] for i in track}
    total = sum(w.values())
    low = [i for i in track if i != top]
    f = sum(w[i] * np.asarray(obs[f"attn_{i}_{top}"]) for i in track) / total
    w_low = sum(w[i] for i in low)
    d = sum(w[i] * np.asarray(obs[f"attn_{i}_{top}"]) for i in low) / w_low
    return f, d


def stages_of(
    traj,
    pi: np.ndarray,
    track: tuple[int, ...],
    seed_index: int = 0,
    rank: str = "count",
    fraction: float = RANK_FRACTION,
    **kw,
) -> list[Stage]:
    """:func:`detect_stages` on one seed of a markov Trajectory, W₀'s rank read by ``rank``
    (:func:`rank_signal`)."""
    one = traj.isel(seed=seed_index) if "seed" in traj.dims else traj
    obs = {k: one[k].values for k in one.data_vars}
    f, d = stage_signals(obs, pi, track)
    r = rank_signal(obs, rank, fraction)
    label = rank_label(rank, fraction)
    return detect_stages(one["time"].values, r, f, d, label=label, **kw)
