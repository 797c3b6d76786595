"""Plug-ins found through Python entry points.

attndyn's own families and experiments register exactly as a third-party package would, in its
``pyproject.toml``::

    [project.entry-points."attndyn.families"]
    aim = "attndyn.models.aim"

    [project.entry-points."attndyn.experiments"]
    aim-untied = "attndyn.experiments.aim.untied:AIMUntied"

An entry point is loaded only when it is asked for by name, so listing names imports nothing.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points

from attndyn.core.suggest import did_you_mean
from attndyn.errors import InputError

FAMILIES = "attndyn.families"
EXPERIMENTS = "attndyn.experiments"


@cache
def _group(group: str) -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        if ep.name in found and found[ep.name].value != ep.value:
            raise InputError(
                f"two plug-ins register '{ep.name}' in {group}: "
                f"{found[ep.name].value} and {ep.value}"
            )
        found[ep.name] = ep
    return found


def names(group: str) -> list[str]:
    """The sorted names registered in ``group``."""
    return sorted(_group(group))


def load(group: str, name: str, what: str):
    """The object registered as ``name`` in ``group``; ``what`` names the kind in the error
    (e.g. 'family'), which lists the allowed names."""
    registered = _group(group)
    if name not in registered:
        allowed = ", ".join(sorted(registered)) or "(none installed)"
        hint = did_you_mean(name, registered)
        raise InputError(f"unknown {what} '{name}'{hint}; allowed: {allowed}")
    return registered[name].load()


def refresh() -> None:
    """Forget the cached entry points (after installing a plug-in in a running process)."""
    _group.cache_clear()
