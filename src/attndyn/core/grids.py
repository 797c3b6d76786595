"""Record grids: the step indices at which a run's observables are recorded."""

from __future__ import annotations

import numpy as np

from attndyn.errors import InputError


def record_steps(total_steps: int, records: int, kind: str = "log") -> np.ndarray:
    """Increasing unique step indices from 0 to ``total_steps`` inclusive.

    ``linear``: evenly spaced. ``log``: 0 followed by points log-spaced between step 1 and the
    end, for dynamics that span decades. Rounding to integers may merge points at the start, so
    fewer than ``records`` points can come back when ``total_steps`` is small.
    """
    if total_steps < 1:
        raise InputError(f"invalid value for 'steps': must be >= 1 (got {total_steps})")
    if records < 2:
        raise InputError(f"invalid value for 'records': must be >= 2 (got {records})")
    if kind == "linear":
        grid = np.linspace(0, total_steps, records)
    elif kind == "log":
        grid = np.concatenate([[0.0], np.geomspace(1, total_steps, records - 1)])
    else:
        raise InputError(f"invalid value for 'grid': must be 'log' or 'linear' (got {kind!r})")
    steps = np.unique(np.round(grid).astype(np.int64))
    steps[-1] = total_steps
    return steps


def record_grid(config) -> np.ndarray:
    """The record steps of a :class:`~attndyn.core.config.GridConfig`:
    ``record_steps(config.total_steps, config.records, config.grid)``."""
    return record_steps(config.total_steps, config.records, config.grid)
