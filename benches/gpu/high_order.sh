#!/usr/bin/env bash
# Shipped physics from Q4 to Q8 on hexahedra, partially assembled (point
# data, sum factorisation) on the GPU and on the CPU backend of the same
# machine, and matrix-free on the GPU (`free`), same run: `fem solve
# --mesh --physics P --degree p --format partial|matrix-free` with a
# random load to a relative residual of 1e-8, Jacobi-CG,
# about a million rows each (half a million for vector Q6). Per run the
# JSON report into $OUT, the wall time and peak RSS in the log; the table
# from partial_summary.py.
#   FEM=target/release/fem OUT=out bash benches/gpu/high_order.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
tmp=$(mktemp -d)
mkdir -p "$out"
source "$(dirname "$0")/common.sh"
# physics degree cells-per-direction
over_hexahedra "cuda:partial:cuda free:matrix-free:cuda cpu:partial:cpu" \
    "poisson 4 25" "poisson 6 17" "poisson 8 12" "elasticity 4 16" "elasticity 6 9" "neo-hookean 4 16"
python3 "$(dirname "$0")/partial_summary.py" "$out" | tee "$out/high_order.md"
rm -rf "$tmp"
