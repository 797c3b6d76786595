"""Run a registered experiment: preset + overrides → run → measure → claims → figure, and the
stored record."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attndyn.core.config import validate
from attndyn.errors import InputError
from attndyn.experiments import get_experiment
from attndyn.experiments.base import Claim, RunContext
from attndyn.store import Store

PRESETS = ("small", "paper")


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
    results: dict[str, Any] = field(repr=False, default_factory=dict)
    measurements: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every claim passed (zero claims is a failure)."""
        return bool(self.claims) and all(c.passed for c in self.claims)

    def as_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "preset": self.preset,
            "run_ids": self.run_ids,
            "claims": [c.as_dict() for c in self.claims],
            "summary": self.summary,
            "figure": str(self.figure),
        }


def experiment_config(name: str, preset: str, overrides: dict[str, Any]):
    """Validated config of ``name`` at ``preset`` with ``overrides`` applied."""
    exp = get_experiment(name)
    if preset not in PRESETS:
        raise InputError(
            f"invalid value for 'preset': must be one of {', '.join(PRESETS)} (got {preset!r})"
        )
    return exp, validate(exp.Config, {**exp.presets[preset], **overrides})


def experiment_key(name: str, preset: str, config) -> str:
    """The stored record's key: ``<name>-<preset>-<first 8 hex digits of the config hash>``."""
    cfg = json.loads(config.model_dump_json())
    digest = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:8]
    return f"{name}-{preset}-{digest}"


def run_experiment(
    name: str,
    preset: str = "small",
    overrides: dict[str, Any] | None = None,
    out=None,
    force: bool = False,
) -> ExperimentOutcome:
    """Run, measure, evaluate the claims, draw the figure and store the experiment's record.

    Args:
        name: a registered experiment (``attndyn list``).
        preset: ``small`` or ``paper``.
        overrides: config fields replacing the preset's (validated; unknown keys are errors).
        out: the results folder (default ``$ATTNDYN_RESULTS`` or ``./attndyn-results``).
        force: recompute stored runs instead of reading them.

    Returns:
        The outcome: claims (each with value, target and verdict), the ``--json`` summary, the
        figure's path, the ids of every run used, and the results and measurements themselves.
    """
    exp, config = experiment_config(name, preset, overrides or {})
    start = time.perf_counter()
    store = Store(out)
    ctx = RunContext(store=store, force=force)
    results = exp.run(config, ctx)
    measurements = exp.measure(config, results)
    claims = exp.claims(config, measurements)
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
        results=results,
        measurements=measurements,
    )
    store.write_experiment(
        outcome.as_json() | {"config": cfg}, key, wall_s=time.perf_counter() - start
    )
    return outcome
