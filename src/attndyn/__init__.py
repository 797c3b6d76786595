"""attndyn: a laboratory for the learning dynamics of attention.

Python API (the CLI is a thin layer over it)::

    import attndyn
    traj = attndyn.simulate("aim", param="tied", d=128, activation="h2")   # xarray Dataset
    res = attndyn.results("attndyn-results")                                # stored runs
"""

__version__ = "0.1.0"

from attndyn.api import Results, predict, results, run, simulate  # noqa: E402

__all__ = ["Results", "__version__", "predict", "results", "run", "simulate"]
