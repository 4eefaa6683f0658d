# Markdown table of the JSON lines written by poisson.sh; with a second
# argument, also a PNG of the SpMV's fraction of the copy roofline and the
# CG iterations per second against the degree, per configuration (when
# matplotlib is installed).
#   python3 benches/gpu/summary.py bench-3-f64.jsonl [bench-3-f64.png]
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| p | config | DOFs | assembly elem/s | CG it/s | SpMV µs | SpMV GB/s | of copy | bytes | paper-model bytes | L2 error |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    s = r.get("spmv") or {}
    tpr = f" (tpr {r['threads_per_row']})" if r.get('threads_per_row') else ''
    tpr += " (earlier run)" if r.get('earlier_run') else ''
    print(f"| {r['degree']} | {r['args'].replace('--degree %d ' % r['degree'], '')}{tpr} | {r['dofs']} | {r['elements_per_second']:.3e} | {r['cg_iterations_per_second']:.0f} | {s.get('seconds',0)*1e6:.1f} | {s.get('bytes_per_second',0)/1e9:.0f} | {s.get('roofline_fraction',0):.3f} | {s.get('bytes',0)} | {s.get('model_bytes',0)} | {r['l2_error']:.2e} |")


def plot(path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)
        return
    series = {}
    for r in rows:
        config = r['args'].replace('--degree %d ' % r['degree'], '').replace('--format ', '').replace('--numbering original', '').strip()
        series.setdefault(config, []).append(r)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5))
    for config, rs in series.items():
        p = [r['degree'] for r in rs]
        ax.plot(p, [(r.get('spmv') or {}).get('roofline_fraction', 0) for r in rs], marker='o', label=config)
        bx.plot(p, [r['cg_iterations_per_second'] for r in rs], marker='o', label=config)
    r0 = rows[0]
    what = f"{r0['dim']}D Q_p Poisson, {r0['precision']}, about {r0['dofs'] / 1e6:.0f}M DOFs, {r0['backend']}"
    ax.axhline(0.8, color='grey', linestyle=':', linewidth=1)
    ax.set(xlabel="degree p", ylabel="SpMV bytes/s over copy bytes/s", title=what, xticks=sorted({r['degree'] for r in rows}))
    bx.set(xlabel="degree p", ylabel="CG iterations per second", yscale='log', title="CG (Jacobi), iteration time only", xticks=sorted({r['degree'] for r in rows}))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if len(sys.argv) > 2:
    plot(sys.argv[2])
