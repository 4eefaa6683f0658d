#!/bin/bash
# BP3.5 N = 8 (the 4096-element seed's launch: one element per block,
# column in shared memory, in both block shapes) and BP1 N = 6 against
# the element count around 4096: where a fixed cost per application and
# the last partial wave of blocks show. JSON lines in $OUT, one per run.
#   FEM=target/release/fem OUT=benches/gpu/results/bp/sizes bash benches/gpu/bp_sizes.sh
set -euo pipefail
FEM=${FEM:-target/release/fem}
OUT=${OUT:-benches/gpu/results/bp/sizes}
mkdir -p "$OUT"
: > "$OUT/bp3_5_n8.jsonl"
: > "$OUT/bp1_n6.jsonl"
# fem bp prints one run's JSON over several lines: one line each here
line() { "$@" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), separators=(",", ":")))'; }
for e in 1024 2048 3960 4096 4224 4620 8192 16384; do
  for epb in 1 3; do
    line "$FEM" bp --problem bp3.5 --degree 8 --elements $e --elements-per-block $epb --column shared --backend cuda --repeats 20 --json >> "$OUT/bp3_5_n8.jsonl"
  done
  line "$FEM" bp --problem bp1 --degree 6 --elements $e --backend cuda --repeats 20 --json >> "$OUT/bp1_n6.jsonl"
done
python3 "$(dirname "$0")/bp_sizes.py" "$OUT"
