#!/usr/bin/env bash
# Newton's tangent stored four ways on one GPU, same run: assembled
# (ELL-WARP K2), element matrices (LMA), partially assembled (point data,
# sum factorisation) and matrix-free (`free`: recomputed at the points by
# every product), on `fem solve --mesh --physics` with a random load to a
# relative residual of 1e-8, Jacobi-CG: Poisson Q1, Q2, Q3, elasticity
# Q1, Q2 and neo-Hookean Q2 on hexahedra, a few million rows each. Per run the
# JSON report into $OUT, the wall time and peak RSS in the log; the table
# (seconds per CG iteration, tangent set-up, bytes per product) from
# partial_summary.py.
#   FEM=target/release/fem OUT=out bash benches/gpu/partial.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
tmp=$(mktemp -d)
mkdir -p "$out"
source "$(dirname "$0")/common.sh"
# physics degree cells-per-direction
over_hexahedra "k2:k2:cuda lma:lma:cuda partial:partial:cuda free:matrix-free:cuda" \
    "poisson 1 160" "poisson 2 100" "poisson 3 60" "elasticity 1 100" "elasticity 2 50" "neo-hookean 2 50"
python3 "$(dirname "$0")/partial_summary.py" "$out" | tee "$out/partial.md"
rm -rf "$tmp"
