"""Seeds sharded over devices (attndyn.core.devices): the same trajectories on 1 and 2 devices.

Two devices on CPU need ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` before JAX starts,
so each check runs in a fresh process with that flag. Tolerance: a seed runs the same operations
on either count, but XLA may vectorise a vmap of 4 seeds differently from one of 2 per device, so
values may differ in the last float32 bits (measured: aim bitwise equal, circuits ≤ 5e-7
relative); the tests allow rtol 1e-5.
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

TWO = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
TWO.pop("ATTNDYN_DEVICES", None)
AIM = dict(d=12, seeds=4, t_max=0.5, records=4, batch=4, test_size=16)
CIRCUITS = dict(param="CACO", lr=0.1, t_max=300, seeds=4, records=4, test_size=64)

SCRIPT = """
import json, sys
import jax, jax.numpy as jnp, numpy as np
from attndyn.core import devices, flow, simulate as sim
from attndyn.models import get_family
import attndyn as attndyn_api
from attndyn import runs

seen = {}
train = sim.train
def spy(*args, **kwargs):  # the RunResult, to see where its arrays lie
    result = train(*args, **kwargs)
    seen["spread"] = devices.spread(result.final_params)
    return result
sim.train = spy

out = {"available": devices.available()}
for family, values in json.loads(sys.argv[1]).items():
    config = runs.family_config(family, values)
    for n in (1, 2):
        with devices.using(n):
            traj = get_family(family).simulate(config)
        out[f"{family}/{n}"] = {
            "values": {k: traj[k].values.tolist() for k in traj.data_vars},
            "attrs_devices": traj.attrs["devices"],
            "spread": seen["spread"],
        }

def init(key):  # a seed-dependent start on L = ½ yᵀAy
    return {"y": jax.random.normal(key, (3,))}, {"A": jnp.diag(jnp.array([2.0, 1.0, 0.1]))}

for n in (1, 2):
    with devices.using(n):
        res = flow.integrate_flow(init, lambda p, s: {"y": s["A"] @ p["y"]},
                                  lambda p, s: {"y": p["y"]}, np.array([0.0, 0.5, 3.0]),
                                  np.arange(4), rtol=1e-5)
    out[f"flow/{n}"] = {"values": {"y": res.observables["y"].tolist()},
                        "spread": devices.spread(res.final_params), "devices": res.devices}
print(json.dumps(out))
"""


def attndyn(*args, env=TWO):
    return subprocess.run(
        [sys.executable, "-m", "attndyn", *args], capture_output=True, text=True, env=env
    )


@pytest.fixture(scope="module")
def both():
    """aim, circuits and a gradient flow, 4 seeds, on 1 and on 2 host devices (one process)."""
    arg = json.dumps({"aim": AIM, "circuits": CIRCUITS})
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), arg],
        capture_output=True,
        text=True,
        env=TWO,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("family", ["aim", "circuits", "flow"])
def test_trajectories_agree_on_one_and_two_devices(both, family):
    assert both["available"] == 2
    one, two = both[f"{family}/1"], both[f"{family}/2"]
    assert one["spread"] == 1 and two["spread"] == 2  # the arrays really lay on two devices
    assert set(one["values"]) == set(two["values"])
    for name, a in one["values"].items():
        a, b = np.asarray(a, float), np.asarray(two["values"][name], float)
        assert np.isfinite(a).any(), name
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=name)
    if family != "flow":
        assert (one["attrs_devices"], two["attrs_devices"]) == (1, 2)


def test_more_devices_than_visible_is_exit_2_with_one_line(tmp_path):
    out = tmp_path / "r"
    proc = attndyn("simulate", "aim", "--devices", "3", "--out", str(out), "--yes")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--devices" in lines[0] and "1 … 2" in lines[0], lines
    assert "xla_force_host_platform_device_count" in lines[0]
    assert not out.exists()


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
