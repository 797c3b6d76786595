"""GPU over CPU for every throughput field of two ``attndyn bench --json`` outputs.

Usage: ``python scripts/gpu_ratio.py CPU.json GPU.json`` (scripts/gpu-check.sh). A benchmark
writes its rows in the same order on every device, so rows are paired by benchmark and position;
a throughput field is one whose name ends in ``_per_s`` or is ``gflops``. Prints a JSON list, one
object per paired row: the GPU row's text and integer fields (benchmark, sizes) and
``<field>_gpu_over_cpu`` for each throughput field.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def throughput(name: str) -> bool:
    return name.endswith("_per_s") or name == "gflops"


def by_benchmark(rows: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        grouped[row["benchmark"]].append(row)
    return grouped


def ratios(cpu: list[dict], gpu: list[dict]) -> list[dict]:
    cpu_rows = by_benchmark(cpu)
    out = []
    for bench, rows in by_benchmark(gpu).items():
        for row, ref in zip(rows, cpu_rows.get(bench, []), strict=False):
            paired = {
                k: v
                for k, v in row.items()
                if isinstance(v, str | int) and not isinstance(v, bool) and not throughput(k)
            }
            for name, value in row.items():
                base = ref.get(name)
                if throughput(name) and isinstance(value, int | float) and base:
                    paired[f"{name}_gpu_over_cpu"] = value / base
            out.append(paired)
    return out


if __name__ == "__main__":
    cpu_rows, gpu_rows = (json.load(open(path)) for path in sys.argv[1:3])
    print(json.dumps(ratios(cpu_rows, gpu_rows), indent=1))
