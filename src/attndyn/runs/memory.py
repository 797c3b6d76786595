"""A simulation's peak memory, estimated from its config before anything is allocated, and the
check that refuses a config above the machine's memory (docs/sweeps.md, "Estimates and the time
limit").

Each family declares its largest arrays as a formula of its config through the optional hook
``memory_terms(config, seeds) -> {term: bytes}`` (:mod:`attndyn.models.base`): a term's name
says what it is and which config fields size it (``"seeds·batch·seq_len tokens"``). The
estimate is the sum of the terms; a family that declares none (the default) is not checked.
Nothing here imports JAX or builds a model, so the check costs milliseconds at any size.

:func:`check` raises :class:`TooLarge` (exit 2, one line naming the largest terms' fields and the
estimate) when the estimate is above :func:`available_bytes`: the memory the operating system
reports available now (``MemAvailable``) and, where JAX already runs on an accelerator, the free
memory of its devices. ``ATTNDYN_MEMORY_BYTES`` replaces the machine's figure (a cluster job's
allotment, or a test).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from attndyn.errors import InputError

ENV = "ATTNDYN_MEMORY_BYTES"
"""Environment variable that replaces the available memory (bytes)."""


@dataclass(frozen=True)
class MemoryEstimate:
    """``terms``: what the family's formula counts, name → bytes; ``total``: their sum."""

    family: str
    terms: Mapping[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return float(sum(self.terms.values()))

    @property
    def known(self) -> bool:
        return bool(self.terms)

    def largest(self, n: int = 2) -> list[tuple[str, float]]:
        return sorted(self.terms.items(), key=lambda kv: -kv[1])[:n]

    def as_json(self) -> dict[str, Any]:
        return {"memory_bytes": self.total if self.known else None, "terms": dict(self.terms)}


def estimate(family: str, config: Any, seeds: int | None = None) -> MemoryEstimate:
    """The family's memory formula for ``config`` run over ``seeds`` seeds (default its own)."""
    from attndyn.models import get_family

    n_seeds = config.seeds if seeds is None else seeds
    terms = get_family(family).memory_terms(config, n_seeds) or {}
    return MemoryEstimate(family, {k: float(v) for k, v in terms.items() if v > 0})


def available_bytes() -> tuple[float, str]:
    """(bytes available to a run, where the figure comes from)."""
    override = os.environ.get(ENV)
    if override:
        try:
            return float(override), ENV
        except ValueError:
            raise InputError(f"invalid value for {ENV}: must be a number of bytes") from None
    host = _host_available()
    device = _device_free()
    if device is not None and device[0] < host:
        return device
    return host, "available on this machine"


def _host_available() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return float("inf")  # unknown: never refuse on a guess


def _device_free() -> tuple[float, str] | None:
    """Free memory summed over JAX's accelerators, if JAX is loaded and runs on one."""
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    try:
        devices = [d for d in jax.devices() if d.platform != "cpu"]
        if not devices:
            return None
        free = 0.0
        for d in devices:
            stats = d.memory_stats() or {}
            free += stats.get("bytes_limit", 0) - stats.get("bytes_in_use", 0)
        if free <= 0:
            return None
        return free, f"free on {len(devices)} {devices[0].platform} device(s)"
    except Exception:  # noqa: BLE001 - no figure from the backend: the host's only
        return None


def size(n_bytes: float) -> str:
    """``n_bytes`` in B, kB, MB, GB or TB."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n_bytes < 1000 or unit == "TB":
            return f"{n_bytes:.3g} {unit}"
        n_bytes /= 1000
    return ""


class TooLarge(InputError):
    """A config whose estimated memory is above what the machine has (exit 2)."""

    def __init__(self, est: MemoryEstimate, available: float, source: str):
        self.estimate, self.available = est, available
        largest = "; ".join(f"{name} = {size(b)}" for name, b in est.largest())
        super().__init__(
            f"{est.family} config needs an estimated {size(est.total)} of memory ({largest}), "
            f"above the {size(available)} {source}; lower those fields (--dry-run shows the "
            "estimate)"
        )


def check(family: str, config: Any, seeds: int | None = None) -> MemoryEstimate:
    """The estimate; raise :class:`TooLarge` when it is above :func:`available_bytes`."""
    est = estimate(family, config, seeds)
    if est.known:
        available, source = available_bytes()
        if est.total > available:
            raise TooLarge(est, available, source)
    return est


def fits(est: MemoryEstimate) -> bool:
    """Whether ``est`` is within :func:`available_bytes` (an unknown estimate fits)."""
    return not est.known or est.total <= available_bytes()[0]
