"""Table of `fem cardiac --json` lines (benches/gpu/cardiac.sh): seconds
per step and its split per mesh and configuration, and the GPU's speed-up
over the CPU backend on the same mesh and steps."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]


def label(r):
    if r["backend"].startswith("CPU"):
        return "CPU backend"
    k = r["kernels"]
    how = "atomics" if "atomics" in k else ("cuSPARSE" if "cuSPARSE SpMV" in k else "ELL-WARP")
    return f"GPU, assembly by {how}, CG on " + k.rsplit("assembled in ", 1)[1]


cpu = {r["nodes"]: r["summary"]["seconds_per_step"] for r in rows if r["backend"].startswith("CPU")}
print("| nodes | tets | configuration | s/step | element | assembly | solve | transfer | Newton | CG | × CPU |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    s = r["summary"]
    t = s["split"]
    tot = max(sum(t.values()), 1e-300)
    pct = lambda k: f"{100 * t[k] / tot:.0f}%"
    base = cpu.get(r["nodes"])
    speed = f"{base / s['seconds_per_step']:.1f}" if base and not r["backend"].startswith("CPU") else ""
    print(f"| {r['nodes']} | {r['cells']} | {label(r)} | {s['seconds_per_step']:.3e} | {pct('element')} | {pct('assembly')} | {pct('solve')} | {pct('transfer')} | {s['newton_iterations']} | {s['cg_iterations']} | {speed} |")
