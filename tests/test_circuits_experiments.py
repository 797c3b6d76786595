"""circuits-parameterization and circuits-lr-ratio: reduced runs through the CLI store their
claims and figure; the readings (matched loss, the notebooks' stopping rule) pick the documented
records; configs under which the claims mean nothing are refused. The tiny presets, their claims
and controls are checked in tests/experiment_runs.py."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from attndyn.claims.runner import experiment_config
from attndyn.core.trajectory import make_trajectory
from attndyn.errors import InputError
from attndyn.experiments.circuits.lr_ratio import _rates
from attndyn.experiments.circuits.readings import at_index, at_loss, stop_index


def attndyn(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "attndyn", *args], capture_output=True, text=True, timeout=timeout
    )


def _run(name, sets, tmp_path):
    args = [x for kv in sets for x in ("--set", kv)]
    out = str(tmp_path / "r")
    proc = attndyn("run", name, *args, "--out", out, "--json", "--yes")  # no time check
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    rows = json.loads(
        attndyn("query", "SELECT claim, passed FROM claims", "--out", out, "--json").stdout
    )
    assert {r["claim"] for r in rows} == {c["name"] for c in outcome["claims"]}
    return outcome


@pytest.mark.e2e
def test_parameterization_reduced(tmp_path):
    outcome = _run(
        "circuits-parameterization",
        [
            'params=["FAFO", "FACO", "CACO"]',
            "base.t_max=300",
            "base.lr=0.3",
            "seeds=2",
            "base.test_size=64",
        ],
        tmp_path,
    )
    assert [c["name"] for c in outcome["claims"]] == [
        "fafo-diffuse",
        "fafo-near-uniform",
        "faco-sharp",
        "faco-sharper-than-fafo",
    ]
    # lr·steps = 90: far from the matched loss, so the outcome is invalid, never "passed"
    assert outcome["verdict"] == "invalid"
    runs = outcome["summary"]["runs"]
    assert set(runs) == {"FAFO", "FACO", "CACO"}
    for row in runs.values():
        assert np.sum(row["histogram_percent"]) == pytest.approx(100.0, rel=1e-4)
        assert row["read_step"] == [300, 300] and row["stopped"] == [False, False]
    assert outcome["figure"].endswith(".png")


@pytest.mark.e2e
def test_lr_ratio_reduced(tmp_path):
    outcome = _run(
        "circuits-lr-ratio",
        [
            "caco.t_max=200",
            "fafo.t_max=200",
            "caco_ratios=[1, 2]",
            "fafo_ratios=[1, 5]",
            "seeds=2",
            "caco.records=4",
            "fafo.records=4",
            "caco.test_size=64",
            "fafo.test_size=64",
            "caco_loss_match=3.0",
            "fafo_loss_match=3.0",
        ],
        tmp_path,
    )
    assert len(outcome["run_ids"]) == 6
    # in declaration order: each claim for every model in turn
    assert [c["name"] for c in outcome["claims"]] == [
        f"{m}-{c}" for c in ("ratio-monotone", "schedule-sharpens") for m in ("caco", "fafo")
    ]


@pytest.mark.parametrize(
    "name, values, field",
    [
        ("circuits-parameterization", {"params": ["CAFO"]}, "params"),
        ("circuits-parameterization", {"params": ["FAFO", "FAFO", "FACO"]}, "params"),
        ("circuits-parameterization", {"params": ["FAFO", "FACO", "XY"]}, "params"),
        ("circuits-lr-ratio", {"models": []}, "models"),
        ("circuits-lr-ratio", {"caco_ratios": [5, 10]}, "caco_ratios"),
        ("circuits-lr-ratio", {"fafo_ratios": [1, 20, 15]}, "fafo_ratios"),
    ],
)
def test_configs_without_meaningful_claims_are_refused(name, values, field):
    with pytest.raises(InputError, match=f"invalid value for '{field}"):
        experiment_config(name, "tiny", values)


def _traj(loss, **obs):
    loss = np.asarray(loss, dtype=float)
    return make_trajectory(
        {"loss": loss, **{k: np.asarray(v, float) for k, v in obs.items()}},
        time=np.arange(loss.shape[1], dtype=float),
        seeds=np.arange(loss.shape[0]),
    )


def test_at_loss_interpolates_in_log_loss():
    traj = _traj(
        [[1.0, 0.1, 0.01], [1.0, 0.5, 0.01]], attn_distinct=[[0.3, 0.5, 0.9], [0.3, 0.4, 0.8]]
    )
    # seed 0 reaches 0.1 at record 1 exactly (0.5); seed 1 between 0.5 and 0.01: log-linear
    w = (np.log(0.5) - np.log(0.1)) / (np.log(0.5) - np.log(0.01))
    np.testing.assert_allclose(at_loss(traj, 0.1), [0.5, 0.4 + w * 0.4])
    assert np.isnan(at_loss(traj, 0.001)).all()


def test_stop_index_is_the_first_check_at_the_stop_loss_else_the_end():
    # the notebooks stop a seed at the first check with loss <= 1e-3 and run others to the end
    traj = _traj(
        [[3.0, 2e-3, 9e-4, 5e-4], [3.0, 2e-3, 1.5e-3, 1.1e-3], [1e-4, 1e-4, 1e-4, 1e-4]],
        frac_sharp=[[0.0, 0.1, 0.2, 0.3], [0.0, 0.4, 0.5, 0.6], [0.0, 0.7, 0.8, 0.9]],
    )
    idx = stop_index(traj, 1e-3)
    # the start never counts as a stop (record 0 precedes any training)
    np.testing.assert_array_equal(idx, [2, 3, 1])
    np.testing.assert_allclose(at_index(traj, "frac_sharp", idx), [0.2, 0.6, 0.7])
    np.testing.assert_array_equal(stop_index(traj, 0.0), [3, 3, 3])


def test_swapped_rates_exchange_the_two_circuits():
    from attndyn.experiments.circuits.lr_ratio import Config

    plain, swapped = Config(), Config(swap_rates=True)
    for r in (1.0, 5.0, 10.0):
        a, b = _rates(plain, 0.3, r), _rates(swapped, 0.3, r)
        # (η_QK, η_OV) = (ratio·lr, lr)
        assert (a["ratio"] * a["lr"], a["lr"]) == pytest.approx((b["lr"], b["ratio"] * b["lr"]))


class _Recorder:
    """A RunContext that records what it is asked to simulate (nothing runs)."""

    def __init__(self):
        self.runs = []

    def simulate(self, family, base, **changes):
        from attndyn.claims.config import changed

        self.runs.append(changed(base, **changes))
        return len(self.runs) - 1


def test_all_fafo_control_trains_fafo_in_the_run_read_as_faco():
    from attndyn.experiments.circuits.parameterization import CircuitsParameterization

    exp, plain = experiment_config("circuits-parameterization", "tiny", {})
    _, control = experiment_config("circuits-parameterization", "tiny", {"faco_as": "FAFO"})
    for config, faco in ((plain, "FACO"), (control, "FAFO")):
        rec = _Recorder()
        CircuitsParameterization().run(config, rec)
        assert [(r["param"], r["ratio"]) for r in rec.runs] == [("FAFO", 1.0), (faco, 1.0)]
    assert exp.must_fail("all-fafo", control) == ("faco-sharp", "faco-sharper-than-fafo")
