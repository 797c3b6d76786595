"""``attndyn run NAME --dry-run`` (issue 16, item 4): the runs an experiment would make, without
making them, and their estimated cost.

- the dry run lists exactly the run ids that the real run then stores, writes nothing, and
  counts stored runs as free on a second look;
- ``--json`` carries the plan; bad input exits 2 with one line; above ``--max-hours`` a run
  needs ``--yes``;
- an experiment whose ``run()`` needs a run's values stops with a partial list that says so;
- the calibrated estimate of two runs of one program (one calibration, the other scaled by its
  steps) is within a factor of 2 of the measured time of the same runs.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from helpers import cli

from attndyn import runs
from attndyn.claims import Experiment, ExperimentConfig
from attndyn.claims.dryrun import DryRunContext, plan_experiment, summary_lines
from attndyn.claims.runner import run_experiment
from attndyn.store import Store

SOLVABLE = {"d": [16, 32], "seeds": 2}  # aim-solvable's tiny preset made smaller
SOLVABLE_ARGS = ["--set", "d=[16, 32]", "--seeds", "2"]


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("name", "overrides"),
    [("aim-solvable", SOLVABLE), ("circuits-ode", {}), ("circuits-fixed-attention", {})],
)
def test_the_dry_run_lists_the_runs_the_real_run_stores(tmp_path, name, overrides):
    """aim-solvable: simulations; circuits-ode: theory runs; circuits-fixed-attention:
    experiment-computed runs (the fixed-attention model: listed, not estimated)."""
    out = tmp_path / "results"
    plan = plan_experiment(name, "tiny", overrides, out=out)
    assert plan.complete, plan.stopped
    assert not out.exists()  # a dry run writes nothing
    assert len(set(plan.run_ids)) == len(plan.run_ids) and plan.runs
    assert all(not r.stored for r in plan.runs)
    for r in plan.runs:  # simulations are estimated; theory and compute runs are not
        assert (r.seconds is not None) == (r.kind == "simulation"), r
    outcome = run_experiment(name, "tiny", overrides, out=out)
    assert plan.run_ids == outcome.run_ids
    assert set(plan.run_ids) == set(Store(out).run_ids())
    again = plan_experiment(name, "tiny", overrides, out=out)
    assert again.run_ids == plan.run_ids and all(r.stored for r in again.runs)
    assert again.seconds == 0 and again.steps == 0 and not again.unestimated


def test_dry_run_json_and_table(tmp_path, monkeypatch, capsys):
    out = tmp_path / "results"
    args = ["run", "aim-solvable", "--preset", "tiny", *SOLVABLE_ARGS, "--out", str(out)]
    args.append("--dry-run")
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--json")
    assert code == 0, stderr
    plan = json.loads(stdout)
    assert (plan["experiment"], plan["preset"], plan["control"]) == ("aim-solvable", "tiny", None)
    assert plan["complete"] and plan["stopped"] is None
    assert plan["run_ids"] == [r["run_id"] for r in plan["runs"]]
    assert plan["n_runs"] == plan["simulation_to_run"] == len(plan["runs"]) > 0
    assert plan["stored"] == plan["theory_to_run"] == plan["compute_to_run"] == 0
    sims = plan["runs"]
    assert plan["steps"] == sum(r["steps"] * r["seeds"] for r in sims)
    assert plan["memory_bytes"] == 8 * sum(r["values"] for r in sims) > 0
    assert plan["seconds"] == pytest.approx(sum(r["seconds"] for r in sims))
    assert {r["program"] for r in sims} == set(range(len(plan["programs"])))
    assert not out.exists()
    code, stdout, stderr = cli(monkeypatch, capsys, *args)
    assert code == 0, stderr
    assert all(r["run_id"] in stdout for r in sims)
    assert f"{len(sims)} runs: 0 stored (free), {len(sims)} simulations" in stdout


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--preset", "huge"], "'preset'"),
        (["--set", "d=[0]"], "d"),
        (["--set", "colour=1"], "colour"),
        (["--max-hours", "0"], "'max-hours'"),
        (["--control", "nope"], "'control'"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys, extra, field):
    out = tmp_path / "results"
    args = ["run", "aim-solvable", "--dry-run", "--out", str(out), *extra]
    code, stdout, stderr = cli(monkeypatch, capsys, *args)
    assert code == 2 and stdout == ""
    (line,) = stderr.strip().splitlines()
    assert field in line
    assert not out.exists()


def test_a_run_above_max_hours_needs_yes(tmp_path, monkeypatch, capsys):
    out = tmp_path / "results"
    args = ["run", "aim-solvable", "--preset", "tiny", *SOLVABLE_ARGS, "--out", str(out)]
    args.append("--json")
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--max-hours", "1e-9")
    assert code == 2 and stdout == ""
    (line,) = stderr.strip().splitlines()
    assert "is estimated at" in line and "above --max-hours 1e-09" in line and "--yes" in line
    assert "(tiny, 1 runs found so far)" in line  # the estimate stops once above the limit
    assert not (out / "runs").exists() or not list((out / "runs").iterdir())
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--max-hours", "1e-9", "--yes")
    assert code == 0, stderr
    assert set(json.loads(stdout)["run_ids"]) == set(Store(out).run_ids())


@pytest.mark.slow  # 6 CPU s
def test_estimates_of_one_program_match_the_measured_runs(tmp_path):
    """Two aim runs of one program (t_max 0.5 and 2: about 0.7 s and 2 s on two cores): one
    calibration (which compiles the program), the longer run's time scaled by its steps; each
    estimate within a factor of 4 of the same run's measured cost, costed as the calibration
    costs its calls: min(wall, process CPU seconds). Factor 4 is what docs/sweeps.md ("On a busy
    machine") promises beside other jobs, and the test suite is one (its own xdist workers, or
    a user's background job: a fresh clone's run beside a CPU-bound process measured 1.18 and
    7.38 s against estimates of 1.16 and 2.22 s)."""
    base = dict(d=96, batch=32, seeds=2, records=20, activation="h2", lr=0.05)
    configs = [runs.family_config("aim", {**base, "t_max": t}) for t in (0.5, 2.0)]
    ctx = DryRunContext(Store(tmp_path / "results"))
    placeholders = [ctx.simulate_config("aim", cfg) for cfg in configs]
    assert len(ctx.programs) == 1 and [r.program for r in ctx.runs] == [0, 0]
    estimates = [r.seconds for r in ctx.runs]
    store = Store(tmp_path / "results")
    measured = []
    for cfg, placeholder in zip(configs, placeholders, strict=True):
        start, cpu = time.perf_counter(), time.process_time()
        traj, _ = runs.simulation("aim", cfg, store)
        measured.append(min(time.perf_counter() - start, time.process_time() - cpu))
        # the placeholder: the run's observables, dims and coordinates, NaN values
        assert set(placeholder.data_vars) == set(traj.data_vars)
        assert dict(placeholder.sizes) == dict(traj.sizes)
        for name in traj.coords:
            np.testing.assert_allclose(placeholder[name].values, traj[name].values)
        assert all(np.isnan(placeholder[v].values).all() for v in placeholder.data_vars)
    ratios = [e / m for e, m in zip(estimates, measured, strict=True)]
    assert all(0.25 <= r <= 4 for r in ratios), (estimates, measured)


class _AdaptiveConfig(ExperimentConfig):
    seeds: int = 1


class _Adaptive(Experiment):
    """Chooses its second run from a value of its first: a dry run cannot go on."""

    name = "adaptive"
    description = "picks the second run's horizon from the first run's loss"
    Config = _AdaptiveConfig
    presets = {"tiny": {}, "small": {}, "paper": {}}

    def run(self, config, ctx):
        first = ctx.simulate("aim", **TINY_AIM)
        steps = int(first["loss"].values[0, -1] * 100)  # NaN in a dry run: ValueError
        return {"second": ctx.simulate("aim", **{**TINY_AIM, "t_max": 0.01 * (1 + steps)})}


TINY_AIM = dict(d=8, t_max=0.02, records=4, batch=4, seeds=1)


def test_a_run_that_needs_values_gives_a_partial_plan(tmp_path, monkeypatch):
    from attndyn.claims import runner

    monkeypatch.setattr(runner, "get_experiment", lambda name: _Adaptive())
    plan = plan_experiment("adaptive", "tiny", out=tmp_path / "results")
    assert not plan.complete and plan.stopped.startswith("ValueError")
    (run,) = plan.runs
    assert run.run_id == runs.run_id("aim", runs.family_config("aim", TINY_AIM))
    assert plan.as_json()["complete"] is False
    assert any(line.startswith("partial:") for line in summary_lines(plan))


@pytest.mark.slow  # ≈ 3 CPU s: two real calibrations of aim-solvable tiny
def test_upper_bounds_above_the_limit_are_measured_before_a_run_is_refused(tmp_path, monkeypatch):
    """A calibration stopped early by ``below`` is an upper bound (a short call's fixed overhead
    counted per step, most of it on a GPU: an H200 run was refused at 72.6 min for runs its dry
    run put at 32 s, BENCHMARKS.md). Before refusing, the plan measures such programs fully."""
    import dataclasses

    from attndyn.runs import estimate

    real = estimate.calibrate_with_probe

    def bounded(family, config, seeds=None, *, enough_s=estimate.ENOUGH_S, below=None):
        est, probe = real(family, config, seeds, enough_s=enough_s)
        if below is not None:  # what an early stop on a launch-bound device reports
            est = dataclasses.replace(est, overhead_s=est.overhead_s + 1e6, exact=False)
        return est, probe

    monkeypatch.setattr(estimate, "calibrate_with_probe", bounded)
    values = {"d": [16, 32], "seeds": 2}
    out = tmp_path / "results"
    plan = plan_experiment("aim-solvable", "tiny", values, out, below=3600.0, limit=3600.0)
    assert plan.complete and plan.seconds < 3600.0
    assert all(r.seconds is None or r.seconds < 1e5 for r in plan.runs)
