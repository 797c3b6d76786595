#!/usr/bin/env bash
# The prepared GPU check (issue 16): on a machine with an NVIDIA GPU, install JAX's CUDA build,
# run every benchmark on the GPU and on the same machine's CPU, and one paper preset; write JSON.
#
#   bash scripts/gpu-check.sh            # results in ./gpu-check/ (OUT=DIR to change)
#   EXPERIMENT=aim-solvable PRESET=paper PAPER_LIMIT_S=600 bash scripts/gpu-check.sh
#
# Files: gpu.txt (nvidia-smi), bench-gpu.json and bench-cpu.json (`attndyn bench --name all
# --quick --json`, JAX_PLATFORMS=cuda and cpu), ratio.json (per benchmark row, every throughput
# field GPU over CPU: scripts/gpu_ratio.py), paper.json (`attndyn run EXPERIMENT --preset PRESET
# --json` on the GPU, stopped after PAPER_LIMIT_S), paper-time.txt and dry-runs/NAME.json (every
# experiment's `attndyn run NAME --preset paper --dry-run --json` on the GPU, DRY_LIMIT_S each:
# the one-GPU estimates of docs/paper-presets.md). The CPU rows run on the GPU
# machine's own cores, so the ratio is GPU : that machine's CPU; BENCHMARKS.md compares with two cores.
# It installs from a package registry; on a GPU machine without one (the lent H200 of
# BENCHMARKS.md, 2026-12-04) carry the missing wheels and run attndyn with that machine's JAX.
# The paper run passes --yes: without it `run` stops at its --max-hours check.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-check}
EXPERIMENT=${EXPERIMENT:-aim-solvable}
PRESET=${PRESET:-paper}
PAPER_LIMIT_S=${PAPER_LIMIT_S:-600}
DRY_LIMIT_S=${DRY_LIMIT_S:-120}
mkdir -p "$OUT"
python3 -m venv .venv-gpu
. .venv-gpu/bin/activate
pip install --quiet --upgrade pip
pip install --quiet -e ".[gpu]"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$OUT/gpu.txt" || true
JAX_PLATFORMS=cuda python -c "import jax; d = jax.devices(); print(d); assert d[0].platform == 'gpu'" \
    | tee -a "$OUT/gpu.txt"
JAX_PLATFORMS=cuda attndyn bench --name all --quick --no-torch --json >"$OUT/bench-gpu.json"
JAX_PLATFORMS=cpu attndyn bench --name all --quick --no-torch --json >"$OUT/bench-cpu.json"
python scripts/gpu_ratio.py "$OUT/bench-cpu.json" "$OUT/bench-gpu.json" >"$OUT/ratio.json"
start=$(date +%s)
set +e
JAX_PLATFORMS=cuda timeout "$PAPER_LIMIT_S" attndyn run "$EXPERIMENT" --preset "$PRESET" --yes \
    --json --out "$OUT/results" >"$OUT/paper.json"
code=$?
set -e
echo "$EXPERIMENT $PRESET: exit $code after $(($(date +%s) - start)) s" | tee "$OUT/paper-time.txt"
mkdir -p "$OUT/dry-runs"
set +e
for name in $(python -c "from attndyn.claims import experiment_names; print(*experiment_names())"); do
    JAX_PLATFORMS=cuda timeout "$DRY_LIMIT_S" attndyn run "$name" --preset paper --dry-run --json \
        --out "$(mktemp -d)" >"$OUT/dry-runs/$name.json"
    echo "$name dry run: exit $?"
done | tee "$OUT/dry-runs/exit.txt"
set -e
