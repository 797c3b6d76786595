"""Experiment configs: the experiment's own fields plus nested family configs (docs/claims.md).

An experiment's config nests the config of the model it runs, so no experiment copies a family
field by hand::

    class Config(ExperimentConfig):
        base: AIMConfig = Base(AIMConfig, param="tied", L=1, activation="h1", lr=2.0)
        d: list[int] = Field([64, 128], description="dimensions")   # what the experiment varies

``Base(cls, **defaults)`` declares a nested config whose defaults are the family's, overridden by
``defaults``. A value given for it (a preset, ``--set base.lr=0.1``, a control) is merged into
those defaults, never replaces them. The experiment's ``seed`` and ``seeds`` are the nested
configs' seeds (set there, not in the nested config). Each run is the nested config with the
fields the experiment varies changed: ``ctx.simulate("aim", config.base, d=d)``.

Overrides are dicts whose keys may be dotted paths (``{"base.lr": 0.1}``); presets, the CLI's
``--set`` and controls are applied in that order by :func:`merge_overrides`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, model_validator

from attndyn.core.config import SEED_LIMIT, STRICT_NUMBERS, reject_non_numbers

_BASE_KEY = "attndyn_base_defaults"
SEED_FIELDS = ("seed", "seeds")


def Base(cls: type[BaseModel], description: str | None = None, **defaults: Any) -> Any:  # noqa: N802
    """A nested config field of type ``cls`` whose defaults are ``cls``'s own overridden by
    ``defaults`` (the field's annotation must be ``cls``)."""
    unknown = sorted(set(defaults) - set(cls.model_fields))
    if unknown:
        raise TypeError(f"Base({cls.__name__}): unknown fields {unknown}")
    frozen = copy.deepcopy(defaults)
    return Field(
        default_factory=lambda: cls(**copy.deepcopy(frozen)),
        description=description or f"the {cls.__name__} every run starts from",
        json_schema_extra={_BASE_KEY: frozen},
    )


def base_fields(config_cls: type[BaseModel]) -> dict[str, tuple[type[BaseModel], dict[str, Any]]]:
    """The nested config fields of an experiment config: name → (config class, its defaults)."""
    out = {}
    for name, info in config_cls.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and _BASE_KEY in extra:
            out[name] = (info.annotation, extra[_BASE_KEY])
    return out


def set_fields(config: BaseModel) -> dict[str, Any]:
    """The fields of ``config`` that were given (not defaulted), as plain values."""
    return {k: getattr(config, k) for k in config.model_fields_set}


def changed(config: BaseModel, **changes: Any) -> dict[str, Any]:
    """The values of a run: ``config``'s given fields with ``changes`` applied (validated by the
    caller, e.g. :func:`attndyn.runs.family_config`)."""
    return {**set_fields(config), **changes}


class ExperimentConfig(BaseModel):
    """Base of experiment configs: extra keys are errors; ``seed`` (an offset) and, in subclasses,
    ``seeds`` reach every nested :func:`Base` config that has them."""

    model_config = STRICT_NUMBERS

    seed: int = Field(
        0,
        ge=0,
        lt=SEED_LIMIT,
        description="seed offset: runs use seeds seed, …, seed+seeds−1",
    )

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, values: Any) -> Any:
        values = reject_non_numbers(cls, values)
        if not isinstance(values, dict):
            return values
        values = dict(values)
        for name, (sub, defaults) in base_fields(cls).items():
            given = values.get(name, {})
            if isinstance(given, BaseModel):
                given = set_fields(given)
            if not isinstance(given, Mapping):
                continue  # pydantic names the field and the type
            for key in SEED_FIELDS:
                if key in given and key in cls.model_fields:
                    raise ValueError(f"{name}.{key}: set the experiment's '{key}' instead")
            merged = {**copy.deepcopy(defaults), **given}
            for key in SEED_FIELDS:
                if key in sub.model_fields and key in cls.model_fields:
                    merged[key] = values.get(key, cls.model_fields[key].default)
            values[name] = merged
        return values


def merge_overrides(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Apply override dicts in order; a dotted key (``"base.lr"``) or a nested dict sets one field
    of a nested config and keeps its others."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            _set(out, key.split("."), value)
    return out


def _set(target: dict[str, Any], path: list[str], value: Any) -> None:
    head, rest = path[0], path[1:]
    if rest:
        node = target.get(head)
        if not isinstance(node, dict):
            node = {}
            target[head] = node
        _set(node, rest, value)
    elif isinstance(value, Mapping) and isinstance(target.get(head), dict):
        for key, sub in value.items():
            _set(target[head], key.split("."), sub)
    else:
        target[head] = copy.deepcopy(value)


def variant(config: BaseModel, **changes: Any) -> BaseModel:
    """``config`` with ``changes`` applied, validated (InputError naming a bad field)."""
    from attndyn.core.config import validate

    return validate(type(config), changed(config, **changes))
