"""``attndyn describe NAME``: what a family or an experiment is, before running it.

A family: its summary, observables and every config field (type, default, allowed range,
description), and its theory's own fields. An experiment: its description and paper (from its
module docstring), presets, controls, config fields, and each claim it declares at each preset
with what it means, read from the claims table of its page docs/claims/NAME.md (the one place
that text lives) when the page is there, else from its module docstring.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from attndyn.claims.papers import paper
from attndyn.core.suggest import did_you_mean
from attndyn.errors import InputError

CLAIMS_DOCS = Path(__file__).resolve().parents[4] / "docs" / "claims"
"""The claims pages of a source checkout (absent from an installed wheel)."""

_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
_LENGTHS = (("min_length", "length >="), ("max_length", "length <="))


def type_name(annotation: Any) -> str:
    """``int``, ``float | None``, ``list[int]``, ``tuple[float, ...]``, ``str`` (for a Literal of
    strings), …"""
    origin = get_origin(annotation)
    if origin is Literal:
        return " | ".join(sorted({type(a).__name__ for a in get_args(annotation)}))
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in get_args(annotation))
    if annotation is type(None):
        return "None"
    if annotation is Ellipsis:
        return "..."
    if origin is not None:
        args = ", ".join(type_name(a) for a in get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _choices(annotation: Any) -> list[Any]:
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    if get_origin(annotation) in (Union, types.UnionType):
        return [c for a in get_args(annotation) for c in _choices(a)]
    return []


def allowed_range(field) -> str:
    """The constraints pydantic checks on ``field``: bounds, lengths, Literal values; ``""``
    when none is declared (a validator's own checks are in its error message)."""
    parts = []
    choices = _choices(field.annotation)
    if choices:
        parts.append("one of " + ", ".join(str(c) for c in choices))
    for meta in field.metadata:
        for attr, op in (*_BOUNDS, *_LENGTHS):
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{op} {value:g}" if isinstance(value, float) else f"{op} {value}")
    return ", ".join(parts)


def _default(field) -> Any:
    """The field's default; a nested config (an experiment's family base) as its fields."""
    if field.default_factory is not None:
        value = field.default_factory()
    else:
        value = "required" if field.default is PydanticUndefined else field.default
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def _inherited_description(config_cls: type[BaseModel], name: str) -> str:
    """The description of a field of the same name in a base class (a subclass that narrows
    ``seeds`` keeps its meaning)."""
    for base in config_cls.__mro__[1:]:
        field = getattr(base, "model_fields", {}).get(name)
        if field is not None and field.description:
            return field.description
    return ""


def fields(config_cls: type[BaseModel]) -> list[dict[str, Any]]:
    """One dict per config field: name, type, default, range, description."""
    return [
        {
            "name": name,
            "type": type_name(field.annotation),
            "default": _default(field),
            "range": allowed_range(field),
            "description": field.description or _inherited_description(config_cls, name),
        }
        for name, field in config_cls.model_fields.items()
    ]


def first_paragraph(doc: str | None) -> str:
    return " ".join(inspect.cleandoc(doc or "").split("\n\n")[0].split())


def describe_family(name: str) -> dict[str, Any]:
    """A family's summary, observables, config fields and its theory's own fields."""
    from attndyn.models import get_family, get_theory

    family = get_family(name)
    own = fields(family.Config)
    out: dict[str, Any] = {
        "kind": "family",
        "name": name,
        "description": first_paragraph(family.__doc__),
        "observables": list(family.SUMMARY),
        "fields": own,
        "theory": None,
    }
    if family.THEORY:
        theory = get_theory(name)
        names = {f["name"] for f in own}
        out["theory"] = {
            "description": first_paragraph(theory.__doc__),
            "observables": list(theory.SUMMARY),
            "fields": [f for f in fields(theory.Config) if f["name"] not in names],
            "shared_fields": [n for n in theory.Config.model_fields if n in names],
        }
    return out


def _pattern(text: str) -> re.Pattern:
    """A claim name as written on its page (``sgd-tracks-exact-d<d>``, ``focus-c``,
    ``*-ratio-monotone``, ``restart-d{d}``) as a regular expression for the names it stands
    for."""
    out = re.escape(text)
    out = re.sub(r"\\<[^>]*\\>|<[^>]*>|\\\{[^}]*\\\}|\\\*", ".+", out)
    out = re.sub(r"-[a-z]$", "-.+", out)  # a per-item suffix: focus-c, plateau-reached-m
    return re.compile(f"{out}$")


def _clean(cell: str) -> str:
    return " ".join(cell.replace("\\|", "|").replace("`", "").split())


def claims_table(name: str, doc: str = "") -> list[tuple[list[str], dict[str, str]]]:
    """(names as written, {statistic, target, reason}) per row of the claims tables of
    docs/claims/NAME.md; without that page, ``- ``name``: text`` bullets of ``doc``."""
    page = CLAIMS_DOCS / f"{name}.md"
    rows: list[tuple[list[str], dict[str, str]]] = []
    if page.is_file():
        header: list[str] | None = None
        for line in page.read_text().splitlines():
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if header is None:
                header = [c.split()[0].lower() if c else "" for c in cells]
                if header[:1] != ["claim"] or not {"statistic", "target"} & set(header):
                    header = []
            elif header and not set(line) <= set("|-: "):
                names = re.findall(r"`([^`]+)`", cells[0])
                meaning = {h: _clean(c) for h, c in zip(header[1:], cells[1:], strict=False)}
                rows.append((names, meaning))
        return rows
    for found in re.finditer(r"^\s*[-*] ``([^`]+)``[^:]*:\s*(.+?)(?=^\s*[-*] ``|\n\n|\Z)", doc,
                             re.M | re.S):  # fmt: skip
        rows.append(([found.group(1)], {"meaning": _clean(found.group(2))}))
    return rows


def claim_meaning(claim: str, table) -> dict[str, str]:
    """The row of ``table`` (:func:`claims_table`) that names ``claim``: exactly, else by
    pattern; ``{}`` if none does."""
    for names, meaning in table:
        if claim in names:
            return meaning
    for names, meaning in table:
        if any(_pattern(n).match(claim) for n in names):
            return meaning
    return {}


def _declared_meaning(spec, key) -> dict[str, str]:
    """What a :class:`~attndyn.claims.spec.ClaimSpec` says about its claim (entry ``key``)."""
    controls = ", ".join(c for c in spec.control_names() if spec.failed_by(c, key))
    return {
        "statement": spec.statement_for(key),
        "statistic": spec.statistic,
        "target": spec.target.text(),
        "reason": spec.reason,
        "seeds": str(spec.seeds),
        **({"controls": controls} if controls else {}),
        **({"not yet strong": spec.weak} if spec.weak else {}),
    }


def describe_experiment(name: str) -> dict[str, Any]:
    """An experiment's description, paper, presets, controls, fields and declared claims."""
    from attndyn.claims import get_experiment
    from attndyn.claims.runner import PRESETS, experiment_config

    exp = get_experiment(name)
    doc = sys.modules[type(exp).__module__].__doc__ or ""
    table = claims_table(name, doc)
    claims: dict[str, dict[str, Any]] = {}
    specs = type(exp).claims
    must_fail: dict[str, dict[str, None]] = {c: {} for c in exp.controls}
    for preset in (p for p in PRESETS if p in exp.presets):
        _, config = experiment_config(name, preset, {})
        for c in exp.controls:
            must_fail[c].update(dict.fromkeys(exp.must_fail(c, config)))
        declared = {spec.named(k): (spec, k) for spec in specs for k in spec.keys(config)}
        for claim in exp.claim_names(config):
            if claim in declared:  # declared once (attndyn.claims.spec): read the declaration
                meaning = _declared_meaning(*declared[claim])
            else:
                meaning = claim_meaning(claim, table)
            entry = claims.setdefault(claim, {"name": claim, "presets": [], **meaning})
            entry["presets"].append(preset)
    controls = [
        {
            "name": c,
            "overrides": ctl.overrides,
            "breaks": ctl.reason,
            "must_fail": list(must_fail[c]),
        }
        for c, ctl in exp.controls.items()
    ]
    page = CLAIMS_DOCS / f"{name}.md"
    return {
        "kind": "experiment",
        "name": name,
        "description": exp.description,
        "paper": paper(doc),
        "deterministic": bool(exp.deterministic),
        "page": f"docs/claims/{name}.md" if page.is_file() else None,
        "presets": {p: exp.presets[p] for p in PRESETS if p in exp.presets},
        "controls": controls,
        "claims": list(claims.values()),
        "retired": [r.as_dict() for r in exp.retired],
        "fields": fields(exp.Config),
    }


def describe(name: str) -> dict[str, Any]:
    """A family's or an experiment's description (InputError naming both lists if neither)."""
    from attndyn.claims import experiment_names
    from attndyn.models import family_names

    if name in family_names():
        return describe_family(name)
    if name in experiment_names():
        return describe_experiment(name)
    known = [*family_names(), *experiment_names()]
    raise InputError(
        f"unknown family or experiment {name!r}{did_you_mean(name, known)}; families: "
        f"{', '.join(family_names())}; experiments: attndyn list"
    )


MISSING = "—"
"""The one mark of a missing value in every table the CLI prints."""


def shown(value: Any) -> str:
    """A value as a table shows it: ``—`` for None or an empty string."""
    if value is None or value == "":
        return MISSING
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _fields_table(title: str, rows: list[dict[str, Any]]):
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("field", no_wrap=True)
    for col in ("type", "default", "allowed", "description"):
        table.add_column(col, overflow="fold", ratio=1 if col == "description" else None)
    for f in rows:
        default = "None" if f["default"] is None else f["default"]  # a value, not a missing one
        cells = (f["type"], default, f["range"], f["description"])
        table.add_row(f["name"], *[escape(shown(c)) for c in cells])
    return table


def render(info: dict[str, Any], console) -> None:
    """Print :func:`describe`'s answer for a reader."""
    from rich.markup import escape
    from rich.table import Table

    def say(text: str) -> None:
        console.print(escape(text), highlight=False)

    name = info["name"]
    if info["kind"] == "family":
        say(f"family {name}: {info['description']}")
        say(f"observables (final values shown by simulate): {', '.join(info['observables'])}")
        console.print(_fields_table(f"config fields (attndyn simulate {name} --set FIELD=VALUE)",
                                    info["fields"]))  # fmt: skip
        theory = info["theory"]
        if theory is None:
            say(f"no theory: attndyn predict {name} is refused")
            return
        say(f"theory (attndyn predict {name}): {theory['description']}")
        say(f"it reads the simulator's fields {', '.join(theory['shared_fields'])}")
        console.print(_fields_table("the theory's own fields", theory["fields"]))
        return
    say(f"experiment {name}: {info['description']}")
    say(f"paper: {info['paper'] or MISSING}")
    if info["page"]:
        say(f"claims, targets and reasons: {info['page']}")
    if info["deterministic"]:
        say("deterministic: seed and seeds are recorded but change nothing")
    presets = Table(title="presets (attndyn run NAME --preset P)", title_justify="left")
    presets.add_column("preset", no_wrap=True)
    presets.add_column("overrides of the config defaults", ratio=1, overflow="fold")
    for preset, overrides in info["presets"].items():
        text = ", ".join(f"{k}={v}" for k, v in overrides.items()) or "(the defaults)"
        presets.add_row(preset, escape(text))
    console.print(presets)
    controls = Table(title="negative controls (--control C): claims that must fail",
                     title_justify="left")  # fmt: skip
    for col in ("control", "overrides", "what it breaks", "must fail"):
        # names whole, one a line: a claim name folded reads as another claim
        controls.add_column(col, no_wrap=col in ("control", "must fail"), overflow="fold")
    for c in info["controls"]:
        overrides = ", ".join(f"{k}={v}" for k, v in c["overrides"].items())
        controls.add_row(c["name"], escape(overrides), escape(c["breaks"]),
                         "\n".join(c["must_fail"]))  # fmt: skip
    console.print(controls)
    claims = Table(title="claims (checked after the run; value with 95 % CI vs target)",
                   title_justify="left")  # fmt: skip
    claims.add_column("claim", no_wrap=True)
    claims.add_column("presets", no_wrap=True)
    claims.add_column("what it means", ratio=1, overflow="fold")
    for c in info["claims"]:
        meaning = "; ".join(f"{k}: {v}" for k, v in c.items() if k not in ("name", "presets"))
        claims.add_row(c["name"], ", ".join(c["presets"]), escape(meaning) or MISSING)
    console.print(claims)
    if info["retired"]:
        retired = Table(title="retired claims (failed as first declared, then changed)",
                        title_justify="left")  # fmt: skip
        retired.add_column("retired claim", no_wrap=True)
        retired.add_column("what it said, how it failed, what replaced it", ratio=1,
                           overflow="fold")  # fmt: skip
        for r in info["retired"]:
            text = (f"{r['statement']} (target {r['target']}); failed: {r['failed']}; "
                    f"retired {r['retired']}: {r['why']}; now: {r['now']}")  # fmt: skip
            retired.add_row(r["name"], escape(text))
        console.print(retired)
    console.print(_fields_table(f"config fields (attndyn run {name} --set FIELD=VALUE)",
                                info["fields"]))  # fmt: skip
