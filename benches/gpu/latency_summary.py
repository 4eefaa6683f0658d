"""Table (and, with matplotlib, a plot beside the input) of
benches/gpu/latency.sh: microseconds per CG iteration per build, against
one product of the same operator (the floor an iteration cannot go
below)."""
import json
import sys
from collections import defaultdict

path = sys.argv[1]
rows = [json.loads(l) for l in open(path) if l.strip()]


def per_iteration(r):
    rep = r["report"]
    if r["case"] == "cardiac":
        s = rep["summary"]
        return 1e6 * s["split"]["solve"] / s["cg_iterations"], rep["nodes"], s["cg_iterations"], None
    spmv = rep.get("spmv") or {}
    return 1e6 / rep["cg_iterations_per_second"], rep["rows"], rep["iterations"], 1e6 * spmv.get("seconds", float("nan"))


table = defaultdict(dict)
floor = {}
for r in rows:
    us, n, its, product = per_iteration(r)
    table[(r["case"], n)][r["build"]] = (us, its)
    if product is not None and r["build"] == "fem":
        floor[(r["case"], n)] = product
builds = [b for b in ("base", "graphs-off", "fem") if any(b in v for v in table.values())]
print("| case | rows | " + " | ".join(f"{b} µs/it (its)" for b in builds) + " | one product µs | base / fem |")
print("|---" * (len(builds) + 4) + "|")
for (case, n), v in sorted(table.items()):
    cells = [f"{v[b][0]:.1f} ({v[b][1]})" if b in v else "–" for b in builds]
    gain = f"{v['base'][0] / v['fem'][0]:.2f}×" if "base" in v and "fem" in v else "–"
    prod = f"{floor[(case, n)]:.1f}" if (case, n) in floor else "–"
    print(f"| {case} | {n} | " + " | ".join(cells) + f" | {prod} | {gain} |")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
fig, ax = plt.subplots(figsize=(7, 4.5))
for case in sorted({c for c, _ in table}):
    if case == "cardiac":
        continue
    for b in builds:
        pts = sorted((n, v[b][0]) for (c, n), v in table.items() if c == case and b in v)
        ax.plot(*zip(*pts), marker="o", label=f"{case}, {b}")
    pts = sorted((n, t) for (c, n), t in floor.items() if c == case)
    ax.plot(*zip(*pts), linestyle=":", color="gray", label=f"{case}, one product")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("rows")
ax.set_ylabel("µs per CG iteration")
ax.set_title("Jacobi-CG, 3D Q1 Poisson")
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(path.rsplit(".", 1)[0] + ".png", dpi=120)
