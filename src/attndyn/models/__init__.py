"""Model families. Each family lives in its own package and never imports another family.

A family module exposes ``NAME``, ``Config`` (a pydantic model deriving from
:class:`attndyn.core.config.RunConfig`) and ``build(config) -> Problem`` plus ``trajectory``
helpers; :data:`FAMILIES` maps names to modules, imported lazily.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from attndyn.errors import InputError

FAMILIES = {
    "aim": "attndyn.models.aim",
    "circuits": "attndyn.models.circuits",
    "query": "attndyn.models.query",
}
THEORIES = {
    "aim": "attndyn.models.aim.theory",
    "circuits": "attndyn.models.circuits.theory",
    "query": "attndyn.models.query.theory",
}


def get_family(name: str) -> ModuleType:
    """The family module registered under ``name`` (JAX is set up on first use, so importing
    attndyn, listing runs or querying never loads JAX)."""
    if name not in FAMILIES:
        allowed = ", ".join(sorted(FAMILIES))
        raise InputError(f"unknown family '{name}'; allowed: {allowed}")
    from attndyn.core.jaxsetup import enable_compilation_cache

    enable_compilation_cache()
    return importlib.import_module(FAMILIES[name])


def get_theory(name: str) -> ModuleType:
    """The theory module of family ``name`` (``TheoryConfig``-like ``Config`` and ``predict``)."""
    get_family(name)
    if name not in THEORIES:
        allowed = ", ".join(sorted(THEORIES))
        raise InputError(f"family '{name}' has no theory yet; families with theory: {allowed}")
    return importlib.import_module(THEORIES[name])
