#!/usr/bin/env bash
# fem demo (the minimal surface on the shipped Gmsh disk) on the GPU at
# three refinements and on the CPU (all host cores) at the smallest, with
# the whole command's wall time and peak host memory. JSON per run and
# a log into $OUT.
#   FEM=path/to/fem bash benches/gpu/demo.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
mkdir -p "$out"
run() {
    local name=$1
    shift
    /usr/bin/time -f "$name: wall %e s, max RSS %M KB" "$FEM" demo --json --out /tmp/fem-demo-$name "$@" > "$out/$name.json" 2>> "$out/demo.log" || echo "FAILED: $name $*" >> "$out/demo.log"
}
for r in 4 5 6; do
    run gpu-r$r --backend cuda --refine $r
done
run cpu-r4 --backend cpu --refine 4
cp /tmp/fem-demo-gpu-r5/minimal-surface.png "$out/" 2> /dev/null
