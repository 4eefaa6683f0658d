#!/usr/bin/env bash
# Algebraic multigrid against Jacobi on the GPU, and the CPU backend
# beside: set-up and solve to a relative residual of 1e-8 with a random
# load, each run timed whole (wall, peak RSS). P1 Poisson on refined
# Gmsh tetrahedra, Q1 elasticity with rigid-body modes (hex27 beam, the
# 3.26M-row cantilever), P2 Poisson through its low-order level, the hole
# benchmark and the cardiac model. JSON per run into $OUT, a log of the
# AMG figures (levels, set-up by stage) on stdout.
#   FEM=target/release/fem bash benches/gpu/amg.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
tmp=$(mktemp -d)
mkdir -p "$out"
M="$(dirname "$0")/../../tests/data/gmsh"
python3 "$(dirname "$0")/../../assets/meshes/make_beam.py" 16 4 4 "$tmp/beam.msh" 4 1 > /dev/null
source "$(dirname "$0")/common.sh"
# the AMG report of a run: levels, operator complexity, set-up seconds by stage
report() {
    python3 - "$out/$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); n = r.get('newton', r); a = n.get('amg')
line = f"  iterations {n.get('krylov_iterations', n.get('iterations'))}"
if 'split' in n:
    line += f", krylov {n['split']['solve']:.3f} s"
if a:
    line += f", levels {[l['rows'] for l in a['last']['levels']]}, operator complexity {a['last']['operator_complexity']:.2f}, set-up {a['setup_seconds']:.2f} s {a['last']['seconds']}"
print(line)
PY
}
run() { timed "$@"; report "$1"; }
P="--physics poisson --degree 1 --max-iterations 20000"
E="--physics elasticity --degree 1 --max-iterations 20000"
B="--mesh $tmp/beam.msh $E --dirichlet-group clamp --neumann-group tip=0:0:-0.01"
for p in amg jacobi; do
    run tet-p1-r6-$p-cuda --mesh "$M/tet10-v41.msh" $P --refine 6 --precond $p --backend cuda
    run hex-q1-elasticity-r5-$p-cuda --mesh "$M/hex27-v41.msh" $E --dirichlet-group clamped --refine 5 --precond $p --backend cuda
    run beam-q1-r4-$p-cuda $B --refine 4 --precond $p --backend cuda
done
run tet-p1-r6-amg-v-cuda --mesh "$M/tet10-v41.msh" $P --refine 6 --precond amg --amg-cycle v --backend cuda
run beam-q1-r4-amg-v-cuda $B --refine 4 --precond amg --amg-cycle v --backend cuda
run tet-p2-r4-amg-cuda --mesh "$M/tet10-v41.msh" --physics poisson --degree 2 --max-iterations 20000 --refine 4 --precond amg --backend cuda
run tet-p1-r7-amg-cuda --mesh "$M/tet10-v41.msh" $P --refine 7 --precond amg --backend cuda
# the hole benchmark has its own load
/usr/bin/time -f "hole-l9-cg-amg: wall %e s, max RSS %M KB" "$FEM" solve --problem hole --dim 2 --degree 1 --levels 9 --ordering xyz --backend cuda --solver cg --precond amg --json > "$out/hole-l9-cg-amg.json"
report hole-l9-cg-amg
# the CPU backend on every host core
run tet-p1-r6-amg-cpu --mesh "$M/tet10-v41.msh" $P --refine 6 --precond amg --backend cpu
run beam-q1-r4-amg-cpu $B --refine 4 --precond amg --backend cpu
for p in "amg --amg-cycle v" jacobi; do
    name=cardiac-${p%% *}
    /usr/bin/time -f "$name: wall %e s, max RSS %M KB" "$FEM" cardiac --mesh generated:300000 --steps 30 --backend cuda --precond $p --json > "$out/$name.json"
done
rm -rf "$tmp"
