"""attndyn: a laboratory for the learning dynamics of attention.

Python API (the CLI is a thin layer over it)::

    import attndyn
    traj = attndyn.simulate("aim", param="tied", d=128, activation="h2")   # xarray Dataset
    res = attndyn.results("attndyn-results")                                # stored runs
    fig = attndyn.plot(traj, attndyn.predict("aim", param="tied", d=128, activation="h2"))
    print(attndyn.cite("aim-parameterization"))                             # BibTeX

The API's names are imported when first used (``import attndyn`` itself loads neither pandas,
DuckDB nor xarray, so that ``attndyn -h`` starts fast); the first of them also registers the
``traj.attndyn`` accessor on xarray Datasets (:mod:`attndyn.figures.accessor`), as does
``import attndyn`` when xarray is imported already.
"""

from __future__ import annotations

import sys
from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from attndyn.version import __version__

if TYPE_CHECKING:
    from attndyn.api import Results, cite, predict, results, run, simulate
    from attndyn.figures.plot import plot

_LAZY = {
    "Results": "attndyn.api",
    "cite": "attndyn.api",
    "predict": "attndyn.api",
    "results": "attndyn.api",
    "run": "attndyn.api",
    "simulate": "attndyn.api",
    "plot": "attndyn.figures.plot",
}

__all__ = ["Results", "__version__", "cite", "plot", "predict", "results", "run", "simulate"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        # a subpackage as an attribute (attndyn.models.family_names()), as when they were eager
        if not name.startswith("_") and find_spec(f"attndyn.{name}") is not None:
            return import_module(f"attndyn.{name}")
        raise AttributeError(f"module 'attndyn' has no attribute {name!r}")
    import_module("attndyn.figures.accessor")  # registers traj.attndyn
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if "xarray" in sys.modules:  # a Dataset may exist already: give it the accessor now
    import_module("attndyn.figures.accessor")
