"""circuits-parameterization and circuits-lr-ratio on reduced presets: they run, store their
claims and figure, and the matched-loss reader interpolates as documented."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from attndyn.core.trajectory import make_trajectory
from attndyn.experiments.circuits.lr_ratio import mass_at_loss


def attndyn(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "attndyn", *args], capture_output=True, text=True, timeout=timeout
    )


def _run(name, sets, tmp_path):
    args = [x for kv in sets for x in ("--set", kv)]
    out = str(tmp_path / "r")
    proc = attndyn("run", name, *args, "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    rows = json.loads(
        attndyn("query", "SELECT claim, passed FROM claims", "--out", out, "--json").stdout
    )
    assert {r["claim"] for r in rows} == {c["name"] for c in outcome["claims"]}
    return outcome


def test_parameterization_reduced(tmp_path):
    outcome = _run(
        "circuits-parameterization",
        ["steps=300", "lr=0.3", "seeds=1", "records=3", "test_size=64"],
        tmp_path,
    )
    names = {c["name"] for c in outcome["claims"]}
    assert names == {
        "fafo-diffuse",
        "fafo-near-uniform",
        "faco-sharp",
        "comparable-loss",
        "full-accuracy",
    }
    hist = outcome["summary"]["runs"][0]["histogram_percent"]
    assert np.sum(hist) == pytest.approx(100.0, rel=1e-4)
    assert outcome["figure"].endswith(".png")


def test_lr_ratio_reduced(tmp_path):
    outcome = _run(
        "circuits-lr-ratio",
        [
            "caco_steps=200",
            "fafo_steps=200",
            "caco_ratios=[1, 2]",
            "fafo_ratios=[1, 5]",
            "seeds=1",
            "records=4",
            "test_size=64",
            "caco_loss_match=3.0",
            "fafo_loss_match=3.0",
        ],
        tmp_path,
    )
    assert len(outcome["run_ids"]) == 6
    assert {c["name"] for c in outcome["claims"]} >= {"caco-ratio-monotone", "fafo-ratio-effect"}


def test_mass_at_loss_interpolates_in_log_loss():
    loss = np.array([[1.0, 0.1, 0.01], [1.0, 0.5, 0.01]])
    mass = np.array([[0.3, 0.5, 0.9], [0.3, 0.4, 0.8]])
    traj = make_trajectory(
        {"loss": loss, "attn_distinct": mass}, time=np.arange(3.0), seeds=np.arange(2)
    )
    # seed 0 reaches 0.1 at record 1 exactly (0.5); seed 1 between 0.5 and 0.01: log-linear
    w = (np.log(0.5) - np.log(0.1)) / (np.log(0.5) - np.log(0.01))
    expect = (0.5 + 0.4 + w * 0.4) / 2
    assert mass_at_loss(traj, 0.1) == pytest.approx(expect)
    assert np.isnan(mass_at_loss(traj, 0.001))
