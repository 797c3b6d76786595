"""The experiment contract: a declared target states its threshold once (verdict at the
boundary, target text), and the runner calls run → measure → evaluate → figure, passing each
step's output on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attndyn.claims import runner
from attndyn.claims.base import Check, Claim, Control, Experiment, ExperimentConfig
from attndyn.claims.spec import (
    Evidence,
    above,
    at_least,
    at_most,
    below,
    between,
    claim,
    equals,
    within,
)
from attndyn.claims.stats import MIN_BOOTSTRAP_SEEDS, Interval, bootstrap_ci, mean_ci, worst
from attndyn.core.serial import json_safe
from attndyn.errors import InputError


def judge(target, value, *checks: Check) -> Claim:
    """The verdict of ``target`` on ``value`` (and the extra ``checks``)."""
    return target.judge("c", "s", None, Evidence(value, checks))


@pytest.mark.parametrize(
    "target, passes, fails, text",
    [
        (at_least(0.99), [0.99, 1.0], [0.98], ">= 0.99"),
        (at_most(0.1), [0.1, 0.0], [0.11], "<= 0.1"),
        (above(1), [1.5], [1.0, 0.5], "> 1"),
        (below(0.5), [0.49], [0.5, 0.7], "< 0.5"),
        (equals(1.0), [1.0], [0.999], "== 1"),
    ],
)
def test_comparisons_at_the_boundary(target, passes, fails, text):
    for value in passes:
        c = judge(target, value)
        assert c.passed is True and c.target == text and c.value == value
    for value in fails + [math.nan]:
        assert judge(target, value).passed is False


def test_within_absolute_and_relative():
    # boundaries exactly representable in binary
    assert judge(within(1, 0.25), 1.25).passed
    assert judge(within(1, 0.25), 0.75).passed
    assert not judge(within(1, 0.25), 1.26).passed
    assert judge(within(1, 0.25), 1.25).target == "1 ± 0.25"
    rel = judge(within(0.5, 0.25, relative=True), 0.625)
    assert rel.passed and rel.target == "0.5 ± 25%"
    assert not judge(within(0.5, 0.25, relative=True), 0.63).passed
    assert not judge(within(0.5, 0.25), math.nan).passed


def test_between_closed_and_open_low():
    assert judge(between(0.5, 2.0), 0.5).passed
    assert judge(between(0.5, 2.0), 2.0).target == "in [0.5, 2]"
    assert not judge(between(0.5, 2.0), 2.01).passed
    open_low = judge(between(0.3, 2.0, open_low=True), 0.3)
    assert not open_low.passed and open_low.target == "in (0.3, 2]"
    assert not judge(between(0.3, 2.0, open_low=True), math.inf).passed


def test_extra_checks_join_the_target_and_the_verdict():
    z = Check.compare("min z", 4.9, ">=", 5)
    assert z == Check("min z >= 5", False, refuted=True)  # a finite value on the wrong side
    assert not Check.compare("min z", math.nan, ">=", 5).refuted
    c = judge(at_most(0.5), 0.3, Check("decreasing", True), z)
    assert c.target == "<= 0.5 and decreasing and min z >= 5"
    assert c.passed is False and c.refuted  # refuted through its check
    straddle = judge(at_most(0.5), 0.3, Check("decreasing", False))
    assert not straddle.passed and not straddle.refuted  # a bare boolean check refutes nothing
    ok = Claim.from_checks("c", "s", -1.0, [Check.compare("|Γ|", 1.0, ">", 1e-6)])
    assert ok.passed and ok.value == -1.0 and ok.target == "|Γ| > 1e-06"
    with pytest.raises(ValueError, match="no condition"):
        Claim.from_checks("c", "s", 1.0, [])


def test_as_dict_writes_non_finite_values_as_none():
    record = judge(below(1), math.inf).as_dict()
    assert record == {
        "name": "c",
        "statement": "s",
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "n_seeds": None,
        "target": "< 1",
        "passed": False,
        "refuted": False,  # an infinite value refutes nothing (not a finite value)
        "margin": None,
    }


def test_an_interval_passes_only_when_it_clears_the_target():
    ci = Interval(0.5, 0.3, 0.7, 8)
    assert judge(at_least(0.3), ci).passed
    assert not judge(at_least(0.31), ci).passed  # the mean clears, the CI does not
    assert judge(at_most(0.7), ci).passed and not judge(at_most(0.69), ci).passed
    assert judge(above(0.29), ci).passed and not judge(above(0.3), ci).passed
    assert judge(below(0.71), ci).passed and not judge(below(0.7), ci).passed
    assert judge(within(0.5, 0.2), ci).passed
    assert not judge(within(0.5, 0.19), ci).passed
    assert judge(within(0.5, 0.4, relative=True), ci).passed
    assert not judge(within(0.5, 0.39, relative=True), ci).passed
    assert judge(between(0.3, 0.7), ci).passed
    assert not judge(between(0.3, 0.7, open_low=True), ci).passed
    c = judge(at_least(0.3), ci)
    assert c.target == ">= 0.3 (95% CI)"
    assert c.as_dict() | {} == {
        "name": "c",
        "statement": "s",
        "value": 0.5,
        "ci_low": 0.3,
        "ci_high": 0.7,
        "n_seeds": 8,
        "target": ">= 0.3 (95% CI)",
        "passed": True,
        "refuted": False,
        "margin": pytest.approx(0.0, abs=1e-9),  # the low end on the threshold: no margin
    }
    nan = Interval(math.nan, math.nan, math.nan, 3)
    assert not judge(at_least(-1), nan).passed
    assert not judge(within(0, 1), nan).passed


def test_mean_ci_is_the_student_t_interval():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    ci = mean_ci(x)
    half = 3.182446305284263 * x.std(ddof=1) / 2  # t_{0.975, 3}
    assert ci.value == 2.5 and ci.n_seeds == 4
    assert ci.low == pytest.approx(2.5 - half) and ci.high == pytest.approx(2.5 + half)
    assert math.isnan(mean_ci([1.0, math.nan]).low)
    one = mean_ci([2.0])
    assert one.low == -math.inf and not judge(at_least(0), one).passed


def test_bootstrap_covers_the_mean_at_its_nominal_rate():
    # the percentile bootstrap of a mean of 20 normal draws covers 0 in about 95 % of samples
    # (≈ 93 % at n = 20: the bootstrap's known small-sample undercoverage); 200 repetitions
    rng = np.random.default_rng(1)
    covered = [
        (ci := bootstrap_ci(rng.normal(size=20), np.mean, n_boot=400, seed=k)).low <= 0 <= ci.high
        for k in range(200)
    ]
    assert 0.88 <= np.mean(covered) <= 0.99
    # groups are resampled independently; the statistic sees one array per group
    groups = [rng.normal(0, 1, 20), rng.normal(5, 1, 30)]
    diff = bootstrap_ci(groups, lambda a, b: b.mean() - a.mean(), seed=0)
    assert diff.n_seeds == 20 and diff.low < 5 < diff.high and diff.high - diff.low < 2


def test_json_safe():
    value = {("a", 64): np.float32(0.5), 2: [np.int64(3), math.nan], "x": np.array([1.0, 2.0])}
    assert json_safe(value) == {"a@64": 0.5, "2": [3, None], "x": [1.0, 2.0]}


class _Config(ExperimentConfig):
    level: float = 0.5
    x: float = 0.7
    seeds: int = 1


X_LARGE = claim(
    "x-large",
    "x",
    statistic="x",
    target=at_least("level"),
    reason="the toy's x clears its level",
    controls=("small-x",),
    seeds=1,
)
Y_SMALL = claim(
    "y-small", "y", statistic="y", target=below(1.0), reason="a claim left unevaluated", seeds=1
)


class _Toy(Experiment):
    name = "toy"
    description = "a toy experiment that records the order of its steps"
    Config = _Config
    presets = {"tiny": {}, "small": {}, "paper": {"level": 0.9}}
    controls = {"small-x": Control({"x": 0.1}, "x far below any level")}
    claims = (X_LARGE,)

    def __init__(self):
        self.calls = []

    def run(self, config, ctx):
        self.calls.append("run")
        return {"x": config.x}

    def measure(self, config, results):
        self.calls.append("measure")
        return {"x": results["x"], "array": np.arange(2)}

    def evaluate(self, config, measurements):
        self.calls.append("evaluate")
        return {"x-large": measurements["x"]}

    def figure(self, config, results, measurements, path):
        self.calls.append("figure")
        assert measurements["x"] == results["x"]
        return path


@pytest.mark.parametrize("preset, passed", [("small", True), ("paper", False)])
def test_runner_runs_measures_evaluates_then_draws(tmp_path, monkeypatch, preset, passed):
    toy = _Toy()
    monkeypatch.setattr(runner, "get_experiment", lambda name: toy)
    outcome = runner.run_experiment("toy", preset, out=tmp_path)
    assert toy.calls == ["run", "measure", "evaluate", "figure"]
    assert outcome.passed is passed
    assert outcome.summary == {"x": 0.7, "array": [0, 1]}  # the measurements, JSON-safe
    assert outcome.as_json()["claims"][0]["target"] == (">= 0.5" if passed else ">= 0.9")


def test_zero_claims_is_a_failure(tmp_path, monkeypatch):
    toy = _Toy()
    monkeypatch.setattr(_Toy, "claims", ())
    monkeypatch.setattr(toy, "evaluate", lambda config, m: {})
    monkeypatch.setattr(runner, "get_experiment", lambda name: toy)
    outcome = runner.run_experiment("toy", "small", out=tmp_path)
    assert outcome.passed is False and outcome.verdict == "failed"


def test_a_dropped_claim_fails_and_says_so(tmp_path, monkeypatch):
    toy = _Toy()
    monkeypatch.setattr(_Toy, "claims", (X_LARGE, Y_SMALL))
    monkeypatch.setattr(runner, "get_experiment", lambda name: toy)
    outcome = runner.run_experiment("toy", "small", out=tmp_path)
    assert [c.name for c in outcome.claims] == ["x-large", "y-small"]
    assert outcome.claims[1].passed is False and "dropped" in outcome.claims[1].statement
    assert outcome.verdict == "failed"
    monkeypatch.setattr(_Toy, "claims", ())
    with pytest.raises(ValueError, match="not declared"):
        runner.run_experiment("toy", "small", out=tmp_path)


def test_an_unmet_precondition_makes_the_outcome_invalid(tmp_path, monkeypatch):
    toy = _Toy()
    monkeypatch.setattr(toy, "preconditions", lambda c, m: [Check("loss matched", False)])
    monkeypatch.setattr(runner, "get_experiment", lambda name: toy)
    outcome = runner.run_experiment("toy", "small", out=tmp_path)
    assert outcome.claims[0].passed and not outcome.passed
    assert outcome.verdict == "invalid" and not outcome.strict_ok
    assert outcome.as_json()["preconditions"] == [{"text": "loss matched", "passed": False}]


def test_a_control_applies_its_overrides_and_expects_its_claims_to_fail(tmp_path, monkeypatch):
    toy = _Toy()
    monkeypatch.setattr(runner, "get_experiment", lambda name: toy)
    outcome = runner.run_experiment("toy", "small", out=tmp_path, control="small-x")
    assert outcome.config["x"] == 0.1 and not outcome.claims[0].passed
    assert outcome.verdict == "control-failed-as-expected" and outcome.strict_ok
    weak = runner.run_experiment("toy", "small", {"level": 0.05}, out=tmp_path, control="small-x")
    assert weak.verdict == "control-not-rejected" and not weak.strict_ok
    with pytest.raises(InputError, match="'control'.*small-x"):
        runner.run_experiment("toy", "small", out=tmp_path, control="nope")


def test_json_safe_writes_an_interval_as_its_fields():
    ci = Interval(0.5, 0.25, math.inf, 4)
    assert json_safe({"c": ci}) == {
        "c": {"value": 0.5, "low": 0.25, "high": None, "n_seeds": 4, "level": 0.95, "dropped": 0}
    }


def test_a_non_finite_seed_makes_the_bootstrap_interval_nan():
    bad = np.ones(MIN_BOOTSTRAP_SEEDS)
    bad[3] = math.inf
    ci = bootstrap_ci([np.ones(MIN_BOOTSTRAP_SEEDS), bad], lambda a, b: 0.0)
    assert math.isnan(ci.value) and math.isnan(ci.low) and ci.n_seeds == MIN_BOOTSTRAP_SEEDS
    assert not judge(at_most(1.0), ci).passed


def test_worst_picks_the_cell_nearest_to_failing():
    cells = {"a": Interval(1, 0.5, 1.5, 4), "b": Interval(1, 0.2, 1.2, 4)}
    assert worst(cells, "high") == "a" and worst(cells, "low") == "b"
    cells["c"] = Interval(math.nan, math.nan, math.nan, 4)
    assert worst(cells, "high") == "c" and worst(cells, "low") == "c"
