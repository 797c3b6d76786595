"""Model families, found through the ``attndyn.families`` entry-point group.

Each family is one package (attndyn's own: ``aim``, ``circuits``, ``langevin``, ``markov``,
``query``; a plug-in may live in any pip-installed package) that satisfies the contract of
:mod:`attndyn.models.base`: ``NAME``, ``Config``, ``SUMMARY``, ``build(config)``,
``simulate(config)`` and the optional names of :data:`~attndyn.models.base.OPTIONAL`.
:func:`get_family` loads a family by name (checking the contract) and :func:`get_theory` its theory
module. Nothing outside a family's own folder imports it by name; a family never imports another
family.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from attndyn.core import registry
from attndyn.errors import InputError
from attndyn.models.base import Benchmark, Family, check_family, check_theory, complete_family


def family_names() -> list[str]:
    """Names of the installed families (nothing is imported)."""
    return registry.names(registry.FAMILIES)


def get_family(name: str) -> Family:
    """The family registered under ``name``, its contract checked and its optional attributes
    completed with their defaults (:data:`attndyn.models.base.OPTIONAL`). JAX is set up on first
    use, so importing attndyn, listing runs or querying never loads JAX."""
    from attndyn.core.jaxsetup import enable_compilation_cache

    enable_compilation_cache()
    family = registry.load(registry.FAMILIES, name, "family")
    check_family(family, name)
    return complete_family(family)


def get_theory(name: str) -> ModuleType:
    """The theory module of family ``name`` (``Config``, ``SUMMARY``, ``predict``)."""
    family = get_family(name)
    path = family.THEORY
    if not path:
        with_theory = [n for n in family_names() if get_family(n).THEORY]
        raise InputError(
            f"family '{name}' has no theory; families with theory: {', '.join(with_theory)}"
        )
    theory = importlib.import_module(path)
    check_theory(theory, name)
    return theory


def benchmarks() -> dict[str, tuple[str, Benchmark]]:
    """Every family's benchmarks: name → (family, Benchmark)."""
    out: dict[str, tuple[str, Benchmark]] = {}
    for family in family_names():
        for bench in get_family(family).BENCHMARKS:
            out[bench.name] = (family, bench)
    return out
