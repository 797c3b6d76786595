"""query-recovery experiment: a reduced preset (≈ 60 s, mostly compilation: slow) runs through
the CLI, stores its claims and the JSON summary keys; presets validate; cases declare their
claims; the seed offset reaches every case; claims evaluate the measurements they state."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attndyn.claims.runner import experiment_config
from attndyn.errors import InputError

REDUCED = [
    "seeds=4",
    "nuisance.d=12",
    "weak.d=12",
    "track.d=12",
    "nuisance.n_nuisance=400",
    "nuisance.n_informative=20",
    "nuisance.t_max=60",
    "weak.t_max=60",
    "weak.n_nuisance=40",
    "track_seeds=20",
    "track_time=1.0",
    "track_etas=[0.1, 0.05]",
    "plateau_etas=[0.2, 0.1]",
    "plateau_time=4.0",
    "mc_samples=256",
    "grad_samples=128",
]


def _cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attndyn", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.long
def test_reduced_preset_runs_and_stores_claims(tmp_path):
    out = str(tmp_path)
    sets = [a for s in REDUCED for a in ("--set", s)]
    proc = _cli("run", "query-recovery", "--preset", "small", "--json", "--out", out, *sets)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    names = {c["name"] for c in outcome["claims"]}
    assert names == {
        "nuisance-recovery",
        "weak-recovery",
        "sign-split",
        "ode-tracking",
        "constant-plateau",
        "plateau-theory",
    }
    summary = outcome["summary"]
    for key in ("mean_final_alignment", "n_plus", "n_minus", "ode_gap_exponent"):
        assert key in summary
    assert summary["n_plus"] + summary["n_minus"] == 8  # both cases, 4 seeds each
    assert 0.0 <= summary["mean_final_alignment"] <= 1.0 + 1e-6
    # the claim values are the summary's numbers
    by_name = {c["name"]: c for c in outcome["claims"]}
    assert by_name["nuisance-recovery"]["value"] == pytest.approx(summary["mean_final_alignment"])
    assert by_name["nuisance-recovery"]["n_seeds"] == 4
    exponent = summary["ode_gap_exponent"]
    assert by_name["ode-tracking"]["value"] == pytest.approx(exponent["value"])
    assert by_name["ode-tracking"]["ci_low"] == pytest.approx(exponent["low"])
    rows = json.loads(
        _cli("query", "SELECT claim FROM claims", "--out", out, "--json").stdout or "[]"
    )
    assert {r["claim"] for r in rows} == names


def test_presets_validate_and_bad_input():
    exp, small = experiment_config("query-recovery", "small", {})
    assert small.seeds == 30 and small.nuisance.n_nuisance == 10_000
    assert small.weak.theta == 0.25
    # the recovery cases use the reduced sampler; tracking and plateau always the full one
    assert small.nuisance.sampler == small.weak.sampler == "reduced"
    assert small.track.sampler == "full"
    _, paper = experiment_config("query-recovery", "paper", {})
    assert paper.nuisance.sampler == paper.weak.sampler == "full" and paper.seeds == 30
    assert paper.nuisance.d == paper.weak.d == paper.track.d == 128
    with pytest.raises(InputError, match="sampler"):
        experiment_config("query-recovery", "small", {"nuisance.sampler": "fast"})
    with pytest.raises(InputError, match="track_etas"):
        experiment_config("query-recovery", "small", {"track_etas": [0.05, 0.1]})
    with pytest.raises(InputError, match="cases"):
        experiment_config("query-recovery", "small", {"cases": ["weak", "weak"]})
    # the gap exponent's percentile bootstrap is refused below MIN_BOOTSTRAP_SEEDS chains
    with pytest.raises(InputError, match="track_seeds"):
        experiment_config("query-recovery", "small", {"track_seeds": 8})


def test_plateau_wrong_models_change_the_scaling():
    """``plateau_batch_scaling`` gives the plateau runs a batch ∝ η (η/batch fixed); the weak
    case's recovery is failed by ``no-signal``."""
    from attndyn.experiments.query.recovery import _plateau

    _, small = experiment_config("query-recovery", "small", {})
    assert "batch" not in _plateau(small, 0.2)
    _, control = experiment_config("query-recovery", "small", {"plateau_batch_scaling": True})
    batches = {eta: _plateau(control, eta)["batch"] for eta in control.plateau_etas}
    assert batches == {0.2: 4, 0.05: 1}
    exp, _ = experiment_config("query-recovery", "small", {})
    assert exp.must_fail("no-signal", small) == ("nuisance-recovery", "weak-recovery")


def test_cases_declare_their_claims():
    """Each case declares its claims (none is dropped silently): the recovery cases their
    recovery claims and the pooled sign split, tracking the ODE claim, plateau two claims."""
    exp, small = experiment_config("query-recovery", "small", {})
    assert exp.claim_names(small) == [
        "nuisance-recovery",
        "weak-recovery",
        "sign-split",
        "ode-tracking",
        "constant-plateau",
        "plateau-theory",
    ]
    _, config = experiment_config("query-recovery", "small", {"cases": ["plateau"]})
    assert exp.claim_names(config) == ["constant-plateau", "plateau-theory"]
    _, config = experiment_config("query-recovery", "small", {"cases": ["weak"]})
    assert exp.claim_names(config) == ["weak-recovery", "sign-split"]


def test_seed_offset_reaches_every_case():
    """The weak case runs the ``seeds`` seeds after the nuisance case's; the constant-step runs
    start at the offset too, with ``track_seeds`` seeds."""
    from attndyn.claims.config import changed
    from attndyn.experiments.query.recovery import QueryRecovery, _plateau, _tracking

    runs = []

    class Recorder:  # a RunContext that records what it is asked to simulate
        def simulate(self, family, base, **changes):
            runs.append(changed(base, **changes))

    sets = {"seed": 7, "seeds": 5, "cases": ["nuisance", "weak"]}
    _, config = experiment_config("query-recovery", "small", sets)
    QueryRecovery().run(config, Recorder())
    assert [(r["seed"], r["seeds"]) for r in runs] == [(7, 5), (12, 5)]
    assert config.track.seed == 7
    for changes in (_tracking(config, 0.1), _plateau(config, 0.1)):
        assert "seed" not in changes and changes["seeds"] == config.track_seeds
