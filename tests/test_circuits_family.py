"""The circuits family through the trainer, the Python API and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attndyn
from attndyn.core.schedules import linear_ramp
from attndyn.core.trainer import Problem, train
from attndyn.core.updates import by_group, optimizer
from attndyn.errors import InputError
from attndyn.models import circuits


def test_trainer_updates_nested_groups_with_their_own_rates():
    """A group that is a dict of arrays gets its own η (times its schedule) on every leaf:
    loss = Σ leaves, so each step subtracts exactly η_g·s_g(k) from each leaf."""
    problem = Problem(
        init=lambda key: ({"a": {"x": jnp.zeros(2), "y": jnp.zeros(())}, "b": jnp.zeros(3)}, {}),
        sample=lambda key: 0.0,
        loss=lambda p, s, b: sum(jnp.sum(leaf) for leaf in jax.tree.leaves(p)),
        observe=lambda p, s: {"ax": p["a"]["x"][0], "ay": p["a"]["y"], "b": p["b"][0]},
        update=by_group(
            {"a": optimizer("sgd", 0.5, linear_ramp(1.0, 3.0, 4)), "b": optimizer("sgd", 0.1)}
        ),
    )
    result = train(problem, np.array([0, 4]), np.array([0]))
    ramp = sum(1.0 + 2.0 * k / 4 for k in range(4))  # s(0..3) = 1, 1.5, 2, 2.5
    assert result.observables["ax"][0, -1] == pytest.approx(-0.5 * ramp)
    assert result.observables["ay"][0, -1] == pytest.approx(-0.5 * ramp)
    assert result.observables["b"][0, -1] == pytest.approx(-0.4)


def test_simulate_learns_the_task_and_time_is_steps():
    traj = attndyn.simulate(
        "circuits", param="CACO", lr=0.1, t_max=1500, seeds=2, records=4, test_size=256
    )
    assert list(traj["step"].values) == list(traj["time"].values)
    assert traj["step"].values[-1] == 1500
    assert traj["loss"].values[:, 0] == pytest.approx(np.log(50), rel=0.05)  # ≈ uniform logits
    assert np.all(traj["loss"].values[:, -1] < 0.75 * np.log(50))
    assert np.all(traj["accuracy"].values[:, -1] == 1.0)
    hist = circuits.observables.histogram(traj)
    assert hist.shape == (5, 5) and hist.sum() == pytest.approx(100.0, rel=1e-5)


def test_seeds_differ_and_test_set_is_shared():
    traj = attndyn.simulate("circuits", param="CACO", t_max=5, seeds=2, records=2, test_size=64)
    # default init differs per seed, so the initial test loss differs; same test set for both
    a, b = traj["loss"].values[:, 0]
    assert a != b
    cfg = circuits.Config(test_size=64)
    t1, _ = circuits.test_set(cfg)
    t2, _ = circuits.test_set(circuits.Config(test_size=64, seed=99))
    np.testing.assert_array_equal(t1, t2)


@pytest.mark.slow  # 8 CPU s
def test_cli_simulate_and_bad_input(tmp_path):
    out = tmp_path / "r"
    args = [sys.executable, "-m", "attndyn", "simulate", "circuits", "--out", str(out)]
    ok = subprocess.run(
        [*args, "--set", "param=FACO", "--set", "t_max=20", "--set", "seeds=1",
         "--set", "records=2", "--set", "test_size=32", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "run_id" in ok.stdout or json.loads(ok.stdout)
    bad = subprocess.run(
        [*args, "--set", "param=FOFA"], capture_output=True, text=True, timeout=300
    )
    assert bad.returncode == 2
    assert "param" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_optimizer_field_defaults_to_sgd_and_adam_trains():
    """At η = 0.01 for 300 steps SGD barely moves the loss from ≈ log 50; Adam, whose steps are
    ≈ η per coordinate whatever the gradient's size, fits the task."""
    assert circuits.Config().optimizer == "sgd"
    common = dict(param="CACO", lr=0.01, t_max=300, seeds=2, records=2, test_size=256)
    sgd = attndyn.simulate("circuits", **common)
    adam = attndyn.simulate("circuits", **common, optimizer="adam")
    assert np.all(sgd["loss"].values[:, -1] > 0.9 * np.log(50))
    assert np.all(adam["loss"].values[:, -1] < 0.2 * np.log(50))
    assert np.all(adam["accuracy"].values[:, -1] == 1.0)
    with pytest.raises(InputError, match="'optimizer'.*'adam'"):
        attndyn.simulate("circuits", **common, optimizer="lbfgs")
