import json, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
# Figures 4/5 layout: per element, ordering rows; per backend and smoother: time, iterations.
grid = defaultdict(dict)
for r in rows:
    if r["solver"] != "mg":
        continue
    key = (r["dim"], r["degree"], r["dofs"])
    grid[key][(r["ordering"], "CPU" if r["backend"].startswith("CPU") else "CUDA", r["smoother"])] = r
for (dim, degree, dofs), g in sorted(grid.items()):
    if dofs >= 4_000_000:
        continue  # the large runs have their own table
    ords = sorted({k[0] for k in g}, key=lambda o: ["two-level", "cuthill-mc-kee", "xyz", "random", "hierarchical", "original"].index(o))
    print(f"\n### {dim}D Q{degree}, {dofs} DOFs (solve seconds, iterations; speed-ups as in the paper)\n")
    print("| ordering | CPU Jacobi | CPU SPAI | vs Jacobi | CPU SAINV | vs Jacobi | GPU Jacobi | GPU vs CPU | GPU SPAI | vs Jacobi | GPU vs CPU | GPU SAINV | vs Jacobi | GPU vs CPU |")
    print("|" + "---|" * 14)
    for o in ords:
        def cell(b, s):
            r = g.get((o, b, s))
            return (r["solve_seconds"], r["iterations"]) if r else (float("nan"), "-")
        cj, cs, ca = cell("CPU", "jacobi"), cell("CPU", "spai"), cell("CPU", "sainv")
        gj, gs, ga = cell("CUDA", "jacobi"), cell("CUDA", "spai"), cell("CUDA", "sainv")
        f = lambda t: f"{t[0]:.3f} s, {t[1]}"
        print(f"| {o} | {f(cj)} | {f(cs)} | {cj[0]/cs[0]:.2f} | {f(ca)} | {cj[0]/ca[0]:.2f} | {f(gj)} | {cj[0]/gj[0]:.2f} | {f(gs)} | {gj[0]/gs[0]:.2f} | {cs[0]/gs[0]:.2f} | {f(ga)} | {gj[0]/ga[0]:.2f} | {ca[0]/ga[0]:.2f} |")
big = [r for r in rows if r["dofs"] >= 4_000_000]
if big:
    print("\n### At ≥ 4M DOFs\n")
    print("| solver | backend | DOFs | iterations | set-up s | solve s |")
    print("|---|---|---|---|---|---|")
    for r in big:
        print(f"| {r['solver']} + {r['precond']} | {r['backend']} | {r['dofs']} | {r['iterations']} | {r['setup_seconds']:.2f} | {r['solve_seconds']:.3f} |")
