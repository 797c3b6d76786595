"""Run a registered experiment: preset + overrides → run → measure → claims → figure, and the
stored record."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attndyn.claims import get_experiment
from attndyn.claims.base import Check, Claim, RunContext
from attndyn.claims.config import SEED_FIELDS, base_fields, merge_overrides
from attndyn.core.config import identity, validate
from attndyn.core.suggest import did_you_mean
from attndyn.errors import InputError
from attndyn.store import Store

PRESETS = ("tiny", "small", "paper")
SHORT_PRESETS = ("tiny", "small")
"""Presets declared short (minutes at most on two cores): ``attndyn run`` never refuses them for
their estimate (docs/sweeps.md, "Estimates and the time limit")."""


@dataclass
class ExperimentOutcome:
    """What :func:`run_experiment` returns; ``as_json()`` is the ``--json`` record."""

    experiment: str
    preset: str
    config: dict[str, Any]
    run_ids: list[str]
    claims: list[Claim]
    summary: dict[str, Any]
    figure: Path
    preconditions: list[Check] = field(default_factory=list)
    control: str | None = None
    expected_failures: tuple[str, ...] = ()
    results: dict[str, Any] = field(repr=False, default_factory=dict)
    measurements: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def valid(self) -> bool:
        """Every precondition holds."""
        return all(c.passed for c in self.preconditions)

    @property
    def passed(self) -> bool:
        """Valid and every claim passed (zero claims is a failure)."""
        return self.valid and bool(self.claims) and all(c.passed for c in self.claims)

    @property
    def verdict(self) -> str:
        """``invalid`` (a precondition failed), ``passed`` or ``failed``; for a negative control,
        ``control-not-rejected`` when a claim it names passed, ``control-inconclusive`` when it
        names no claim of this config, the run is invalid or a claim it names failed without
        being refuted by value (a NaN, a dropped claim, a missing window, an interval straddling
        the target, an extra check alone: no evidence against the wrong model), else
        ``control-failed-as-expected`` (docs/claims.md, "Negative controls")."""
        if self.control is not None:
            named = [c for c in self.claims if c.name in set(self.expected_failures)]
            if any(c.passed for c in named):
                return "control-not-rejected"
            if not named or not self.valid or not all(c.refuted for c in named):
                return "control-inconclusive"
            return "control-failed-as-expected"
        if not self.valid:
            return "invalid"
        return "passed" if self.passed else "failed"

    @property
    def strict_ok(self) -> bool:
        """What ``--strict`` requires: the claims pass, or under a control, its claims fail."""
        return self.verdict in ("passed", "control-failed-as-expected")

    def as_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "preset": self.preset,
            "control": self.control,
            "verdict": self.verdict,
            "run_ids": self.run_ids,
            "preconditions": [{"text": c.text, "passed": c.passed} for c in self.preconditions],
            "claims": [c.as_dict() for c in self.claims],
            "summary": self.summary,
            "figure": str(self.figure),
        }


def experiment_config(
    name: str, preset: str, overrides: dict[str, Any], control: str | None = None
):
    """Validated config of ``name`` at ``preset`` with ``overrides`` and then the negative
    ``control``'s overrides applied (dotted keys reach nested configs)."""
    exp = get_experiment(name)
    if preset not in PRESETS:
        raise InputError(
            f"invalid value for 'preset': must be one of {', '.join(PRESETS)} (got {preset!r})"
            + did_you_mean(preset, PRESETS)
        )
    if preset not in exp.presets:  # a plug-in need not declare all three (docs/plugins.md)
        declared = ", ".join(p for p in PRESETS if p in exp.presets) or "none"
        raise InputError(
            f"invalid value for 'preset': {name} declares no {preset!r} preset (its presets: "
            f"{declared})"
        )
    layers = [exp.presets[preset], overrides]
    if control is not None:
        if control not in exp.controls:
            allowed = ", ".join(sorted(exp.controls)) or "none"
            raise InputError(
                f"invalid value for 'control': {name} has the controls {allowed} (got {control!r})"
                + did_you_mean(control, exp.controls)
            )
        layers.append(exp.controls[control].overrides)
    config = validate_experiment(exp.Config, merge_overrides(*layers))
    needed = max((c.seeds for c in type(exp).claims), default=1)
    seeds = getattr(config, "seeds", None)
    if seeds is not None and seeds < needed:
        raise InputError(
            f"invalid value for 'seeds': {name}'s claims need at least {needed} seeds "
            f"(an interval over fewer is not a claim; got {seeds})"
        )
    return exp, config


