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
# # langevin: stochastic training and its test potentials
#
# The Langevin family (our reconstruction of arXiv 2605.07959, `docs/langevin.md`)
# at tiny settings, on its quadratic test potential F = (λ/2)‖θ‖², where the SDE is an
# Ornstein–Uhlenbeck process with exact Gaussian moments: simulate Euler–Maruyama, predict the
# ensemble means (the theory covers the test potentials), overlay them, sweep the temperature,
# and query the store. Runs go to a temporary results folder.

# %%
# %matplotlib inline
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import attndyn

out = Path(tempfile.mkdtemp(prefix="attndyn-nb-langevin-"))
common = dict(model="quadratic", d=4, t_max=5.0, records=20, grid="linear")

# %% [markdown]
# ## Simulate
#
# 256 seeds run together; the time axis is the SDE time t = k·h.

# %%
sim = attndyn.simulate("langevin", out=out, seeds=256, progress=False, **common)
sim[["F", "sq_norm", "x"]]

# %% [markdown]
# ## Predict
#
# The exact moments of the continuous SDE on the simulator's record grid.

# %%
theory = attndyn.predict("langevin", out=out, progress=False, **common)
theory[["F", "sq_norm", "x"]]

# %% [markdown]
# ## Overlay

# %%
attndyn.plot(sim, theory, ["F", "sq_norm", "x"], ncols=3)

# %% [markdown]
# ## A small sweep
#
# Three temperatures s (the diffusion is √s; the Gibbs measure ∝ exp(−2F/s)), through the
# Python API, with the theory for each.

# %%
for s in [0.1, 0.5, 2.0]:
    attndyn.simulate("langevin", out=out, seeds=256, s=s, progress=False, **common)
    attndyn.predict("langevin", out=out, s=s, progress=False, **common)

# %% [markdown]
# ## Query the results store
#
# Simulations and theory share the view `runs_langevin`; `kind` tells them apart.

# %%
res = attndyn.results(out)
res.query("SELECT kind, s, seeds, status FROM runs_langevin ORDER BY s, kind")

# %%
final = res.query(
    """
    SELECT r.s, r.kind, avg(o.value) AS sq_norm
    FROM observables o JOIN runs_langevin r USING (run_id)
    WHERE o.name = 'sq_norm'
      AND o.time = (SELECT max(time) FROM observables WHERE run_id = o.run_id)
    GROUP BY ALL ORDER BY r.s, r.kind
    """
).pivot(index="s", columns="kind", values="sq_norm")
fig, ax = plt.subplots(figsize=(4, 3))
ax.plot(final.index, final["simulation"], "o", label="simulation, seed mean")
ax.plot(final.index, final["theory"], "k--", label="theory")
ax.set(xlabel="temperature s", ylabel="‖θ‖² at t_max", title="sweep over s")
ax.legend()
plt.show()
final
