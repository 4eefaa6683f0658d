#!/usr/bin/env bash
# The whole command of `fem solve --mesh` on one GPU, by set-up stage,
# for two builds in the same run: FEM against BASE (a build before a
# change), Q2 Poisson (8.12M rows at CELLS=100) and Q1 elasticity (3.09M)
# on a generated hexahedral box, random load, AMG-preconditioned CG to
# 1e-8. One line a run: the host stages, the backend's set-up (uploads,
# the tangent's format, AMG's pattern), AMG's set-up, the Newton phases,
# wall time and peak host memory.
#   FEM=target/release/fem BASE=<older build> CELLS=100 bash benches/gpu/host-setup.sh
set -u
F=${FEM:-target/release/fem}; B=${BASE:-}
export FEM_TUNING=off
tmp=$(mktemp -d)
$F mesh-gen --dim 3 --cells "${CELLS:-100}" --binary "$tmp/hex.msh" > /dev/null
$F mesh-gen --dim 3 --cells 6 "$tmp/small.msh" > /dev/null
# the driver's PTX JIT, once, outside the timings
$F solve --mesh "$tmp/small.msh" --physics poisson --degree 2 --backend cuda > /dev/null 2>&1
run() { # label binary args
  local l=$1 f=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$tmp/t" "$f" solve --json "$@" > "$tmp/o.json" 2> "$tmp/e" || { echo "FAILED $l"; tail -5 "$tmp/e"; return; }
  python3 - "$l" "$tmp" <<'PY'
import json, sys
d = sys.argv[2]; r = json.load(open(f"{d}/o.json")); n = r['newton']; t = open(f"{d}/t").read().split(); sp = n['split']
a = n.get('amg') or {}
print(f"{sys.argv[1]:28s} rows {r['rows']} its {n['krylov_iterations']} host-setup {r['host_setup_seconds']:.2f} {[(s['stage'], round(s['seconds'], 2)) for s in r['host_setup_split']]} backend-setup {n['setup_seconds']:.2f} amg-setup {a.get('setup_seconds', 0):.2f} element {sp['element']:.2f} assembly {sp['assembly']:.2f} krylov {sp['solve']:.3f} wall {t[0]} rss-GB {int(t[1]) / 1e6:.2f}", flush=True)
PY
}
P2="--mesh $tmp/hex.msh --physics poisson --degree 2 --load random --rtol 1e-8 --backend cuda --precond amg"
E1="--mesh $tmp/hex.msh --physics elasticity --degree 1 --dirichlet-group xmin --load random --rtol 1e-8 --backend cuda --precond amg"
for build in base fem; do
  f=$F; [ "$build" = base ] && f=$B
  [ -n "$f" ] || continue
  run "poisson Q2 amg ($build)" "$f" $P2
  run "elasticity Q1 amg ($build)" "$f" $E1
done
rm -rf "$tmp"
