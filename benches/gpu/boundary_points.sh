#!/usr/bin/env bash
# A Robin term kept by its facet points beside the cells' partial assembly
# or matrix-free action, against the storages that keep it as element
# matrices: the shipped Radiation physics (−Δu = f, ∂u/∂n + u + u|u|³ = g,
# g = 1 on all six sides) on Q2 hexahedra, random load, Newton to a
# relative residual of 1e-8, each tangent stored as K2, element matrices
# (LMA), partial assembly and matrix-free, under Jacobi-CG, and partial
# assembly under p-multigrid; 80³ cells (4.2M rows) on the GPU, 40³
# (0.53M) on the CPU backend (all host cores), K2 and partial. Each run timed whole
# (wall, peak RSS); JSON per run and summary.md into $OUT, a log on stdout.
#   FEM=target/release/fem bash benches/gpu/boundary_points.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
tmp=$(mktemp -d)
mkdir -p "$out"
source "$(dirname "$0")/common.sh"
cooled=xmin=1,xmax=1,ymin=1,ymax=1,zmin=1,zmax=1
run() {
    timed "$@"
    cp "$tmp/$1.time" "$out/$1.time"
}
# `each CELLS BACKEND FORMAT:PRECOND...`
each() {
    local cells=$1 backend=$2
    shift 2
    "$FEM" mesh-gen --dim 3 --cells "$cells" "$tmp/hex$cells.msh" > /dev/null
    for case in "$@"; do
        IFS=: read -r format precond <<< "$case"
        run "radiation-q2-$cells-$format-$precond-$backend" --mesh "$tmp/hex$cells.msh" --physics radiation --degree 2 --robin-group $cooled --format "$format" --precond "$precond" --backend "$backend"
    done
}
each 80 cuda k2:jacobi lma:jacobi partial:jacobi matrix-free:jacobi partial:pmg matrix-free:pmg
each 40 cpu k2:jacobi partial:jacobi
python3 "$(dirname "$0")/boundary_summary.py" "$out" > "$tmp/summary.md"
mv "$tmp/summary.md" "$out/summary.md"
rm -rf "$tmp"
