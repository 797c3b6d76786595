"""The evaluated claim: a :class:`Claim` (value, target, verdict) and the :class:`Check` s that a
claim or a precondition is made of (docs/claims.md).

A claim over seeds takes an :class:`~attndyn.claims.stats.Interval` as its value and passes only
if the whole interval clears the target.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from attndyn.claims.stats import Interval

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}


@dataclass(frozen=True)
class Check:
    """A condition and its text, e.g. ``Check.compare("min z", z, ">=", 5)``: "min z >= 5".
    ``refuted``: it failed by value (a finite value, or a whole interval, on the wrong side), as
    :attr:`Claim.refuted`; a claim one of whose checks is refuted is refuted."""

    text: str
    passed: bool
    refuted: bool = False

    @classmethod
    def compare(cls, label: str, value: Any, op: str, threshold: float) -> Check:
        """``value <op> threshold`` (NaN fails every comparison, and refutes nothing)."""
        text = f"{label} {op} {threshold:g}".strip()
        passed = bool(_OPS[op](value, threshold))
        finite = isinstance(value, int | float) and math.isfinite(value)
        return cls(text, passed, refuted=not passed and finite)


# the end of a confidence interval that must clear each comparison's threshold
_CONSERVATIVE = {">=": "low", ">": "low", "<=": "high", "<": "high"}


@dataclass
class Claim:
    """One checked statement: ``value`` measured, ``target`` in words, ``passed`` the verdict.

    Claims are judged from their declarations (:class:`~attndyn.claims.spec.Target`), which call
    :meth:`compare` (``>= <= > < ==``) or :meth:`inside` (a range). ``value`` may be an
    :class:`Interval` (a statistic over seeds with its confidence interval): the claim then
    passes only if the whole interval clears the threshold (``>=``/``>``: its low end;
    ``<=``/``<``: its high end; ``==`` and a range: both ends), and records ``ci_low``,
    ``ci_high`` and ``n_seeds``.

    ``refuted``: the claim failed **by value** — its value, with its whole interval, lies on the
    wrong side of the target (``>=``/``>``: the high end below the threshold; ``<=``/``<``: the
    low end above it; ``==`` and a range: the interval misses it). A NaN, an interval that
    straddles the threshold, or a failure of an extra check alone does not refute: what a
    negative control must achieve (docs/claims.md, "Negative controls").
    """

    name: str
    statement: str
    value: float | None
    target: str
    passed: bool
    ci_low: float | None = None
    ci_high: float | None = None
    n_seeds: int | None = None
    refuted: bool = False
    margin: float | None = None
    """How far the interval's deciding end clears the target, in standard errors (negative: it
    misses): :func:`margin_se`. None for a value without an interval, an ``==`` target or a
    claim whose target comes only from extra checks."""

    @property
    def finite(self) -> bool:
        """Whether the value and the interval ends it has are finite numbers (a verdict by
        value, not by a NaN or a missing measurement)."""
        ends = [e for e in (self.ci_low, self.ci_high) if e is not None]
        return self.value is not None and all(math.isfinite(v) for v in (self.value, *ends))

    @classmethod
    def from_checks(
        cls,
        name: str,
        statement: str,
        value: Any,
        checks: Sequence[Check],
        refuted: bool = False,
    ) -> Claim:
        """Passes when every check passes; the target is the checks' texts joined by "and".
        ``refuted`` (the value on the wrong side of its target) or any refuted check makes the
        claim refuted, for a finite value only."""
        if not checks:
            raise ValueError(f"claim {name!r} states no condition")
        text = " and ".join(c.text for c in checks)
        passed = all(c.passed for c in checks)
        if isinstance(value, Interval) and value.dropped:
            text += f" ({value.dropped} non-finite bootstrap resamples left out)"
        if isinstance(value, Interval):
            claim = cls(
                name, statement, value.value, text, passed, value.low, value.high, value.n_seeds
            )
        else:
            claim = cls(name, statement, _number(value), text, passed)
        by_value = refuted or any(c.refuted for c in checks)
        claim.refuted = bool(by_value and not passed and claim.finite)
        return claim

    @classmethod
    def compare(
        cls, op: str, name: str, statement: str, value: Any, threshold: float, also=()
    ) -> Claim:
        """``value op threshold`` for ``op`` in ``>= <= > < ==``, an interval judged by its
        conservative end (both ends for ``==``), and every check in ``also``."""
        if isinstance(value, Interval):
            ends = (
                [getattr(value, _CONSERVATIVE[op])]
                if op in _CONSERVATIVE
                else [value.low, value.high]
            )
            check = Check(
                f"{op} {threshold:g} ({value.level:.0%} CI)",
                bool(all(_OPS[op](e, threshold) for e in ends)),
            )
            margin = None
            if op == "==":
                refuted = not value.low <= threshold <= value.high
            else:  # the other end fails too: the whole interval on the wrong side
                other = value.high if _CONSERVATIVE[op] == "low" else value.low
                refuted = not _OPS[op](other, threshold)
                side = 1.0 if _CONSERVATIVE[op] == "low" else -1.0
                margin = margin_se(value, _CONSERVATIVE[op], side * threshold)
        else:
            check = Check.compare("", value, op, threshold)
            refuted = not check.passed
            margin = None
        claim = cls.from_checks(name, statement, value, (check, *also), refuted)
        claim.margin = margin
        return claim

    @classmethod
    def inside(
        cls,
        name: str,
        statement: str,
        value: Any,
        text: str,
        ok: Callable[[float], bool],
        also=(),
        region: tuple[float, float] | None = None,
    ) -> Claim:
        """``ok(value)`` for a range named ``text`` (an interval: both ends), and every check in
        ``also``. ``region`` = (low, high), the range's ends, decides ``refuted``: an interval
        refutes only if it misses the region entirely (a value outside it refutes)."""
        if isinstance(value, Interval):
            check = Check(f"{text} ({value.level:.0%} CI)", ok(value.low) and ok(value.high))
            lo, hi = region if region is not None else (math.nan, math.nan)
            refuted = value.high < lo or value.low > hi
            margin = None
            if region is not None:
                margin = min(margin_se(value, "low", lo), margin_se(value, "high", -hi))
        else:
            check = Check(text, ok(value))
            refuted = not check.passed
            margin = None
        claim = cls.from_checks(name, statement, value, (check, *also), refuted)
        claim.margin = margin
        return claim

    @classmethod
    def dropped(cls, name: str) -> Claim:
        """The failure that stands in for a declared claim the experiment did not evaluate."""
        return cls(
            name,
            "not evaluated: the experiment dropped this declared claim",
            None,
            "evaluated",
            False,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "statement": self.statement,
            "value": _finite(self.value),
            "ci_low": _finite(self.ci_low),
            "ci_high": _finite(self.ci_high),
            "n_seeds": self.n_seeds,
            "target": self.target,
            "passed": bool(self.passed),
            "refuted": bool(self.refuted),
            "margin": _finite(self.margin),
        }


Z_95 = 1.959963984540054
"""The standard normal's 97.5 % quantile: a half-width over it is the standard error."""


def margin_se(value: Interval, end: str, signed_threshold: float) -> float:
    """The clearance of the interval's ``end`` ("low" or "high") beyond a threshold, in standard
    errors: (low − threshold)/SE for a lower bound, (threshold − high)/SE for an upper bound
    (``signed_threshold`` = −threshold, as the high end enters with its sign flipped), where
    SE = |value − end|/1.96 is that side's half-width read as a normal interval's (docs/claims.md,
    "Seeds": a Student-t or bootstrap interval's half-width is wider than 1.96 SE, so this SE is
    an overestimate and the margin an underestimate). Non-finite when the interval is."""
    if end == "low":
        clearance, half = value.low - signed_threshold, value.value - value.low
    else:
        clearance, half = -value.high - signed_threshold, value.high - value.value
    if not (math.isfinite(clearance) and math.isfinite(half)):
        return math.nan
    if half <= 0:  # an exact value (every seed equal): no spread to measure the margin in
        return math.inf if clearance > 0 else -math.inf if clearance < 0 else 0.0
    return clearance / (half / Z_95)


def _finite(value: float | None) -> float | None:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _number(value: Any) -> float | None:
    return None if value is None else float(value)
