#!/usr/bin/env python3
"""Markdown table of bp_physics.sh (physics.jsonl, ceed.jsonl) and, when
matplotlib is present, bp_physics.png: GDOF/s on L-DOFs against N."""
import json, pathlib, sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")

def read(name):
    f = out / name
    return [json.loads(l) for l in f.read_text().splitlines() if l.strip()] if f.exists() else []

physics, ceed = read("physics.jsonl"), read("ceed.jsonl")
print("| operator | N | elements | L-DOFs | s/apply | GDOF/s (L) | GDOF/s (E) | GB/s | of copy | setup s | err vs CPU |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in physics:
    print(f'| {r["physics"]} {r["level"]} | {r["degree"]} | {r["elements"]} | {r["l_dofs"]} | {r["seconds_per_apply"]:.3e} | '
          f'{r["gdofs_per_second"]:.2f} | {r["e_gdofs_per_second"]:.2f} | {r["gbytes_per_second"]:.0f} | {r["roofline_fraction"]:.3f} | '
          f'{r["setup_seconds"]:.2f} | {r["max_rel_error_vs_cpu"]:.1e} |')
for r in ceed:
    print(f'| {r["problem"]} (CEED kernel) | {r["degree"]} | {r["elements"]} | {r["dofs"]} | {r["seconds_per_apply"]:.3e} | '
          f'{r["gdofs_per_second"]:.2f} | {r["element_dofs"] / r["seconds_per_apply"] / 1e9:.2f} | {r["gbytes_per_second"]:.0f} | '
          f'{r["roofline_fraction"]:.3f} | | {r["max_rel_error_vs_cpu"]:.1e} |')
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
series = {}
for r in physics:
    series.setdefault(f'{r["physics"]} {r["level"]}', []).append((r["degree"], r["gdofs_per_second"]))
for r in ceed:
    series.setdefault(f'{r["problem"]} (CEED kernel)', []).append((r["degree"], r["gdofs_per_second"]))
fig, ax = plt.subplots(figsize=(9, 5.5))
for name, pts in series.items():
    pts.sort()
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linestyle="--" if "CEED" in name else "-", label=name)
ax.set_xlabel("degree N"); ax.set_ylabel("GDOF/s on L-DOFs"); ax.set_yscale("log"); ax.grid(True, alpha=0.3)
ax.set_title("Jacobian products on L-vectors, about 1e7 DOFs")
ax.legend(fontsize=7, ncol=2)
fig.tight_layout(); fig.savefig(out / "bp_physics.png", dpi=120)
