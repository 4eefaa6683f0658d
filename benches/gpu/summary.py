# Markdown table of the JSON lines written by poisson.sh.
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| p | config | DOFs | assembly elem/s | CG it/s | SpMV µs | SpMV GB/s | of copy | bytes | paper-model bytes | L2 error |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    s = r.get("spmv") or {}
    tpr = f" (tpr {r['threads_per_row']})" if r.get('threads_per_row') else ''
    tpr += " (earlier run)" if r.get('earlier_run') else ''
    print(f"| {r['degree']} | {r['args'].replace('--degree %d ' % r['degree'], '')}{tpr} | {r['dofs']} | {r['elements_per_second']:.3e} | {r['cg_iterations_per_second']:.0f} | {s.get('seconds',0)*1e6:.1f} | {s.get('bytes_per_second',0)/1e9:.0f} | {s.get('roofline_fraction',0):.3f} | {s.get('bytes',0)} | {s.get('model_bytes',0)} | {r['l2_error']:.2e} |")
