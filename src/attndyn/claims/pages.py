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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from attndyn.claims.base import Experiment
from attndyn.claims.config import base_fields
from attndyn.claims.spec import Evidence, Measured
from attndyn.runs.estimate import duration

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


def _retired_section(exp: Experiment) -> list[str]:
    """The claims as they stood when they failed, before they were changed (issue 49)."""
    if not exp.retired:
        return []
    lines = [
        "## Retired claims",
        "",
        "Each claim below failed as first declared and was then changed; its old statement, "
        "target and failing value stay here ([docs/claims.md](../claims.md#retired-claims)).",
        "",
        "| retired claim | statement then | target then | failed | retired | why it changed "
        "| now |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in exp.retired:
        lines.append(
            f"| `{r.name}` | {_cell(r.statement)} | {_cell(r.target)} | {_cell(r.failed)} | "
            f"{r.retired} | {_cell(r.why)} | {_cell(r.now)} |"
        )
    return [*lines, ""]


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
    weak = [spec for spec in type(exp).claims if spec.weak]
    if weak:
        lines += ["", "**Not yet strong** ([docs/claims.md](../claims.md#claim-status)):", ""]
        lines += [f"- `{spec.named('<…>')}`: {_cell(spec.weak)}" for spec in weak]
    lines += ["", "## Controls", ""]
    lines += ["| control | overrides | what it makes wrong |", "|---|---|---|"]
    for name, control in exp.controls.items():
        lines.append(f"| `{name}` | {_overrides(control.overrides)} | {_cell(control.reason)} |")
    lines += ["", "## Presets", "", "| preset | overrides | what it can resolve |", "|---|---|---|"]
    for name in PRESET_ORDER:
        note = exp.preset_notes.get(name, "")
        lines.append(f"| `{name}` | {_overrides(exp.presets[name])} | {_cell(note)} |")
    lines += ["", *_config_section(exp), ""]
    lines += _retired_section(exp)
    if exp.notes:
        lines += ["## Notes", "", exp.notes.strip(), ""]
    lines += _measured_section(measured)
    return "\n".join(lines).rstrip() + "\n"


# --- the words about every experiment, generated from the records (issue 49 item 6) ----------

BLOCK = "<!-- generated:{name} (scripts/claims_pages.py; do not edit) -->"
END = "<!-- /generated:{name} -->"


def fill(text: str, blocks: Mapping[str, str]) -> str:
    """``text`` with each ``<!-- generated:NAME … -->`` … ``<!-- /generated:NAME -->`` block
    replaced by ``blocks[NAME]``; a block ``text`` does not mark is an error (ValueError)."""
    for name, content in blocks.items():
        start, end = BLOCK.format(name=name), END.format(name=name)
        head, sep, rest = text.partition(start)
        _, sep2, tail = rest.partition(end)
        if not (sep and sep2):
            raise ValueError(f"no generated block {name!r} in the text")
        text = f"{head}{start}\n{content.rstrip()}\n{end}{tail}"
    return text


def _verdict_cell(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "not measured"
    return f"{entry['verdict']} ({duration(entry['wall_s'])}, {entry['date']})"


def experiments_table(
    experiments: Sequence[Experiment],
    measured: Mapping[str, Mapping[str, Mapping[str, Any]]],
    estimates: Mapping[str, Mapping[str, Any]],
) -> str:
    """The README's experiments table: each experiment's description, its tiny and small
    verdicts as measured at its current claims (docs/claims/measured), and its paper preset's
    measured verdict or the dry run's estimate on two cores (docs/paper-presets.json)."""
    lines = [
        "| name | reproduces | tiny, small (measured at the current claims) | paper preset |",
        "|---|---|---|---|",
    ]
    for exp in experiments:
        record = measured.get(exp.name, {})
        runs = (
            f"tiny {_verdict_cell(record.get('tiny'))}; small {_verdict_cell(record.get('small'))}"
        )
        paper = record.get("paper")
        if paper is not None:
            cell = f"ran {duration(paper['wall_s'])} ({paper['date']}): {paper['verdict']}"
        elif exp.name in estimates and "seconds" in estimates[exp.name]:
            est = estimates[exp.name]
            cell = f"not run at the current claims; est. {duration(est['seconds'])} on two cores"
            if est.get("not_estimated"):
                cell += f" ({est['not_estimated']} runs not estimated)"
        else:
            cell = "not run at the current claims; no estimate"
        page = f"[`{exp.name}`](docs/claims/{exp.name}.md)"
        lines.append(f"| {page} | {_cell(exp.description)} | {runs} | {cell} |")
    return "\n".join(lines)


def paper_verdicts_table(
    experiments: Sequence[Experiment], measured: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> str:
    """docs/paper-presets.md's verdicts: each paper preset's measured run at the current claims
    (its claims' values are on the experiment's page), or that none is stored."""
    lines = ["| experiment | paper preset at the current claims |", "|---|---|"]
    ran = 0
    for exp in experiments:
        entry = measured.get(exp.name, {}).get("paper")
        if entry is None:
            cell = "no record at the current claims (see the log below and the estimate above)"
        else:
            ran += 1
            passed = sum(c["passed"] for c in entry["claims"])
            cell = (f"**{entry['verdict']}** ({passed} of {len(entry['claims'])} claims; "
                    f"{duration(entry['wall_s'])} on two cores, {entry['date']}, "
                    f"{entry['commit']})")  # fmt: skip
        lines.append(f"| [{exp.name}](claims/{exp.name}.md) | {cell} |")
    return (
        f"{ran} of {len(experiments)} paper presets have a record at their current claims.\n\n"
        + "\n".join(lines)
    )


def counts_table(experiments: Sequence[Experiment]) -> str:
    """docs/claims.md's list of experiments: the claims each declares at each preset, its
    controls and its retired claims, from the declarations."""
    from attndyn.claims.runner import experiment_config

    lines = [
        "| experiment | claims at tiny | small | paper | controls | retired claims |",
        "|---|---|---|---|---|---|",
    ]
    totals = [0, 0, 0, 0, 0]
    for exp in experiments:
        counts = []
        for preset in PRESET_ORDER:
            if preset in exp.presets:
                counts.append(len(exp.claim_names(experiment_config(exp.name, preset, {})[1])))
            else:
                counts.append(0)
        row = [*counts, len(exp.controls), len(exp.retired)]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        cells = " | ".join(str(c) for c in row)
        lines.append(f"| [{exp.name}](claims/{exp.name}.md) | {cells} |")
    lines.append(f"| **{len(experiments)} experiments** | " + " | ".join(
        f"**{t}**" for t in totals) + " |")  # fmt: skip
    return "\n".join(lines)


def retired_table(experiments: Sequence[Experiment]) -> str:
    """docs/claims.md's index of retired claims (the records are on each experiment's page)."""
    lines = [
        "| experiment | retired claim | target then | failed | retired | now |",
        "|---|---|---|---|---|---|",
    ]
    for exp in experiments:
        for r in exp.retired:
            lines.append(
                f"| [{exp.name}](claims/{exp.name}.md#retired-claims) | `{r.name}` | "
                f"{_cell(r.target)} | {_cell(r.failed)} | {r.retired} | {_cell(r.now)} |"
            )
    if len(lines) == 2:
        return "No claim has been retired."
    return "\n".join(lines)


def margins_table(record: Mapping[str, Any]) -> str:
    """docs/claims.md's list of the tiny presets whose margin is under 3 standard errors (CI
    re-draws only the thick ones, at the commit's fresh offset)."""
    from attndyn.claims.redraw import MIN_MARGIN, margins

    tiny = [m for m in margins(record) if m.preset == "tiny"]
    thin = [m for m in tiny if not m.thick]
    rows = record["rows"]
    dates = sorted({r["date"] for r in rows}) or ["—"]
    commits = sorted({r["commit"][:7] for r in rows})
    offsets = sorted({r["seed"] for r in rows if r["seed"] is not None})
    lines = [
        f"Measured {dates[0]}"
        + (f" to {dates[-1]}" if len(dates) > 1 else "")
        + f" at {', '.join(commits)}, seed offsets {', '.join(str(o) for o in offsets)} "
        "(docs/claims/redraw.json, each row with its commit and date): "
        f"**{len(tiny) - len(thin)} of {len(tiny)}** stochastic tiny presets have a margin of at "
        f"least {MIN_MARGIN:g} standard errors on every claim and are re-drawn in CI at the "
        f"commit's fresh offset; the {len(thin)} below are not, until a larger design widens "
        "their margin.",
        "",
        "| experiment | smallest margin (SE) | claim | at seed offset |",
        "|---|---|---|---|",
    ]
    for m in thin:
        value = "no interval" if math.isnan(m.value) else "failed" if m.value == -math.inf \
            else f"{m.value:.2f}"  # fmt: skip
        seed = "—" if m.seed is None else str(m.seed)
        lines.append(f"| [{m.experiment}](claims/{m.experiment}.md) | {value} | `{m.claim}` | "
                     f"{seed} |")  # fmt: skip
    return "\n".join(lines)


def generated(root: Path) -> dict[Path, dict[str, str]]:
    """Every generated block of a source checkout at ``root``: {file: {block: markdown}}, from
    the declarations, docs/claims/measured/*.json, docs/claims/redraw.json and
    docs/paper-presets.json. ``scripts/claims_pages.py`` writes them; a test fails when a
    committed file differs."""
    from attndyn.claims import experiment_names, get_experiment

    exps = [get_experiment(n) for n in experiment_names()]
    measured_dir = root / "docs" / "claims" / "measured"
    measured = {
        e.name: json.loads(p.read_text())
        for e in exps
        if (p := measured_dir / f"{e.name}.json").is_file()
    }
    plans = json.loads((root / "docs" / "paper-presets.json").read_text())
    estimates = {p["experiment"]: p for p in plans}
    redraw = json.loads((root / "docs" / "claims" / "redraw.json").read_text())
    return {
        root / "README.md": {"experiments": experiments_table(exps, measured, estimates)},
        root / "docs" / "paper-presets.md": {
            "paper-verdicts": paper_verdicts_table(exps, measured)
        },
        root / "docs" / "claims.md": {
            "experiments": counts_table(exps),
            "retired": retired_table(exps),
            "thin-margins": margins_table(redraw),
            "status": status_table(exps, measured, redraw),
        },
    }


def status_rows(
    exp: Experiment,
    measured: Mapping[str, Mapping[str, Any]],
    redraw: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """Each claim the experiment declares at any preset, with its status (docs/claims.md, "Claim
    status"): ``weak`` (its declaration says why), ``unrefuted`` (no control has failed it by
    value at a measured preset), ``thin`` (a re-drawn tiny margin under 3 standard errors), or
    ``strong``; the presets, the controls that refuted it and its smallest tiny margin."""
    from attndyn.claims.redraw import MIN_MARGIN, claim_margin
    from attndyn.claims.runner import experiment_config

    presets: dict[str, list[str]] = {}
    specs: dict[str, Any] = {}  # each claim's declaration, read from the declared entries
    for preset in PRESET_ORDER:
        if preset in exp.presets:
            declared = exp.declared_claims(experiment_config(exp.name, preset, {})[1])
            for spec, _, name in declared.entries:
                presets.setdefault(name, []).append(preset)
                specs[name] = spec
    refuted: dict[str, set[str]] = {}
    for entry in measured.values():
        if (
            not entry.get("control")
            or entry["verdict"] == "control-inconclusive"
            and any(not p["passed"] for p in entry["preconditions"])
        ):
            continue  # no control, or an invalid run: no evidence either way
        by_name = {c["name"]: c for c in entry["claims"]}
        for name in entry["must_fail"]:
            c = by_name.get(name, {})
            # a record since 2026-12-07 says per claim; before, the verdict says for all
            if c.get("refuted", entry["verdict"] == "control-failed-as-expected"):
                refuted.setdefault(name, set()).add(entry["control"])
    tiny_rows = [r for r in (redraw or {}).get("rows", [])
                 if r["experiment"] == exp.name and r["preset"] == "tiny"]  # fmt: skip
    measured_names = {c["name"] for r in tiny_rows for c in r["claims"]}
    margins = {n: claim_margin(tiny_rows, n) for n in measured_names}
    rows = []
    for name, where in presets.items():
        spec = specs[name]
        margin = margins.get(name)
        if spec.weak:
            status = "weak"
        elif not refuted.get(name):
            status = "unrefuted"
        elif margin is not None and not margin >= MIN_MARGIN:  # NaN: no interval, values vary
            status = "thin"
        else:
            status = "strong"
        rows.append({
            "experiment": exp.name, "claim": name, "presets": where, "status": status,
            "refuted_by": sorted(refuted.get(name, ())), "margin": margin,
            "weak": spec.weak,
        })  # fmt: skip
    return rows


def status_table(
    experiments: Sequence[Experiment],
    measured: Mapping[str, Mapping[str, Mapping[str, Any]]],
    redraw: Mapping[str, Any],
) -> str:
    """docs/claims.md's claim status: a count per status, then every claim that is not strong
    with the reason."""
    rows = [r for e in experiments for r in status_rows(e, measured.get(e.name, {}), redraw)]
    count = {s: sum(r["status"] == s for r in rows) for s in ("strong", "thin", "unrefuted",
                                                                "weak")}  # fmt: skip
    lines = [
        f"**{len(rows)} claims**: {count['strong']} strong, {count['thin']} thin, "
        f"{count['unrefuted']} not yet failed by value by any control run, {count['weak']} weak.",
        "",
        "| experiment | claim | presets | status | controls that failed it by value | "
        "tiny margin (SE) | why not strong |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["status"] == "strong":
            continue
        m = r["margin"]
        margin = "—" if m is None else "no interval" if math.isnan(m) else f"{m:.2f}"
        why = {
            "weak": r["weak"],
            "unrefuted": "no control run at a preset that makes it has failed it by value",
            "thin": "its re-drawn interval lies within 3 SE of the target",
        }[r["status"]]
        lines.append(
            f"| [{r['experiment']}](claims/{r['experiment']}.md) | `{r['claim']}` | "
            f"{', '.join(r['presets'])} | {r['status']} | "
            f"{', '.join(f'`{c}`' for c in r['refuted_by']) or '—'} | {margin} | {_cell(why)} |"
        )
    return "\n".join(lines)
