# Shared by the GPU benchmark scripts (sourced): `timed NAME ARGS...` runs
# `$FEM solve ARGS --load random --rtol 1e-8 --json` timed whole (wall,
# peak RSS), the report into $out/NAME.json, the timing into $tmp/NAME.time
# and the log.
timed() {
    local name=$1
    shift
    /usr/bin/time -f "$name: wall %e s, max RSS %M KB" -o "$tmp/$name.time" "$FEM" solve "$@" --load random --rtol 1e-8 --json > "$out/$name.json" 2> "$tmp/$name.err" || { echo "FAILED: $name $*"; tail -3 "$tmp/$name.err"; }
    cat "$tmp/$name.time"
}
# `over_hexahedra RUNS CASE...`: per CASE "physics degree cells", a
# generated mesh of cells³ hexahedra and `timed` once per run of RUNS
# ("label:format:backend", space-separated), the report named
# physics-qDEGREE-label; with DIM=2 the meshes are cells² quadrilaterals
# and the reports physics-quadDEGREE-label.
over_hexahedra() {
    local runs=$1
    shift
    local case run label format backend dim=${DIM:-3} kind=q
    [ "$dim" = 2 ] && kind=quad
    for case in "$@"; do
        set -- $case
        "$FEM" mesh-gen --dim "$dim" --cells "$3" "$tmp/cells$3.msh" > /dev/null
        for run in $runs; do
            IFS=: read -r label format backend <<< "$run"
            timed "$1-$kind$2-$label" --mesh "$tmp/cells$3.msh" --physics "$1" --degree "$2" --format "$format" --backend "$backend"
        done
        rm -f "$tmp/cells$3.msh"
    done
}
# Elements per direction of the CEED meshes at N = 2..8 (about 1e7 DOFs,
# libCEED's driver's sizes), for the scripts that run beside its figures.
declare -A SIDE=([2]=108 [3]=72 [4]=54 [5]=43 [6]=36 [7]=31 [8]=27)
