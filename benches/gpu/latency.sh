#!/usr/bin/env bash
# Small solves at the latency floor: time per CG iteration for builds and
# settings side by side in one run.
#  - 3D Q1 Poisson, Jacobi-CG from a random start to rtol 1e-8 (`fem solve
#    --bench`, which also times one product of the same operator and the
#    copy of its bytes), ELL-WARP and CSR, from 10^4 to 10^6 DOFs;
#  - the cardiac model at 300k nodes, 30 steps (Jacobi-CG inside Newton).
# Each for the current build ($FEM), the same with CUDA graphs off
# (FEM_CUDA_GRAPHS=off), and an earlier build ($BASE, optional).
# JSON lines into $OUT/latency.jsonl; table and plot by latency_summary.py.
#   FEM=target/release/fem BASE=/path/to/old/fem OUT=dir bash benches/gpu/latency.sh
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
FEM=${FEM:-target/release/fem}
out=${OUT:-.}; sizes=${SIZES:-10000 30000 100000 300000 1000000}
builds="fem graphs-off"
[ -n "${BASE:-}" ] && builds="$builds base"
record() { # build case command...
    local build=$1 case=$2; shift 2
    local bin=$FEM env=""
    [ "$build" = base ] && bin=$BASE
    [ "$build" = graphs-off ] && env="FEM_CUDA_GRAPHS=off"
    env $env "$bin" "$@" --json 2>/dev/null \
        | python3 -c 'import json,sys; r=json.load(sys.stdin); r.pop("per_step",None); r.pop("history",None); print(json.dumps({"build": sys.argv[1], "case": sys.argv[2], "report": r}))' "$build" "$case" >> "$out/latency.jsonl" \
        || echo "FAILED: $build $case"
}
for n in $sizes; do
    for format in ell csr; do
        for build in $builds; do
            record "$build" "poisson-$format" solve --dim 3 --degree 1 --dofs "$n" --format "$format" --backend cuda --rtol 1e-8 --bench
        done
    done
done
for build in $builds; do
    record "$build" cardiac cardiac --mesh generated:300000 --steps 30 --dt 0.1 --backend cuda
done
python3 "$(dirname "$0")/latency_summary.py" "$out/latency.jsonl"
