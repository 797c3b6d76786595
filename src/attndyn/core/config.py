"""Validated run configurations, ``key=value`` parsing and canonical hashing.

Every family's config is a pydantic model deriving from :class:`SimulationConfig`: unknown keys are
rejected, values are type-checked, and a failure becomes an :class:`~attndyn.errors.InputError`
whose one-line message names the field and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tomllib
import types
from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from attndyn.core.suggest import did_you_mean
from attndyn.errors import InputError

SCHEMA_VERSION = 2
"""Bumped whenever stored results would change meaning; part of every run id, so runs stored
under another version are kept (and queryable) but never reused. History: 2 (2026-12-06) —
the Langevin family's Euler–Maruyama noise is drawn counter-based by (chain, step, element)
(:func:`attndyn.core.updates.gaussian_noise`), which changes every stored ``sde``/``lmc`` value;
no other family's values changed."""


OptimizerName = Literal["sgd", "momentum", "adam", "adamw", "rmsprop"]
OPTIMIZERS: tuple[str, ...] = get_args(OptimizerName)
"""Update rules a family may offer (:func:`attndyn.core.updates.optimizer`)."""

Optimizer = Annotated[
    OptimizerName,
    Field(
        description="update rule of every parameter group (optax's): sgd (default), momentum "
        "(heavy ball, 0.9), adam, adamw (decoupled weight decay) or rmsprop"
    ),
]
"""The ``optimizer`` field, for a family that lets its config choose the rule:
``optimizer: Optimizer = "sgd"``."""


SEED_LIMIT = 2**31
"""Seeds are below 2³¹: ``PRNGKey(seed)`` keeps 32 bits, so larger seeds would alias smaller
ones."""

MAX_STEPS = 2**31 - 1
"""The trainer's step index is a 32-bit integer."""

STRICT_NUMBERS = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)
"""Every config: unknown keys, NaN and ±inf are errors (a field that means inf says so itself)."""


def _numeric(annotation: Any) -> bool:
    """True for int and float annotations (also inside ``X | None``), not for bool."""
    if annotation in (int, float):
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_numeric(a) for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Annotated:
        return _numeric(get_args(annotation)[0])
    return False


