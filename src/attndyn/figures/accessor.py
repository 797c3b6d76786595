"""``traj.attndyn``: a Trajectory's summary (text and notebook HTML) and its one-call plot.

Trajectories are plain ``xarray.Dataset``s; importing attndyn registers this accessor, so
``traj.attndyn`` in a notebook shows family, run id, config (one field a line), seeds and
diverged seeds, observables with their final seed mean, and the time coordinates with their
ranges; ``traj.attndyn.plot(theory)`` is :func:`attndyn.plot`. Nothing here imports matplotlib
or a family until a plot is asked for.
"""

from __future__ import annotations

import html
import json
from typing import Any

import numpy as np
import xarray as xr

SHOWN_OBSERVABLES = 40
"""Observables listed by the summary; the rest are counted."""


@xr.register_dataset_accessor("attndyn")
class TrajectoryAccessor:
    """Summary and plotting of one Trajectory (``traj.attndyn``)."""

    def __init__(self, obj: xr.Dataset):
        self._obj = obj

    @property
    def config(self) -> dict[str, Any]:
        """The run's config (``attrs["config"]``, JSON text) as a dict; empty if absent."""
        text = self._obj.attrs.get("config")
        if not text:
            return {}
        return json.loads(text) if isinstance(text, str) else dict(text)

    def summary(self) -> dict[str, Any]:
        """family, run_id, kind (simulation or theory), config, seeds, diverged seeds,
        observables ({name: final mean over finite seeds}) and time coordinates
        ({name: (first, last)})."""
        ds = self._obj
        has_seeds = "seed" in ds.dims
        seeds = [int(s) for s in ds["seed"].values] if "seed" in ds.coords else []
        diverged = []
        if "diverged" in ds.coords and has_seeds:
            diverged = [s for s, d in zip(seeds, ds["diverged"].values, strict=True) if d]
        along = [c for c in ds.coords if ds[c].dims == ("time",)]
        times = {}
        for c in along:
            v = ds[c].values
            times[c] = (v[0].item(), v[-1].item()) if v.size else (None, None)
        return {
            "family": ds.attrs.get("family"),
            "run_id": ds.attrs.get("run_id"),
            "kind": "simulation" if has_seeds else "theory",
            "config": self.config,
            "seeds": seeds,
            "diverged_seeds": diverged,
            "records": int(ds.sizes.get("time", 0)),
            "observables": {n: _final(ds[n]) for n in ds.data_vars},
            "time_coordinates": times,
        }

    def plot(self, theory: xr.Dataset | None = None, names=None, **kw):
        """:func:`attndyn.plot` of this Trajectory (same arguments); returns the Figure."""
        from attndyn.figures.plot import plot

        return plot(self._obj, theory, names, **kw)

    def _rows(self) -> list[tuple[str, str]]:
        s = self.summary()
        obs = list(s["observables"].items())
        shown = ", ".join(f"{n} = {_num(v)}" for n, v in obs[:SHOWN_OBSERVABLES])
        if len(obs) > SHOWN_OBSERVABLES:
            shown += f", … ({len(obs)} in all)"
        seeds = ", ".join(map(str, s["seeds"])) or "none (theory)"
        rows = [
            ("family", f"{s['family'] or '?'} ({s['kind']})"),
            ("run id", s["run_id"] or "not stored"),
            ("seeds", seeds),
            ("diverged seeds", ", ".join(map(str, s["diverged_seeds"])) or "none"),
            ("records", str(s["records"])),
        ]
        rows += [
            (f"{c} range", f"{_num(a)} … {_num(b)}") for c, (a, b) in s["time_coordinates"].items()
        ]
        rows.append(("final (mean over finite seeds)", shown))
        return rows

    def __repr__(self) -> str:
        rows = self._rows()
        width = max(len(k) for k, _ in rows)
        lines = ["attndyn Trajectory"] + [f"  {k:<{width}}  {v}" for k, v in rows]
        config = self.config
        if config:
            lines.append("  config")
            key_width = max(len(k) for k in config)
            lines += [f"    {k:<{key_width}} = {_value(v)}" for k, v in config.items()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        body = "".join(f"<tr><th style='text-align:left'>{e(k)}</th><td>{e(v)}</td></tr>"
                       for k, v in self._rows())  # fmt: skip
        config = "".join(f"<tr><td>{e(k)}</td><td>{e(_value(v))}</td></tr>"
                         for k, v in self.config.items())  # fmt: skip
        return (
            "<div><strong>attndyn Trajectory</strong>"
            f"<table>{body}</table>"
            f"<details><summary>config</summary><table>{config}</table></details></div>"
        )


def _final(values: xr.DataArray) -> float:
    last = (
        np.asarray(values.isel(time=-1).values, dtype=float)
        if values.sizes.get("time")
        else np.empty(0)
    )
    finite = np.asarray(last)[np.isfinite(last)]
    return float(finite.mean()) if finite.size else float("nan")


def _num(v) -> str:
    if isinstance(v, float | np.floating):
        return f"{v:.4g}"
    return str(v)


def _value(v) -> str:
    return json.dumps(v) if isinstance(v, list | dict) else str(v)
