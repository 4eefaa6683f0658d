#!/usr/bin/env bash
# Autotuning on a GPU machine: `fem tune` on the project's FEM matrices and
# BP operators (default against tuned time), then the `fem bench` suites
# (JSON, Markdown, PNG) with the model's a-priori SpMV format against the
# measured best. Everything into $OUT (default .).
#   FEM=path/to/fem bash benches/gpu/tune.sh [spmv|bp|poisson|all]
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
FEM=${FEM:-target/release/fem}
what=${1:-all}; out=${OUT:-.}
export FEM_TUNING_DIR="$out/tuning"
if [ "$what" = spmv ] || [ "$what" = all ]; then
    for m in fem:dim=2,degree=2,rows=2000000 fem:dim=3,degree=2,rows=600000 fem:dim=3,degree=4,rows=150000 powerlaw:rows=1000000,xmin=2,alpha=2.5,max=353; do
        n=$(echo "$m" | tr ':,=' '___')
        "$FEM" tune spmv --generate "$m" --format k2r,csr --repeats 10 --json > "$out/tune-$n.json" || echo "FAILED: tune $m"
    done
    "$FEM" bench spmv --backend cuda --out "$out/bench" --json > /dev/null || echo "FAILED: bench spmv"
fi
if [ "$what" = bp ] || [ "$what" = all ]; then
    for p in bp1 bp3.5 bp3.0; do
        "$FEM" tune bp --problem "$p" --degree 1-8 --dofs 10000000 --repeats 10 --json > "$out/tune-$p.jsonl" || echo "FAILED: tune $p"
    done
    "$FEM" bench bp --backend cuda --out "$out/bench" --json > /dev/null || echo "FAILED: bench bp"
fi
if [ "$what" = poisson ] || [ "$what" = all ]; then
    "$FEM" bench assembly --backend cuda --size 1000000 --out "$out/bench" --json > /dev/null || echo "FAILED: bench assembly"
    "$FEM" bench solve --backend cuda --size 1000000 --degrees 1-3 --out "$out/bench" --json > /dev/null || echo "FAILED: bench solve"
fi
cat "$out"/bench/*.md 2>/dev/null
