"""Claim declarations: each claim of an experiment is declared once (docs/claims.md).

A :class:`ClaimSpec` holds everything said about a claim — its name, statement, statistic,
target, the reason for that target, the seeds its interval needs and the negative controls that
must fail it — and the runner, the dry run, ``attndyn describe``, the tests and the generated
page docs/claims/NAME.md all read it. An experiment's ``evaluate(config, measurements)`` returns
only the measured value of each claim (a number, an
:class:`~attndyn.claims.stats.Interval`, or an :class:`Evidence` with extra checks); the
verdict is the spec's target applied to it::

    claim("gap-shrinks-with-d", "the SGD–flow gap shrinks with d",
          statistic="fitted exponent a of the relative gap ∝ d^a (bootstrap over seeds)",
          target=below(-0.5), reason="fluctuations O(√(dα_d)) = O(d^−½)",
          controls=("time-2x", "lr-fixed"))

A claim that is made once per entry of a config list has ``{}`` in its name and ``over`` the
field: ``claim("sgd-tracks-exact-d{}", …, over="d")`` declares ``sgd-tracks-exact-d64``, … .
A threshold is a number, the name of a config field (``below("track_tol")``) or a value the
measurement supplies (``measured("τ = s_min/s_max + δ_h")``, given by ``Evidence.bounds``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from attndyn.claims.verdict import Check, Claim


@dataclass(frozen=True)
class Retired:
    """A claim as it stood when it failed, before it was changed (docs/claims.md, "Retired
    claims"; issue 49): its old ``name``, ``statement`` and ``target``, the ``failed`` value(s)
    with preset and seed offset, the date it was ``retired`` (ISO), ``why`` it changed (the
    paper's text, quoted with its offset, where that justifies the new reading) and what
    replaced it: ``now``, a declared claim's name, or ``"reported"`` (a measurement in the
    summary) or ``"dropped"``. Shown on the claims page, by ``attndyn describe`` and in the
    report, so the old failing claim stays where a reader of the new one looks."""

    name: str
    statement: str
    target: str
    failed: str
    retired: str
    why: str
    now: str

    def as_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Measured:
    """A threshold computed from the measurements; ``text`` says how (docs, target text)."""

    text: str


Param = float | int | str | Measured


def measured(text: str) -> Measured:
    """A threshold the experiment computes from its measurements (see :class:`Evidence`)."""
    return Measured(text)


@dataclass(frozen=True)
class Target:
    """A claim's comparison: ``op`` is one of ``>=``, ``<=``, ``>``, ``<``, ``==``, ``within``
    (``params`` = target, tolerance; ``relative``) or ``between`` (low, high; ``open_low``)."""

    op: str
    params: tuple[Param, ...]
    relative: bool = False
    open_low: bool = False

    def text(self) -> str:
        """The target in words, thresholds by name where they come from the config."""
        p = [_param_text(x) for x in self.params]
        if self.op == "within":
            tol = f"{p[1]}" + (" (relative)" if self.relative else "")
            return f"{p[0]} ± {tol}"
        if self.op == "between":
            return f"in {'(' if self.open_low else '['}{p[0]}, {p[1]}]"
        return f"{self.op} {p[0]}"

    def resolve(self, config: Any, bounds: Sequence[float]) -> tuple[float, ...]:
        """The thresholds as numbers: config fields read from ``config``, measured ones taken in
        order from ``bounds``."""
        pending = list(bounds)
        out = []
        for p in self.params:
            if isinstance(p, Measured):
                if not pending:
                    raise ValueError(f"the threshold '{p.text}' needs a measured bound")
                out.append(float(pending.pop(0)))
            elif isinstance(p, str):
                out.append(float(config_value(config, p)))
            else:
                out.append(float(p))
        if pending:
            raise ValueError(f"{len(pending)} measured bounds left over for target {self.text()}")
        return tuple(out)

    def judge(self, name: str, statement: str, config: Any, evidence: Evidence) -> Claim:
        """The verdict on ``evidence`` (the value and its extra checks)."""
        args = self.resolve(config, evidence.bounds)
        value, checks = evidence.value, evidence.checks
        if self.op == "within":
            target, tol = args
            text = f"{target:g} ± {tol:.0%}" if self.relative else f"{target:g} ± {tol:g}"

            def ok(v: float) -> bool:
                return bool((abs(v / target - 1) if self.relative else abs(v - target)) <= tol)

            ends = (
                (target * (1 - tol), target * (1 + tol))
                if self.relative
                else (target - tol, target + tol)
            )
            region = (min(ends), max(ends))

        elif self.op == "between":
            low, high = args
            text = f"in {'(' if self.open_low else '['}{low:.3g}, {high:.3g}]"

            def ok(v: float) -> bool:
                return bool((v > low if self.open_low else v >= low) and v <= high)

            region = (low, high)

        else:
            return Claim.compare(self.op, name, statement, value, args[0], checks)
        return Claim.inside(name, statement, value, text, ok, checks, region)


def _param_text(p: Param) -> str:
    if isinstance(p, Measured):
        return p.text
    if isinstance(p, str):
        return f"`{p}`"
    return f"{p:g}"


def at_least(x: Param) -> Target:
    """``value >= x`` (an interval: its low end)."""
    return Target(">=", (x,))


def at_most(x: Param) -> Target:
    """``value <= x`` (an interval: its high end)."""
    return Target("<=", (x,))


def above(x: Param) -> Target:
    """``value > x``."""
    return Target(">", (x,))


def below(x: Param) -> Target:
    """``value < x``."""
    return Target("<", (x,))


def equals(x: Param) -> Target:
    """``value == x`` exactly."""
    return Target("==", (x,))


def within(target: Param, tol: Param, relative: bool = False) -> Target:
    """``|value − target| <= tol`` (``relative``: ``|value/target − 1| <= tol``); an interval
    must lie inside with both ends."""
    return Target("within", (target, tol), relative=relative)


def between(low: Param, high: Param, open_low: bool = False) -> Target:
    """``low <= value <= high`` (``open_low``: ``low < value``)."""
    return Target("between", (low, high), open_low=open_low)


@dataclass(frozen=True)
class Evidence:
    """What an experiment measured for one claim: ``value`` (a number or an Interval),
    ``checks`` that must hold as well, ``bounds`` for the spec's :func:`measured` thresholds (in
    order) and ``detail`` (the measured numbers behind it, appended to the statement)."""

    value: Any
    checks: tuple[Check, ...] = ()
    bounds: tuple[float, ...] = ()
    detail: str = ""

    @classmethod
    def of(cls, value: Any) -> Evidence:
        return value if isinstance(value, Evidence) else cls(value)


def config_value(config: Any, path: str) -> Any:
    """``config``'s field at the dotted ``path`` (``"base.lr"``)."""
    value = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _key(item: Any) -> str:
    if isinstance(item, float):
        return f"{item:g}"
    return str(item)


