"""``attndyn.plot``: a Trajectory's observables in one call, seed mean and spread, theory on top.

One panel per observable: the mean over the seeds that are finite at each record (diverged seeds
are NaN from their divergence on), a band for the spread over those seeds, optionally a thin line
per seed, and the theory (a ``predict`` Trajectory, no seed axis) dashed on the same time
coordinate. Axis labels come from the family's optional ``LABELS`` and ``TIME_LABEL``
(docs/plugins.md); the raw names when the family has none. The Figure has its own Agg canvas
(:func:`attndyn.figures.draw.new_figure`), so pyplot and the backend are left alone.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from attndyn.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BANDS = {"minmax": "min–max over finite seeds", "std": "mean ± 1 std over finite seeds"}
COORD_LABELS = {"samples": "samples n", "step": "optimiser steps k"}
DEFAULT_PANELS = 4
"""Panels drawn when ``names`` is not given and the family has no SUMMARY name in the run."""


def family_labels(family: str | None) -> tuple[dict[str, str], str | None, tuple[str, ...]]:
    """``(LABELS, TIME_LABEL, SUMMARY)`` of a registered family; empty for an unknown one."""
    if not family:
        return {}, None, ()
    from attndyn.models import get_family

    try:
        module = get_family(family)
    except InputError:
        return {}, None, ()
    return dict(module.LABELS), module.TIME_LABEL, tuple(module.SUMMARY)


def axis_label(name: str, labels: dict[str, str], time_label: str | None) -> str:
    """The label of an observable or a time coordinate: the family's, else a generic one."""
    if name == "time" and time_label:
        return time_label
    return labels.get(name) or COORD_LABELS.get(name, name)


def chosen_names(traj: xr.Dataset, names, summary: Sequence[str]) -> list[str]:
    """``names`` checked against ``traj`` (one InputError naming the first missing one), or the
    family's SUMMARY observables present in ``traj``, else its first few observables; only
    observables along ``(seed, time)`` or ``time`` can be drawn."""
    present = [str(n) for n in traj.data_vars if set(traj[n].dims) <= {"seed", "time"}]
    if names is None:
        picked = [n for n in summary if n in present]
        return picked or present[:DEFAULT_PANELS]
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise InputError("invalid value for 'names': give at least one observable")
    for name in names:
        if name not in present:
            raise InputError(
                f"unknown observable '{name}' for 'names': the trajectory has {_listing(present)}"
            )
    return names


