#!/usr/bin/env bash
# Boundary terms of a #[fem_kernel] physics in Newton solves: the shipped
# Radiation physics (−Δu = f, ∂u/∂n + u + u|u|³ = g, here g = 1 on the
# whole boundary) against Poisson with u = 0 there (the same cells without
# a facet kernel), on P2 tetrahedra and Q2 hexahedra of refined boxes
# (refine 3: 0.53M rows, both backends; refine 4: 4.2M rows, GPU),
# random load, relative residual 1e-8, multigrid, on the GPU and the CPU
# backend (all host cores). Each run timed whole (wall, peak
# RSS); JSON per run and summary.md into $OUT, a log on stdout.
#   FEM=target/release/fem bash benches/gpu/boundary.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
tmp=$(mktemp -d)
mkdir -p "$out"
# coarse meshes whose P2/Q2 spaces (1331 rows) multigrid solves exactly
"$FEM" mesh-gen --dim 3 --cells 5 --simplex "$tmp/tet.msh" > /dev/null
"$FEM" mesh-gen --dim 3 --cells 5 "$tmp/hex.msh" > /dev/null
source "$(dirname "$0")/common.sh"
run() {
    timed "$@"
    cp "$tmp/$1.time" "$out/$1.time"
}
# Radiation cooled all round (the tetrahedral box has one boundary group;
# the hexahedral one a group per side) against Poisson with u = 0 there.
both() {
    local r=$1 backend=$2
    run radiation-p2-tet-r$r-$backend --mesh "$tmp/tet.msh" --physics radiation --degree 2 --refine $r --robin-group boundary=1 --precond mg --backend $backend
    run poisson-p2-tet-r$r-$backend --mesh "$tmp/tet.msh" --physics poisson --degree 2 --refine $r --precond mg --backend $backend
    run radiation-q2-hex-r$r-$backend --mesh "$tmp/hex.msh" --physics radiation --degree 2 --refine $r --robin-group xmin=1,xmax=1,ymin=1,ymax=1,zmin=1,zmax=1 --precond mg --backend $backend
    run poisson-q2-hex-r$r-$backend --mesh "$tmp/hex.msh" --physics poisson --degree 2 --refine $r --precond mg --backend $backend
}
both 3 cuda
both 3 cpu
both 4 cuda
python3 "$(dirname "$0")/boundary_summary.py" "$out" > "$tmp/summary.md"
mv "$tmp/summary.md" "$out/summary.md"
rm -rf "$tmp"
