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
# # circuits: query–key and output–value circuits
#
# The QK/OV circuits toy of arXiv 2608.06776 (`docs/circuits.md`) at tiny
# settings: simulate the CACO parameterisation, integrate the reduced two-scalar gradient flow
# (its theory, `docs/circuits-theory.md`), draw them side by side, sweep
# the four parameterisations, and query the store. Runs go to a temporary results folder.

# %%
# %matplotlib inline
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import attndyn

out = Path(tempfile.mkdtemp(prefix="attndyn-nb-circuits-"))
common = dict(t_max=3000, records=15, seeds=2, test_size=32)

# %% [markdown]
# ## Simulate
#
# The time axis is the SGD step, recorded on a log grid: the loss sits on a plateau until
# attention sharpens, then drops.

# %%
sim = attndyn.simulate("circuits", out=out, param="CACO", progress=False, **common)
sim[["loss", "accuracy", "attn_distinct", "frac_sharp"]]

# %% [markdown]
# ## Predict
#
# The reduced flow is a stylised model with its own observables (`mu_ov`, `mu_qk`, `alpha`,
# `loss`) and its own gradient-flow time, not the toy simulator's order-parameter flow: the
# theory keeps its own axis (its `SAME_GRID` is False), so the figure below compares shapes
# (a plateau, then a drop as the attention mass on the informative tokens grows), not values at
# equal times. The flow runs until its loss reaches `stop_loss`.

# %%
theory = attndyn.predict("circuits", out=out, records=30, progress=False)
theory

# %% [markdown]
# ## Overlay

# %%
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.5))
ax0.plot(sim.time, sim["loss"].values.T, color="C0", alpha=0.3, lw=0.8)
ax0.plot(sim.time, sim["loss"].mean("seed"), color="C0", label="simulation (CACO), seed mean")
ax0.plot(sim.time, sim["accuracy"].mean("seed"), color="C3", label="accuracy, seed mean")
ax0.set(xscale="symlog", xlabel="SGD step", ylabel="loss / accuracy", title="simulator")
ax0.legend()
ax1.plot(theory.time, theory["loss"], "k--", label="reduced flow: loss")
ax1.plot(theory.time, theory["alpha"], "C3--", label="reduced flow: attention mass α")
ax1.set(xscale="symlog", xlabel="gradient-flow time t", title="theory (own time axis)")
ax1.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## A small sweep
#
# The four parameterisations (fixed or circuit-factorised attention and output, FAFO … CACO)
# through the Python API: one `attndyn.simulate` call each, all stored in the same folder.

# %%
for param in ["FAFO", "FACO", "CAFO", "CACO"]:
    attndyn.simulate("circuits", out=out, param=param, progress=False, **common)

# %% [markdown]
# ## Query the results store
#
# `runs_circuits` has one column per config field; the CACO run above was read back from the
# store, not run twice.

# %%
res = attndyn.results(out)
res.query("SELECT kind, param, seeds, status, round(wall_s, 2) AS wall_s FROM runs_circuits")

# %%
final = res.query(
    """
    SELECT r.param, o.name, avg(o.value) AS final
    FROM observables o JOIN runs_circuits r USING (run_id)
    WHERE r.kind = 'simulation' AND o.name IN ('loss', 'accuracy')
      AND o.time = (SELECT max(time) FROM observables WHERE run_id = o.run_id)
    GROUP BY ALL ORDER BY r.param, o.name
    """
).pivot(index="param", columns="name", values="final")
final

# %%
fig, ax = plt.subplots(figsize=(4, 3))
final["loss"].plot.bar(ax=ax)
ax.set(ylabel=f"seed-mean loss at step {common['t_max']}", title="sweep over param")
plt.show()