def _only_numeric(annotation: Any) -> bool:
    """True for int and float annotations and unions of them with None (no str member)."""
    if get_origin(annotation) is Annotated:
        return _only_numeric(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return bool(args) and all(_only_numeric(a) for a in args)
    return annotation in (int, float)


def reject_non_numbers(model: type[BaseModel], values: Any) -> Any:
    """A ``mode="before"`` check: a boolean given for a number field is an error (pydantic would
    read ``true`` as 1), and so is a string for a field that takes only numbers (pydantic would
    read ``"16"`` as 16: ``--set 'd="16"'`` is the string)."""
    if isinstance(values, dict):
        for name, value in values.items():
            field = model.model_fields.get(name)
            if field is None:
                continue
            if isinstance(value, bool) and _numeric(field.annotation):
                raise ValueError(f"{name}: must be a number, not a boolean (got {value!r})")
            if isinstance(value, str) and _only_numeric(field.annotation):
                raise ValueError(f"{name}: must be a number, not the string {value!r}")
    return values


class GridConfig(BaseModel):
    """Fields every run shares, theory included: the horizon and the record grid.

    A subclass defines ``total_steps`` (the number of optimiser steps, or of theory grid steps,
    that ``t_max`` means for it); the record steps are ``record_steps(total_steps, records,
    grid)`` (:func:`attndyn.core.grids.record_grid`)."""

    model_config = STRICT_NUMBERS

    t_max: float = Field(1.0, gt=0, description="horizon on the family's macroscopic time axis")
    records: int = Field(60, ge=2, le=100_000, description="number of record points")
    grid: Literal["log", "linear"] = Field("log", description="spacing of the record points")

    @model_validator(mode="before")
    @classmethod
    def _no_booleans(cls, values: Any) -> Any:
        return reject_non_numbers(cls, values)

    @property
    def total_steps(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define total_steps")


class SimulationConfig(GridConfig):
    """A simulated family's config: the grid plus seeds and precision."""

    seeds: int = Field(4, ge=1, le=4096, description="number of seeds, run in parallel with vmap")
    seed: int = Field(
        0, ge=0, lt=SEED_LIMIT, description="first seed; seeds are seed, seed+1, ... (< 2^31)"
    )

    @model_validator(mode="after")
    def _seeds_below_limit(self) -> SimulationConfig:
        if self.seed + self.seeds > SEED_LIMIT:
            raise ValueError(f"seed: seed + seeds − 1 must be below 2^31 (got {self.seed})")
        try:
            steps: float = self.total_steps
        except ZeroDivisionError:
            return self  # a zero step size: the family's own checks name the field
        except (OverflowError, ValueError):
            steps = math.inf  # t_max over a tiny step: int(inf) or int(nan)
        if steps > MAX_STEPS:
            raise ValueError(
                f"t_max: {self.t_max:g} means {steps:.3g} steps, above the {MAX_STEPS} the "
                "trainer counts (32-bit step index); lower t_max"
            )
        return self

    dtype: Literal["float32", "float64"] = Field("float32", description="simulation precision")

    @property
    def seed_list(self) -> list[int]:
        """The seeds this config runs: ``seed, seed + 1, …, seed + seeds − 1``."""
        return list(range(self.seed, self.seed + self.seeds))


ModelT = TypeVar("ModelT", bound=BaseModel)


def validate(config_cls: type[ModelT], values: dict[str, Any]) -> ModelT:
    """Build ``config_cls`` from ``values``; any problem becomes a one-line InputError.

    A model validator (a check across fields) names the field it blames by starting its message
    with ``"field: "``; the error then reads ``invalid value for 'field': …``."""
    unknown = sorted(set(values) - set(config_cls.model_fields))
    if unknown:
        allowed = ", ".join(config_cls.model_fields)
        hint = did_you_mean(unknown[0], config_cls.model_fields)
        raise InputError(f"unknown config field '{unknown[0]}'{hint}; allowed fields: {allowed}")
    try:
        return config_cls(**values)
    except ValidationError as exc:
        raise InputError(_one_line(exc, config_cls.model_fields)) from None


def _one_line(exc: ValidationError, fields: Iterable[str] = ()) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "config"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    name, sep, rest = msg.partition(": ")
    first = re.match(r"[A-Za-z_]\w*", msg)
    if field == "config" and sep and name.isidentifier():
        field, msg = name, rest  # a cross-field check names its field as "field: message"
    elif field == "config" and first and first.group() in fields:
        field = first.group()  # or starts with it: "vocab must be >= ..."
    got = err.get("input")
    shown = "" if isinstance(got, dict) or got is None else f" (got {got!r})"
    return f"invalid value for '{field}': {msg}{shown}"


MAX_NESTING = 32  # levels of lists and tables in a config value: no config needs more
TOO_DEEP = f"lists and tables nested deeper than {MAX_NESTING} levels"


def nesting(value: Any) -> int:
    """How deep lists and dicts nest in ``value`` (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list | tuple):
            deepest = max(deepest, depth + 1)
            if deepest > MAX_NESTING + 1:  # deeper than any check allows: stop counting
                return deepest
            stack.extend((x, depth + 1) for x in item)
    return deepest


def check_nesting(key: str, value: Any) -> None:
    """InputError naming ``key`` when ``value`` nests deeper than :data:`MAX_NESTING` levels
    (a 5,000-deep list ended in a RecursionError traceback)."""
    if nesting(value) > MAX_NESTING:
        raise InputError(f"invalid value for '{key}': {TOO_DEEP}")


def parse_assignments(items: list[str] | None) -> dict[str, Any]:
    """Parse ``["d=64", "param=tied", "C=[[1,0.5],[0.5,1]]"]`` into a dict.

    Values are read as TOML literals (numbers, booleans, arrays, quoted strings); anything that is
    not a TOML literal is kept as a bare string, so ``param=tied`` works without quotes.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"--set expects key=value, got {item!r}")
        try:
            out[key] = _literal(raw.strip())
        except RecursionError:  # the TOML parser recurses once per level
            raise InputError(f"invalid value for '{key}': {TOO_DEEP}") from None
        check_nesting(key, out[key])
    return out


def _literal(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def canonical(config: BaseModel) -> dict[str, Any]:
    """The config as plain JSON-able data, every default made explicit."""
    return json.loads(config.model_dump_json())


def identity(config: BaseModel) -> dict[str, Any]:
    """What a run id hashes: :func:`canonical` without the fields a config class lists in its
    ``ID_NEUTRAL`` (field name → value) while they hold that value, in nested configs too.

    A field added to a family after runs were stored is listed there with the value that gives
    the old behaviour, so every stored run keeps its id (docs/store.md, "Run ids")."""
    return _drop_neutral(config, canonical(config))


def _drop_neutral(model: BaseModel, data: dict[str, Any]) -> dict[str, Any]:
    for name in list(data):
        value = getattr(model, name, None)
        if isinstance(value, BaseModel) and isinstance(data[name], dict):
            data[name] = _drop_neutral(value, data[name])
    neutral_values: dict[str, Any] = {}
    for cls in reversed(type(model).__mro__):  # a subclass adds to its bases' ID_NEUTRAL
        neutral_values |= vars(cls).get("ID_NEUTRAL", {})
    for name, neutral in neutral_values.items():
        if name in data and data[name] == neutral:
            del data[name]
    return data


_DIGESTS: dict[tuple, str] = {}


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 (first 32 hex digits) of the bytes of the file ``path``. Cached per process for
    the file's (device, inode, size, modification and change times): writing a file changes
    its change time (ctime) even when its size and modification time are kept."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
           st.st_ctime_ns)  # fmt: skip
    if key not in _DIGESTS:
        with open(path, "rb") as fh:
            _DIGESTS[key] = hashlib.file_digest(fh, "sha256").hexdigest()[:32]
    return _DIGESTS[key]


def input_hashes(config: BaseModel) -> dict[str, str]:
    """Content hashes of the files a config reads (``config.input_hashes()`` where the family
    defines it, e.g. a Markov text corpus's): part of the run id, since editing such a file
    changes the results without changing the config. Empty for most configs."""
    hashes = getattr(config, "input_hashes", None)
    return dict(hashes()) if callable(hashes) else {}


def run_id(family: str, config: BaseModel) -> str:
    """Hash of the family name, the config's :func:`identity` and the schema version (16 hex
    digits), and of the content hashes of the files the config reads (:func:`input_hashes`) when
    it reads any (so the ids of configs that read none are those of before)."""
    return id_of(family, identity(config), SCHEMA_VERSION, input_hashes(config))


def id_of(kind: str, config: Any, schema: Any, inputs: dict | None = None) -> str:
    """The run id of a canonical ``config`` (plain JSON data) of ``kind`` under ``schema``
    (:func:`run_id`); also how a stored record's id is derived again from the record."""
    payload = {"family": kind, "config": config, "schema": schema}
    if inputs:
        payload["inputs"] = inputs
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts to dotted keys; lists become JSON strings (one scalar per column)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            out[name] = json.dumps(value)
        else:
            out[name] = value
    return out
