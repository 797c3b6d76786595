# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # aim: attention-indexed models
#
# The attention-indexed model (arXiv 2609.03858, `docs/aim.md`) at tiny settings:
# simulate a tied student S = WWᵀ, integrate the theory (the matrix flow) on the same time
# grid, overlay the two, run a small sweep over the dimension d, and query the results store.
# Every run goes to a temporary results folder, so nothing is written beside the notebook.

# %%
# %matplotlib inline
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import attndyn

out = Path(tempfile.mkdtemp(prefix="attndyn-nb-aim-"))
# h1 (linear readout) is stable at small d; the default h2 diverges at d < 64 (docs/aim.md)
common = dict(d=32, param="tied", activation="h1", lr=0.05, batch=8, t_max=1.0, records=20)

# %% [markdown]
# ## Simulate
#
# Four seeds run together (vmapped); the Trajectory is an `xarray.Dataset` with dims
# `(seed, time)`.

# %%
sim = attndyn.simulate("aim", out=out, seeds=4, progress=False, **common)
sim[["loss", "t_1", "p_12"]]

# %% [markdown]
# ## Predict
#
# The theory on the simulator's record grid, with the same observable names and no seed axis.

# %%
theory = attndyn.predict("aim", out=out, seeds=4, method="matrix-flow", progress=False, **common)
theory[["loss", "t_1", "p_12"]]

# %% [markdown]
# ## Overlay
#
# `attndyn.plot` draws the seed mean with its spread and the theory dashed, one panel per
# observable.

# %%
attndyn.plot(sim, theory, ["loss", "t_1", "q_11", "p_12"], ncols=4)

# %% [markdown]
# The same overlay by hand, from the xarray data:

# %%
fig, ax = plt.subplots(figsize=(5, 3.5))
mean = sim["loss"].mean("seed")
ax.plot(sim.time, sim["loss"].values.T, color="C0", alpha=0.25, lw=0.8)
ax.plot(sim.time, mean, color="C0", label="simulation, seed mean")
ax.plot(theory.time, theory["loss"], "k--", label="theory (matrix flow)")
ax.set(xlabel="t", ylabel="test loss", title=f"aim, tied, d = {common['d']}")
ax.legend()
plt.show()

# %% [markdown]
# ## A small sweep
#
# A sweep spec (TOML, `docs/sweeps.md`) crosses lists of config values; stored
# runs are skipped, the rest run on local worker processes.

# %%
from attndyn.sweep import plan_sweep, run_sweep

spec = out / "dims.toml"
spec.write_text(
    """
family = "aim"
[base]
param = "tied"
activation = "h1"
lr = 0.05
batch = 8
t_max = 1.0
records = 20
seeds = 2
[grid]
d = [16, 24, 32]
"""
)
plan = plan_sweep(spec, out)
print(len(plan.items), "runs,", len(plan.stored), "already stored")
summary = run_sweep(plan, out, workers=1, progress=False)
summary.as_json()

# %% [markdown]
# ## Query the results store
#
# Every run is a Parquet file; DuckDB views answer SQL (`docs/store.md`).
# `runs_aim` has one typed column per config field.

# %%
res = attndyn.results(out)
res.query("SELECT kind, sweep, d, seeds, status FROM runs_aim ORDER BY kind, d")

# %%
final = res.query(
    """
    SELECT r.d, avg(o.value) AS final_loss, count(DISTINCT o.seed) AS seeds
    FROM observables o JOIN runs_aim r USING (run_id)
    WHERE r.sweep = 'dims' AND o.name = 'loss'
      AND o.time = (SELECT max(time) FROM observables WHERE run_id = o.run_id)
    GROUP BY r.d ORDER BY r.d
    """
)
final

# %%
fig, ax = plt.subplots(figsize=(4, 3))
ax.plot(final["d"], final["final_loss"], "o-")
ax.set(xlabel="d", ylabel="seed-mean test loss at t_max", title="sweep over d")
plt.show()
