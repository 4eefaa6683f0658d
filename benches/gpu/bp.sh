#!/usr/bin/env bash
# CEED benchmark problems of Świrydowicz et al. on a GPU machine: BP1.0,
# BP3.5 (lines to N = 8, slices above, and 3D threads for N ≤ 7) and BP3.0 for
# N = 1..15 on 512 and 4096 trilinear elements and on ≥ 1e7 DOFs; the
# CPU backend on ≥ 1e7 DOFs for N = 2, 4, 7; assembled BP3.5; Jacobi-CG.
# JSON lines into $OUT (default .), a Markdown table on stdout.
#   FEM=path/to/fem bash benches/gpu/bp.sh
set -u
# The built-in defaults: neither a stored tuning file nor the launches
# shipped for the device.
export FEM_TUNING=off
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
DEGREES=${DEGREES:-1-15}
SIZES=${SIZES:-"--elements=512 --elements=4096 --dofs=10000000"}
for p in bp1 bp3.5 bp3.0; do
    for s in $SIZES; do
        n=$(echo "$p$s" | tr -d '-' | tr '=.' '__')
        "$FEM" bp --problem "$p" --degree "$DEGREES" "$s" --backend cuda --repeats 20 --json > "$out/$n.jsonl" || echo "FAILED: $p $s"
    done
    n=$(echo "cpu_$p" | tr '.' '_')
    "$FEM" bp --problem "$p" --degree 2,4,7 --dofs 10000000 --cpu-time --backend cuda --repeats 5 --json > "$out/$n.jsonl" || echo "FAILED: cpu $p"
done
for s in $SIZES; do
    n=$(echo "bp3.5_3d$s" | tr -d '-' | tr '=.' '__')
    "$FEM" bp --problem bp3.5 --threads-3d --degree 1-7 "$s" --backend cuda --repeats 20 --json > "$out/$n.jsonl" || echo "FAILED: 3d $s"
done
"$FEM" bp --problem bp3.5 --degree 1-15 --dofs 10000000 --assembled --backend cuda --repeats 20 --json > "$out/bp3_5_assembled.jsonl" || echo "FAILED: assembled"
for n in 3 7; do
    "$FEM" bp --problem bp3.5 --degree $n --dofs 10000000 --solve 1e-8 --backend cuda --repeats 5 --json > "$out/solve_bp3_5_n$n.json" || echo "FAILED: solve"
done
python3 "$(dirname "$0")/bp_summary.py" "$out"
