"""Write docs/claims/NAME.md from each experiment's declarations and measured values, and the
generated blocks of README.md and docs/claims.md (the experiments table, the counts, the retired
claims, the thin margins: :func:`attndyn.claims.pages.generated`).

    python scripts/claims_pages.py                      # every page, from the stored values
    python scripts/claims_pages.py --check              # exit 1 if a page or a record is stale
    python scripts/claims_pages.py --measure aim-solvable --presets tiny small
        # run the presets (and every control at tiny), store the values in
        # docs/claims/measured/aim-solvable.json, then write the page
    python scripts/claims_pages.py --measure aim-heads --presets --control-presets small
        # run at small each control that names a claim tiny does not make (issue 49 item 3)

The page format is :func:`attndyn.claims.pages.render`; tests/test_claims_pages.py fails when a
committed page differs from what this script writes or when a record is stale.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attndyn.claims import experiment_names, get_experiment
from attndyn.claims.pages import fill, generated, measured_entry, render, stale
from attndyn.claims.runner import run_experiment

DOCS = Path(__file__).resolve().parents[1] / "docs" / "claims"
MEASURED = DOCS / "measured"


def load_measured(name: str) -> dict:
    path = MEASURED / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def write_page(name: str) -> Path:
    path = DOCS / f"{name}.md"
    path.write_text(render(get_experiment(name), load_measured(name)))
    return path


def controls_to_run(name: str, preset: str) -> list[str]:
    """The controls to run at ``preset``: every control at tiny; at another preset those that
    name a claim tiny does not make (a claim of that preset only, e.g. a slope over more d)."""
    from attndyn.claims.runner import experiment_config

    exp = get_experiment(name)
    if preset == "tiny":
        return list(exp.controls)
    if preset not in exp.presets:
        return []
    at_tiny = experiment_config(name, "tiny", {})[1]
    at_preset = experiment_config(name, preset, {})[1]
    return [
        c for c in exp.controls if set(exp.must_fail(c, at_preset)) - set(exp.must_fail(c, at_tiny))
    ]


def measure(name: str, presets: list[str], control_presets: list[str]) -> None:
    """Run ``presets`` and the controls of ``control_presets`` (:func:`controls_to_run`) in a
    fresh results folder, so the wall times are those of computing the runs, and store the
    outcomes."""
    exp = get_experiment(name)
    out = Path(tempfile.mkdtemp(prefix=f"attndyn-{name}-"))
    record = load_measured(name)
    commit = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=False
    ).stdout.strip()
    today = datetime.date.today().isoformat()
    jobs: list[tuple[str, str | None]] = [(p, None) for p in presets]
    jobs += [(p, c) for p in control_presets for c in controls_to_run(name, p)]
    for preset, control in jobs:
        start = time.perf_counter()
        outcome = run_experiment(name, preset, out=out, control=control)
        key = preset if control is None else f"{preset}/{control}"
        record[key] = measured_entry(outcome, time.perf_counter() - start, today, commit)
        print(f"{name} {key}: {outcome.verdict} ({record[key]['wall_s']} s)", file=sys.stderr)
    MEASURED.mkdir(parents=True, exist_ok=True)
    # a record of a control the experiment no longer declares describes nothing that exists
    gone = [k for k in record if "/" in k and k.split("/", 1)[1] not in exp.controls]
    for key in gone:
        del record[key]
        print(f"{name} {key}: dropped (no such control)", file=sys.stderr)
    ordered = dict(sorted(record.items()))
    (MEASURED / f"{name}.json").write_text(json.dumps(ordered, indent=1, ensure_ascii=False) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if anything is stale")
    parser.add_argument("--measure", nargs="*", metavar="NAME", help="experiments to run")
    parser.add_argument("--presets", nargs="*", default=["tiny"], help="presets to run")
    parser.add_argument("--no-controls", action="store_true", help="run no control")
    parser.add_argument(
        "--control-presets", nargs="*", default=["tiny"], help="presets to run controls at"
    )
    args = parser.parse_args()
    names = experiment_names()
    if args.measure is not None:
        for name in args.measure or names:
            measure(name, args.presets, [] if args.no_controls else args.control_presets)
    bad = []
    for name in names:
        problems = stale(get_experiment(name), load_measured(name))
        bad += [f"{name}: {p}" for p in problems]
        page = DOCS / f"{name}.md"
        text = render(get_experiment(name), load_measured(name))
        if args.check:
            if not page.is_file() or page.read_text() != text:
                bad.append(f"{name}: docs/claims/{name}.md differs from its declarations")
        else:
            page.write_text(text)
    for path, blocks in generated(DOCS.parents[1]).items():
        text = path.read_text()
        new = fill(text, blocks)
        if args.check:
            if new != text:
                bad.append(f"{path.name}: a generated block differs from the records")
        elif new != text:
            path.write_text(new)
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
