"""Where the circuits experiments read a run, per seed: at a loss level or at the authors'
stopping rule (epoch-mean training loss ≤ 1e-3, checked every 100 epochs, docs/circuits.md
"Training")."""

from __future__ import annotations

import numpy as np


def at_loss(traj, loss_level: float, name: str = "attn_distinct") -> np.ndarray:
    """Per seed: ``name`` at the first time the test loss reaches ``loss_level``, linear in log
    loss between records, as the reduced flow is read at loss thresholds (arXiv 2608.06776
    Fig. 4, docs/circuits-theory.md §1); NaN for a seed that never reaches it."""
    values = []
    for loss, obs in zip(traj["loss"].values, traj[name].values, strict=True):
        hit = np.flatnonzero(loss <= loss_level)
        if hit.size == 0 or hit[0] == 0:
            values.append(obs[0] if hit.size else np.nan)
            continue
        i = int(hit[0])
        x0, x1 = np.log(loss[i - 1]), np.log(loss[i])
        w = (x0 - np.log(loss_level)) / (x0 - x1) if x0 != x1 else 1.0
        values.append(obs[i - 1] + w * (obs[i] - obs[i - 1]))
    return np.asarray(values, dtype=float)


def stop_index(traj, stop_loss: float) -> np.ndarray:
    """Per seed: the first record after the start whose test loss is ≤ ``stop_loss`` (where the
    notebooks would have stopped), else the last record (``stop_loss`` 0: always the last)."""
    loss = traj["loss"].values  # (seed, time)
    hit = loss[:, 1:] <= stop_loss
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, loss.shape[1] - 1)


def at_index(traj, name: str, index: np.ndarray) -> np.ndarray:
    """Per seed s: ``name`` at record ``index[s]``."""
    values = traj[name].values
    return np.asarray([values[s, i] for s, i in enumerate(index)], dtype=float)
