"""Write docs/paper-presets.md: every experiment's paper-preset dry run on this machine.

Runs ``attndyn run NAME --preset paper --dry-run --json`` for each experiment of
``attndyn list`` (each in its own process, with an empty results folder so that nothing counts
as stored, under ``--timeout`` seconds), and tabulates runs, steps, memory and the calibrated
time (src/attndyn/claims/dryrun.py). Usage::

    nice python scripts/paper_estimates.py [--timeout 900] [--only NAME ...]

The figures depend on the machine and on its load while the calibrations ran: the document
records both. The table replaces the part of docs/paper-presets.md between the markers
``<!-- estimates -->`` and ``<!-- /estimates -->``; the rest (the presets run) is kept.

The one-GPU column is a model, not a measurement (no GPU here): per run to compute,

    steps × max(F / (ε·P), B / (ε_m·W), i·τ)

with F, B XLA's FLOPs and bytes accessed per step (``attndyn.core.cost``, counted on this
machine's compiled program, all seeds), i the loop iterations per step (1; the flow's Runge–Kutta
steps), P = 67 TFLOP/s and W = 4.8 TB/s (NVIDIA H200 SXM datasheet: FP32 without tensor cores,
as attndyn's full-float32 matmuls run, and HBM3e), and a range from (ε, ε_m, τ) = (0.7, 0.8,
10 µs) to (0.25, 0.3, 100 µs): the fractions of peak reached and the time of one loop
iteration on XLA:GPU (its kernels' launches and the loop condition's copy to the host), which
bounds small models. Custom calls (LU, SVD) count no FLOPs, so flow runs with the Gauss–Newton
integrator are underestimated. ``scripts/gpu-check.sh`` measures the same dry runs on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "paper-presets.md"
RAW = ROOT / "docs" / "paper-presets.json"


def dry_run(name: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "attndyn", "run", name, "--preset", "paper"]
        cmd += ["--dry-run", "--json", "--out", out]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"experiment": name, "error": f"dry run did not finish in {timeout:g} s"}
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"experiment": name, "error": f"exit {proc.returncode}: {tail}", "wall_s": wall}
    plan = json.loads(proc.stdout) | {"wall_s": wall}
    for run in plan["runs"]:  # the run ids name them; the configs would make the file large
        run.pop("config", None)
    return plan


GPU = {"name": "H200 SXM", "fp32_flops": 67e12, "bandwidth": 4.8e12}
GPU_RANGE = ((0.7, 0.8, 10e-6), (0.25, 0.3, 100e-6))
"""(fraction of FP32 peak, fraction of bandwidth, seconds per loop iteration): fast, slow."""
START, END = "<!-- estimates -->", "<!-- /estimates -->"


def gpu_seconds(plan: dict, eff: float, eff_mem: float, tau: float) -> float | None:
    """The modelled one-GPU time of ``plan``'s simulations to run (module doc); None if a
    program to run has no FLOP count."""
    total = 0.0
    for run in plan.get("runs", []):  # none where the dry run failed or timed out
        if run["kind"] != "simulation" or run["stored"] or run.get("program") is None:
            continue
        prog = plan["programs"][run["program"]]
        if prog.get("flops_per_step") is None:
            return None
        share = run["seeds"] / prog["seeds"]
        per_step = max(
            prog["flops_per_step"] * share / (eff * GPU["fp32_flops"]),
            prog["bytes_per_step"] * share / (eff_mem * GPU["bandwidth"]),
            prog["iterations_per_step"] * tau,
        )
        total += run["steps"] * per_step
    return total


def gpu_cell(plan: dict) -> str:
    if not plan.get("simulation_to_run"):
        return "—"
    fast, slow = (gpu_seconds(plan, *p) for p in GPU_RANGE)
    if fast is None or slow is None:
        return "—"
    return f"{duration(fast)} – {duration(slow)}"


def duration(seconds: float) -> str:
    from attndyn.runs.estimate import duration as fmt

    return fmt(seconds)


def row(p: dict) -> str:
    from attndyn.runs.estimate import size

    if "error" in p:
        return f"| {p['experiment']} | — | — | — | — | — | — | {p['error']} |"
    runs = (
        f"{p['n_runs']} ({p['simulation_to_run']} sim, {p['theory_to_run']} theory, "
        f"{p['compute_to_run']} compute)"
    )
    notes = []
    if p["not_estimated"]:
        notes.append(f"{p['not_estimated']} not estimated")
    if not p["complete"]:
        notes.append(f"partial: run() stopped ({p['stopped'][:80]})")
    notes.append(f"dry run {duration(p['wall_s'])}")
    flops = f"{p['flops']:.3g}" if p.get("flops") else "—"
    return (
        f"| {p['experiment']} | {runs} | {p['steps']:.3g} | {flops} | {size(p['memory_bytes'])} | "
        f"{duration(p['seconds'])} ({len(p['programs'])} programs) | {gpu_cell(p)} | "
        f"{'; '.join(notes)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=200.0)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument(
        "--update", action="store_true", help="redo --only NAMEs, keep the other rows of the JSON"
    )
    args = parser.parse_args()
    from attndyn.claims import experiment_names

    names = args.only or experiment_names()
    kept = json.loads(RAW.read_text()) if args.update else []
    plans = []
    load_before = os.getloadavg()
    started = datetime.now(UTC)
    for name in names:
        print(f"{name} …", file=sys.stderr, flush=True)
        plans.append(dry_run(name, args.timeout))
        print(f"  {row(plans[-1])}", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    redone = {p["experiment"]: p for p in plans}
    plans = [redone.pop(p["experiment"], p) for p in kept] + list(redone.values())
    RAW.write_text(json.dumps(plans, indent=1, default=str) + "\n")
    total = sum(p.get("seconds", 0.0) for p in plans)
    fast, slow = (sum(gpu_seconds(p, *r) or 0.0 for p in plans) for r in GPU_RANGE)
    lines = [
        START,
        "Generated by `nice python scripts/paper_estimates.py` (raw numbers: "
        "[paper-presets.json](paper-presets.json)): for each experiment, "
        "`attndyn run NAME --preset paper --dry-run --json` with an empty results folder, so "
        "every run counts as to run (stored runs are free).",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, no GPU, "
        f"{platform.system()}; run {started:%Y-%m-%d %H:%M} UTC under `nice` (load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after). **Each time is an estimate "
        "from short calibration runs under that load** (src/attndyn/claims/dryrun.py: per "
        "program, one calibration; per run, its compile once cached, overhead and per-step time "
        "× steps); it moves with the load and is not a measurement of the run.",
        "",
        "Columns: *runs* (simulations, theory runs and experiment-computed runs to run); "
        "*steps*: optimiser steps × seeds of the runs whose steps are known; *FLOPs*: XLA's "
        "count of the simulations' compiled loops (src/attndyn/core/cost.py; LAPACK calls count "
        "0); *memory*: recorded simulation values (8 bytes each); *time*: the simulations only, "
        "on this machine. *one GPU (model)*: not a measurement (checked once, BENCHMARKS.md, "
        "2026-12-04: for aim-direct-escape at d = 45–91 the model gave 43–423 s and an H200's "
        "own dry-run calibration 151 s): steps × "
        "max(F/(ε·P), B/(ε_m·W), i·τ) from XLA's FLOPs F and bytes B per step, i loop iterations "
        f"per step, an NVIDIA {GPU['name']}'s datasheet FP32 peak P = 67 TFLOP/s (attndyn runs "
        "float32 matmuls without TF32) and bandwidth W = 4.8 TB/s, from (ε, ε_m, τ) = (0.7, "
        "0.8, 10 µs) to (0.25, 0.3, 100 µs), τ the time of one loop iteration on XLA:GPU, which "
        "bounds small models (scripts/paper_estimates.py; `scripts/gpu-check.sh` measures it). "
        "Theory runs are not timed (their cost is the ODE solver's, not a number of steps) and "
        "`compute` runs (an experiment's own model, e.g. a Newton minimiser or the "
        "fixed-attention model) cannot be estimated without running them: both are counted as "
        "*not estimated*. A *partial* row: the experiment's `run()` needs values of a run to "
        "choose the next, so the dry run stopped and lists the runs found until then. *dry run*: "
        "the wall time of the dry run itself (calibrations with each program's first compile, "
        "and the work `run()` does outside its runs).",
        "",
        "| experiment | runs | steps | FLOPs | memory | time (simulations), this machine "
        "| one GPU (model) | notes |",
        "|---|---|---|---|---|---|---|---|",
        *[row(p) for p in plans],
        "",
        f"Total estimated simulation time: {duration(total)} on this machine (one process; "
        f"the not-estimated runs not included); one {GPU['name']}, modelled: "
        f"{duration(fast)} – {duration(slow)}.",
        END,
    ]
    text = DOC.read_text() if DOC.exists() else f"# The paper presets\n\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    text = head + "\n".join(lines) + tail
    DOC.write_text(text)
    print(f"wrote {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
