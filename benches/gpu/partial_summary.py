# Markdown table of partial.sh's and high_order.sh's reports: per case and
# tangent storage or backend, the CG iterations, seconds per iteration
# (the Krylov solve's time over its iterations: product, Jacobi and
# vector updates), the tangent's set-up (element kernels or point data,
# assembly), and the whole command.
#   python3 benches/gpu/partial_summary.py OUT
import json, os, sys
out = sys.argv[1]
print("| case | rows | run | CG its | µs / CG it | tangent set-up s | Newton s | command s |")
print("|---|---|---|---|---|---|---|---|")
# every report in OUT, in the order the runs wrote them; a name is
# CASE-RUN (the tangent's format, or the backend)
names = sorted((f for f in os.listdir(out) if f.endswith(".json")), key=lambda f: os.path.getmtime(os.path.join(out, f)))
for name in names:
    case, run = name[: -len(".json")].rsplit("-", 1)
    try:
        r = json.load(open(os.path.join(out, name)))
        n = r["newton"]
    except (OSError, ValueError, KeyError):
        print(f"| {case} | | {run} | failed | | | | |")
        continue
    s = n["split"]
    its = max(n["krylov_iterations"], 1)
    print(f"| {case} | {r['rows']} | {run} | {n['krylov_iterations']} | {1e6 * s['solve'] / its:.1f} | {s['element'] + s['assembly']:.3f} | {s['element'] + s['assembly'] + s['solve']:.3f} | {r['total_seconds']:.1f} |")
