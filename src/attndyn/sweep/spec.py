"""Sweep specs: parse a TOML spec, expand its grid, validate every run before anything runs.

A spec names what each grid point runs, a base config and a grid::

    family = "aim"            # plain simulations: each point is a config of this family
    # experiment = "NAME"     # or: each point is a run of this experiment (with `preset`)
    # preset = "small"        # experiment presets: small (default) or paper
    # zip = true              # pair the grid lists instead of crossing them (or a list of keys)
    # group_seeds = true      # run configs that differ only in `seed` as one vmapped simulation
    # max_group_seeds = 64    # at most this many seeds in one vmapped simulation
    [base]
    param = "tied"
    [grid]
    d = [16, 20, 24, 28, 32]
    seed = [0, 1, 2, 3, 4, 5, 6, 7]

Grid lists are crossed in the order written (the last key varies fastest). ``zip = true`` pairs
all of them (equal lengths); ``zip = ["a", "b"]`` pairs those keys and crosses the pair with the
other keys. The grid is expanded lazily: :attr:`SweepSpec.size` comes from the list lengths and
:meth:`SweepSpec.point` picks one point by index, so a dry run of a huge grid never builds it.

Seeds never overlap: a run stores seeds ``seed … seed + seeds − 1``, so in a family sweep a grid
over ``seed`` implies ``seeds = 1`` (unless ``seeds`` is in ``[base]`` or ``[grid]``), and configs
that differ only in ``seed``/``seeds`` must have disjoint seed ranges (family and experiment
sweeps alike), so every stored seed trajectory belongs to exactly one run. Every problem is an
:class:`~attndyn.errors.InputError` whose message is one line.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attndyn.core.config import MAX_NESTING, TOO_DEEP, nesting
from attndyn.errors import InputError

TOP_KEYS = (
    "family",
    "experiment",
    "preset",
    "description",
    "zip",
    "group_seeds",
    "max_group_seeds",
    "base",
    "grid",
)


@dataclass(frozen=True)
class RunItem:
    """One run of a sweep: its id (run id, or experiment record key), what runs it and the
    validated config as plain JSON data."""

    run_id: str
    kind: str  # "family" or "experiment"
    name: str  # the family or experiment name
    config: dict[str, Any]
    point: dict[str, Any]  # this run's grid values
    preset: str | None = None
    steps: int | None = None  # optimiser steps per seed (family runs)


@dataclass
class SweepSpec:
    """A parsed spec (see the module docstring)."""

    kind: str  # "family" or "experiment"
    name: str
    base: dict[str, Any]
    grid: dict[str, list[Any]]
    zip_keys: list[str] = field(default_factory=list)
    preset: str | None = None
    group_seeds: bool = True
    max_group_seeds: int = 64
    label: str = "sweep"  # how messages name the spec (its file name)
    description: str = ""
    sweep: str = "sweep"  # recorded with every stored run (the spec file's stem)
    _axes_cache: list | None = field(default=None, init=False, repr=False, compare=False)

    def _axes(self) -> list[list[dict[str, Any]]]:
        """One list per crossed axis: a single key's values, or the zipped keys' paired values
        (built once)."""
        if self._axes_cache is None:
            self._axes_cache = self._build_axes()
        return self._axes_cache

    def _build_axes(self) -> list[list[dict[str, Any]]]:
        axes: list[list[dict[str, Any]]] = []
        zipped_done = False
        for key, values in self.grid.items():
            if key in self.zip_keys:
                if zipped_done:
                    continue
                zipped_done = True
                lists = [self.grid[k] for k in self.zip_keys]
                axes.append(
                    [
                        dict(zip(self.zip_keys, vals, strict=True))
                        for vals in zip(*lists, strict=True)
                    ]
                )
            else:
                axes.append([{key: v} for v in values])
        return axes

    @property
    def size(self) -> int:
        """The number of grid points, from the list lengths (nothing is expanded)."""
        return math.prod(len(axis) for axis in self._axes())

    @property
    def implied_seeds(self) -> bool:
        """True when a grid over ``seed`` sets ``seeds = 1`` (a family sweep without ``seeds``)."""
        return (
            self.kind == "family"
            and "seed" in self.grid
            and "seeds" not in self.grid
            and "seeds" not in self.base
        )

    def points(self) -> Iterator[dict[str, Any]]:
        """The grid points in order (crossed, with the zipped keys paired), one at a time."""
        for combo in itertools.product(*self._axes()):
            yield {k: v for part in combo for k, v in part.items()}

    def point(self, index: int) -> dict[str, Any]:
        """Grid point number ``index`` (the order of :meth:`points`) without expanding the grid."""
        parts: list[dict[str, Any]] = []
        for axis in reversed(self._axes()):
            index, i = divmod(index, len(axis))
            parts.append(axis[i])
        return {k: v for part in reversed(parts) for k, v in part.items()}

    def sample(self, limit: int) -> list[int]:
        """Indices of at most ``limit`` grid points: all of them, or evenly spaced from the first
        to the last."""
        n, limit = self.size, max(limit, 2)
        if n <= limit:
            return list(range(n))
        return sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)})

    def expand(self) -> list[RunItem]:
        """Every run of the sweep, each config validated and the seed ranges checked;
        duplicates (same id) kept once."""
        self.check_seed_axes()
        items: dict[str, RunItem] = {}
        for point in self.points():
            item = self._item(point)
            items.setdefault(item.run_id, item)
        runs = list(items.values())
        check_seed_ranges(runs, self.label, self._seed_field())
        return runs

    def expand_sample(self, limit: int) -> list[RunItem]:
        """The runs of :meth:`sample`'s points, validated (duplicates kept once); the seed
        ranges of the whole grid are checked from its seed axes."""
        self.check_seed_axes()
        items: dict[str, RunItem] = {}
        for index in self.sample(limit):
            item = self._item(self.point(index))
            items.setdefault(item.run_id, item)
        return list(items.values())

    def _seed_field(self) -> str:
        return "grid.seed" if "seed" in self.grid else "grid.seeds"

    def check_seed_axes(self) -> None:
        """Reject seed ranges that overlap, from the grid's seed axes alone (no expansion):
        only the axes holding ``seed`` or ``seeds`` vary them."""
        axes = [a for a in self._axes() if any("seed" in e or "seeds" in e for e in a)]
        if not axes:
            return
        first = self._item(self.point(0)).config
        if "seed" not in first or "seeds" not in first:
            return
        fixed = {"seed": first["seed"], "seeds": first["seeds"]}
        ranges: dict[str, set[tuple[int, int]]] = {}
        for combo in itertools.product(*axes):
            values = {k: v for part in combo for k, v in part.items()}
            seed, seeds = values.pop("seed", fixed["seed"]), values.pop("seeds", fixed["seeds"])
            if not _int(seed) or not _int(seeds):
                continue  # left to the config's own validation
            key = json.dumps(values, sort_keys=True, default=str)
            ranges.setdefault(key, set()).add((seed, seeds))
        for found in ranges.values():
            _disjoint(found, self.label, self._seed_field())

    def _item(self, point: dict[str, Any]) -> RunItem:
        values = {**self.base, **point}
        if self.implied_seeds:
            values.setdefault("seeds", 1)
        where = ", ".join(f"{k}={v!r}" for k, v in point.items())
        try:
            if self.kind == "family":
                from attndyn.core.config import canonical, run_id
                from attndyn.runs import family_config

                config = family_config(self.name, values)
                return RunItem(
                    run_id(self.name, config),
                    "family",
                    self.name,
                    canonical(config),
                    point,
                    steps=config.total_steps,
                )
            from attndyn.claims.runner import experiment_config, experiment_key

            _, config = experiment_config(self.name, self.preset or "small", values)
            cfg = json.loads(config.model_dump_json())
            key = experiment_key(self.name, self.preset or "small", config)
            return RunItem(key, "experiment", self.name, cfg, point, self.preset or "small")
        except InputError as exc:
            raise InputError(f"{self.label}: {exc} (grid point {where})") from None


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _disjoint(ranges: set[tuple[int, int]], label: str, field_name: str) -> None:
    """Raise if two of the (seed, seeds) ranges share a seed."""
    ordered = sorted(ranges)
    for (a, n), (b, m) in itertools.pairwise(ordered):
        if a + n > b:
            raise _fail(
                label,
                f"{field_name}: seed ranges overlap: seed = {a} with seeds = {n} stores seeds "
                f"{a}–{a + n - 1} and seed = {b} with seeds = {m} stores {b}–{b + m - 1} "
                f"(a seed would be stored twice); space seeds by ≥ seeds "
                f"(e.g. seed = [0, {n}, {2 * n}]) or set seeds = 1",
            )


def check_seed_ranges(items: list[RunItem], label: str, field_name: str = "grid.seed") -> None:
    """Reject runs whose configs differ only in ``seed``/``seeds`` and share a seed."""
    ranges: dict[str, set[tuple[int, int]]] = {}
    for item in items:
        rest = {k: v for k, v in item.config.items() if k not in ("seed", "seeds")}
        if "seed" not in item.config or "seeds" not in item.config:
            continue
        key = json.dumps(rest, sort_keys=True)
        ranges.setdefault(key, set()).add((item.config["seed"], item.config["seeds"]))
    for found in ranges.values():
        _disjoint(found, label, field_name)


def _fail(label: str, message: str) -> InputError:
    return InputError(f"{label}: {message}")


def parse_spec(data: dict[str, Any], label: str = "sweep") -> SweepSpec:
    """Check a spec's structure (types, names, grid lists) and build a :class:`SweepSpec`;
    configs are validated by :meth:`SweepSpec.expand`."""
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise _fail(label, f"unknown key '{unknown[0]}'; allowed keys: {', '.join(TOP_KEYS)}")
    has_family, has_experiment = "family" in data, "experiment" in data
    if has_family == has_experiment:
        raise _fail(label, "give exactly one of 'family' (plain simulations) or 'experiment'")
    kind = "family" if has_family else "experiment"
    name = data[kind]
    if not isinstance(name, str):
        raise _fail(label, f"'{kind}' must be a string (got {name!r})")
    if kind == "family":
        from attndyn.models import get_family

        try:
            get_family(name)
        except InputError as exc:
            raise _fail(label, str(exc)) from None
        if "preset" in data:
            raise _fail(label, "'preset' applies to experiments only")
    else:
        from attndyn.claims import get_experiment
        from attndyn.claims.runner import PRESETS

        try:
            get_experiment(name)
        except InputError as exc:
            raise _fail(label, str(exc)) from None
        preset = data.get("preset", "small")
        if preset not in PRESETS:
            raise _fail(
                label,
                f"invalid value for 'preset': must be one of {', '.join(PRESETS)} (got {preset!r})",
            )
    base = data.get("base", {})
    if not isinstance(base, dict):
        raise _fail(label, "[base] must be a table of config values")
    grid = data.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise _fail(label, "[grid] is empty: give at least one config key with a list of values")
    for key, value in [*base.items(), *grid.items()]:
        if nesting(value) > MAX_NESTING + (key in grid):  # a grid value is a list of values
            raise _fail(label, f"invalid value for '{key}': {TOO_DEEP}")
    for key, values in grid.items():
        if not isinstance(values, list):
            raise _fail(label, f"grid '{key}' must be a list of values (got {values!r})")
        if not values:
            raise _fail(label, f"grid '{key}' is an empty list")
        if key in base:
            raise _fail(label, f"'{key}' is in both [base] and [grid]; keep it in one")
    zip_opt = data.get("zip", False)
    if isinstance(zip_opt, bool):
        zip_keys = list(grid) if zip_opt else []
    elif isinstance(zip_opt, list) and all(isinstance(k, str) for k in zip_opt):
        missing = [k for k in zip_opt if k not in grid]
        if missing:
            raise _fail(label, f"zip key '{missing[0]}' is not a grid key")
        zip_keys = [k for k in grid if k in zip_opt]
    else:
        raise _fail(label, f"'zip' must be true, false or a list of grid keys (got {zip_opt!r})")
    if zip_keys:
        lengths = {k: len(grid[k]) for k in zip_keys}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{k}: {n}" for k, n in lengths.items())
            raise _fail(label, f"zipped grid lists must have equal lengths ({shown})")
    group_seeds = data.get("group_seeds", True)
    if not isinstance(group_seeds, bool):
        raise _fail(label, f"'group_seeds' must be true or false (got {group_seeds!r})")
    max_group = data.get("max_group_seeds", 64)
    if isinstance(max_group, bool) or not isinstance(max_group, int) or max_group < 1:
        raise _fail(label, f"'max_group_seeds' must be a positive integer (got {max_group!r})")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _fail(label, "'description' must be a string")
    return SweepSpec(
        kind=kind,
        name=name,
        base=dict(base),
        grid={k: list(v) for k, v in grid.items()},
        zip_keys=zip_keys,
        preset=data.get("preset", "small") if kind == "experiment" else None,
        group_seeds=group_seeds,
        max_group_seeds=max_group,
        label=label,
        description=description,
    )


def load_spec(path: str | os.PathLike) -> SweepSpec:
    """Read and check a TOML spec file (one-line InputError if it cannot be read or parsed)."""
    path = Path(path)
    label = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"cannot read sweep spec {path}: {reason}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label}: not valid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:  # the TOML parser recurses once per level of nesting
        raise InputError(f"{label}: not a sweep spec: {TOO_DEEP}") from None
    spec = parse_spec(data, label=label)
    spec.sweep = path.stem
    return spec
