#!/usr/bin/env bash
# The mesh pipeline at about 1M DOFs on the GPU and the CPU (all host
# cores), each run timed whole (wall, peak RSS): `fem solve --mesh
# --physics` with a random load to a relative residual of 1e-8 (Poisson P2
# on tetrahedra, Poisson Q2 and elasticity Q1 on hexahedra), and the
# neo-Hookean cantilever example (Q1 beam 160 × 40 × 40, one load step).
# JSON and text per run into $OUT, a log on stdout.
#   FEM=target/release/fem CANTILEVER=target/release/examples/cantilever bash benches/gpu/pipeline.sh
set -u
FEM=${FEM:-target/release/fem}
CANTILEVER=${CANTILEVER:-target/release/examples/cantilever}
out=${OUT:-.}
tmp=$(mktemp -d)
mkdir -p "$out"
"$FEM" mesh-gen --dim 3 --cells 50 --simplex "$tmp/tet50.msh" > /dev/null
"$FEM" mesh-gen --dim 3 --cells 70 "$tmp/hex70.msh" > /dev/null
"$FEM" mesh-gen --dim 3 --cells 50 "$tmp/hex50.msh" > /dev/null
source "$(dirname "$0")/common.sh"
for backend in cuda cpu; do
    timed elasticity-q1-hex-$backend --mesh "$tmp/hex70.msh" --physics elasticity --degree 1 --backend $backend
    timed poisson-p2-tet-$backend --mesh "$tmp/tet50.msh" --physics poisson --degree 2 --backend $backend
    timed poisson-q2-hex-$backend --mesh "$tmp/hex50.msh" --physics poisson --degree 2 --backend $backend
done
python3 "$(dirname "$0")/../../assets/meshes/make_beam.py" 160 40 40 "$tmp/beam.msh" 4 1
for backend in cuda cpu; do
    /usr/bin/time -f "cantilever-$backend: wall %e s, max RSS %M KB" "$CANTILEVER" "$tmp/beam.msh" 1 0.2 $backend > "$out/cantilever-$backend.txt"
done
rm -rf "$tmp"
