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