def validate_experiment(config_cls, values: dict[str, Any]):
    """:func:`~attndyn.core.config.validate`, also naming an unknown field of a nested config
    (``base.colour``) with that config's allowed fields, and a nested field given at the top
    (``lr`` for ``base.lr``)."""
    nested = base_fields(config_cls)
    for key in values:
        owners = [f for f, (sub, _) in nested.items() if key in sub.model_fields]
        if key not in config_cls.model_fields and owners:
            raise InputError(
                f"unknown config field '{key}'; it is a field of the nested config "
                f"'{owners[0]}': set {owners[0]}.{key}"
            )
    for field_name, (sub, _) in nested.items():
        given = values.get(field_name)
        if not isinstance(given, dict):
            continue
        unknown = sorted(set(given) - set(sub.model_fields))
        if unknown:
            hint = did_you_mean(unknown[0], sub.model_fields)
            raise InputError(
                f"unknown config field '{field_name}.{unknown[0]}'{hint}; allowed fields of "
                f"'{field_name}': {', '.join(sub.model_fields)}"
            )
        for key in SEED_FIELDS:
            if key in given and key in config_cls.model_fields:
                raise InputError(
                    f"invalid value for '{field_name}.{key}': the experiment's '{key}' sets it "
                    f"(--set {key}=…)"
                )
    return validate(config_cls, values)


def experiment_key(name: str, preset: str, config) -> str:
    """The stored record's key: ``<name>-<preset>-<first 8 hex digits of the config hash>``."""
    cfg = identity(config)
    digest = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:8]
    return f"{name}-{preset}-{digest}"


def run_experiment(
    name: str,
    preset: str = "small",
    overrides: dict[str, Any] | None = None,
    out=None,
    force: bool = False,
    control: str | None = None,
) -> ExperimentOutcome:
    """Run, measure, evaluate the claims, draw the figure and store the experiment's record.

    Args:
        name: a registered experiment (``attndyn list``).
        preset: ``tiny``, ``small`` or ``paper``.
        overrides: config fields replacing the preset's (validated; unknown keys are errors).
        out: the results folder (default ``$ATTNDYN_RESULTS`` or ``./attndyn-results``).
        force: recompute stored runs instead of reading them.
        control: a negative control of the experiment (its config overrides are applied last).

    Returns:
        The outcome: claims (each with value, target and verdict), the ``--json`` summary, the
        figure's path, the ids of every run used, and the results and measurements themselves.
    """
    exp, config = experiment_config(name, preset, overrides or {}, control)
    start = time.perf_counter()
    store = Store(out)
    store.check_writable()  # an unwritable --out fails before anything is computed (exit 2)
    ctx = RunContext(store=store, force=force)
    results = exp.run(config, ctx)
    measurements = exp.measure(config, results)
    claims = exp.judged(config, measurements)
    preconditions = exp.preconditions(config, measurements)
    cfg = json.loads(config.model_dump_json())
    key = experiment_key(name, preset, config)
    figure = exp.figure(config, results, measurements, store.root / "figures" / f"{key}.png")
    outcome = ExperimentOutcome(
        experiment=name,
        preset=preset,
        config=cfg,
        run_ids=list(dict.fromkeys(ctx.run_ids)),
        claims=claims,
        summary=exp.summary(measurements),
        figure=figure,
        preconditions=preconditions,
        control=control,
        # a control names its claims across presets; those this config declares must fail
        expected_failures=exp.must_fail(control, config) if control else (),
        results=results,
        measurements=measurements,
    )
    store.write_experiment(
        outcome.as_json() | {"config": cfg}, key, wall_s=time.perf_counter() - start
    )
    return outcome
