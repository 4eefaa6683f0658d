#!/usr/bin/env bash
# fem's smoothed-aggregation AMG, on the GPU and on the CPU backend, beside
# pyamg on the host CPU, on the same linear systems: fem writes each
# problem's system (`fem solve --write-system`), pyamg sets it up and
# solves it with its defaults to the same relative residual of 1e-8
# (benches/cpu/pyamg_system.py). fem's runs are timed whole (`timed`: wall,
# peak RSS) with a random load. JSON per run into $OUT, the log into
# $OUT/amg_pyamg.log and the table into $OUT/amg_pyamg.md.
#   FEM=target/release/fem bash benches/gpu/amg_pyamg.sh
#   CASES="tet-p1-r6 beam-q1-r3" FEM=... bash benches/gpu/amg_pyamg.sh
#   BACKENDS=cpu OUT=benches/cpu/results/amg_pyamg bash benches/gpu/amg_pyamg.sh  (no GPU)
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
tmp=$(mktemp -d)
here=$(dirname "$0")
mkdir -p "$out"
source "$here/common.sh"
M="$here/../../tests/data/gmsh"
python3 "$here/../../assets/meshes/make_beam.py" 16 4 4 "$tmp/beam.msh" 4 1 > /dev/null
declare -A CASE=(
    [tet-p1-r6]="--mesh $M/tet10-v41.msh --physics poisson --degree 1 --refine 6"
    [tet-p2-r4]="--mesh $M/tet10-v41.msh --physics poisson --degree 2 --refine 4"
    [hex-q1-elasticity-r5]="--mesh $M/hex27-v41.msh --physics elasticity --degree 1 --dirichlet-group clamped --refine 5"
    [beam-q1-r3]="--mesh $tmp/beam.msh --physics elasticity --degree 1 --dirichlet-group clamp --neumann-group tip=0:0:-0.01 --refine 3"
)
{
for name in ${CASES:-tet-p1-r6 tet-p2-r4 hex-q1-elasticity-r5 beam-q1-r3}; do
    args=${CASE[$name]}
    for backend in ${BACKENDS:-cuda cpu}; do
        timed "$name-amg-$backend" $args --max-iterations 20000 --precond amg --backend "$backend"
    done
    "$FEM" solve $args --max-iterations 20000 --precond amg --backend "${backend:-cpu}" --load random --rtol 1e-8 --write-system "$tmp/$name" > /dev/null 2> "$tmp/$name.err" || { echo "FAILED: writing $name"; tail -3 "$tmp/$name.err"; }
    /usr/bin/time -f "$name-pyamg: wall %e s, max RSS %M KB" timeout "${PYAMG_TIMEOUT:-1200}" python3 "$here/../cpu/pyamg_system.py" "$tmp/$name" > "$out/$name-pyamg.json" || echo "FAILED: pyamg on $name"
    rm -rf "$tmp/$name"
done
} 2>&1 | tee "$out/amg_pyamg.log"
python3 "$here/amg_pyamg_summary.py" "$out" | tee "$out/amg_pyamg.md"
rm -rf "$tmp"
