"""The experiment contract: Claim helpers state a threshold once (verdict at the boundary, target
text), and the runner calls run → measure → claims → figure, passing each step's output on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attndyn.core.serial import json_safe
from attndyn.experiments import runner
from attndyn.experiments.base import (
    Check,
    Claim,
    Experiment,
    ExperimentConfig,
)


@pytest.mark.parametrize(
    "helper, threshold, passes, fails, target",
    [
        (Claim.at_least, 0.99, [0.99, 1.0], [0.98], ">= 0.99"),
        (Claim.at_most, 0.1, [0.1, 0.0], [0.11], "<= 0.1"),
        (Claim.above, 1, [1.5], [1.0, 0.5], "> 1"),
        (Claim.below, 0.5, [0.49], [0.5, 0.7], "< 0.5"),
        (Claim.equals, 1.0, [1.0], [0.999], "== 1"),
    ],
)
def test_comparison_helpers_at_the_boundary(helper, threshold, passes, fails, target):
    for value in passes:
        claim = helper("c", "s", value, threshold)
        assert claim.passed is True and claim.target == target and claim.value == value
    for value in fails + [math.nan]:
        assert helper("c", "s", value, threshold).passed is False


def test_within_absolute_and_relative():
    # boundaries exactly representable in binary
    assert Claim.within("c", "s", 1.25, 1, 0.25).passed
    assert Claim.within("c", "s", 0.75, 1, 0.25).passed
    assert not Claim.within("c", "s", 1.26, 1, 0.25).passed
    assert Claim.within("c", "s", 1.25, 1, 0.25).target == "1 ± 0.25"
    rel = Claim.within("c", "s", 0.625, 0.5, 0.25, relative=True)
    assert rel.passed and rel.target == "0.5 ± 25%"
    assert not Claim.within("c", "s", 0.63, 0.5, 0.25, relative=True).passed
    assert not Claim.within("c", "s", math.nan, 0.5, 0.25).passed


def test_between_closed_and_open_low():
    assert Claim.between("c", "s", 0.5, 0.5, 2.0).passed
    assert Claim.between("c", "s", 2.0, 0.5, 2.0).target == "in [0.5, 2]"
    assert not Claim.between("c", "s", 2.01, 0.5, 2.0).passed
    open_low = Claim.between("c", "s", 0.3, 0.3, 2.0, open_low=True)
    assert not open_low.passed and open_low.target == "in (0.3, 2]"
    assert not Claim.between("c", "s", math.inf, 0.3, 2.0, open_low=True).passed


def test_extra_checks_join_the_target_and_the_verdict():
    z = Check.compare("min z", 4.9, ">=", 5)
    assert z == Check("min z >= 5", False)
    claim = Claim.at_most("c", "s", 0.3, 0.5, Check("decreasing", True), z)
    assert claim.target == "<= 0.5 and decreasing and min z >= 5"
    assert claim.passed is False
    ok = Claim.holds("c", "s", -1.0, Check.compare("|Γ|", 1.0, ">", 1e-6))
    assert ok.passed and ok.value == -1.0 and ok.target == "|Γ| > 1e-06"
    with pytest.raises(ValueError, match="no condition"):
        Claim.holds("c", "s", 1.0)


def test_as_dict_writes_non_finite_values_as_none():
    record = Claim.below("c", "s", math.inf, 1).as_dict()
    assert record == {
        "name": "c",
        "statement": "s",
        "value": None,
        "target": "< 1",
        "passed": False,
    }


def test_json_safe():
    value = {("a", 64): np.float32(0.5), 2: [np.int64(3), math.nan], "x": np.array([1.0, 2.0])}
    assert json_safe(value) == {"a@64": 0.5, "2": [3, None], "x": [1.0, 2.0]}


class _Config(ExperimentConfig):
    level: float = 0.5


class _Toy(Experiment):
    name = "toy"
    description = "a toy experiment that records the order of its steps"
    Config = _Config
    presets = {"small": {}, "paper": {"level": 0.9}}

    def __init__(self):
        self.calls = []

    def run(self, config, ctx):
        self.calls.append("run")
        return {"x": 0.7}

    def measure(self, config, results):
        self.calls.append("measure")
        return {"x": results["x"], "array": np.arange(2)}

    def claims(self, config, measurements):
        self.calls.append("claims")
        return [Claim.at_least("x-large", "x", measurements["x"], config.level)]

    def figure(self, config, results, measurements, path):
        self.calls.append("figure")
        assert measurements["x"] == results["x"]
        return path


@pytest.mark.parametrize("preset, passed", [("small", True), ("paper", False)])
def test_runner_runs_measures_claims_then_draws(tmp_path, monkeypatch, preset, passed):
    toy = _Toy()
    monkeypatch.setattr(runner, "get_experiment", lambda name: toy)
    outcome = runner.run_experiment("toy", preset, out=tmp_path)
    assert toy.calls == ["run", "measure", "claims", "figure"]
    assert outcome.passed is passed
    assert outcome.summary == {"x": 0.7, "array": [0, 1]}  # the measurements, JSON-safe
    assert outcome.as_json()["claims"][0]["target"] == (">= 0.5" if passed else ">= 0.9")


def test_zero_claims_is_a_failure(tmp_path, monkeypatch):
    toy = _Toy()
    monkeypatch.setattr(toy, "claims", lambda config, m: [])
    monkeypatch.setattr(runner, "get_experiment", lambda name: toy)
    assert runner.run_experiment("toy", "small", out=tmp_path).passed is False
