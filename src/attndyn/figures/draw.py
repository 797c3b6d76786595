"""Publication-style figures of Trajectories, drawn without pyplot.

Every figure is a :class:`matplotlib.figure.Figure` with its own Agg canvas (:func:`new_figure`):
nothing here touches pyplot's figure list or the caller's backend, so the library is safe inside
a notebook.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib import colormaps, rcParams
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

PER_SEED_NOTE = "thin lines: single seeds; thick: mean over finite seeds"
THEORY_NOTE = "dashed: theory"


def new_figure(nrows: int = 1, ncols: int = 1, **kw):
    """``(Figure, axes)`` like ``pyplot.subplots(nrows, ncols, **kw)`` (``figsize``, ``dpi``,
    ``squeeze``, ``sharex``, ``gridspec_kw``, …), but on a private Agg canvas: pyplot's state and
    the matplotlib backend are left as they were. ``nrows = 0`` gives the Figure and ``None``
    (add axes yourself)."""
    fig_kw = {k: kw.pop(k) for k in ("figsize", "dpi", "layout") if k in kw}
    fig = Figure(**fig_kw)
    FigureCanvasAgg(fig)
    if nrows == 0:
        return fig, None
    return fig, fig.subplots(nrows, ncols, **kw)


def colour_cycle() -> list[str]:
    """The colours of the current ``axes.prop_cycle``."""
    return rcParams["axes.prop_cycle"].by_key()["color"]


def get_cmap(name: str):
    """A registered colormap by name (``pyplot.get_cmap`` without pyplot)."""
    return colormaps[name]


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
    theory: Mapping[str, xr.Dataset] | None = None,
    legend_loc: str = "best",
) -> Path:
    """One observable against a time coordinate: thin lines per seed, a thick mean over the
    seeds that are finite at each time (diverged seeds are NaN from their divergence on; the
    legend says how many were dropped); each ``theory[label]`` (no seed axis) as a wide, pale
    dashed black line under ``trajectories[label]``'s mean, so that a mean lying on its theory
    (e.g. the demo's trapped direct S at p₁₂ ≈ 0) stays visible, the theory showing on both sides.

    ``x`` is any coordinate along ``time`` (``time``, ``samples``, ``time_fast``, ...).
    The file is written to a temporary name and renamed.
    """
    fig, ax = new_figure(figsize=(6.0, 4.0), dpi=120)
    colours = colour_cycle()
    theory = dict(theory or {})
    for i, (label, traj) in enumerate(trajectories.items()):
        colour = colours[i % len(colours)]
        xs = np.asarray(traj[x].values, dtype=float)
        values = traj[name]
        if "seed" in values.dims:
            for s in range(values.sizes["seed"]):
                ax.plot(xs, values.isel(seed=s), color=colour, alpha=0.3, lw=0.8)
            mean = values.mean("seed", skipna=True)
            ax.plot(xs, mean, color=colour, lw=2.0, zorder=4,
                    label=f"{label}{dropped_note(traj)}")  # fmt: skip
        else:
            ax.plot(xs, values, color=colour, lw=2.0, ls="--", label=label)
        if label in theory:
            th = theory[label]
            ax.plot(th[x].values, th[name].values, color="k", lw=3.2, ls="--", alpha=0.45,
                    zorder=3, label=f"{label}: theory")  # fmt: skip
    ax.set_xscale(xscale)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or name)
    if title:
        ax.set_title(title, fontsize=10)
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.legend(frameon=False, title=PER_SEED_NOTE, title_fontsize=8, loc=legend_loc)
    return save_figure(fig, path)


def dropped_note(traj) -> str:
    """`` (k of S seeds diverged, dropped)`` for a simulation with diverged seeds, else ``""``."""
    if "diverged" not in traj.coords:
        return ""
    k = int(traj["diverged"].values.sum())
    return f" ({k} of {traj.sizes['seed']} seeds diverged, dropped)" if k else ""


def save_figure(fig, path: str | os.PathLike) -> Path:
    """tight_layout, write to a temporary name, rename (never a half-written PNG)."""
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)
    return path
