"""The table of benches/gpu/amg_pyamg.sh: per problem, fem's AMG-CG on the
GPU and on the CPU backend (iterations, AMG set-up, Krylov solve, the
command's wall time) beside pyamg's on the same system (V- and W-cycle
CG iterations, set-up and solve), from the JSON files and the log in DIR.

    python3 benches/gpu/amg_pyamg_summary.py DIR
"""
import glob
import json
import os
import re
import sys


def wall(log, name):
    """The command's wall seconds from the log's `timed` line."""
    m = re.search(re.escape(name) + r": wall ([0-9.]+) s, max RSS ([0-9]+) KB", log)
    return (float(m.group(1)), int(m.group(2)) * 1024) if m else (None, None)


def fem(path, log):
    name = os.path.basename(path)[:-5]
    r = json.load(open(path))
    n = r["newton"]
    a = n.get("amg") or {}
    last = a.get("last", {})
    w, rss = wall(log, name)
    return {
        "rows": r["rows"],
        "its": n["krylov_iterations"],
        "setup": a.get("setup_seconds"),
        "solve": n["split"]["solve"],
        "wall": w,
        "levels": len(last.get("levels", [])),
        "oc": last.get("operator_complexity"),
    }


def f(v, fmt="{:.3f}"):
    return "–" if v is None else fmt.format(v)


def main(d):
    log = open(os.path.join(d, "amg_pyamg.log")).read() if os.path.exists(os.path.join(d, "amg_pyamg.log")) else ""
    print("| problem (rows) | fem GPU: its, set-up, solve, command (s) | fem CPU backend: its, set-up, solve, command | pyamg (host, defaults): V its / W its, set-up, V solve / W solve | levels, operator complexity: fem / pyamg |")
    print("|---|---|---|---|---|")
    for p in sorted(glob.glob(os.path.join(d, "*-pyamg.json"))):
        name = os.path.basename(p)[: -len("-pyamg.json")]
        if os.path.getsize(p) == 0:
            continue
        py = json.load(open(p))
        g = fem(os.path.join(d, name + "-amg-cuda.json"), log) if os.path.exists(os.path.join(d, name + "-amg-cuda.json")) else None
        c = fem(os.path.join(d, name + "-amg-cpu.json"), log) if os.path.exists(os.path.join(d, name + "-amg-cpu.json")) else None
        cyc = py["cycles"]
        runs = lambda x: "–" if x is None else f"{x['its']}, {f(x['setup'], '{:.2f}')}, {f(x['solve'])}, {f(x['wall'], '{:.1f}')}"
        pyamg = f"{cyc['V']['iterations']} / {cyc['W']['iterations']}, {py['setup_seconds']:.2f}, {cyc['V']['solve_seconds']:.2f} / {cyc['W']['solve_seconds']:.2f}"
        h = g or c
        shape = f"{h['levels'] if h else '–'}, {f(h['oc'] if h else None, '{:.2f}')} / {len(py['levels'])}, {py['operator_complexity']:.2f}"
        print(f"| {name} ({py['system']['rows']:,}) | {runs(g)} | {runs(c)} | {pyamg} | {shape} |")


if __name__ == "__main__":
    main(sys.argv[1])
