#!/usr/bin/env bash
# Newton's preconditioners on refined meshes, each run timed whole (wall,
# peak RSS): `fem solve --mesh --physics --refine R --precond P` with a
# random load to a relative residual of 1e-8, Jacobi, SSOR and multigrid
# by rediscretisation, on the GPU and the CPU backend (all host cores).
# Coarse meshes are chosen so the coarsest multigrid level is solved
# exactly (at most 1500 rows); the largest runs (refine 4: 4.2M and 3.3M
# rows) on the GPU alone. JSON per run and summary.md into $OUT, a
# log on stdout.
#   FEM=target/release/fem bash benches/gpu/precond.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
tmp=$(mktemp -d)
mkdir -p "$out"
"$FEM" mesh-gen --dim 3 --cells 5 --simplex "$tmp/tet5.msh" > /dev/null
"$FEM" mesh-gen --dim 3 --cells 5 "$tmp/hex5.msh" > /dev/null
"$FEM" mesh-gen --dim 3 --cells 6 "$tmp/hex6.msh" > /dev/null
python3 "$(dirname "$0")/../../assets/meshes/make_beam.py" 16 4 4 "$tmp/beam.msh" 4 1 > /dev/null
source "$(dirname "$0")/common.sh"
for backend in cuda cpu; do
    for p in mg jacobi ssor; do
        [ "$backend" = cpu ] && [ "$p" = ssor ] && continue
        timed poisson-p2-tet-$p-$backend --mesh "$tmp/tet5.msh" --physics poisson --degree 2 --refine 3 --precond $p --backend $backend
        timed poisson-q2-hex-$p-$backend --mesh "$tmp/hex5.msh" --physics poisson --degree 2 --refine 3 --precond $p --backend $backend
        timed elasticity-q1-hex-$p-$backend --mesh "$tmp/hex6.msh" --physics elasticity --degree 1 --refine 3 --precond $p --backend $backend
        timed beam-q1-$p-$backend --mesh "$tmp/beam.msh" --physics elasticity --degree 1 --refine 3 --dirichlet-group clamp --neumann-group tip=0:0:-0.01 --precond $p --backend $backend
    done
done
# the larger sizes on the GPU alone: Jacobi's iterations double per
# refinement, multigrid's do not
for p in mg jacobi; do
    timed poisson-p2-tet-r4-$p-cuda --mesh "$tmp/tet5.msh" --physics poisson --degree 2 --refine 4 --precond $p --backend cuda
    timed beam-q1-r4-$p-cuda --mesh "$tmp/beam.msh" --physics elasticity --degree 1 --refine 4 --dirichlet-group clamp --neumann-group tip=0:0:-0.01 --precond $p --backend cuda
done
python3 "$(dirname "$0")/precond_table.py" "$out" > "$tmp/summary.md" && mv "$tmp/summary.md" "$out/summary.md"
rm -rf "$tmp"