def _listing(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")


def _check_coordinate(traj: xr.Dataset, x: str, what: str) -> None:
    if x not in traj.coords or traj[x].dims != ("time",):
        along = [str(c) for c in traj.coords if traj[c].dims == ("time",)]
        raise InputError(
            f"invalid value for 'x': the {what} has no time coordinate '{x}' "
            f"(it has {', '.join(along)})"
        )


def _check_theory(theory: xr.Dataset, names: list[str], x: str) -> None:
    if "seed" in theory.dims:
        raise InputError("invalid value for 'theory': it has a seed axis (give a predict() run)")
    _check_coordinate(theory, x, "theory")
    for name in names:
        if name not in theory.data_vars:
            raise InputError(f"invalid value for 'theory': it has no observable '{name}'")


def _seed_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """mean, std, min and max over axis 0 (seeds), finite seeds only (NaN where none)."""
    finite = np.where(np.isfinite(values), values, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all seeds diverged at a record
        return {
            "mean": np.nanmean(finite, axis=0),
            "std": np.nanstd(finite, axis=0),
            "min": np.nanmin(finite, axis=0),
            "max": np.nanmax(finite, axis=0),
        }


def plot(
    trajectory: xr.Dataset,
    theory: xr.Dataset | None = None,
    names: str | Sequence[str] | None = None,
    *,
    x: str = "time",
    ax: Any = None,
    band: str | None = "minmax",
    seeds: bool = True,
    ncols: int = 3,
    xscale: str = "linear",
    title: str | None = None,
) -> Figure:
    """Draw observables of a Trajectory, one panel each, with the theory overlaid.

    Args:
        trajectory: a Trajectory (:func:`attndyn.simulate`, ``Results.trajectory``); with a seed
            axis it shows the mean over the finite seeds and their spread, without one (theory)
            a single line.
        theory: a :func:`attndyn.predict` Trajectory of the same config (no seed axis), drawn
            dashed on the same ``x`` coordinate; it must have ``x`` and every drawn observable.
        names: observables to draw (a name or a list); default the family's ``SUMMARY``
            observables that the run has, else its first four.
        x: the time coordinate of the horizontal axis (``time``, ``samples``, ``time_fast``, …).
        ax: a matplotlib Axes (one name) or a sequence of Axes (one per name) to draw into;
            default a new Figure.
        band: ``"minmax"`` (min–max over the finite seeds), ``"std"`` (mean ± 1 standard
            deviation) or None; the legend says which.
        seeds: also draw each seed as a thin line.
        ncols: panels per row of a new Figure.
        xscale: ``"linear"`` or ``"log"``.
        title: the Figure's title; default family and run id.

    Returns:
        matplotlib.figure.Figure (the one holding ``ax`` when given). A new Figure is created
        without pyplot: show it in a notebook by evaluating it, save it with ``savefig``.

    Raises:
        InputError: an unknown observable, a coordinate that ``trajectory`` or ``theory`` lacks,
            a theory without an observable or with a seed axis, an unknown ``band``.
    """
    if band is not None and band not in BANDS:
        raise InputError(
            f"invalid value for 'band': must be one of minmax, std, None (got {band!r})"
        )
    family = trajectory.attrs.get("family")
    labels, time_label, summary = family_labels(family)
    names = chosen_names(trajectory, names, summary)
    _check_coordinate(trajectory, x, "trajectory")
    if theory is not None:
        _check_theory(theory, names, x)
    axes, fig = _axes(ax, len(names), ncols)
    for axis, name in zip(axes, names, strict=True):
        _panel(axis, trajectory, theory, name, x, band, seeds)
        axis.set_xscale(xscale)
        axis.set_xlabel(axis_label(x, labels, time_label))
        axis.set_ylabel(axis_label(name, labels, time_label))
    axes[0].legend(frameon=False, fontsize=8)
    if ax is None:
        run = trajectory.attrs.get("run_id")
        fig.suptitle(title or " · ".join(s for s in (family, run and f"run {run}") if s) or "")
        fig.tight_layout()
    return fig


def _axes(ax, n: int, ncols: int):
    if ax is not None:
        axes = list(ax) if isinstance(ax, Sequence | np.ndarray) else [ax]
        axes = list(np.ravel(axes))
        if len(axes) != n:
            raise InputError(f"invalid value for 'ax': {len(axes)} Axes for {n} observables")
        return axes, axes[0].figure
    from attndyn.figures.draw import new_figure

    cols = max(1, min(ncols, n))
    rows = math.ceil(n / cols)
    fig, grid = new_figure(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    flat = list(grid.ravel())
    for extra in flat[n:]:
        extra.remove()
    return flat[:n], fig


def _panel(ax, traj, theory, name, x, band, seeds) -> None:
    xs = np.asarray(traj[x].values, dtype=float)
    values = traj[name]
    if "seed" in values.dims:
        arr = values.transpose("seed", "time").values.astype(float)
        stats = _seed_stats(arr)
        dropped = int((~np.isfinite(arr)).any(axis=1).sum())
        note = f" ({dropped} of {arr.shape[0]} diverged)" if dropped else ""
        if seeds:
            for s in range(arr.shape[0]):
                ax.plot(xs, arr[s], color="C0", lw=0.6, alpha=0.35,
                        label="single seeds" if s == 0 else None)  # fmt: skip
        if band == "minmax":
            ax.fill_between(xs, stats["min"], stats["max"], color="C0", alpha=0.2,
                            lw=0, label=BANDS[band])  # fmt: skip
        elif band == "std":
            lo, hi = stats["mean"] - stats["std"], stats["mean"] + stats["std"]
            ax.fill_between(xs, lo, hi, color="C0", alpha=0.2, lw=0, label=BANDS[band])
        ax.plot(xs, stats["mean"], color="C0", lw=2.0,
                label=f"mean over {arr.shape[0]} seeds, finite only{note}")  # fmt: skip
    else:
        ax.plot(xs, values.values, color="C0", lw=2.0, label=name)
    if theory is not None:
        ax.plot(np.asarray(theory[x].values, dtype=float), theory[name].values, color="C3",
                lw=1.6, ls="--", label="theory")  # fmt: skip
