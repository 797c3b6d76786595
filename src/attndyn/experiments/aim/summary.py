"""JSON summaries of AIM experiment measurements that hold confidence intervals."""

from __future__ import annotations

import dataclasses
from typing import Any

from attndyn.core.serial import json_safe
from attndyn.experiments.stats import Interval


def plain(value: Any) -> Any:
    """``value`` JSON-safe, each :class:`Interval` as {value, low, high, n_seeds, level}."""
    if isinstance(value, Interval):
        return json_safe(dataclasses.asdict(value))
    if isinstance(value, dict):
        return json_safe({k: plain(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return json_safe(value)
