#!/usr/bin/env bash
# Poisson benchmarks of Reguly & Giles on a GPU machine: every format at about
# 4M DOFs, p = 1..4, one precision, JSON lines and a plot into $OUT (default .) and a
# Markdown table on stdout.
#   FEM=path/to/fem bash benches/gpu/poisson.sh f64 [DIM]
# DEGREES="1 2" limits the degrees; MF_DEGREES the degrees that include the
# matrix-free operator (default: all in 2D, p = 1 in 3D, where it recomputes
# element matrices of 27+ rows and one product takes longer than a CG run of
# every other format); LIMIT the seconds per run (default 120).
set -u
FEM=${FEM:-target/release/fem}
prec=${1:-f64}; dim=${2:-2}; out=${OUT:-.}/bench-$dim-$prec.jsonl
mf_degrees=${MF_DEGREES:-$([[ $dim == 2 ]] && echo "1 2 3 4" || echo 1)}
rm -rf ~/.nv/ComputeCache
run() {
    timeout "${LIMIT:-120}" "$FEM" solve --dim "$dim" --dofs 4000000 --backend cuda --precision "$prec" --bench --rtol 1e-12 --max-iterations 200 --json "$@" \
        | python3 -c "import json,sys; d=json.load(sys.stdin); d['args']=sys.argv[1]; print(json.dumps(d))" "$*" >> "$out" || echo "FAILED: $*"
}
for p in ${DEGREES:-1 2 3 4}; do
    run --degree "$p" --format csr
    run --degree "$p" --format ell
    run --degree "$p" --format lazy-ell
    run --degree "$p" --format lma --numbering original
    run --degree "$p" --format lma --symmetric --numbering original
    run --degree "$p" --format lma --scatter colour --numbering original
    run --degree "$p" --format lma --numbering aligned
    if [[ " $mf_degrees " == *" $p "* ]]; then
        run --degree "$p" --format matrix-free
    fi
done
python3 "$(dirname "$0")/summary.py" "$out" "${out%.jsonl}.png"
