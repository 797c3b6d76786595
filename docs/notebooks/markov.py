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
# # markov: focus–dilution on Markov chains
#
# The one-layer transformer on Markov chains of arXiv 2605.01199 (`docs/markov.md`)
# at tiny settings: simulate gradient descent on the exact population loss, integrate the
# rank-one reduced flow (the theory), overlay them, sweep the learning rate, and query the store.
# Runs go to a temporary results folder.

# %%
# %matplotlib inline
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import attndyn

out = Path(tempfile.mkdtemp(prefix="attndyn-nb-markov-"))
common = dict(m=16, t_max=40.0, lr=0.1, records=20)

# %% [markdown]
# ## Simulate
#
# The time axis is the flow time lr·step, so runs at different learning rates share it.

# %%
sim = attndyn.simulate("markov", out=out, seeds=2, progress=False, **common)
sim[["loss_gap", "entropy_mean", "erank_W0", "align_pi"]]

# %% [markdown]
# ## Predict
#
# The rank-one reduced flow (Eq. 20) on the simulator's record grid: it predicts the stage
# sequence and plateau values, not a random run's exact stage times (the theory's docstring).

# %%
theory = attndyn.predict("markov", out=out, progress=False, **common)
theory[["loss_gap", "entropy_mean"]]

# %% [markdown]
# ## Overlay

# %%
attndyn.plot(sim, theory, ["loss_gap", "entropy_mean", "align_pi"], ncols=3)

# %% [markdown]
# ## A small sweep
#
# Three learning rates at the same flow time, through the Python API.

# %%
for lr in [0.05, 0.1, 0.2]:
    attndyn.simulate("markov", out=out, seeds=2, progress=False, **{**common, "lr": lr})

# %% [markdown]
# ## Query the results store

# %%
res = attndyn.results(out)
res.query("SELECT kind, lr, m, seeds, status FROM runs_markov ORDER BY kind, lr")

# %%
curves = res.query(
    """
    SELECT r.lr, o.time, avg(o.value) AS loss_gap
    FROM observables o JOIN runs_markov r USING (run_id)
    WHERE r.kind = 'simulation' AND o.name = 'loss_gap'
    GROUP BY ALL ORDER BY r.lr, o.time
    """
)
fig, ax = plt.subplots(figsize=(5, 3.5))
for lr, group in curves.groupby("lr"):
    ax.plot(group["time"], group["loss_gap"], label=f"lr = {lr}")
ax.set(xlabel="flow time lr·step", ylabel="seed-mean loss gap", title="sweep over lr")
ax.legend()
plt.show()
