"""Divergence marked from every observable (issue 14, items 6 and 9): a non-finite value, a value
beyond the family's overflow bound, or the trainer's freeze marks a seed; its values from that
record on are NaN; runs, the CLI and sweeps report it."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from attndyn.cli.app import app
from attndyn.core.trajectory import DEFAULT_OVERFLOW, make_trajectory
from attndyn.store import Store

STEP = np.array([0, 10, 20, 30, 40])
README = Path(__file__).resolve().parents[1] / "README.md"


def _traj(a, b=None, diverged_step=None, **kw):
    obs = {"a": np.asarray(a, float), "b": np.zeros_like(np.asarray(a, float)) if b is None else b}
    n = obs["a"].shape[0]
    return make_trajectory(
        obs, time=STEP / 10, step=STEP, seeds=np.arange(n), diverged_step=diverged_step, **kw
    )


def test_non_finite_value_marks_the_seed_and_later_values_are_missing():
    a = np.array([[1.0, 2.0, np.inf, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    tr = _traj(a)
    assert tr["diverged_step"].values.tolist() == [20, -1]
    assert tr["diverged"].values.tolist() == [True, False]
    assert tr["a"].values[0, :2].tolist() == [1.0, 2.0]  # finite before
    assert np.isnan(tr["a"].values[0, 2:]).all() and np.isnan(tr["b"].values[0, 2:]).all()
    assert np.isfinite(tr["a"].values[1]).all()


def test_value_beyond_the_bound_marks_the_seed():
    a = np.array([[1.0, 5e10, 1.0, 1.0, 1.0]])
    assert _traj(a)["diverged_step"].values.tolist() == [10]  # default bound 1e10
    assert _traj(a, overflow=1e11)["diverged_step"].values.tolist() == [-1]
    assert _traj(-a)["diverged_step"].values.tolist() == [10]  # |value|


def test_trainer_freeze_marks_records_after_its_step_and_the_earlier_mark_wins():
    a = np.ones((2, 5))
    a[1, 4] = np.nan
    tr = _traj(a, diverged_step=np.array([15, 35]))
    assert tr["diverged_step"].values.tolist() == [15, 35]
    assert np.isfinite(tr["a"].values[0, :2]).all() and np.isnan(tr["a"].values[0, 2:]).all()
    assert np.isnan(tr["a"].values[1, 4]) and np.isfinite(tr["a"].values[1, :4]).all()
    a[1, 2] = np.inf  # an observable diverges before the trainer's step
    assert _traj(a, diverged_step=np.array([15, 35]))["diverged_step"].values[1] == 20


def test_theory_is_not_marked():
    tr = make_trajectory({"a": np.array([1.0, np.inf])}, time=np.array([0.0, 1.0]))
    assert np.isinf(tr["a"].values[1]) and "diverged" not in tr.coords


def test_family_bounds():
    from attndyn.models import get_family

    big = np.array([[1.0, 1e20, 1e20, 1e20, 1e20]])
    assert int(_traj(big)["diverged_step"][0]) == 10  # the default bound, 1e10
    langevin = get_family("langevin").OVERFLOW  # its test potentials start high
    assert langevin > DEFAULT_OVERFLOW
    assert int(_traj(big, overflow=langevin)["diverged_step"][0]) == -1


def test_store_round_trip_keeps_nan_and_marks(tmp_path):
    a = np.array([[1.0, 2.0, np.inf, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    tr = _traj(a, family="x", config={"k": 1})
    store = Store(tmp_path)
    store.write(tr, "r1")
    meta = store.metadata("r1")
    assert (meta["status"], meta["n_diverged"], meta["diverged_step"]) == (
        "diverged",
        1,
        {"0": 20, "1": -1},
    )
    back = store.read("r1")
    np.testing.assert_array_equal(back["a"].values, tr["a"].values)  # NaN == NaN here
    assert back["diverged_step"].values.tolist() == [20, -1]


def test_cli_simulate_all_seeds_diverged(tmp_path):
    out = tmp_path / "res"
    args = ["simulate", "aim", "--out", str(out), "--json", "--set", "lr=1e30"]
    for kv in ("d=4", "seeds=2", "t_max=0.01", "records=3", "test_size=4"):
        args += ["--set", kv]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["diverged_seeds"] == [0, 1]
    lines = [ln for ln in res.stderr.splitlines() if "diverged" in ln]
    assert len(lines) == 1 and "all 2 seeds" in lines[0]
    meta = Store(out).metadata(payload["run_id"])
    assert (meta["status"], meta["n_diverged"]) == ("diverged", 2)
    listed = CliRunner().invoke(app, ["runs", "--out", str(out), "--json"])
    (row,) = json.loads(listed.stdout)
    assert (row["status"], row["n_diverged"]) == ("diverged", 2)


def _readme_spec() -> dict:
    block = re.search(r"```toml\n(# dims\.toml.*?)```", README.read_text(), re.S).group(1)
    return tomllib.loads(block)


def _readme_sweep(tmp_path, spec: dict) -> dict:
    lines = [f'family = "{spec["family"]}"', "[base]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in spec["base"].items()]
    lines += ["[grid]"] + [f"{k} = {json.dumps(v)}" for k, v in spec["grid"].items()]
    path = tmp_path / "dims.toml"
    path.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(
        app, ["sweep", str(path), "--out", str(tmp_path / "res"), "--workers", "1", "--json"]
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.slow  # 6 CPU s
def test_readme_sweep_example_has_no_diverged_seed_scaled_down(tmp_path):
    """The README's spec at its smallest and largest d and two seed values."""
    spec = _readme_spec()
    d = spec["grid"]["d"]
    spec["grid"] = {"d": [min(d), max(d)], "seed": spec["grid"]["seed"][:2]}
    summary = _readme_sweep(tmp_path, spec)
    assert summary["ran"] == 4 and summary["failed"] == 0
    assert (summary["diverged_runs"], summary["diverged_seeds"]) == (0, 0)


