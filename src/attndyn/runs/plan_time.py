"""How long a few runs will take, said before they start (``attndyn demo``).

A stored run is read back (:func:`attndyn.runs.load_or_compute`); the others are timed by a short
calibration (:func:`attndyn.runs.estimate.try_calibrate`, with ``ENOUGH_S`` seconds of steps beyond
the first call so that the calibration adds little to the wait it announces). A one-step run
goes first: it takes the process's one-time start-up costs (JAX's backend, first dispatches),
which the runs would pay anyway and which would otherwise make the calibration's first call
look slow and the calibration run on (measured on the demo: 6.3 s → 1.0 s for its first run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attndyn.core import progress
from attndyn.core.config import run_id
from attndyn.models import get_family
from attndyn.runs.estimate import duration, reduced, try_calibrate

ENOUGH_S = 0.1


def expected_time(
    planned: Sequence[tuple[str, Any]], store: Any, force: bool = False
) -> tuple[float | None, str]:
    """(estimated seconds or None, one line saying it) for the simulations ``planned`` (family,
    validated config) with the results folder ``store``."""
    stored = [not force and store.exists(run_id(family, cfg)) for family, cfg in planned]
    if all(stored):
        return 0.0, "a few seconds (stored runs are reused)"
    progress.run_started("estimating the time")  # the calibration's steps are not the run's
    with progress.listening(None):
        total = _calibrated(
            [p for p, is_stored in zip(planned, stored, strict=True) if not is_stored]
        )
    if total is None:  # the run itself will report the failure
        return None, "time unknown (the calibration failed)"
    reused = sum(stored)
    note = f"; {reused} stored run reused" if reused == 1 else ""
    count = len(planned) - reused
    return total, (
        f"about {duration(total)} ({count} run{'s' if count > 1 else ''} to compute, "
        f"estimated from a short calibration{note})"
    )


def _calibrated(planned: Sequence[tuple[str, Any]]) -> float | None:
    """Total estimated seconds of ``planned``, after a one-step warm-up run; None on failure."""
    family, cfg = planned[0]
    try:
        get_family(family).simulate(reduced(family, cfg, 1))
    except Exception:  # noqa: BLE001 - the calibration below reports it
        pass
    total = 0.0
    for family, cfg in planned:
        est, _ = try_calibrate(family, cfg, enough_s=ENOUGH_S)
        if est is None:
            return None
        total += est.seconds
    return total
