import json, sys, math
rows = []
print("| matrix | prec | rows | nnz | best | best µs | cuSPARSE µs | best/cuSPARSE | best roofline | best paper roofline | cuSPARSE roofline | K1 | K1r | K1rs | K2 | K2r | K2rs | ELLR-T | ELL | CSR | α GPU (best) |")
print("|" + "---|" * 21)
gm = []
for f in sys.argv[1:]:
    try:
        r = json.load(open(f))
    except Exception:
        continue
    if "reports" not in r: continue
    reps = {x["format"].split("-t")[0]: x for x in r["reports"]}
    cus = reps.get("cusparse")
    ks = [x for k, x in reps.items() if k.startswith("k")]
    if not ks: continue
    best = min(ks, key=lambda x: x["seconds_per_spmv"])
    sp = lambda k: f'{cus["seconds_per_spmv"]/reps[k]["seconds_per_spmv"]:.2f}' if (cus and k in reps) else "-"
    ratio = cus["seconds_per_spmv"] / best["seconds_per_spmv"] if cus else float("nan")
    if r["matrix"].startswith("fem") and r["stats"]["nnz"] >= 1e6 and cus: gm.append(ratio)
    print(f'| {r["matrix"]} | {best["precision"]} | {r["stats"]["rows"]} | {r["stats"]["nnz"]} | {best["format"]} | {best["seconds_per_spmv"]*1e6:.1f} | {cus["seconds_per_spmv"]*1e6 if cus else float("nan"):.1f} | {ratio:.2f} | {best["roofline_fraction"]:.3f} | {best["paper_roofline_fraction"]:.3f} | {cus["roofline_fraction"] if cus else float("nan"):.3f} | '
          + " | ".join(sp(k) for k in ["k1","k1r","k1rs","k2","k2r","k2rs","ellt","ell","csr"]) + f' | {best["alpha_vs_cusparse"]} |')
if gm:
    print(f"\nFEM matrices ≥ 1M nonzeros: geometric mean of best ELL-WARP over cuSPARSE = {math.exp(sum(map(math.log, gm))/len(gm)):.3f} over {len(gm)} matrices")
