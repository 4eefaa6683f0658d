#!/usr/bin/env bash
# The cardiac monodomain benchmark on a GPU machine: the generated heart at
# ≈3k, 30k, 300k and 3M nodes, STEPS steps of dt = 0.1 from rest with the
# apex stimulus (the upstroke: every step does Newton work), on the GPU
# with assembly by ELL-WARP SpMV (CG on ELL-WARP), by cuSPARSE SpMV (CG on
# cuSPARSE) and by atomics, and on the CPU backend (all cores) up to
# CPU_MAX nodes. JSON lines into $OUT/cardiac.jsonl, the table from
# cardiac_summary.py on stdout.
#   FEM=path/to/fem bash benches/gpu/cardiac.sh
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
FEM=${FEM:-target/release/fem}
out=${OUT:-.}; steps=${STEPS:-30}; cpu_max=${CPU_MAX:-300000}
sizes=${SIZES:-3000 30000 300000 3000000}
run() {
    "$FEM" cardiac --steps "$steps" --dt 0.1 --json "$@" | python3 -c 'import json,sys; r=json.load(sys.stdin); r.pop("per_step",None); print(json.dumps(r))' >> "$out/cardiac.jsonl" \
        || echo "FAILED: cardiac $*"
}
for n in $sizes; do
    run --mesh generated:$n --backend cuda --assembly spmv --spmv warp
    run --mesh generated:$n --backend cuda --assembly spmv --spmv cusparse
    run --mesh generated:$n --backend cuda --assembly atomic --spmv warp
    if [ "$n" -le "$cpu_max" ]; then
        run --mesh generated:$n --backend cpu
    fi
done
python3 "$(dirname "$0")/cardiac_summary.py" "$out/cardiac.jsonl"
