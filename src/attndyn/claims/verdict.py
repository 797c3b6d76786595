"""The evaluated claim: a :class:`Claim` (value, target, verdict) and the :class:`Check` s that a
claim or a precondition is made of (docs/claims.md).

A claim over seeds takes an :class:`~attndyn.claims.stats.Interval` as its value and passes only
if the whole interval clears the target.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
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

    Build claims with the helpers (``at_least``, ``at_most``, ``above``, ``below``, ``equals``,
    ``within``, ``between``, ``holds``): each takes the threshold once and writes ``target``.
    ``value`` may be an :class:`Interval` (a statistic over seeds with its confidence interval):
    the claim then passes only if the whole interval clears the threshold (``at_least``: its low
    end; ``at_most``: its high end; ``within``/``between``: both ends), and records ``ci_low``,
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

    @classmethod
    def holds(cls, name: str, statement: str, value: Any, *checks: Check) -> Claim:
        """Passes when every check passes; the target is the checks' texts joined by "and"."""
        if not checks:
            raise ValueError(f"claim {name!r} states no condition")
        text = " and ".join(c.text for c in checks)
        passed = all(c.passed for c in checks)
        if isinstance(value, Interval):
            return cls(
                name, statement, value.value, text, passed, value.low, value.high, value.n_seeds
            )
        return cls(name, statement, _number(value), text, passed)

    @classmethod
    def compare(cls, op, name, statement, value, threshold, also: tuple[Check, ...]) -> Claim:
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
            return cls.holds(name, statement, value, check, *also)
        return cls.holds(name, statement, value, Check.compare("", value, op, threshold), *also)

    @classmethod
    def at_least(cls, name, statement, value, threshold, *also: Check) -> Claim:
        """``value >= threshold`` (and every check in ``also``)."""
        return cls.compare(">=", name, statement, value, threshold, also)

    @classmethod
    def at_most(cls, name, statement, value, threshold, *also: Check) -> Claim:
        """``value <= threshold``."""
        return cls.compare("<=", name, statement, value, threshold, also)

    @classmethod
    def above(cls, name, statement, value, threshold, *also: Check) -> Claim:
        """``value > threshold``."""
        return cls.compare(">", name, statement, value, threshold, also)

    @classmethod
    def below(cls, name, statement, value, threshold, *also: Check) -> Claim:
        """``value < threshold``."""
        return cls.compare("<", name, statement, value, threshold, also)

    @classmethod
    def equals(cls, name, statement, value, expected, *also: Check) -> Claim:
        """``value == expected`` (exactly)."""
        return cls.compare("==", name, statement, value, expected, also)

    @classmethod
    def within(
        cls, name, statement, value, target: float, tol: float, relative: bool = False, *also
    ) -> Claim:
        """``|value − target| <= tol`` (``relative``: ``|value/target − 1| <= tol``)."""
        text = f"{target:g} ± {tol:.0%}" if relative else f"{target:g} ± {tol:g}"

        def ok(v: float) -> bool:
            return bool((abs(v / target - 1) if relative else abs(v - target)) <= tol)

        if isinstance(value, Interval):
            check = Check(f"{text} ({value.level:.0%} CI)", ok(value.low) and ok(value.high))
        else:
            check = Check(text, ok(value))
        return cls.holds(name, statement, value, check, *also)

    @classmethod
    def between(
        cls, name, statement, value, low: float, high: float, open_low: bool = False, *also
    ) -> Claim:
        """``low <= value <= high`` (``open_low``: ``low < value``)."""

        def ok(v: float) -> bool:
            return bool((v > low if open_low else v >= low) and v <= high)

        text = f"in {'(' if open_low else '['}{low:.3g}, {high:.3g}]"
        if isinstance(value, Interval):
            check = Check(f"{text} ({value.level:.0%} CI)", ok(value.low) and ok(value.high))
        else:
            check = Check(text, ok(value))
        return cls.holds(name, statement, value, check, *also)

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
