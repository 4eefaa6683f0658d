"""Markdown table of benches/gpu/bp_pmg.sh's solves: iterations, set-up,
solve and whole-command wall time, host RSS per DOF."""
import json
import pathlib
import re
import sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
print("| problem | N | L-DOFs | precond | levels | CG its | set-up s | solve s | G DOF·it/s | max nodal error | wall s | RSS B/DOF |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for path in sorted(out.glob("*.json")):
    try:
        r = json.loads(path.read_text())
    except (ValueError, OSError):
        continue
    s = r.get("solve")
    if not s:
        continue
    timing = (out / (path.stem + ".time"))
    wall, rss = "", ""
    if timing.exists():
        m = re.search(r"wall ([\d.]+) s, max RSS (\d+) KB", timing.read_text())
        if m:
            wall = m.group(1)
            rss = f"{int(m.group(2)) * 1024 / r['global_nodes']:.0f}"
    n = r["global_nodes"]
    rate = n * s["iterations"] / s["seconds"] / 1e9 if s["seconds"] > 0 else 0.0
    levels = ",".join(str(d) for d in s["p_multigrid"]["degrees"]) if s.get("p_multigrid") else ""
    print(f"| {r['problem']} | {r['degree']} | {n} | {s['preconditioner']} | {levels} | {s['iterations']} | {s['setup_seconds']:.3f} | {s['seconds']:.3f} | {rate:.2f} | {s['max_nodal_error']:.2e} | {wall} | {rss} |")
