"""The experiment contract's declarations: nested family configs (claims/config.py), claims
declared once (claims/spec.py) and the runner that judges them (docs/claims.md)."""

from __future__ import annotations

import math

import pytest
from pydantic import Field

from attndyn.claims import (
    Base,
    Check,
    Control,
    Evidence,
    Experiment,
    ExperimentConfig,
    Interval,
    above,
    at_least,
    below,
    between,
    claim,
    measured,
    runner,
    within,
)
from attndyn.claims.config import merge_overrides, variant
from attndyn.claims.spec import Declared
from attndyn.core.config import SimulationConfig
from attndyn.errors import InputError


class _Model(SimulationConfig):
    d: int = Field(8, ge=1)
    lr: float = Field(1.0, gt=0)
    kind: str = "plain"

    @property
    def total_steps(self) -> int:
        return 10


class _Config(ExperimentConfig):
    base: _Model = Base(_Model, lr=0.5, kind="special")
    ds: list[int] = Field([4, 8])
    seeds: int = Field(3, ge=1)
    tol: float = 0.2
    level: float = 0.5


def test_a_nested_config_keeps_its_declared_defaults_under_overrides():
    c = _Config()
    assert (c.base.lr, c.base.kind, c.base.d) == (0.5, "special", 8)
    c = _Config(**merge_overrides({"base.lr": 0.25}, {"base": {"d": 16}}))
    assert (c.base.lr, c.base.kind, c.base.d) == (0.25, "special", 16)
    assert merge_overrides({"ds": [1]}, {"ds": [2, 3]}) == {"ds": [2, 3]}  # lists replace


def test_the_experiments_seeds_reach_the_nested_config():
    c = _Config(seed=7, seeds=5)
    assert (c.base.seed, c.base.seeds) == (7, 5)
    with pytest.raises(ValueError, match="base.seed: set the experiment's 'seed'"):
        _Config(base={"seed": 3})


def test_a_run_is_the_nested_config_with_what_the_experiment_varies():
    c = _Config(seeds=2)
    run = variant(c.base, d=4)
    assert (run.d, run.lr, run.kind, run.seeds) == (4, 0.5, "special", 2)
    with pytest.raises(InputError, match="'d'"):
        variant(c.base, d=0)


def test_an_unknown_nested_field_is_one_line_naming_it():
    with pytest.raises(InputError) as err:
        runner.validate_experiment(_Config, merge_overrides({"base.colour": 1}))
    msg = str(err.value)
    assert "'base.colour'" in msg and "allowed fields of 'base'" in msg and "\n" not in msg


SPECS = (
    claim("one", "x is large", statistic="x", target=at_least("level"), reason="r",
          controls=("small-x",)),
    claim("per-d{}", "d = {}: y small", statistic="y", target=below(measured("2τ")), reason="r",
          over="ds", controls={"small-x": ("8",)}),
    claim("only-wide", "z", statistic="z", target=between(0, 1), reason="r",
          when=lambda c: len(c.ds) > 2),
)  # fmt: skip


def test_declarations_expand_over_config_entries_and_conditions():
    d = Declared.at(SPECS, _Config())
    assert d.names == ["one", "per-d4", "per-d8"]
    assert Declared.at(SPECS, _Config(ds=[1, 2, 3])).names[-1] == "only-wide"
    assert d.failing_under("small-x") == ["one", "per-d8"]
    assert d.failing_under("other") == []


def test_the_declared_target_judges_the_measured_value():
    d = Declared.at(SPECS, _Config())
    claims = d.judge(
        _Config(),
        {
            "one": Interval(0.7, 0.55, 0.85, 3),
            "per-d4": Evidence(0.1, bounds=(0.3,), detail="τ = 0.15"),
            "per-d8": Evidence(0.1, checks=(Check("monotone", False),), bounds=(0.3,)),
        },
    )
    assert [c.passed for c in claims] == [True, True, False]
    assert claims[0].target == ">= 0.5 (95% CI)"
    assert claims[1].statement == "d = 4: y small: τ = 0.15" and claims[1].target == "< 0.3"
    assert claims[2].target == "< 0.3 and monotone"
    dropped = d.judge(_Config(), {"one": 1.0})
    assert [c.passed for c in dropped] == [True, False, False]
    assert "dropped" in dropped[1].statement
    with pytest.raises(ValueError, match="not declared"):
        d.judge(_Config(), {"nope": 1.0})
    with pytest.raises(ValueError, match="needs a measured bound"):
        d.judge(_Config(), {"per-d4": 0.1})


