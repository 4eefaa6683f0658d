#!/usr/bin/env bash
# Newton's tangent from element matrices at Q2 and Q3 on one GPU: the
# element kernels' Jacobian against the element matrices built from the
# point data, one command each, same mesh, same run. BASE is a build
# without the point-data path (the element kernels throughout); FEM the
# build under test. Prints per run the Newton split (element, assembly),
# backend set-up, Krylov, iterations and wall.
#   FEM=target/release/fem BASE=/path/to/previous/fem bash benches/gpu/elements.sh
set -u
F=${FEM:-target/release/fem}; B=${BASE:-}
export FEM_TUNING=off
tmp=$(mktemp -d)
$F mesh-gen --dim 3 --cells "${CELLS:-100}" --binary "$tmp/q2.msh" > /dev/null
$F mesh-gen --dim 3 --cells "${CELLS3:-64}" --binary "$tmp/q3.msh" > /dev/null
$F mesh-gen --dim 3 --cells "${CELLSE:-50}" --binary "$tmp/e2.msh" > /dev/null
run() { # label binary args
  local l=$1 bin=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" solve --json "$@" > "$tmp/o.json" 2> "$tmp/e" || { echo "FAILED $l"; tail -3 "$tmp/e"; return; }
  python3 - "$l" "$tmp" <<'PY'
import json, sys
d = sys.argv[2]; r = json.load(open(f"{d}/o.json")); n = r['newton']; t = open(f"{d}/t").read().split(); sp = n['split']
print(f"{sys.argv[1]:34s} rows {r['rows']} its {n['krylov_iterations']} element {sp['element']:.3f} assembly {sp['assembly']:.3f} backend-setup {n['setup_seconds']:.3f} krylov {sp['solve']:.3f} wall {t[0]} rss-GB {int(t[1]) / 1e6:.2f}", flush=True)
PY
}
# the driver's PTX JIT, once, outside the timings
$F mesh-gen --dim 3 --cells 6 "$tmp/small.msh" > /dev/null
for bin in $B $F; do $bin solve --mesh "$tmp/small.msh" --physics poisson --degree 2 --backend cuda > /dev/null 2>&1; done
for case in "poisson Q2 amg|--mesh $tmp/q2.msh --physics poisson --degree 2 --precond amg" \
            "poisson Q2 lma|--mesh $tmp/q2.msh --physics poisson --degree 2 --format lma" \
            "poisson Q3 csr|--mesh $tmp/q3.msh --physics poisson --degree 3 --format csr" \
            "elasticity Q2 amg|--mesh $tmp/e2.msh --physics elasticity --degree 2 --dirichlet-group xmin --precond amg"; do
  l=${case%%|*}; a=${case#*|}
  [ -n "$B" ] && run "$l (element kernels)" "$B" $a --load random --rtol 1e-8 --backend cuda
  run "$l (from point data)" "$F" $a --load random --rtol 1e-8 --backend cuda
done
rm -rf "$tmp"
