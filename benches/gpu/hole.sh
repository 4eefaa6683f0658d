#!/usr/bin/env bash
# The multigrid benchmark of Geveler et al. (figures 4 and 5): −Δu = 1 around
# a hole, every smoother × ordering × element, on the CPU (all host cores) and
# the GPU; then the large-problem comparison (≥ 4M DOFs) of MG+SPAI against
# Jacobi-PCG on the GPU and the same MG on the CPU. JSON lines into $OUT.
#   FEM=path/to/fem bash benches/gpu/hole.sh [2|3|big]
set -u
FEM=${FEM:-target/release/fem}
out=${OUT:-.}
run() {
    timeout ${LIMIT:-120} "$FEM" solve --problem hole --json "$@" \
        | python3 -c "import json,sys; d=json.load(sys.stdin); d.pop('history',None); d['args']=sys.argv[1]; print(json.dumps(d))" "$*" >> "$out/hole.jsonl" || echo "FAILED: $*"
}
case ${1:-2} in
2 | 3)
    dim=$1
    for degree in 1 2; do
        for backend in cpu cuda; do
            for ordering in ${ORDERINGS:-2lv cm xyz stoch hie}; do
                for smoother in ${SMOOTHERS:-jacobi spai sainv}; do
                    run --dim "$dim" --degree "$degree" --solver mg --precond "$smoother" --ordering "$ordering" --backend "$backend"
                done
            done
        done
    done
    ;;
big)
    for backend in cuda cpu; do
        run --dim 2 --degree 1 --levels 9 --solver mg --precond spai --ordering xyz --backend "$backend"
    done
    run --dim 2 --degree 1 --levels 9 --solver cg --precond jacobi --ordering xyz --backend cuda --max-iterations 50000
    ;;
esac
python3 "$(dirname "$0")/hole_summary.py" "$out/hole.jsonl"
