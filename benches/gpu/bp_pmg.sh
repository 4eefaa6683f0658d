#!/usr/bin/env bash
# The CEED screened Poisson solve (`fem bp --solve`) to 10⁻⁸ on about 1e7
# L-DOFs, CG with Jacobi against CG with p-multigrid (Chebyshev on the
# degree-N kernel, AMG on the same operator at degree 1; and with levels
# of halved degree between), each command
# timed whole (wall, peak RSS): JSON into $OUT (default .), the timings
# on stdout, a Markdown table by bp_pmg_summary.py.
#   FEM=path/to/fem bash benches/gpu/bp_pmg.sh
set -u
export FEM_TUNING=off
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
CASES=${CASES:-"bp3.5:4 bp3.5:7 bp3.0:4"}
CHEBYSHEV=${CHEBYSHEV:-3}
source "$(dirname "$0")/common.sh"
for case in $CASES; do
    IFS=: read -r p n <<< "$case"
    e=$((SIDE[$n] ** 3))
    for precond in jacobi pmg pmg-halving; do
        name="$p-n$n-$precond"
        extra=""
        case $precond in
            pmg) extra="--chebyshev-degree $CHEBYSHEV" ;;
            pmg-halving) precond=pmg; extra="--chebyshev-degree $CHEBYSHEV --pmg-degrees halving" ;;
        esac
        /usr/bin/time -f "$name: wall %e s, max RSS %M KB" -o "$out/$name.time" \
            "$FEM" bp --problem "$p" --degree "$n" --elements "$e" --assembled --backend cuda --repeats 5 \
            --solve 1e-8 --precond "$precond" $extra --json > "$out/$name.json" 2> "$out/$name.err" || { echo "FAILED: $name"; tail -3 "$out/$name.err"; }
        cat "$out/$name.time"
    done
done
python3 "$(dirname "$0")/bp_pmg_summary.py" "$out"
