#!/usr/bin/env bash
# Where the shared-memory pipe binds the BP kernels (the paper's shared-
# memory roofline, measured rather than modelled): Nsight Compute counts the
# shared-memory wavefronts of one launch per problem and degree at 1e7 DOFs;
# the pipe serves one wavefront (128 bytes) per SM and cycle, so wavefronts
# over SM-cycles is the fraction of that roofline in use, beside the DRAM
# fraction. JSON lines into $OUT/bp_shared.jsonl, a Markdown table on stdout.
#   FEM=path/to/fem OUT=dir bash benches/gpu/bp_shared.sh
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}/bp_shared.jsonl
: > "$out"
metrics=l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__cycles_elapsed.avg,device__attribute_multiprocessor_count,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,gpu__time_duration.sum
for p in bp1 bp3.5 bp3.0; do
    k=$(echo "$p" | tr -d .)
    for n in ${DEGREES:-1 2 3 4 5 6 7 8}; do
        ncu --csv --print-units base --metrics "$metrics" --kernel-name "regex:fem_${k}(_lines)?_n${n}(_shared_col[01])?_f64" --launch-skip 2 --launch-count 1 \
            "$FEM" bp --problem "$p" --degree "$n" --dofs 10000000 --backend cuda --repeats 3 --json 2>/dev/null \
            | python3 "$(dirname "$0")/bp_shared.py" "$p" "$n" >> "$out" || echo "FAILED: $p $n"
    done
done
python3 "$(dirname "$0")/bp_shared.py" --table "$out"
