"""Model families. Each family lives in its own package and never imports another family.

A family module exposes ``NAME``, ``Config`` (a pydantic model deriving from
:class:`attndyn.core.config.RunConfig`) and ``build(config) -> Problem`` plus ``trajectory``
helpers; :data:`FAMILIES` maps names to modules, imported lazily.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from attndyn.errors import InputError

FAMILIES = {"aim": "attndyn.models.aim"}


def get_family(name: str) -> ModuleType:
    """The family module registered under ``name``."""
    if name not in FAMILIES:
        allowed = ", ".join(sorted(FAMILIES))
        raise InputError(f"unknown family '{name}'; allowed: {allowed}")
    return importlib.import_module(FAMILIES[name])
