#!/bin/bash
# Run paper presets one after another and log each one's wall time (docs/paper-presets.md).
#
#   scripts/run_paper_presets.sh OUT NAME [NAME ...]
#
# For each NAME: `nice -n 5 attndyn run NAME --preset paper --yes --json --no-progress --out
# OUT/results` writes OUT/NAME.json (the outcome) and OUT/NAME.err; OUT/log.txt gets one line
# "NAME start=… wall_s=… rc=… load=…". Set ATTNDYN_TEXT_DATA to the text samples if they are not
# beside the repository.
set -u
out=${1:?usage: scripts/run_paper_presets.sh OUT NAME [NAME ...]}
shift
mkdir -p "$out"
for name in "$@"; do
  start=$(date -u +%FT%TZ)
  t0=$(date +%s)
  nice -n 5 attndyn run "$name" --preset paper --yes --json --no-progress \
    --out "$out/results" >"$out/$name.json" 2>"$out/$name.err"
  rc=$?
  echo "$name start=$start wall_s=$(($(date +%s) - t0)) rc=$rc load=\"$(cut -d' ' -f1-3 /proc/loadavg)\"" >>"$out/log.txt"
done