@dataclass(frozen=True)
class ClaimSpec:
    """One declared claim (module docstring).

    ``over``: a config field (dotted path) whose entries each make one claim, or a function of
    the config returning the entries; ``key`` turns an entry into the text that fills ``{}`` in
    ``name`` and ``statement``. ``when``: the claim is made only where it returns True.
    ``controls``: the negative controls that must fail it; a mapping restricts a control to some
    entries (their keys). ``seeds``: the fewest seeds its interval needs (1 where nothing is
    random). ``weak``: why the claim is not yet strong although a control may fail it — a wrong
    model that passes it, or a statistic that compares the code with itself (issue 49 item 4;
    docs/claims.md, "Claim status"); empty for a claim held to be strong.
    """

    name: str
    statement: str
    statistic: str
    target: Target
    reason: str
    controls: tuple[str, ...] | Mapping[str, tuple[str, ...]] = ()
    over: str | Callable[[Any], Iterable[Any]] | None = None
    key: Callable[[Any], str] = _key
    when: Callable[[Any], bool] | None = None
    seeds: int = 2
    weak: str = ""

    def keys(self, config: Any) -> list[str | None]:
        """The entries this spec makes claims for at ``config`` ([None] for a single claim)."""
        if self.when is not None and not self.when(config):
            return []
        if self.over is None:
            return [None]
        items = self.over(config) if callable(self.over) else config_value(config, self.over)
        return [self.key(item) for item in items]

    def named(self, key: str | None) -> str:
        return self.name if key is None else self.name.replace("{}", key)

    def statement_for(self, key: str | None) -> str:
        return self.statement if key is None else self.statement.replace("{}", key)

    def names(self, config: Any) -> list[str]:
        return [self.named(k) for k in self.keys(config)]

    def failed_by(self, control: str, key: str | None) -> bool:
        """Whether ``control`` must fail this claim's entry ``key``."""
        if isinstance(self.controls, Mapping):
            keys = self.controls.get(control)
            return keys is not None and (not keys or key in keys)
        return control in self.controls

    def control_names(self) -> list[str]:
        return list(self.controls)


def claim(
    name: str,
    statement: str,
    *,
    statistic: str,
    target: Target,
    reason: str,
    controls: tuple[str, ...] | Mapping[str, tuple[str, ...]] = (),
    over: str | Callable[[Any], Iterable[Any]] | None = None,
    key: Callable[[Any], str] = _key,
    when: Callable[[Any], bool] | None = None,
    seeds: int = 2,
    weak: str = "",
) -> ClaimSpec:
    """Declare a claim (see :class:`ClaimSpec`)."""
    if ("{}" in name) != (over is not None):
        raise ValueError(f"claim {name!r}: '{{}}' in the name goes with over=…, and only with it")
    return ClaimSpec(
        name, statement, statistic, target, reason, controls, over, key, when, seeds, weak
    )


@dataclass
class Declared:
    """The claims of one experiment at one config, in declaration order: (spec, key, name)."""

    entries: list[tuple[ClaimSpec, str | None, str]] = field(default_factory=list)

    @classmethod
    def at(cls, specs: Sequence[ClaimSpec], config: Any) -> Declared:
        out = cls()
        for spec in specs:
            for key in spec.keys(config):
                out.entries.append((spec, key, spec.named(key)))
        return out

    @property
    def names(self) -> list[str]:
        return [name for _, _, name in self.entries]

    def failing_under(self, control: str) -> list[str]:
        """The declared claims that ``control`` must fail."""
        return [name for spec, key, name in self.entries if spec.failed_by(control, key)]

    def judge(self, config: Any, values: Mapping[str, Any]) -> list[Claim]:
        """The verdict of every declared claim on ``values`` (name → measured value); a declared
        claim without a value fails as dropped, a value without a declared claim is an error."""
        extra = sorted(set(values) - set(self.names))
        if extra:
            raise ValueError(f"claims {extra} are not declared")
        out = []
        for spec, key, name in self.entries:
            if name not in values:
                out.append(Claim.dropped(name))
                continue
            evidence = Evidence.of(values[name])
            statement = spec.statement_for(key)
            if evidence.detail:
                statement = f"{statement}: {evidence.detail}"
            out.append(spec.target.judge(name, statement, config, evidence))
        return out
