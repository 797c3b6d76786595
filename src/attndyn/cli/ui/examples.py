"""Examples shown at the end of each command's ``--help`` (``attndyn.cli.main`` attaches
them). Each is a command line and what it does; tests/test_cli_help.py runs every one (or
checks it parses and validates, for those that compute) against a scratch results folder.
``RUN_ID`` stands for any unique prefix of a stored run's id (``attndyn runs``)."""

from __future__ import annotations

EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "simulate": [
        ("attndyn simulate aim --set d=128 --seeds 8", "8 seeds of tied AIM at d = 128"),
        (
            "attndyn simulate aim --set d=128 --set param=direct --dry-run",
            "steps, memory and estimated time; runs nothing",
        ),
        ("attndyn simulate circuits --set param=FACO --seeds 2 --json", "a JSON summary"),
    ],
    "predict": [
        ("attndyn predict aim --set d=128 --set method=matrix-flow", "the matrix-level flow"),
        ("attndyn predict circuits --set ratio=10 --json", "the reduced QK/OV flow, as JSON"),
    ],
    "list": [("attndyn list", "families and experiments")],
    "describe": [
        ("attndyn describe aim", "every config field of a family and of its theory"),
        ("attndyn describe aim-solvable", "an experiment's presets, controls and claims"),
        ("attndyn describe aim-solvable --json", "the same as JSON"),
    ],
    "cite": [
        ("attndyn cite", "BibTeX for attndyn and JAX"),
        ("attndyn cite aim-parameterization", "and for the paper the experiment reproduces"),
    ],
    "run": [
        ("attndyn run aim-solvable --preset tiny", "seconds; claims with 95 % CIs"),
        ("attndyn run aim-solvable --preset small --strict", "exit 1 unless every claim passes"),
        (
            "attndyn run aim-solvable --preset tiny --control time-2x --strict",
            "a wrong model whose claims must fail",
        ),
    ],
    "demo": [("attndyn demo", "the showcase run"), ("attndyn demo --out demo-results", "")],
    "query": [
        (
            'attndyn query "SELECT family, kind, count(*) AS n FROM runs GROUP BY ALL"',
            "runs per family",
        ),
        (
            'attndyn query "SELECT name, avg(value) AS mean FROM observables GROUP BY name" --csv',
            "CSV",
        ),
    ],
    "sweep": [
        ("attndyn sweep dims.toml --dry-run", "dims.toml: docs/sweeps.md; runs, time, memory"),
        ("attndyn sweep dims.toml --workers 2", "run what is not stored yet"),
    ],
    "runs": [
        ("attndyn runs", "every stored run; the config fields that vary"),
        ('attndyn runs --family aim --where "d >= 32"', "typed config columns"),
        ("attndyn runs --json", "every column"),
        ("attndyn runs --check", "damaged or foreign files"),
    ],
    "export": [
        ("attndyn export --format parquet --output runs.parquet", "runs × observables"),
        ("attndyn export --family aim --where \"name = 'loss'\"", "one family, one observable"),
    ],
    "report": [
        ("attndyn report", "write <results>/report/index.html (opens from disk)"),
        ("attndyn report --output site", "into ./site (--open: then open it in a browser)"),
    ],
    "show": [
        ("attndyn show RUN_ID", "config, seeds, diverged seeds, final observables"),
        ("attndyn show RUN_ID --json", ""),
    ],
    "summary": [
        ("attndyn summary", "runs by family and experiment, verdicts, problems"),
        ("attndyn summary --json", ""),
    ],
    "bench": [
        ("attndyn bench", "the benchmarks the families declare"),
        ("attndyn bench --json", "the same list as JSON (name, family, description)"),
        ("attndyn bench --name aim --quick", "a quick run of one"),
    ],
}


def epilog(command: str, families: list[str] | None = None) -> str:
    """The help's closing text for ``command``: the families (for simulate and predict) and
    the examples, one per line (rich markup escaped)."""
    from rich.markup import escape

    lines = []
    if families is not None:
        lines += [f"Families: {', '.join(families)}. "
                  "'attndyn describe FAMILY' lists a family's fields.", ""]  # fmt: skip
    examples = EXAMPLES.get(command, [])
    if examples:
        lines.append("Examples:")
        for line, what in examples:
            lines += [f"  # {what}", f"  {line}"] if what else [f"  {line}"]
        if any("RUN_ID" in c for c, _ in examples):
            lines.append("  (RUN_ID: any unique prefix of a run id from 'attndyn runs')")
    return escape("\n".join(lines))
