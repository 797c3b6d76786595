"""Plain JSON data from numbers, arrays and nested containers (for ``--json`` output and stored
records)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_safe(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as Python numbers and lists, non-finite floats as
    None, and dict keys as strings (a tuple key joined by ``@``)."""
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
