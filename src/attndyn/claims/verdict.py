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
    """A condition and its text, e.g. ``Check.compare("min z", z, ">=", 5)``: "min z >= 5"."""

    text: str
    passed: bool

    @classmethod
    def compare(cls, label: str, value: Any, op: str, threshold: float) -> Check:
        """``value <op> threshold`` (NaN fails every comparison)."""
        text = f"{label} {op} {threshold:g}".strip()
        return cls(text, bool(_OPS[op](value, threshold)))


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
    """

    name: str
    statement: str
    value: float | None
    target: str
    passed: bool
    ci_low: float | None = None
    ci_high: float | None = None
    n_seeds: int | None = None

    @property
    def finite(self) -> bool:
        """Whether the value and the interval ends it has are finite numbers (a verdict by
        value, not by a NaN or a missing measurement)."""
        ends = [e for e in (self.ci_low, self.ci_high) if e is not None]
        return self.value is not None and all(math.isfinite(v) for v in (self.value, *ends))

    @classmethod
    def from_checks(cls, name: str, statement: str, value: Any, checks: Sequence[Check]) -> Claim:
        """Passes when every check passes; the target is the checks' texts joined by "and"."""
        if not checks:
            raise ValueError(f"claim {name!r} states no condition")
        text = " and ".join(c.text for c in checks)
        passed = all(c.passed for c in checks)
        if isinstance(value, Interval) and value.dropped:
            text += f" ({value.dropped} non-finite bootstrap resamples left out)"
        if isinstance(value, Interval):
            return cls(
                name, statement, value.value, text, passed, value.low, value.high, value.n_seeds
            )
        return cls(name, statement, _number(value), text, passed)

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
        else:
            check = Check.compare("", value, op, threshold)
        return cls.from_checks(name, statement, value, (check, *also))

    @classmethod
    def inside(
        cls,
        name: str,
        statement: str,
        value: Any,
        text: str,
        ok: Callable[[float], bool],
        also=(),
    ) -> Claim:
        """``ok(value)`` for a range named ``text`` (an interval: both ends), and every check in
        ``also``."""
        if isinstance(value, Interval):
            check = Check(f"{text} ({value.level:.0%} CI)", ok(value.low) and ok(value.high))
        else:
            check = Check(text, ok(value))
        return cls.from_checks(name, statement, value, (check, *also))

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
        }


def _finite(value: float | None) -> float | None:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _number(value: Any) -> float | None:
    return None if value is None else float(value)