def test_target_texts_name_config_fields_and_measured_thresholds():
    assert at_least("level").text() == ">= `level`"
    assert within(1.0, measured("τ")).text() == "1 ± τ"
    assert within(0.5, 0.25, relative=True).text() == "0.5 ± 0.25 (relative)"
    assert between(0, 1, open_low=True).text() == "in (0, 1]"
    assert above(0).text() == "> 0"


def test_a_placeholder_goes_with_over():
    with pytest.raises(ValueError, match="over"):
        claim("per-d{}", "s", statistic="s", target=above(0), reason="r")


class _Toy(Experiment):
    name = "toy"
    description = "a toy experiment"
    Config = _Config
    presets = {"tiny": {}, "small": {"base.lr": 0.125}, "paper": {"level": 0.9}}
    controls = {"small-x": Control({"base.lr": 0.01}, "x proportional to lr, far too small")}
    claims = SPECS

    def __init__(self):
        self.calls = []

    def run(self, config, ctx):
        self.calls.append("run")
        return {"x": config.base.lr * 1.4}

    def measure(self, config, results):
        self.calls.append("measure")
        return {"x": results["x"]}

    def evaluate(self, config, m):
        self.calls.append("evaluate")
        return {
            "one": m["x"],
            **{f"per-d{d}": Evidence(0.1, bounds=(m["x"] / 2,)) for d in config.ds},
        }

    def figure(self, config, results, measurements, path):
        self.calls.append("figure")
        return path


def test_the_runner_judges_declared_claims_and_controls(tmp_path, monkeypatch):
    toy = _Toy()
    monkeypatch.setattr(runner, "get_experiment", lambda name: toy)
    outcome = runner.run_experiment("toy", "tiny", out=tmp_path)
    assert toy.calls == ["run", "measure", "evaluate", "figure"]
    assert outcome.verdict == "passed" and outcome.config["base"]["lr"] == 0.5
    small = runner.run_experiment("toy", "small", out=tmp_path)
    assert small.verdict == "failed" and not small.claims[0].passed  # 0.175 < level 0.5
    control = runner.run_experiment("toy", "tiny", out=tmp_path, control="small-x")
    assert control.expected_failures == ("one", "per-d8")  # declared: small-x fails d = 8 only
    assert [c.passed for c in control.claims] == [False, False, False]
    assert control.verdict == "control-failed-as-expected" and control.strict_ok
    assert math.isclose(control.config["base"]["lr"], 0.01)
    weak = runner.run_experiment("toy", "tiny", {"level": 0.001}, out=tmp_path, control="small-x")
    assert weak.verdict == "control-not-rejected" and not weak.strict_ok


def test_too_few_seeds_for_the_declared_claims_is_bad_input(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "get_experiment", lambda name: _Toy())
    with pytest.raises(InputError, match="'seeds'.*at least 2"):
        runner.run_experiment("toy", "tiny", {"seeds": 1}, out=tmp_path)


def _control_outcome(claims, preconditions=()):
    from pathlib import Path

    from attndyn.claims.runner import ExperimentOutcome

    return ExperimentOutcome(
        "toy", "tiny", {}, [], list(claims), {}, Path("f.png"), list(preconditions),
        control="wrong", expected_failures=("a", "b"),
    )  # fmt: skip


