#!/usr/bin/env bash
# Distributed solves on the GPUs of one host: `fem solve --mesh` on one
# GPU (no mpirun) against 2 (and 4 where there are) ranks of one GPU each,
# halo through NCCL and through the host (FEM_NCCL=off), Q2 Poisson and
# Q1 elasticity on a generated hexahedral box, random load, CG-Jacobi to
# 1e-8. Prints one line a run: set-up and solve by phase, seconds per
# Krylov iteration, wall, and per rank the partition, halo and memory.
# AMG=1: the same problems preconditioned by AMG instead (a partitioned
# hierarchy across ranks, set up on each rank's GPU, and on the hosts
# with --amg-setup host unless HOST_SETUP=0; ELASTICITY=0: Poisson
# alone), with its set-up by stage and its levels. NPS: the rank counts
# (default "0 2 4"; 0 is one GPU without mpirun).
#   FEM=target/release/fem CELLS=100 bash benches/gpu/distributed.sh
set -u
F=${FEM:-target/release/fem}
NG=$(nvidia-smi -L | wc -l); NC=$(nproc)
export OMPI_MCA_rmaps_base_oversubscribe=1 FEM_TUNING=off
tmp=$(mktemp -d)
$F mesh-gen --dim 3 --cells "${CELLS:-100}" --binary "$tmp/hex.msh" > /dev/null
# the driver's PTX JIT, once, outside the timings
$F mesh-gen --dim 3 --cells 6 "$tmp/small.msh" > /dev/null
$F solve --mesh "$tmp/small.msh" --physics poisson --degree 2 --backend cuda > /dev/null 2>&1
$F solve --mesh "$tmp/small.msh" --physics elasticity --dirichlet-group xmin --backend cuda > /dev/null 2>&1
run() { # ranks label args (ranks 0: one GPU, no mpirun)
  local np=$1 l=$2; shift 2
  local cmd=("$F" solve --json "$@")
  if [ "$np" -gt 0 ]; then cmd=(mpirun -np "$np" -x RAYON_NUM_THREADS=$((NC / np)) "$F" solve --json "$@"); fi
  /usr/bin/time -f "%e %M" -o "$tmp/t" "${cmd[@]}" > "$tmp/o.json" 2> "$tmp/e" || { echo "FAILED $l np=$np"; tail -5 "$tmp/e"; return; }
  python3 - "$l" "$np" "$tmp" <<'PY'
import json, sys
d = sys.argv[3]; r = json.load(open(f"{d}/o.json")); n = r['newton']; t = open(f"{d}/t").read().split(); p = r.get('ranks')
its = n['krylov_iterations']; sp = n['split']
a = n.get('amg') or {}
amg = f" amg-setup {a['setup_seconds']:.3f} {[(k, round(v, 2)) for k, v in a['last']['seconds'].items()]} levels {[l['rows'] for l in a['last']['levels']]}" if a else ""
s = f"{sys.argv[1]:20s} np={sys.argv[2]}{amg} rows {r['rows']} its {its} host-setup {r['host_setup_seconds']:.2f} {[(s['stage'], round(s['seconds'], 2)) for s in r['host_setup_split']]} backend-setup {n['setup_seconds']:.3f} element {sp['element']:.3f} assembly {sp['assembly']:.3f} krylov {sp['solve']:.3f} per-it {1e6 * sp['solve'] / max(its, 1):.1f}us wall {t[0]}"
if p:
    s += f" | {p['halo_transport']} cut {p['partition']['cut_facets']} imb {p['partition']['imbalance']:.3f} owned {min(p['owned_rows'])}-{max(p['owned_rows'])} ghost {max(p['ghost_rows'])} halo-s {max(p['halo_seconds']):.3f} sums {p['reductions']} sums-s {max(p['reduction_seconds']):.3f} rss-GB {[round(b / 1e9, 2) for b in p['peak_rss_bytes']]} threads {p['threads']} cores {p['cores']}"
else:
    s += f" rss-GB {int(t[1]) / 1e6:.2f}"
print(s, flush=True)
PY
}
P2="--mesh $tmp/hex.msh --physics poisson --degree 2 --load random --rtol 1e-8 --backend cuda"
E1="--mesh $tmp/hex.msh --physics elasticity --degree 1 --dirichlet-group xmin --load random --rtol 1e-8 --backend cuda"
if [ "${AMG:-0}" = 1 ]; then
  for np in ${NPS:-0 2 4}; do [ "$np" -le "$NG" ] && run $np "poisson Q2 amg" $P2 --precond amg; done
  [ "${HOST_SETUP:-1}" = 1 ] && run 2 "poisson Q2 amg host" $P2 --precond amg --amg-setup host
  [ "${ELASTICITY:-1}" = 1 ] || { rm -rf "$tmp"; exit 0; }
  for np in ${NPS:-0 2 4}; do [ "$np" -le "$NG" ] && run $np "elasticity Q1 amg" $E1 --precond amg; done
  [ "${HOST_SETUP:-1}" = 1 ] && run 2 "elasticity Q1 amg host" $E1 --precond amg --amg-setup host
  rm -rf "$tmp"
  exit 0
fi
for np in ${NPS:-0 2 4}; do [ "$np" -le "$NG" ] && run $np "poisson Q2" $P2; done
FEM_NCCL=off run 2 "poisson Q2 host" $P2
for np in ${NPS:-0 2 4}; do [ "$np" -le "$NG" ] && run $np "elasticity Q1" $E1; done
FEM_NCCL=off run 2 "elasticity Q1 host" $E1
rm -rf "$tmp"
