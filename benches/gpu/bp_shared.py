#!/usr/bin/env python3
"""Parses `ncu --csv --metrics ...` output of one BP run (the app's JSON line
among the CSV rows) into one JSON line; with --table FILE, prints the
Markdown table of those lines."""
import csv, json, sys

if sys.argv[1] == "--table":
    print("| problem | N | shared pipe | DRAM | registers | active warps |")
    print("|---|---|---|---|---|---|")
    for line in open(sys.argv[2]):
        r = json.loads(line)
        print(f'| {r["problem"]} | {r["degree"]} | {r["shared_fraction"]:.3f} | '
              f'{r["dram_fraction"]:.3f} | {r["registers"]} | {r["active_warps"]:.3f} |')
    sys.exit(0)

problem, degree = sys.argv[1], int(sys.argv[2])
lines = sys.stdin.read().splitlines()
# the run's own report: its timing includes the profiled (replayed,
# clock-locked) launch, so only its size is kept
app = json.loads("\n".join(l for l in lines if not l.startswith(('"', "=="))))
assert app["degree"] == degree, "the run profiled another degree"
rows = list(csv.DictReader([l for l in lines if l.startswith('"')]))
m = {r["Metric Name"]: float(r["Metric Value"].replace(",", "")) for r in rows}
wavefronts = m["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
sm_cycles = m["sm__cycles_elapsed.avg"] * m["device__attribute_multiprocessor_count"]
print(json.dumps({
    "problem": problem,
    "degree": degree,
    "dofs": app["dofs"],
    "shared_wavefronts": wavefronts,
    "shared_fraction": wavefronts / sm_cycles,
    "dram_fraction": m["dram__throughput.avg.pct_of_peak_sustained_elapsed"] / 100,
    "active_warps": m["sm__warps_active.avg.pct_of_peak_sustained_active"] / 100,
    "registers": int(m["launch__registers_per_thread"]),
    "kernel_seconds": m["gpu__time_duration.sum"] * 1e-9,
}))
