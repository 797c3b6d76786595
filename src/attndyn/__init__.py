"""attndyn: a laboratory for the learning dynamics of attention.

Python API (the CLI is a thin layer over it)::

    import attndyn
    traj = attndyn.simulate("aim", param="tied", d=128, activation="h2")   # xarray Dataset
    res = attndyn.results("attndyn-results")                                # stored runs
    fig = attndyn.plot(traj, attndyn.predict("aim", param="tied", d=128, activation="h2"))
    print(attndyn.cite("aim-parameterization"))                             # BibTeX
"""

from attndyn.api import Results, cite, predict, results, run, simulate
from attndyn.figures import accessor as _accessor  # noqa: F401  (registers traj.attndyn)
from attndyn.figures.plot import plot
from attndyn.version import __version__

__all__ = ["Results", "__version__", "cite", "plot", "predict", "results", "run", "simulate"]
