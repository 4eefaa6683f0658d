#!/usr/bin/env bash
# BP5 (bp3.5, GLL collocation) across the GPUs of one host: `mpirun -np R
# fem bp` with R = 1, 2 and 4 (where there are 4), one GPU a rank, the
# element grid split into bricks, the operator applied on L-vectors with
# the halo through NCCL, then Jacobi-CG to 1e-8. Strong scaling at SIZES
# (elements; N = 7: 287496 elements are 99.3M nodes) and weak scaling at
# WEAK elements a GPU. One line a run: seconds an application across ranks
# and without the exchange, GDOF/s, halo time and bytes, CG, set-up, RSS.
#   FEM=target/release/fem bash benches/gpu/bp_ranks.sh
set -u
F=${FEM:-target/release/fem}
NG=$(nvidia-smi -L | wc -l); NC=$(nproc)
export OMPI_MCA_rmaps_base_oversubscribe=1 FEM_TUNING=off
tmp=$(mktemp -d)
N=${DEGREE:-7}
NPS=${NPS:-"1 2 $([ "$NG" -ge 4 ] && echo 4)"}
run() { # ranks elements label
  local np=$1 e=$2 l=$3
  /usr/bin/time -f "%e %M" -o "$tmp/t" mpirun -np "$np" -x RAYON_NUM_THREADS=$((NC / np)) "$F" bp --problem bp3.5 --degree "$N" --elements "$e" --backend cuda --solve "${RTOL:-1e-8}" --repeats "${REPEATS:-10}" --json > "$tmp/o.json" 2> "$tmp/e" || { echo "FAILED $l np=$np"; tail -5 "$tmp/e"; return; }
  python3 - "$l" "$np" "$tmp" <<'PY'
import json, sys
d = sys.argv[3]; r = json.load(open(f"{d}/o.json")); t = open(f"{d}/t").read().split(); s = r['solve']
n = r['global_nodes']
print(f"{sys.argv[1]:8s} np={sys.argv[2]} N={r['degree']} elements {r['elements']} nodes {n} bricks {r['bricks']} {r['kernel']} halo {r['halo_transport']}: "
      f"{1e3 * r['seconds_per_apply']:.3f} ms/apply ({1e3 * (r['sequential_seconds_per_apply'] or 0):.3f} not overlapped, {1e3 * r['local_seconds_per_apply']:.3f} local) {r['gdofs_per_second']:.2f} GDOF/s "
      f"halo {[round(1e6 * h, 1) for h in r['halo_seconds_per_apply']]} us {[round(b / 1e6, 2) for b in r['halo_bytes_per_apply']]} MB, "
      f"owned {r['owned_nodes']} ghosts {r['ghost_nodes']} rank-elements {r['rank_elements']} err-vs-cpu {r['max_rel_error_vs_cpu']:.1e} | "
      f"CG {s['iterations']} its {s['seconds']:.3f} s {1e3 * s['seconds'] / max(s['iterations'], 1):.3f} ms/it err {s['max_nodal_error']:.2e} | "
      f"setup {[round(x, 1) for x in r['setup_seconds']]} s stages {[(s['stage'], round(s['seconds'], 2)) for s in r['stages']]} wall {t[0]} s rss {[round(b / 1e9, 2) for b in r['peak_rss_bytes']]} GB "
      f"({max(r['peak_rss_bytes']) * r['ranks'] / n:.0f} B/node)", flush=True)
PY
}
# the driver's PTX JIT, once, outside the timings
mpirun -np 1 "$F" bp --degree "$N" --elements 64 --backend cuda --repeats 1 > /dev/null 2>&1
for e in ${SIZES:-287496}; do
  # one GPU without mpirun: the one-rank path's own timing (warm L2, as here)
  "$F" bp --problem bp3.5 --degree "$N" --elements "$e" --backend cuda --assembled --l2 warm --repeats "${REPEATS:-10}" --json 2> /dev/null \
    | python3 -c "import json,sys; r=json.load(sys.stdin); print(f\"one      no mpirun N={r['degree']} elements {r['elements']} nodes {r['global_nodes']}: {1e3 * r['seconds_per_apply']:.3f} ms/apply {r['gdofs_per_second']:.2f} GDOF/s {r['roofline_fraction']:.3f} of copy\")"
  for np in $NPS; do run "$np" "$e" strong; done
done
for e in ${WEAK:-}; do for np in $NPS; do run "$np" $((e * np)) weak; done; done