def test_a_control_is_rejected_only_by_values_on_the_wrong_side_on_a_valid_run():
    """Issue 49 item 3: a control fails a claim by value only when its value, with its whole
    interval, lies on the wrong side of the target; a NaN, a straddling interval or a dropped
    claim is inconclusive."""
    from attndyn.claims.spec import Evidence, between, within
    from attndyn.claims.stats import Interval
    from attndyn.claims.verdict import Check, Claim

    def claim(name, value, low=None, high=None, op="<="):
        v = value if low is None else Interval(value, low, high, 8)
        return Claim.compare(op, name, "", v, 1.0)

    by_value = [claim("a", 2.0, 1.5, 2.5), claim("b", 3.0), claim("c", 0.0)]
    assert _control_outcome(by_value).verdict == "control-failed-as-expected"
    straddles = [claim("a", 2.0, 0.5, 3.5), claim("b", 3.0)]  # fails, but not by value
    assert not straddles[0].passed and not straddles[0].refuted
    assert _control_outcome(straddles).verdict == "control-inconclusive"
    below = [claim("a", 0.5, 0.2, 0.8, op=">="), claim("b", 3.0)]
    assert below[0].refuted and _control_outcome(below).verdict == "control-failed-as-expected"
    nan_end = [claim("a", 2.0, float("nan"), float("nan")), claim("b", 3.0)]
    assert _control_outcome(nan_end).verdict == "control-inconclusive"
    dropped = [Claim.dropped("a"), claim("b", 3.0)]
    assert _control_outcome(dropped).verdict == "control-inconclusive"
    invalid = _control_outcome(by_value, [Check("no seed diverged", False)])
    assert invalid.verdict == "control-inconclusive" and not invalid.strict_ok
    survived = [claim("a", 0.5, 0.4, 0.6), claim("b", float("nan"))]
    assert _control_outcome(survived).verdict == "control-not-rejected"
    # a control that names no claim this config declares has rejected nothing
    unnamed = [claim("c", 2.0, 1.5, 2.5)]
    assert _control_outcome(unnamed).verdict == "control-inconclusive"
    # ranges: refuted only when the interval misses the range entirely
    for target, inside, outside in (
        (within(1.0, 0.1), Interval(1.15, 1.05, 1.25, 8), Interval(0.25, 0.2, 0.3, 8)),
        (within(2.0, 0.5, relative=True), Interval(3.2, 2.9, 3.5, 8), Interval(4.0, 3.5, 4.5, 8)),
        (between(0.0, 1.0), Interval(1.1, 0.9, 1.3, 8), Interval(-1.0, -1.5, -0.5, 8)),
    ):
        straddling = target.judge("a", "", None, Evidence(inside))
        missing = target.judge("a", "", None, Evidence(outside))
        assert not straddling.passed and not straddling.refuted, target
        assert not missing.passed and missing.refuted, target


def test_a_claims_margin_is_its_deciding_ends_clearance_in_standard_errors():
    """docs/claims.md, "Seeds": margin = (the deciding end's distance beyond the target) / SE,
    SE = that side's half-width / 1.96; negative when it misses; None without an interval."""
    from attndyn.claims.verdict import Z_95, Claim

    upper = Claim.compare("<", "a", "", Interval(0.05, 0.01, 0.09, 10), 0.25)
    assert upper.margin == pytest.approx((0.25 - 0.09) / (0.04 / Z_95))
    lower = Claim.compare(">=", "a", "", Interval(0.5, 0.4, 0.7, 10), 0.25)
    assert lower.margin == pytest.approx((0.4 - 0.25) / (0.1 / Z_95))  # the low side's width
    missing = Claim.compare(">", "a", "", Interval(0.2, 0.1, 0.3, 10), 0.25)
    assert not missing.passed and missing.margin == pytest.approx(-0.15 / (0.1 / Z_95))
    band = within(1.0, 0.25).judge("a", "", None, Evidence(Interval(1.1, 1.0, 1.2, 10)))
    assert band.margin == pytest.approx(min(0.25, 0.05) / (0.1 / Z_95))
    assert Claim.compare("<", "a", "", 0.1, 0.25).margin is None
    assert Claim.compare("==", "a", "", Interval(1.0, 0.9, 1.1, 10), 1.0).margin is None
    exact = Claim.compare(">=", "a", "", Interval(3.0, 3.0, 3.0, 4), 3.0)
    assert exact.passed and exact.margin == 0.0
    assert math.isinf(Claim.compare(">=", "a", "", Interval(4.0, 4.0, 4.0, 4), 3.0).margin)
    assert upper.as_dict()["margin"] == pytest.approx(upper.margin)
