"""XLA's operation count of the loops a simulation runs, for cost estimates (docs/sweeps.md,
"Estimates and the time limit").

The trainer's step and the flow integrator's Runge–Kutta step each run as the body of a jitted
``while`` loop. XLA's cost analysis of the compiled loop counts its body once, so it is the cost
of one iteration for all the run's seeds: ``flops`` (floating-point operations; a fused
multiply–add counts 2) and ``bytes`` (bytes accessed by the operations, before caching).
Custom calls (LAPACK's SVD, QR, LU on CPU) count 0.

While :func:`recording` is active, :func:`report` (called by :func:`attndyn.core.trainer.train`
and :func:`attndyn.core.flow.integrate_flow` after their loops) appends
``{"flops", "bytes", "iterations"}`` for each loop run; nothing is computed otherwise. The compiled
program is the one the run used (jit's cache), so a report costs no compilation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_active: list[list[dict[str, float]]] = []


@contextlib.contextmanager
def recording() -> Iterator[list[dict[str, float]]]:
    """Collect the reports of the loops run inside the block (a list, filled in place)."""
    found: list[dict[str, float]] = []
    _active.append(found)
    try:
        yield found
    finally:
        _active.remove(found)


def loop_cost(jitted: Any, *args: Any) -> dict[str, float] | None:
    """XLA's cost analysis of ``jitted`` compiled at ``args``: flops and bytes accessed (None
    where the backend gives none)."""
    try:
        analysis = jitted.lower(*args).compile().cost_analysis()
    except Exception:  # noqa: BLE001 - an estimate's extra, never a reason to fail a run
        return None
    if isinstance(analysis, list | tuple):  # older JAX: one dict per computation
        analysis = analysis[0] if analysis else None
    if not analysis or "flops" not in analysis:
        return None
    return {
        "flops": float(analysis["flops"]),
        "bytes": float(analysis.get("bytes accessed", 0.0)),
    }


def report(iterations: int, jitted: Any, *args: Any) -> None:
    """While :func:`recording`: the per-iteration cost of the loop ``jitted(*args)`` and the
    number of ``iterations`` it ran."""
    if not _active:
        return
    cost = loop_cost(jitted, *args)
    if cost is None:
        return
    for found in _active:
        found.append({**cost, "iterations": float(iterations)})


def per_step(reports: list[dict[str, float]], steps: int) -> dict[str, float] | None:
    """Σ over the reports of cost × iterations, per ``steps`` (a run's optimiser steps): what
    one step of all its seeds costs, and ``iterations``, the loop iterations per step (1 for the
    trainer; the flow's Runge–Kutta steps per unit of its step count). None without reports."""
    if not reports or steps <= 0:
        return None
    keys = ("flops", "bytes")
    out = {k: sum(r[k] * r["iterations"] for r in reports) / steps for k in keys}
    out["iterations"] = sum(r["iterations"] for r in reports) / steps
    return out
