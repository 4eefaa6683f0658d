#!/usr/bin/env bash
# Newton's tangent stored four ways on the CPU backend, same run:
# assembled (CSR), element matrices (LMA), partially assembled (point
# data, sum factorisation) and matrix-free (recomputed at the points),
# on `fem solve --mesh --physics` with a random
# load to a relative residual of 1e-8, Jacobi-CG, one Newton update:
# Poisson Q2 and Q3 and elasticity Q2 on hexahedra of about 230k rows.
# Prints a Markdown table: ms per CG iteration, the tangent's set-up
# (element phase and assembly), the command's seconds and peak RSS.
#   FEM=target/release/fem bash benches/cpu/partial.sh
set -u
FEM=${FEM:-target/release/fem}
tmp=$(mktemp -d)
echo "| problem | rows | CG its | ms per CG iteration, csr / lma / partial / free | tangent set-up s, csr / lma / partial / free | command s, csr / lma / partial / free | peak RSS MB, csr / lma / partial / free |"
echo "|---|---|---|---|---|---|---|"
# physics degree cells-per-direction
for case in "poisson 2 30" "poisson 3 20" "elasticity 2 20"; do
    set -- $case
    "$FEM" mesh-gen --dim 3 --cells "$3" "$tmp/hex.msh" > /dev/null 2>&1
    for format in csr lma partial matrix-free; do
        /usr/bin/time -f "%M" -o "$tmp/rss-$format" "$FEM" solve --mesh "$tmp/hex.msh" --physics "$1" --degree "$2" \
            --format $format --backend cpu --load random --rtol 1e-8 --json > "$tmp/$format.json" 2> /dev/null
    done
    python3 - "$tmp" "$1 Q$2, $3³" <<'PY'
import json, sys
tmp, name = sys.argv[1], sys.argv[2]
cols = {k: [] for k in ("it", "setup", "cmd", "rss")}
for f in ("csr", "lma", "partial", "matrix-free"):
    r = json.load(open(f"{tmp}/{f}.json"))
    r = r if isinstance(r, dict) else r[0]
    n, s = r["newton"], r["newton"]["split"]
    its = n["krylov_iterations"]
    cols["it"].append(f"{1e3 * s['solve'] / max(its, 1):.2f}")
    cols["setup"].append(f"{s['element'] + s['assembly']:.2f}")
    cols["cmd"].append(f"{r['total_seconds']:.2f}")
    cols["rss"].append(str(int(open(f"{tmp}/rss-{f}").read().split()[-1]) // 1024))
print(f"| {name} | {r['rows']:,} | {its} | " + " | ".join(" / ".join(cols[k]) for k in ("it", "setup", "cmd", "rss")) + " |")
PY
done
rm -rf "$tmp"
