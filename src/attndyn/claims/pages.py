"""The page of an experiment (docs/claims/NAME.md), written from its declarations and its
measured values, so the two cannot drift apart (docs/claims.md).

:func:`render` takes the experiment (its claims, controls, presets, config and notes, all
declared in code) and the measured record — a dict ``{key: outcome}`` where ``key`` is a preset
(``"tiny"``) or a preset and a control (``"tiny/time-2x"``) and ``outcome`` what
:func:`measured_entry` keeps of an :class:`~attndyn.claims.runner.ExperimentOutcome` — and
returns the page's markdown. :func:`stale` says why a measured record no longer matches the
declarations (a claim added or renamed, a target changed): then the values must be measured
again (``scripts/claims_pages.py --measure``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from attndyn.claims.base import Experiment
from attndyn.claims.config import base_fields
from attndyn.claims.spec import Evidence, Measured

PRESET_ORDER = ("tiny", "small", "paper")


def measured_entry(outcome: Any, wall_s: float, when: str, commit: str) -> dict[str, Any]:
    """What a page keeps of one run of an experiment (an ``ExperimentOutcome``)."""
    record = outcome.as_json()
    return {
        "preset": record["preset"],
        "control": record["control"],
        "seed": outcome.config.get("seed"),
        "seeds": outcome.config.get("seeds"),
        "verdict": record["verdict"],
        "claims": record["claims"],
        "preconditions": record["preconditions"],
        "must_fail": list(outcome.expected_failures),
        "wall_s": round(float(wall_s), 1),
        "date": when,
        "commit": commit,
    }


def stale(exp: Experiment, measured: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Why the measured record no longer matches the declarations (empty when it does): every
    recorded run must have made exactly the claims declared at its preset, with their targets."""
    from attndyn.claims.runner import experiment_config

    problems = []
    for key, entry in measured.items():
        overrides = {k: entry[k] for k in ("seed", "seeds") if entry.get(k) is not None}
        try:
            _, config = experiment_config(exp.name, entry["preset"], overrides, entry["control"])
        except Exception as exc:  # noqa: BLE001 - a preset, control or field that is gone
            problems.append(f"{key}: its config no longer validates ({exc})")
            continue
        declared = exp.declared_claims(config)
        if [c["name"] for c in entry["claims"]] != declared.names:
            problems.append(f"{key}: measured claims {[c['name'] for c in entry['claims']]}, "
                            f"declared {declared.names}")  # fmt: skip
            continue
        for (spec, _, name), c in zip(declared.entries, entry["claims"], strict=True):
            if any(isinstance(p, Measured) for p in spec.target.params):
                continue  # a threshold from the measurements: its text is the measured one
            target = spec.target.judge(name, "", config, Evidence(0.0)).target
            if not c["target"].startswith(target):
                problems.append(
                    f"{key}: {name}'s target is now {target!r}, measured {c['target']!r}"
                )
        if entry["control"] and list(entry["must_fail"]) != list(
            exp.must_fail(entry["control"], config)
        ):
            problems.append(f"{key}: the claims the control must fail changed")
    return problems


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _num(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if x == 0 or (1e-3 <= abs(x) < 1e5):
        return f"{x:.4g}"
    return f"{x:.3e}" if math.isfinite(x) else str(x)


def _value(c: Mapping[str, Any]) -> str:
    """The value with its interval; an interval [v, v] (every seed gave v, no spread to
    estimate) is written as the exact value it is, not as a confidence interval (issue 49)."""
    if c.get("value") is not None and c.get("ci_low") == c.get("value") == c.get("ci_high"):
        return f"{_num(c['value'])} ({EXACT})"
    if c.get("ci_low") is not None or c.get("ci_high") is not None or c.get("n_seeds"):
        return f"{_num(c['value'])} [{_num(c['ci_low'])}, {_num(c['ci_high'])}]"
    return _num(c["value"])


EXACT = "every seed equal: no interval"
"""How a claim whose interval is [v, v] is written."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _overrides(values: Mapping[str, Any]) -> str:
    if not values:
        return "(the defaults)"
    return ", ".join(f"`{k}={_json(v)}`" for k, v in values.items())


def _controls_text(spec: Any) -> str:
    if isinstance(spec.controls, Mapping):
        return ", ".join(
            f"`{c}`" + (f" ({', '.join(keys)})" if keys else "")
            for c, keys in spec.controls.items()
        )
    return ", ".join(f"`{c}`" for c in spec.controls) or "—"


def _config_section(exp: Experiment) -> list[str]:
    cls = exp.Config
    nested = base_fields(cls)
    lines = ["## Config", ""]
    lines += ["| field | default | meaning |", "|---|---|---|"]
    for name, info in cls.model_fields.items():
        if name in nested:
            continue
        default = info.default if info.default_factory is None else info.default_factory()
        if isinstance(default, BaseModel):
            default = default.model_dump(mode="json")
        lines.append(f"| `{name}` | `{_json(default)}` | {_cell(info.description or '')} |")
    for name, (sub, defaults) in nested.items():
        info = cls.model_fields[name]
        lines += [
            "",
            f"`{name}`: a `{sub.__name__}` ({_cell(info.description or '')}); the fields that "
            "differ from its defaults: " + (_overrides(defaults) if defaults else "none") + ". "
            f"Set any of its fields with `--set {name}.FIELD=VALUE`.",
        ]
    return lines


def _measured_section(measured: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = ["## Measured", ""]
    if not measured:
        return [*lines, "Not measured yet.", ""]
    runs = [k for k in measured if not measured[k]["control"]]
    runs.sort(key=lambda k: PRESET_ORDER.index(k) if k in PRESET_ORDER else len(PRESET_ORDER))
    for key in runs:
        e = measured[key]
        lines += [
            f"### {key}: {e['verdict']}",
            "",
            f"{e['seeds']} seeds from seed {e['seed']}; {e['wall_s']:g} s wall on two cores; "
            f"measured {e['date']} at {e['commit']}.",
            "",
            "| claim | value [95 % CI] | target | verdict |",
            "|---|---|---|---|",
        ]
        for c in e["claims"]:
            verdict = "passed" if c["passed"] else "failed"
            lines.append(f"| `{c['name']}` | {_value(c)} | {_cell(c['target'])} | {verdict} |")
        failed = [p["text"] for p in e["preconditions"] if not p["passed"]]
        if e["preconditions"]:
            lines += [
                "",
                "Preconditions: "
                + ("all held" if not failed else "failed: " + "; ".join(failed))
                + f" ({len(e['preconditions'])}).",
            ]
        controls = [k for k in measured if measured[k]["control"] and k.startswith(f"{key}/")]
        if controls:
            lines += ["", "| control | verdict | claims it must fail: value (verdict) |"]
            lines.append("|---|---|---|")
            for ck in controls:
                ce = measured[ck]
                by_name = {c["name"]: c for c in ce["claims"]}
                must = "; ".join(
                    f"`{n}` {_value(by_name[n])} ({'passed' if by_name[n]['passed'] else 'failed'})"
                    for n in ce["must_fail"]
                    if n in by_name
                )
                lines.append(f"| `{ce['control']}` | {ce['verdict']} | {_cell(must)} |")
        lines.append("")
    return lines


def render(exp: Experiment, measured: Mapping[str, Mapping[str, Any]]) -> str:
    """The markdown page of ``exp`` with its ``measured`` record (module docstring)."""
    module = type(exp).__module__
    lines = [
        f"# {exp.name}",
        "",
        exp.description,
        "",
        f"<!-- Generated by scripts/claims_pages.py from the declarations in `{module}` and the "
        f"measured values in docs/claims/measured/{exp.name}.json. Do not edit: change the "
        "declarations, or measure again. A test fails when this page is stale. -->",
        "",
        f"Module: `{module}`. The rules every claim follows (intervals, controls, presets): "
        "[docs/claims.md](../claims.md).",
        "",
    ]
    if exp.deterministic:
        lines += [
            "Deterministic: nothing random enters; `seed` and `seeds` are recorded but change "
            "nothing.",
            "",
        ]
    else:
        lines += ["Seeds: `seed` is an offset; the runs use seeds `seed … seed + seeds − 1`.", ""]
    lines += [
        "## Claims",
        "",
        "| claim | statement | statistic | target | reason for the target | seeds ≥ "
        "| controls that must fail it |",
        "|---|---|---|---|---|---|---|",
    ]
    for spec in type(exp).claims:
        over = f" (one per entry of `{spec.over}`)" if isinstance(spec.over, str) else ""
        over = " (one per case)" if callable(spec.over) else over
        lines.append(
            f"| `{spec.named('<…>')}`{over} | {_cell(spec.statement_for('<…>'))} | "
            f"{_cell(spec.statistic)} | {_cell(spec.target.text())} | {_cell(spec.reason)} | "
            f"{spec.seeds} | {_controls_text(spec)} |"
        )
    lines += ["", "## Controls", ""]
    lines += ["| control | overrides | what it makes wrong |", "|---|---|---|"]
    for name, control in exp.controls.items():
        lines.append(f"| `{name}` | {_overrides(control.overrides)} | {_cell(control.reason)} |")
    lines += ["", "## Presets", "", "| preset | overrides | what it can resolve |", "|---|---|---|"]
    for name in PRESET_ORDER:
        note = exp.preset_notes.get(name, "")
        lines.append(f"| `{name}` | {_overrides(exp.presets[name])} | {_cell(note)} |")
    lines += ["", *_config_section(exp), ""]
    if exp.notes:
        lines += ["## Notes", "", exp.notes.strip(), ""]
    lines += _measured_section(measured)
    return "\n".join(lines).rstrip() + "\n"
