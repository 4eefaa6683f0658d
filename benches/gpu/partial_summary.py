# Markdown table of partial.sh's reports: per case and tangent storage, the
# CG iterations, seconds per iteration (the Krylov solve's time over its
# iterations: product, Jacobi and vector updates), the tangent's set-up
# (element kernels or point data, assembly), and the whole command.
#   python3 benches/gpu/partial_summary.py OUT
import json, os, sys
out = sys.argv[1]
print("| case | rows | tangent | CG its | µs / CG it | tangent set-up s | Newton s | command s |")
print("|---|---|---|---|---|---|---|---|")
for case in ["poisson-q1", "poisson-q2", "poisson-q3", "elasticity-q1", "elasticity-q2"]:
    for fmt in ["k2", "lma", "partial"]:
        path = os.path.join(out, f"{case}-{fmt}.json")
        try:
            r = json.load(open(path))
        except (OSError, ValueError):
            print(f"| {case} | | {fmt} | failed | | | | |")
            continue
        n = r["newton"]
        s = n["split"]
        its = max(n["krylov_iterations"], 1)
        print(f"| {case} | {r['rows']} | {fmt} | {n['krylov_iterations']} | {1e6 * s['solve'] / its:.1f} | {s['element'] + s['assembly']:.3f} | {s['element'] + s['assembly'] + s['solve']:.3f} | {r['total_seconds']:.1f} |")
