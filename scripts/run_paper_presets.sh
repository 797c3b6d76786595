#!/bin/bash
# Run paper presets one after another and log each one's wall time (docs/paper-presets.md).
#
#   scripts/run_paper_presets.sh OUT NAME [NAME ...]
#
# For each NAME: `nice -n 5 attndyn run NAME --preset paper --yes --json --no-progress --out
# OUT/results` writes OUT/NAME.json (the outcome) and OUT/NAME.err; OUT/log.txt gets one line
# "NAME start=… wall_s=… rc=… load=…". focus-text runs with XLA's YNNPACK fusions off, the
# documented workaround for its hang (src/attndyn/core/jaxsetup.py); set ATTNDYN_TEXT_DATA to the
# text samples if they are not beside the repository.
set -u
out=${1:?usage: scripts/run_paper_presets.sh OUT NAME [NAME ...]}
shift
mkdir -p "$out"
for name in "$@"; do
  flags=${XLA_FLAGS:-}
  if [ "$name" = focus-text ]; then flags="$flags --xla_cpu_experimental_ynn_fusion_type=\"\""; fi
  start=$(date -u +%FT%TZ)
  t0=$(date +%s)
  XLA_FLAGS="$flags" nice -n 5 attndyn run "$name" --preset paper --yes --json --no-progress \
    --out "$out/results" >"$out/$name.json" 2>"$out/$name.err"
  rc=$?
  echo "$name start=$start wall_s=$(($(date +%s) - t0)) rc=$rc load=\"$(cut -d' ' -f1-3 /proc/loadavg)\"" >>"$out/log.txt"
done
