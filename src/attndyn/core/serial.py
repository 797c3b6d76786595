"""Plain JSON data from numbers, arrays and nested containers (for ``--json`` output and stored
records)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def json_safe(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as Python numbers and lists, non-finite floats as
    None, dict keys as strings (a tuple key joined by ``@``) and dataclass instances (e.g. a
    confidence interval) as dicts of their fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {_key(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _key(key: Any) -> str:
    return "@".join(str(k) for k in key) if isinstance(key, tuple) else str(key)
