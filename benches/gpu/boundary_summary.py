"""Summary table (Markdown) of the `fem solve --json` reports and their
`.time` files in a directory: the boundary-term benchmarks
(`boundary.sh`, `boundary_points.sh`)."""
import json, sys, glob, os
out = sys.argv[1]
print("| run | rows | Newton updates | Krylov its | element s / update | assembly s / update | solve s | µs / Krylov it | backend set-up s | host set-up s | total s | wall s | RSS KB/row |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    name = os.path.basename(f)[:-5]
    try:
        r = json.load(open(f))
    except Exception:
        continue
    n = r["newton"]; sp = n["split"]; k = max(len(n["steps"]), 1)
    t = open(os.path.join(out, name + ".time")).read()
    wall = float(t.split("wall ")[1].split(" s")[0]); rss = float(t.split("max RSS ")[1].split(" KB")[0])
    print(f"| {name} | {r['rows']} | {len(n['steps'])} | {n['krylov_iterations']} | {sp['element']/k:.4f} | {sp['assembly']/k:.4f} | {sp['solve']:.3f} | {1e6 * sp['solve'] / max(n['krylov_iterations'], 1):.0f} | {n['setup_seconds']:.3f} | {r['host_setup_seconds']:.2f} | {r['total_seconds']:.2f} | {wall:.2f} | {rss / r['rows']:.2f} |")
