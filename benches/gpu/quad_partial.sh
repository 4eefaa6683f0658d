#!/usr/bin/env bash
# Newton's tangent on quadrilaterals on one GPU, same run: assembled
# (ELL-WARP K2) against partially assembled (point data, the 2D sum
# factorisation kernels), on `fem solve --mesh --physics` with a random
# load to a relative residual of 1e-8, Jacobi-CG: Poisson Q2, Q4, Q8 and
# elasticity Q2, Q3, about 4M rows each. JSON per run into $OUT, wall time
# and peak RSS in the log; the table from partial_summary.py.
#   FEM=target/release/fem OUT=out bash benches/gpu/quad_partial.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
tmp=$(mktemp -d)
mkdir -p "$out"
source "$(dirname "$0")/common.sh"
# physics degree cells-per-direction
DIM=2 over_hexahedra "k2:k2:cuda partial:partial:cuda" \
    "poisson 2 1000" "poisson 4 500" "poisson 8 250" "elasticity 2 700" "elasticity 3 450"
python3 "$(dirname "$0")/partial_summary.py" "$out" | tee "$out/quad_partial.md"
rm -rf "$tmp"
