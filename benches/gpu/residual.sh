#!/usr/bin/env bash
# Thread-transposition residuals on a GPU machine: Poisson and elasticity,
# 2D and 3D, P1 and P2, f32 and f64, on ~1M-cell simplex meshes, each with
# the blocks × batches grid tuned first (the paper's Table 2, kept in the
# tuning file), then the `fem bench residual` suite (JSON, Markdown, PNG)
# in both precisions. Everything into $OUT (default .).
#   FEM=path/to/fem bash benches/gpu/residual.sh
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
FEM=${FEM:-target/release/fem}
out=${OUT:-.}; cells=${CELLS:-1000000}
export FEM_TUNING_DIR="$out/tuning"
for problem in poisson elasticity; do
    for dim in 2 3; do
        for degree in 1 2; do
            for precision in f32 f64; do
                "$FEM" residual --problem $problem --dim $dim --degree $degree --cells "$cells" --precision $precision \
                    --backend cuda --tune --repeats 20 --json | tr -d '\n ' >> "$out/residual.jsonl" && echo >> "$out/residual.jsonl" \
                    || echo "FAILED: residual $problem $dim $degree $precision"
            done
        done
    done
done
for precision in f64 f32; do
    "$FEM" bench residual --backend cuda --size "$cells" --precision $precision --out "$out/bench-$precision" --json > /dev/null \
        || echo "FAILED: bench residual $precision"
done
cat "$out"/bench-*/residual.md 2>/dev/null
