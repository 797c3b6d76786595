"""Every preset's verdict at re-drawn seeds (docs/claims.md, "Seeds"; issue 28).

    python scripts/seed_offsets.py [--presets tiny small] [--offsets 0 1000 2000 | --fresh]
                                   [--out DIR] [--record FILE] [NAME ...]

Runs each experiment's presets with the seed offset ``seed`` set to each offset (its runs then use
seeds ``offset, …, offset + seeds − 1``; an experiment's own default offset is replaced), in a
temporary results folder, and prints a Markdown table: one row per experiment, preset and offset,
with the verdict, every claim's value and interval, and the claims that failed (``--out``: one
results folder for every run, so runs stored there are read, not re-run). Exit status 1 if
any row is not ``passed``. Deterministic experiments (no ``seed`` field) run once per preset.

``--fresh``: the three offsets derived from the checked-out commit
(:func:`attndyn.claims.redraw.fresh_offsets`), for a claim that is new or changed: commit the
change, then run this, so the offsets are drawn after the change is final. ``--record FILE``:
also write every row as JSON (its commit, date, offset and each claim's value, interval, target
and margin in standard errors) into FILE, replacing the rows of the same experiment, preset and
offset and keeping the others — the record docs/claims/redraw.json, from which docs/claims.md's
list of thin margins and CI's choice of re-draw offset are read.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from attndyn.claims import experiment_names, get_experiment
from attndyn.claims.redraw import fresh_offsets, head_commit
from attndyn.claims.runner import run_experiment


def _cell(claim) -> str:
    if claim.value is None:
        return f"{claim.name} —"
    text = f"{claim.name} {claim.value:.3g}"
    if claim.ci_low == claim.value == claim.ci_high:
        return text + " (every seed equal)"
    if claim.ci_low is not None and claim.ci_high is not None:
        text += f" [{claim.ci_low:.3g}, {claim.ci_high:.3g}]"
    return text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="experiments (default: all)")
    parser.add_argument("--presets", nargs="+", default=["tiny", "small"])
    parser.add_argument("--offsets", nargs="+", type=int, default=[0, 1000, 2000])
    parser.add_argument("--fresh", action="store_true", help="offsets from the commit's hash")
    parser.add_argument("--out", help="results folder (default: a temporary one per run)")
    parser.add_argument("--record", help="write the rows as JSON to this file")
    args = parser.parse_args(argv)
    names = args.names or experiment_names()
    commit = head_commit(Path(__file__).resolve().parents[1]) or "unknown"
    if args.fresh:
        if commit == "unknown":
            parser.error("--fresh: no git checkout to derive the offsets from")
        args.offsets = fresh_offsets(commit)
    print(f"Measured {datetime.date.today()} on {platform.node()} ({platform.processor()}) at "
          f"{commit[:12]}, seed offsets {args.offsets}.\n")  # fmt: skip
    rows = []
    print("| experiment | preset | seed | verdict | claims | failed | s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    bad = 0
    for name in names:
        seeded = "seed" in get_experiment(name).Config.model_fields
        for preset in args.presets:
            for offset in args.offsets if seeded else [None]:
                overrides = {} if offset is None else {"seed": offset}
                start = time.perf_counter()
                with tempfile.TemporaryDirectory() as tmp:
                    outcome = run_experiment(name, preset, overrides, out=args.out or tmp)
                failed = [c.name for c in outcome.claims if not c.passed]
                bad += outcome.verdict != "passed"
                seconds = time.perf_counter() - start
                rows.append({
                    "experiment": name, "preset": preset, "seed": offset, "commit": commit,
                    "date": datetime.date.today().isoformat(),
                    "verdict": outcome.verdict, "seconds": round(seconds, 1),
                    "claims": [c.as_dict() for c in outcome.claims],
                })  # fmt: skip
                print(
                    f"| {name} | {preset} | {'—' if offset is None else offset} "
                    f"| {outcome.verdict} | {'; '.join(_cell(c) for c in outcome.claims)} "
                    f"| {', '.join(failed) or '—'} | {seconds:.0f} |",
                    flush=True,
                )
    if args.record:
        path = Path(args.record)
        old = json.loads(path.read_text())["rows"] if path.is_file() else []
        new = {(r["experiment"], r["preset"], r["seed"]) for r in rows}
        kept = [r for r in old if (r["experiment"], r["preset"], r["seed"]) not in new]
        merged = sorted(kept + rows, key=lambda r: (r["experiment"], r["preset"], r["seed"] or 0))
        path.write_text(json.dumps({"rows": merged}, indent=1, ensure_ascii=False) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
