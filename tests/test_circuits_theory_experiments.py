"""Experiments circuits-ode (Fig. 4) and circuits-fixed-attention (Fig. 3) on reduced presets:
they run through the experiment runner, store their claims and summaries, and circuits-ode's
``--json`` carries the crossings table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attndyn import run
from attndyn.api import results
from attndyn.claims.runner import experiment_config
from attndyn.errors import InputError


@pytest.mark.e2e
def test_circuits_ode_json_crossings(tmp_path):
    out = tmp_path / "r"
    proc = subprocess.run(
        [sys.executable, "-m", "attndyn", "run", "circuits-ode", "--strict", "--json",
         "--out", str(out), "--set", "fig_thresholds=6", "--set", "base.records=20", "--yes"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    claims = {c["name"]: c for c in outcome["claims"]}
    assert {
        "published-r0.01",
        "published-r0.1",
        "alpha-increases-with-r",
        "ov-decreases-with-r",
    } == set(claims)
    assert all(c["passed"] for c in claims.values())
    rows = outcome["summary"]["crossings"]
    assert len(rows) == 5 * 5
    assert {"ratio", "loss", "mu_ov", "mu_qk", "alpha", "time"} <= set(rows[0])
    assert {(r["ratio"], r["loss"]) for r in rows} == {
        (r, th) for r in (0.01, 0.1, 1.0, 10.0, 100.0) for th in (1.0, 0.1, 0.01, 1e-3, 1e-4)
    }
    # five theory runs stored, one per r
    assert len(results(out).runs()) == 5


@pytest.mark.parametrize(
    "values, field",
    [
        ({"ratios": [0.1, 1.0, 10.0]}, "ratios"),
        ({"base.n": 40.0}, "'base.n'"),
        ({"base.stop_loss": 1e-3}, "stop_loss"),
        ({"ratios": [1.0, 0.1, 0.01]}, "ratios"),
    ],
)
def test_circuits_ode_refuses_configs_without_its_claims(values, field):
    """The published rows are claimed only where they apply: elsewhere the config is refused
    (naming the field) unless compare_published=false, which declares the two trend claims."""
    with pytest.raises(InputError, match=field):
        experiment_config("circuits-ode", "tiny", values)
    if field != "ratios" or values["ratios"][0] < values["ratios"][-1]:
        exp, config = experiment_config(
            "circuits-ode", "tiny", {**values, "compare_published": False}
        )
        assert exp.claim_names(config) == ["alpha-increases-with-r", "ov-decreases-with-r"]


@pytest.mark.long  # 35 s on the loaded 2-core machine (two compilations, evaluation)
def test_circuits_fixed_attention_runs_and_stores_claims(tmp_path):
    outcome = run(
        "circuits-fixed-attention",
        out=tmp_path / "r",
        base={"alphas": [0.2, 1.0], "t_max": 200, "records": 11, "eval_size": 256, "lr": 0.1},
        seeds=2,
    )
    names = {c.name for c in outcome.claims}
    assert names == {
        "collapsed-loss-larger-at-small-alpha",
        "collapsed-sensitivity-larger-at-small-alpha",
        "final-loss-decreasing-in-alpha-collapsed",
        "final-loss-decreasing-in-alpha-factorised",
        "factorised-loss-below-tenth-of-collapsed",
        "collapsed-sensitivity-still-rising",
        "factorised-sensitivity-decayed",
    }
    assert all(c.value is not None and c.n_seeds == 2 for c in outcome.claims)
    assert set(outcome.summary) == {"collapsed", "factorised", "notebook_deviation"}
    assert outcome.summary["notebook_deviation"] is None  # not the notebooks' lr × steps
    assert [row["alpha"] for row in outcome.summary["collapsed"]] == [0.2, 1.0]
    assert outcome.figure.is_file()
    stored = results(tmp_path / "r").query("SELECT claim FROM claims")
    assert set(stored["claim"]) == names
    assert len(outcome.run_ids) == 2


def test_circuits_fixed_attention_refuses_unordered_alphas():
    with pytest.raises(InputError, match="alphas"):
        experiment_config("circuits-fixed-attention", "tiny", {"base.alphas": [0.6, 0.2]})
    with pytest.raises(InputError, match="seeds"):
        experiment_config("circuits-fixed-attention", "tiny", {"seeds": 1})
