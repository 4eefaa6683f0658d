#!/usr/bin/env python3
"""Markdown tables of the BP benchmark (JSON lines from bp.sh) and PNG
plots of TFLOP/s and roofline fraction versus degree, when matplotlib is
available."""
import json, pathlib, sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
rows = []
for f in sorted(out.glob("*.jsonl")):
    for line in f.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            r["series"] = f.stem
            rows.append(r)

def label(r):
    k = r["kernel"]
    return f'{r["problem"]}{" 3D" if k == "Collocated3d" else ""}{" assembled" if r["assembled"] else ""}'

print("| problem | N | elements | DOFs | s/apply | GDOF/s | TFLOP/s | of copy | vs CPU | err vs CPU |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    cpu = f'{r["speedup_vs_cpu"]:.1f}×' if r.get("speedup_vs_cpu") else ""
    print(f'| {label(r)} | {r["degree"]} | {r["elements"]} | {r["dofs"]} | {r["seconds_per_apply"]:.3e} | {r["gdofs_per_second"]:.2f} | '
          f'{r["tflops"]:.3f} | {r["roofline_fraction"]:.3f} | {cpu} | {r["max_rel_error_vs_cpu"]:.1e} |')
for f in sorted(out.glob("solve_*.json")):
    r = json.loads(f.read_text())
    s = r["solve"]
    print(f'\nJacobi-CG {r["problem"]} N={r["degree"]} {r["global_nodes"]} nodes: {s["iterations"]} iterations, '
          f'{s["seconds"]:.3f} s, relative residual {s["relative_residual"]:.1e}, max nodal error {s["max_nodal_error"]:.2e}')
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
for key, ylabel in [("tflops", "TFLOP/s"), ("roofline_fraction", "fraction of copy roofline")]:
    fig, ax = plt.subplots(figsize=(8, 5))
    series = {}
    for r in rows:
        series.setdefault((label(r), r["series"]), []).append((r["degree"], r[key]))
    for (l, s), pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{l} ({s.split('_')[-1]})")
    ax.set_xlabel("degree N"); ax.set_ylabel(ylabel); ax.grid(True, alpha=0.3); ax.legend(fontsize=6, ncol=2)
    fig.tight_layout(); fig.savefig(out / f"bp_{key}.png", dpi=120)
