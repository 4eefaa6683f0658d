"""Markdown table of benches/gpu/precond.sh's JSON reports (one per run).

    python3 benches/gpu/precond_table.py DIR > DIR/summary.md
"""
import json
import pathlib
import sys

rows = []
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    r = json.loads(f.read_text())
    n = r["newton"]
    s = n["split"]
    case, backend = f.stem.rsplit("-", 1)
    problem, precond = case.rsplit("-", 1)
    rows.append((problem, backend, precond, r["element"], r["rows"], n["krylov_iterations"], r["host_setup_seconds"], n["setup_seconds"], s["element"], s["assembly"], s["solve"], r["total_seconds"], n["converged"]))
print("| problem | backend | precond | element | rows | iterations | host set-up s | backend set-up s | element s | assembly + precond s | Krylov s | Newton s | total s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for p, b, pc, el, n, it, hs, bs, e, a, k, t, ok in sorted(rows, key=lambda r: (r[0], r[1] != "cuda", r[2])):
    print(f"| {p} | {b} | {pc} | {el} | {n:,} | {it}{'' if ok else ' (not converged)'} | {hs:.3f} | {bs:.3f} | {e:.3f} | {a:.3f} | {k:.3f} | {e + a + k:.3f} | {t:.3f} |")
