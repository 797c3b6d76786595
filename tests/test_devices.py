"""Seeds sharded over devices (attndyn.core.devices): the same trajectories on 1 and 2 devices.

Two devices on CPU need ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` before JAX starts,
so each check runs in a fresh process with that flag. Tolerance: a seed runs the same operations
on either count, but XLA may vectorise a vmap of 4 seeds differently from one of 2 per device, so
values may differ in the last float32 bits (measured: this aim run bitwise equal; this markov
run ≤ 3e-6 absolute, ≤ 3e-7 relative on its largest values; a circuits run ≤ 5e-7 relative);
the tests allow rtol 1e-5 plus atol 1e-6.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import attndyn as attndyn_api
from attndyn import runs
from attndyn.core import devices
from attndyn.errors import InputError

TWO = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
TWO.pop("ATTNDYN_DEVICES", None)
AIM = dict(d=12, seeds=4, t_max=0.05, lr=0.005, records=4, batch=4, test_size=16)  # 224 steps
MARKOV = dict(m=16, t_max=20.0, lr=0.1, records=5, seeds=4)  # its own driver around train

SCRIPT = """
import json, sys
import jax, jax.numpy as jnp, numpy as np
from attndyn import runs
from attndyn.core import devices, flow, simulate as sim, trainer
from attndyn.models import get_family
from attndyn.models.markov import simulation as markov_simulation

family, values = sys.argv[1], json.loads(sys.argv[2])
out = {"available": devices.available()}
seen = {}
def spy(*args, **kwargs):  # the RunResult, to see where its arrays lie
    result = trainer.train(*args, **kwargs)
    seen["spread"] = devices.spread(result.final_params)
    return result
sim.train = markov_simulation.train = spy

def init(key):  # a seed-dependent start on L = ½ yᵀAy
    return {"y": jax.random.normal(key, (3,))}, {"A": jnp.diag(jnp.array([2.0, 1.0, 0.1]))}

for n in (1, 2):
    with devices.using(n):
        if family == "flow":
            res = flow.integrate_flow(init, lambda p, s: {"y": s["A"] @ p["y"]},
                                      lambda p, s: {"y": p["y"]}, np.array([0.0, 0.5, 3.0]),
                                      np.arange(4), rtol=1e-5)
            out[n] = {"values": {"y": res.observables["y"].tolist()}, "devices": res.devices,
                      "spread": devices.spread(res.final_params)}
        else:
            traj = get_family(family).simulate(runs.family_config(family, values))
            out[n] = {"values": {k: traj[k].values.tolist() for k in traj.data_vars},
                      "devices": traj.attrs["devices"], "spread": seen["spread"]}
with devices.using(2):  # 3 seeds do not split over 2 devices: one device, and a note
    out["odd"] = devices.count(3)

if family == "aim":  # sharded, the chunking still does not change the trajectory
    from attndyn.core.grids import record_grid
    from attndyn.core.progress import Chunker
    from attndyn.models.aim import build

    class Fixed(Chunker):
        def __init__(self, length):
            super().__init__()
            self.length = length
        def took(self, steps, seconds):
            pass

    config = runs.family_config(family, values)
    problem, steps = build(config), record_grid(config)
    with devices.using(2):
        a, b = (trainer.train(problem, steps, np.arange(4), Fixed(n)) for n in (10**9, 7))
    leaves = zip(jax.tree.leaves((a.observables, a.final_params)),
                 jax.tree.leaves((b.observables, b.final_params)))
    out["chunking_bitwise"] = all(np.array_equal(x, y) for x, y in leaves)
print(json.dumps(out))
"""


def attndyn(*args, env=TWO):
    return subprocess.run(
        [sys.executable, "-m", "attndyn", *args], capture_output=True, text=True, env=env
    )


def on_one_and_two(family: str, values: dict | None = None) -> dict:
    """``family`` (or a gradient flow: "flow") with 4 seeds on 1 and on 2 host devices, in a
    process that has two."""
    script = [sys.executable, "-c", textwrap.dedent(SCRIPT), family, json.dumps(values or {})]
    proc = subprocess.run(script, capture_output=True, text=True, env=TWO)
    assert proc.returncode == 0, proc.stderr
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "stderr": proc.stderr}


@pytest.mark.slow  # 5 to 15 CPU s a case
@pytest.mark.parametrize("family, values", [("aim", AIM), ("markov", MARKOV), ("flow", None)])
def test_trajectories_agree_on_one_and_two_devices(family, values):
    both = on_one_and_two(family, values)
    assert both["available"] == 2
    one, two = both["1"], both["2"]
    assert (one["devices"], two["devices"]) == (1, 2)
    assert one["spread"] == 1 and two["spread"] == 2  # the arrays really lay on two devices
    assert set(one["values"]) == set(two["values"])
    for name, a in one["values"].items():
        a, b = np.asarray(a, float), np.asarray(two["values"][name], float)
        assert np.isfinite(a).all(), name  # no seed diverged: every value is compared
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=name)
    if family == "aim":
        assert both["chunking_bitwise"] is True  # one call per segment vs chunks of 7 steps
    # 3 seeds asked onto 2 devices: the largest divisor, 1, and a note
    assert both["odd"] == 1
    assert "3 seeds sharded over 1 of the 2 devices asked for" in both["stderr"]


def test_the_largest_divisor():
    cases = {(6, 4): 3, (8, 2): 2, (7, 2): 1, (1, 8): 1, (0, 2): 1}
    assert {case: devices.largest_divisor(*case) for case in cases} == cases


def test_the_environment_variable_is_checked(monkeypatch):
    monkeypatch.setenv("ATTNDYN_DEVICES", "two")
    with pytest.raises(InputError, match="'ATTNDYN_DEVICES': must be an integer"):
        devices.requested()
    monkeypatch.setenv("ATTNDYN_DEVICES", str(devices.available() + 1))
    with pytest.raises(InputError, match="'ATTNDYN_DEVICES': must be 1"):
        devices.count(4)
    monkeypatch.setenv("ATTNDYN_DEVICES", "1")
    assert devices.count(4) == 1
    with devices.using(None):
        assert devices.requested() == 1  # None in the context: the environment decides


def test_more_devices_than_visible_is_exit_2_with_one_line(tmp_path):
    out = tmp_path / "r"
    proc = attndyn("simulate", "aim", "--devices", "3", "--out", str(out), "--yes")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--devices" in lines[0] and "1 … 2" in lines[0], lines
    assert "xla_force_host_platform_device_count" in lines[0]
    assert not out.exists()


@pytest.mark.slow  # 8 CPU s
def test_the_device_count_is_not_part_of_the_run_id(tmp_path):
    """A run computed on 2 devices has the id of the same config without --devices, and the
    same call without --devices (here, on one device) reads it back."""
    out = tmp_path / "r"
    sets = [a for k, v in AIM.items() if k != "seeds" for a in ("--set", f"{k}={v}")]
    proc = attndyn("simulate", "aim", *sets, "--seeds", "4", "--out", str(out), "--json", "--yes",
                   "--devices", "2")  # fmt: skip
    sharded = json.loads(proc.stdout)
    assert sharded["run_id"] == runs.run_id("aim", runs.family_config("aim", AIM))
    again = attndyn_api.simulate("aim", out=out, **AIM)
    assert again.attrs["run_id"] == sharded["run_id"]
    assert again.attrs["devices"] == 2  # read back: computed on 2 devices, not recomputed
