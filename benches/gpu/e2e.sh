#!/usr/bin/env bash
# The whole `fem solve --problem poisson` command on one GPU, split by
# stage, for two builds in the same run: FEM against BASE (a build before
# a change). 3D Q1 at 8M DOFs in ELLPACK and 3D Q2 at 4M DOFs in the
# automatic format, Jacobi-CG to 1e-8. One line a run (rows, CG
# iterations, the GPU's assembly and CG seconds, wall time, peak host
# memory and its bytes per DOF), then the stages largest first.
#   FEM=target/release/fem BASE=<older build> bash benches/gpu/e2e.sh
set -u
F=${FEM:-target/release/fem}; B=${BASE:-}
export FEM_TUNING=off
tmp=$(mktemp -d)
# the driver's PTX JIT of each build, once, outside the timings
for f in $F $B; do
  $f solve --problem poisson --dim 3 --degree 1 --dofs 100000 --format ell --backend cuda > /dev/null 2>&1
  $f solve --problem poisson --dim 3 --degree 2 --dofs 100000 --format auto --backend cuda > /dev/null 2>&1
done
run() { # label binary args
  local l=$1 f=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$tmp/t" "$f" solve --json "$@" > "$tmp/o.json" 2> "$tmp/e" || { echo "FAILED $l"; tail -5 "$tmp/e"; return; }
  python3 - "$l" "$tmp" <<'PY'
import json, sys
d = sys.argv[2]; r = json.load(open(f"{d}/o.json")); t = open(f"{d}/t").read().split()
print(f"{sys.argv[1]:24s} {r['format']} rows {r['rows']} its {r['iterations']} assembly {r['assembly_seconds']:.3f} cg {r['solve_seconds']:.3f} wall {t[0]} rss-GB {int(t[1]) / 1e6:.2f} B/DOF {int(t[1]) * 1e3 / r['dofs']:.0f}")
for s in sorted(r.get('stages', []), key=lambda s: -s['seconds']):
    print(f"    {s['stage']:22s} {s['seconds']:.3f}")
PY
}
Q1="--problem poisson --dim 3 --degree 1 --dofs 8000000 --format ell --backend cuda --rtol 1e-8"
Q2="--problem poisson --dim 3 --degree 2 --dofs 4000000 --format auto --backend cuda --rtol 1e-8"
for build in base fem; do
  f=$F; [ "$build" = base ] && f=$B
  [ -n "$f" ] || continue
  run "Q1 8M ell ($build)" "$f" $Q1
  run "Q2 4M auto ($build)" "$f" $Q2
done
rm -rf "$tmp"
