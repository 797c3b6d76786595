"""Publication-style figures of Trajectories (matplotlib, Agg backend, PNG)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402


def plot_observable(
    trajectories: Mapping[str, xr.Dataset],
    name: str,
    path: str | os.PathLike,
    *,
    x: str = "time",
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    xscale: str = "linear",
) -> Path:
    """One observable against a time coordinate: thin lines per seed, a thick mean over the
    seeds that are finite at each time (diverged seeds are NaN from their divergence on; the
    legend says how many were dropped).

    ``x`` is any coordinate along ``time`` (``time``, ``samples``, ``time_fast``, ...).
    The file is written to a temporary name and renamed.
    """
    fig, ax = plt.subplots(figsize=(6.0, 4.0), dpi=120)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, traj) in enumerate(trajectories.items()):
        colour = colours[i % len(colours)]
        xs = np.asarray(traj[x].values, dtype=float)
        values = traj[name]
        if "seed" in values.dims:
            for s in range(values.sizes["seed"]):
                ax.plot(xs, values.isel(seed=s), color=colour, alpha=0.3, lw=0.8)
            mean = values.mean("seed", skipna=True)
            ax.plot(xs, mean, color=colour, lw=2.0, label=f"{label}{dropped_note(traj)}")
        else:
            ax.plot(xs, values, color=colour, lw=2.0, ls="--", label=label)
    ax.set_xscale(xscale)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or name)
    if title:
        ax.set_title(title, fontsize=10)
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.legend(frameon=False)
    return save_figure(fig, path)


def dropped_note(traj) -> str:
    """`` (k of S seeds diverged, dropped)`` for a simulation with diverged seeds, else ``""``."""
    if "diverged" not in traj.coords:
        return ""
    k = int(traj["diverged"].values.sum())
    return f" ({k} of {traj.sizes['seed']} seeds diverged, dropped)" if k else ""


def save_figure(fig, path: str | os.PathLike) -> Path:
    """tight_layout, write to a temporary name, rename (never a half-written PNG), close."""
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    os.replace(tmp, path)
    return path
