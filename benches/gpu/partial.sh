#!/usr/bin/env bash
# Newton's tangent stored three ways on one GPU, same run: assembled
# (ELL-WARP K2), element matrices (LMA) and partially assembled (point
# data, sum factorisation), on `fem solve --mesh --physics` with a random
# load to a relative residual of 1e-8, Jacobi-CG: Poisson Q1, Q2, Q3 and
# elasticity Q1, Q2 on hexahedra, a few million rows each. Per run the
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
for case in "poisson 1 160" "poisson 2 100" "poisson 3 60" "elasticity 1 100" "elasticity 2 50"; do
    set -- $case
    "$FEM" mesh-gen --dim 3 --cells "$3" "$tmp/hex$3.msh" > /dev/null
    for format in k2 lma partial; do
        timed "$1-q$2-$format" --mesh "$tmp/hex$3.msh" --physics "$1" --degree "$2" --format $format --backend cuda
    done
    rm -f "$tmp/hex$3.msh"
done
python3 "$(dirname "$0")/partial_summary.py" "$out" | tee "$out/partial.md"
rm -rf "$tmp"
