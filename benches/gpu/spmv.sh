#!/usr/bin/env bash
# SpMV benchmark of Wong, Kuhl & Darve on a GPU machine: every format side by
# side with cuSPARSE on generated FEM matrices (2D/3D, p = 1..4, scalar and
# vector-valued) and power-law matrices, each format's parameters tuned;
# assembly by SpMV against atomic scatter; the CPU backend on one matrix.
# JSON into $OUT (default .), a Markdown table on stdout.
#   FEM=path/to/fem bash benches/gpu/spmv.sh [f64|f32]
# cuSPARSE is loaded from LD_LIBRARY_PATH (/usr/local/cuda/lib64 is added).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
FEM=${FEM:-target/release/fem}
prec=${1:-f64}; out=${OUT:-.}
MATS=${MATS:-"fem:dim=2,degree=1,rows=4000000 fem:dim=2,degree=2,rows=2000000 fem:dim=2,degree=3,rows=1500000 fem:dim=2,degree=4,rows=1000000
 fem:dim=3,degree=1,rows=1500000 fem:dim=3,degree=2,rows=600000 fem:dim=3,degree=3,rows=300000 fem:dim=3,degree=4,rows=150000
 fem:dim=2,degree=2,rows=800000,components=2 fem:dim=3,degree=1,rows=600000,components=3,unstructured=1
 powerlaw:rows=1000000,xmin=2,alpha=2.5,max=353 powerlaw:rows=1000000,xmin=1,alpha=2.3,max=4700"}
for m in $MATS; do
    n=$(echo "$m" | tr ':,=' '___')
    "$FEM" spmv --generate "$m" --format all --tune --repeats 30 --precision "$prec" --json > "$out/$n-$prec.json" || echo "FAILED: $m"
done
for a in "2 1 4000000" "2 2 4000000" "3 1 1500000" "3 2 1500000"; do
    set -- $a
    "$FEM" spmv-assembly --dim "$1" --degree "$2" --rows "$3" --precision "$prec" --json > "$out/assembly-$1d-p$2-$prec.json" || echo "FAILED: assembly $a"
done
"$FEM" spmv --backend cpu --generate fem:dim=2,degree=2,rows=2000000 --format csr,ell,ellt,k1,k1r,k1rs,k2r --repeats 10 --precision "$prec" --json > "$out/cpu-fem_2d_p2-$prec.json"
python3 "$(dirname "$0")/spmv_summary.py" "$out"/*-"$prec".json
