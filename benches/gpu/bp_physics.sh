#!/usr/bin/env bash
# The Jacobian of each shipped physics on L-vectors (`fem bp --physics`),
# partially assembled and matrix-free, N = 2..8 on about 1e7 L-DOFs
# (scalar: the CEED problems' meshes, n = 108, 72, 54, 43, 36, 31, 27;
# vector: a third of the element nodes), beside the tuned CEED kernels on
# the same scalar meshes (`--assembled`: L-vectors too). JSON lines into
# $OUT (default .), a Markdown table on stdout and a PNG of GDOF/s.
#   FEM=path/to/fem bash benches/gpu/bp_physics.sh
set -u
export FEM_TUNING=off
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
DEGREES=${DEGREES:-"2 3 4 5 6 7 8"}
REPEATS=${REPEATS:-10}
source "$(dirname "$0")/common.sh"
for n in $DEGREES; do
    e=$((SIDE[$n] ** 3))
    for physics in mass poisson elasticity neo-hookean; do
        size="--elements $e"
        case $physics in elasticity | neo-hookean) size="--dofs $((e * (n + 1) ** 3 / 3))" ;; esac
        for level in partial none; do
            "$FEM" bp --physics "$physics" --level "$level" --degree "$n" $size --backend cuda --repeats "$REPEATS" --json \
                | tr -d '\n' >> "$out/physics.jsonl" && echo >> "$out/physics.jsonl" || echo "FAILED: $physics $level N=$n"
        done
    done
    for p in bp1 bp3.0 bp3.5; do
        "$FEM" bp --problem "$p" --degree "$n" --elements "$e" --assembled --backend cuda --repeats "$REPEATS" --json \
            | tr -d '\n' >> "$out/ceed.jsonl" && echo >> "$out/ceed.jsonl" || echo "FAILED: $p N=$n"
    done
done
python3 "$(dirname "$0")/bp_physics_summary.py" "$out"
