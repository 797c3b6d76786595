"""Where the circuits experiments read a run: per seed, at a loss level or at a stopping rule.

- :func:`at_loss`: an observable at the first time a seed's test loss reaches a level,
  interpolated linearly in log loss between records (NaN for a seed that never reaches it), as
  the reduced flow is read at loss thresholds (arXiv 2608.06776 Fig. 4, docs/circuits-theory.md
  §1);
- :func:`stop_index`: the record at which the authors' notebooks would have stopped a seed: the
  first check at which the loss is at most ``stop_loss`` (their rule: epoch-mean training loss
  ≤ 1e-3, checked every 100 epochs, docs/circuits.md "Training"), else the last record.
"""

from __future__ import annotations

import numpy as np


def at_loss(traj, loss_level: float, name: str = "attn_distinct") -> np.ndarray:
    """Per seed: ``name`` at the first time the test loss reaches ``loss_level`` (linear in log
    loss between records); NaN for a seed that never reaches it."""
    values = []
    for s in range(traj.sizes["seed"]):
        loss = traj["loss"].isel(seed=s).values
        obs = traj[name].isel(seed=s).values
        hit = np.flatnonzero(loss <= loss_level)
        if hit.size == 0:
            values.append(np.nan)
            continue
        i = int(hit[0])
        if i == 0:
            values.append(obs[0])
            continue
        x0, x1 = np.log(loss[i - 1]), np.log(loss[i])
        w = (x0 - np.log(loss_level)) / (x0 - x1) if x0 != x1 else 1.0
        values.append(obs[i - 1] + w * (obs[i] - obs[i - 1]))
    return np.asarray(values, dtype=float)


def stop_index(traj, stop_loss: float) -> np.ndarray:
    """Per seed: the first record after the start whose test loss is ≤ ``stop_loss``, else the
    last record (``stop_loss`` 0: always the last)."""
    loss = traj["loss"].values  # (seed, time)
    out = np.full(loss.shape[0], loss.shape[1] - 1, dtype=int)
    for s in range(loss.shape[0]):
        hit = np.flatnonzero(loss[s, 1:] <= stop_loss)
        if hit.size:
            out[s] = int(hit[0]) + 1
    return out


def at_index(traj, name: str, index: np.ndarray) -> np.ndarray:
    """Per seed s: ``name`` at record ``index[s]``."""
    values = traj[name].values
    return np.asarray([values[s, i] for s, i in enumerate(index)], dtype=float)
