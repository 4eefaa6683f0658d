#!/usr/bin/env python3
"""Parses `ncu --csv --metrics ...` output of one BP run (the app's JSON
report among the CSV rows) into one JSON line; with --table FILE, prints the
Markdown table of those lines and plots them beside FILE (PNG, when
matplotlib is available)."""
import csv, json, sys

def plot(rows, path):
    """Shared pipe and DRAM fractions versus degree, one panel per problem."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    problems = sorted({r["problem"] for r in rows})
    fig, axes = plt.subplots(1, len(problems), figsize=(4 * len(problems), 3.5), sharey=True)
    for ax, p in zip(axes, problems):
        pts = sorted((r["degree"], r["shared_fraction"], r["dram_fraction"]) for r in rows if r["problem"] == p)
        ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o", label="shared-memory pipe")
        ax.plot([q[0] for q in pts], [q[2] for q in pts], marker="s", label="DRAM")
        ax.set_title(p); ax.set_xlabel("degree N"); ax.set_ylim(0, 1); ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("fraction of peak"); axes[0].legend(fontsize=8)
    fig.tight_layout(); fig.savefig(path, dpi=120)

if sys.argv[1] == "--table":
    rows = [json.loads(line) for line in open(sys.argv[2])]
    print("| problem | N | shared pipe | DRAM | registers | active warps |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f'| {r["problem"]} | {r["degree"]} | {r["shared_fraction"]:.3f} | '
              f'{r["dram_fraction"]:.3f} | {r["registers"]} | {r["active_warps"]:.3f} |')
    plot(rows, sys.argv[2].rsplit(".", 1)[0] + ".png")
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