@pytest.mark.long
def test_readme_sweep_example_has_no_diverged_seed(tmp_path):
    summary = _readme_sweep(tmp_path, _readme_spec())
    assert summary["failed"] == 0
    assert (summary["diverged_runs"], summary["diverged_seeds"]) == (0, 0)


def test_figure_note_counts_dropped_seeds(tmp_path):
    from attndyn.figures.draw import dropped_note, plot_observable

    tr = _traj(np.array([[1.0, np.nan, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0]]))
    assert dropped_note(tr) == " (1 of 2 seeds diverged, dropped)"
    assert dropped_note(_traj(np.ones((2, 5)))) == ""
    assert plot_observable({"run": tr}, "a", tmp_path / "a.png").stat().st_size > 0


@pytest.mark.parametrize("bad", [-1.0, 0, "1e10", True])
def test_contract_rejects_a_bad_overflow_bound(bad):
    from types import SimpleNamespace

    from attndyn.models import get_family
    from attndyn.models.base import check_family

    aim = get_family("aim")
    fake = SimpleNamespace(**{k: getattr(aim, k) for k in ("NAME", "Config", "SUMMARY")})
    fake.simulate, fake.OVERFLOW = aim.simulate, bad
    with pytest.raises(TypeError, match="OVERFLOW"):
        check_family(fake, "aim")
    fake.OVERFLOW = 1e12
    check_family(fake, "aim")


def test_the_documented_final_value_idiom_is_null_for_a_diverged_seed(tmp_path):
    """Issue 33 item 5: docs/store.md and the README read a seed's final value with
    arg_max_null(value, time), NULL for a diverged seed; arg_max would return its last finite
    value, from before the divergence."""
    out = tmp_path / "res"
    args = ["simulate", "aim", "--out", str(out), "--json", "--set", "lr=1e30"]
    for kv in ("d=4", "seeds=2", "t_max=0.01", "records=3", "test_size=4"):
        args += ["--set", kv]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert "arg_max_null(value, time)" in README.read_text()
    sql = ("SELECT seed, {f}(value, time) AS p FROM observables WHERE name = 'p_12' "
           "GROUP BY ALL ORDER BY seed")  # fmt: skip
    for f, null in (("arg_max_null", True), ("arg_max", False)):
        res = CliRunner().invoke(app, ["query", sql.format(f=f), "--out", str(out), "--json"])
        rows = json.loads(res.stdout)
        assert [r["p"] is None for r in rows] == [null, null], (f, rows)
