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
# # query: signal-subspace recovery by single-query attention
#
# Single-query softmax attention learned by projected stochastic gradient ascent (our
# reconstruction of arXiv 2606.22406, `docs/query.md`) at tiny settings: simulate,
# integrate the limiting ODE from the same starts (the theory), overlay them, sweep the number
# of nuisance tokens, and query the store. Runs go to a temporary results folder.

# %%
# %matplotlib inline
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import attndyn

out = Path(tempfile.mkdtemp(prefix="attndyn-nb-query-"))
common = dict(
    d=8, n_informative=4, n_nuisance=40, batch=16, t_max=100, records=15, seeds=8, eval_samples=16
)

# %% [markdown]
# ## Simulate
#
# The time axis counts SGA steps.

# %%
sim = attndyn.simulate("query", out=out, progress=False, **common)
sim

# %% [markdown]
# ## Predict
#
# Each seed's ODE starts where the simulator's seed starts; the observables are averaged over
# the seeds, as the simulator's seed means are.

# %%
theory = attndyn.predict("query", out=out, progress=False, **common)
theory

# %% [markdown]
# ## Overlay
#
# The ODE is the small-step limit of SGA. At these few, finite steps and small batches the
# simulation's mean alignment follows it with a lag, `perp_norm` settles at a floor set by the
# gradient noise where the ODE goes to 0, and `objective` is a Monte Carlo estimate over
# `eval_samples` samples, hence noisy.

# %%
attndyn.plot(sim, theory, ["alignment", "perp_norm", "objective"], ncols=3)

# %% [markdown]
# ## A small sweep
#
# More nuisance tokens dilute the signal; three values through the Python API.

# %%
for n_nuisance in [10, 40, 160]:
    attndyn.simulate("query", out=out, progress=False, **{**common, "n_nuisance": n_nuisance})

# %% [markdown]
# ## Query the results store

# %%
res = attndyn.results(out)
res.query("SELECT kind, n_nuisance, seeds, status FROM runs_query ORDER BY kind, n_nuisance")

# %%
final = res.query(
    """
    SELECT r.n_nuisance, avg(o.value) AS alignment
    FROM observables o JOIN runs_query r USING (run_id)
    WHERE r.kind = 'simulation' AND o.name = 'alignment'
      AND o.time = (SELECT max(time) FROM observables WHERE run_id = o.run_id)
    GROUP BY ALL ORDER BY r.n_nuisance
    """
)
fig, ax = plt.subplots(figsize=(4, 3))
ax.plot(final["n_nuisance"], final["alignment"], "o-")
ax.set(xscale="log", xlabel="nuisance tokens n_N", ylabel="seed-mean final alignment")
plt.show()
final
